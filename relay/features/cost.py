"""Usage and cost of a session from its transcript lines: pure values in, values out.

The rules, in the order they apply:

1. **One API response counts once.** Claude Code writes one transcript line per content block
   of a response, each repeating the response's ``message.id`` and ``usage``: a message id counts
   once, at the largest usage its lines show (field by field, should usage written while
   streaming grow), and so do copies of its lines in another conversation file. A response with
   no tokens at all (the ``<synthetic>`` messages Claude Code writes itself) does not count.
2. **cost-state lines are authoritative.** Claude Code writes its running totals as ``cost-state``
   lines (``totalCostUSD``, ``modelUsage`` per model). Those totals belong to one cost tracker:
   it starts with a claude process (``startTime``), and a resume of the same conversation restores
   it — startTime included — so its lines are cumulative snapshots. cost-state lines are grouped
   by startTime (their *epoch*; the conversation id when a line has none): within an epoch the
   highest snapshot wins and a later, lower one never lowers it; separate epochs (a ``/clear``
   that starts a new tracker, a restart that did not restore it) add up. A ``/clear`` that kept
   the tracker keeps its startTime and so is not counted twice.
3. **Between cost-state lines, estimate.** Per model, the tokens are the larger of what the
   transcript shows (``seen``, deduplicated, subagents included) and what the snapshots cover;
   what the transcript shows beyond the snapshots is priced with the catalogue and added to the
   snapshots' cost. Calls that never reach the transcript (the compaction summary call) are in
   the snapshots only, hence "the larger".
4. **Prices** come from the bundled catalogue (``prices.json``) and per-model overrides (the
   relay setting ``model_prices``). An all-zero price means free. A model with no price is
   *unknown*: the total is ``None`` and ``unknown_models`` names it, never a silent 0. When a
   cost-state line says ``hasUnknownModelCost``, its models missing from the bundled catalogue
   are priced by an override if there is one, else they are unknown.
5. **The total never goes down.** Compaction removes nothing from the count (lines are only
   added). The one step that can lower the computed figure — a snapshot replacing an estimate
   that priced higher than Claude Code did — is guarded: the figure just before it is kept as a
   floor (``peak_usd``).
6. **Subagents** (lines with ``agentId``/``isSidechain``, transcripts ``agent-<id>``) count in
   the session's totals and per agent in ``by_agent``, whose cost is always an estimate
   (cost-state lines do not split by agent).
7. ``source`` is ``"cost-state"`` when cost-state lines cover every token, else ``"estimate"``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from relay.convert import LineFacts, convert_line

PRICES_FILE: Final = Path(__file__).with_name("prices.json")
MILLION: Final = 1_000_000
USD_DECIMALS: Final = 10  # rounding in reports: float noise off, every cent of a cent kept
UNKNOWN_MODEL: Final = "unknown"  # a response that names no model
LEDGER_VERSION: Final = 1

Source = Literal["cost-state", "estimate"]


class PriceError(ValueError):
    """A price catalogue or override cannot be read: says which entry and what it wants."""


def _count(value: object) -> int:
    """A token count as written, or 0 for anything that is not a non-negative number."""
    if type(value) is int:  # the usual case, first: this runs for every usage field of a line
        return value if value >= 0 else 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _dollars(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _round(usd: float | None) -> float | None:
    return None if usd is None else round(usd, USD_DECIMALS)


# ---------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The part of cache_write_tokens written to the 1-hour cache (priced higher); not reported.
    cache_write_1h_tokens: int = 0

    @classmethod
    def from_api(cls, usage: Mapping[str, Any]) -> Usage:
        """From an assistant line's ``message.usage``."""
        write = _count(usage.get("cache_creation_input_tokens"))
        creation = usage.get("cache_creation")
        one_hour = (
            _count(creation.get("ephemeral_1h_input_tokens"))
            if isinstance(creation, Mapping)
            else 0
        )
        return cls(
            _count(usage.get("input_tokens")),
            _count(usage.get("output_tokens")),
            _count(usage.get("cache_read_input_tokens")),
            write,
            min(one_hour, write),
        )

    @classmethod
    def from_model_usage(cls, entry: Mapping[str, Any]) -> Usage:
        """From one model of a cost-state line's ``modelUsage``."""
        write = _count(entry.get("cacheCreationInputTokens"))
        return cls(
            _count(entry.get("inputTokens")),
            _count(entry.get("outputTokens")),
            _count(entry.get("cacheReadInputTokens")),
            write,
            min(_count(entry.get("cacheCreationEphemeral1hInputTokens")), write),
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(a + b for a, b in zip(self.as_row(), other.as_row(), strict=True)))

    def beyond(self, other: Usage) -> Usage:
        """What this has that ``other`` does not, field by field (never negative)."""
        if self == other:  # a response's next line repeats its usage: the usual case
            return ZERO
        values = [max(0, a - b) for a, b in zip(self.as_row(), other.as_row(), strict=True)]
        values[4] = min(values[4], values[3])
        return Usage(*values)

    def as_row(self) -> tuple[int, int, int, int, int]:
        return (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.cache_write_1h_tokens,
        )

    @classmethod
    def from_row(cls, row: Iterable[object]) -> Usage:
        return cls(*(_count(x) for x in row))

    def to_json(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


ZERO: Final = Usage()


# ---------------------------------------------------------------------------
# Prices
# ---------------------------------------------------------------------------

_PRICE_FIELDS: Final = ("input", "output", "cache_read", "cache_write")
_PROVIDER_PREFIX: Final = re.compile(r"^(?:(?:us|eu|apac|jp|au|global)\.)?(?:anthropic\.)?")
_BEDROCK_VERSION: Final = re.compile(r"-v\d+:\d+$")
_DATE_SUFFIX: Final = re.compile(r"-\d{8}$")
_VERSION_SUFFIX: Final = re.compile(r"-v\d+$")
_BRACKETS: Final = re.compile(r"\[[^\]]*\]$")  # claude-sonnet-5-5[1m]: same model, same price


def model_key(model: str) -> str:
    """The catalogue's spelling of a model id: no provider prefix, date or version suffix."""
    key = model.strip().lower()
    key = _BRACKETS.sub("", key)
    key = _PROVIDER_PREFIX.sub("", key)
    key = _BEDROCK_VERSION.sub("", key)
    key = key.replace("@", "-")
    key = _DATE_SUFFIX.sub("", key)
    return _VERSION_SUFFIX.sub("", key)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. All zero = free."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float | None = None  # None: the same as cache_write

    @classmethod
    def parse(cls, raw: object, where: str) -> Price:
        if not isinstance(raw, Mapping):
            raise PriceError(f"{where}: wants an object with {', '.join(_PRICE_FIELDS)}")
        values: dict[str, float] = {}
        for name in (*_PRICE_FIELDS, "cache_write_1h"):
            if name not in raw:
                if name == "cache_write_1h":
                    continue
                raise PriceError(
                    f"{where}: missing {name!r} (USD per million tokens; "
                    f"give all of {', '.join(_PRICE_FIELDS)}, zeros for a free model)"
                )
            value = _dollars(raw[name])
            if value is None:
                raise PriceError(f"{where}: {name} wants a number ≥ 0, got {raw[name]!r}")
            values[name] = value
        return cls(**values)

    @property
    def free(self) -> bool:
        return not any((self.input, self.output, self.cache_read, self.cache_write, self.one_hour))

    @property
    def one_hour(self) -> float:
        return self.cache_write if self.cache_write_1h is None else self.cache_write_1h

    def cost(self, usage: Usage) -> float:
        five_minutes = usage.cache_write_tokens - usage.cache_write_1h_tokens
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + five_minutes * self.cache_write
            + usage.cache_write_1h_tokens * self.one_hour
        ) / MILLION


@dataclass(frozen=True)
class Prices:
    """The price catalogue: bundled prices, then per-model overrides on top."""

    models: Mapping[str, Price]  # by model_key, aliases included
    bundled: frozenset[str] = frozenset()  # keys the bundled catalogue prices

    def get(self, model: str) -> Price | None:
        return self.models.get(model_key(model))

    def is_bundled(self, model: str) -> bool:
        return model_key(model) in self.bundled

    def with_overrides(self, overrides: Mapping[str, Price]) -> Prices:
        models = dict(self.models)
        models.update({model_key(name): price for name, price in overrides.items()})
        return Prices(models, self.bundled)


def parse_catalogue(data: object, where: str = "price catalogue") -> Prices:
    """A catalogue as in prices.json: ``{"models": {id: {input, output, cache_read, ...}}}``."""
    models_raw = data.get("models") if isinstance(data, Mapping) else None
    if not isinstance(models_raw, Mapping):
        raise PriceError(f'{where}: wants {{"models": {{model id: prices}}}}')
    models: dict[str, Price] = {}
    for name, raw in models_raw.items():
        price = Price.parse(raw, f"{where}, model {name!r}")
        models[model_key(str(name))] = price
        aliases = raw.get("aliases", []) if isinstance(raw, Mapping) else []
        for alias in aliases if isinstance(aliases, list) else []:
            models[model_key(str(alias))] = price
    return Prices(models, frozenset(models))


def parse_overrides(text: str) -> dict[str, Price]:
    """The ``model_prices`` setting: a JSON object ``{model id: prices}`` or a JSON file's path."""
    text = text.strip()
    if not text:
        return {}
    where = "model_prices (CB_MODEL_PRICES)"
    if not text.startswith("{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PriceError(
                f"{where}: cannot read {path}: {exc.strerror}; give a JSON object or a file's path"
            ) from None
        where = f"{where} file {path}"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PriceError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise PriceError(f'{where}: wants an object like {{"model-id": {{"input": 3, ...}}}}')
    return {str(name): Price.parse(raw, f"{where}, model {name!r}") for name, raw in data.items()}


def load_prices(overrides: str | Mapping[str, Price] = "", path: Path = PRICES_FILE) -> Prices:
    """The bundled catalogue with overrides (the setting's text, or parsed prices) on top."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PriceError(f"cannot read the price catalogue {path}: {exc}") from None
    prices = parse_catalogue(data, str(path))
    extra = parse_overrides(overrides) if isinstance(overrides, str) else overrides
    return prices.with_overrides(extra)


def estimate(usage_by_model: Mapping[str, Usage], prices: Prices) -> tuple[float | None, list[str]]:
    """(USD, unknown models) of this usage: USD is None when any model with tokens has no price."""
    usd = 0.0
    unknown: list[str] = []
    for model, usage in usage_by_model.items():
        if usage.total == 0:
            continue
        price = prices.get(model)
        if price is None:
            unknown.append(model)
        else:
            usd += price.cost(usage)
    return (None if unknown else usd), sorted(unknown)


# ---------------------------------------------------------------------------
# Claude Code's own totals (cost-state lines)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """One cost-state line: a cumulative total of one cost tracker (its epoch)."""

    epoch: str
    usd: float
    models: Mapping[str, tuple[Usage, float]]  # model → (tokens, Claude Code's USD)
    unknown_cost: bool = False  # Claude Code's hasUnknownModelCost

    @classmethod
    def from_cost_state(
        cls, line: Mapping[str, Any], conversation_id: str | None = None
    ) -> Snapshot | None:
        usd = _dollars(line.get("totalCostUSD"))
        if usd is None:
            return None
        start = line.get("startTime")
        if isinstance(start, int | float) and not isinstance(start, bool) and math.isfinite(start):
            epoch = f"start:{int(start)}"
        else:
            epoch = f"conversation:{line.get('sessionId') or conversation_id or ''}"
        models: dict[str, tuple[Usage, float]] = {}
        model_usage = line.get("modelUsage")
        if isinstance(model_usage, Mapping):
            for name, entry in model_usage.items():
                if isinstance(name, str) and isinstance(entry, Mapping):
                    models[name] = (
                        Usage.from_model_usage(entry),
                        _dollars(entry.get("costUSD")) or 0.0,
                    )
        return cls(epoch, usd, models, line.get("hasUnknownModelCost") is True)

    @property
    def tokens(self) -> int:
        return sum(usage.total for usage, _ in self.models.values())

    def outranks(self, other: Snapshot) -> bool:
        """Later and not lower: a snapshot replaces an earlier one of its epoch only then."""
        return (self.usd, self.tokens) >= (other.usd, other.tokens)

    def to_json(self) -> dict[str, Any]:
        return {
            "usd": self.usd,
            "unknown": self.unknown_cost,
            "models": {m: [*u.as_row(), usd] for m, (u, usd) in self.models.items()},
        }

    @classmethod
    def from_json(cls, epoch: str, data: Mapping[str, Any]) -> Snapshot:
        models = {
            str(m): (Usage.from_row(row[:5]), float(row[5])) for m, row in data["models"].items()
        }
        return cls(epoch, float(data["usd"]), models, bool(data.get("unknown")))


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CostLine:
    """Tokens and USD of one model or one subagent; usd None = unknown price."""

    usage: Usage
    usd: float | None

    def to_json(self) -> dict[str, Any]:
        return {**self.usage.to_json(), "usd": _round(self.usd)}


@dataclass(frozen=True)
class CostReport:
    usage: Usage
    usd: float | None  # None when some usage has no known price (see unknown_models)
    by_model: Mapping[str, CostLine]
    by_agent: Mapping[str, CostLine]
    source: Source
    unknown_models: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.usage.total

    def to_json(self) -> dict[str, Any]:
        return {
            **self.usage.to_json(),
            "usd": _round(self.usd),
            "by_model": {m: line.to_json() for m, line in sorted(self.by_model.items())},
            "by_agent": {a: line.to_json() for a, line in sorted(self.by_agent.items())},
            "unknown_models": list(self.unknown_models),
            "source": self.source,
        }

    def summary(self) -> dict[str, Any]:
        """The compact form a session listing carries."""
        return {"usd": _round(self.usd), "tokens": self.tokens, "source": self.source}


EMPTY_REPORT: Final = CostReport(ZERO, 0.0, {}, {}, "estimate")


# ---------------------------------------------------------------------------
# The running state of one session
# ---------------------------------------------------------------------------


@dataclass
class Ledger:
    """Everything a session's cost is computed from; small (per model, agent and epoch), so it
    is stored whole and updated per batch of lines."""

    seen: dict[str, Usage] = field(default_factory=dict)  # model → deduplicated usage
    agents: dict[str, dict[str, Usage]] = field(default_factory=dict)  # agent → model → usage
    snapshots: dict[str, Snapshot] = field(default_factory=dict)  # epoch → highest snapshot
    peak_usd: float = 0.0  # the floor under the total (rule 5)

    def add_response(self, model: str, usage: Usage, agent_id: str | None = None) -> None:
        self.seen[model] = self.seen.get(model, ZERO) + usage
        if agent_id is not None:
            models = self.agents.setdefault(agent_id, {})
            models[model] = models.get(model, ZERO) + usage

    def add_snapshot(self, snapshot: Snapshot, prices: Prices) -> bool:
        """Take a cost-state snapshot; False when its epoch already has a higher one."""
        current = self.snapshots.get(snapshot.epoch)
        if current is not None and (current == snapshot or not snapshot.outranks(current)):
            return False  # the same line again, or lower than one already taken
        before = self.report(prices).usd
        if before is not None:
            self.peak_usd = max(self.peak_usd, before)
        self.snapshots[snapshot.epoch] = snapshot
        return True

    def report(self, prices: Prices) -> CostReport:
        unknown: set[str] = set()
        covered: dict[str, Usage] = {}
        covered_usd: dict[str, float | None] = {}
        total: float = 0.0
        for snapshot in self.snapshots.values():
            total += snapshot.usd
            for model, (usage, usd) in snapshot.models.items():
                covered[model] = covered.get(model, ZERO) + usage
                model_usd: float | None = usd
                if snapshot.unknown_cost and usage.total and not prices.is_bundled(model):
                    # Claude Code did not know this model's price: ours, or unknown.
                    price = prices.get(model)
                    model_usd = None if price is None else price.cost(usage)
                    total += (model_usd or 0.0) - usd
                    if model_usd is None:
                        unknown.add(model)
                before = covered_usd.get(model, 0.0)
                covered_usd[model] = (
                    None if before is None or model_usd is None else before + model_usd
                )
        by_model: dict[str, CostLine] = {}
        all_covered = bool(self.snapshots)
        for model in sorted(set(self.seen) | set(covered)):
            cover = covered.get(model, ZERO)
            extra = self.seen.get(model, ZERO).beyond(cover)
            tokens = cover + extra
            if tokens.total == 0 and not covered_usd.get(model):
                continue
            model_usd = covered_usd.get(model, 0.0)
            if extra.total:
                all_covered = False
                price = prices.get(model)
                if price is None:
                    unknown.add(model)
                    model_usd = None
                else:
                    total += price.cost(extra)
                    model_usd = None if model_usd is None else model_usd + price.cost(extra)
            by_model[model] = CostLine(tokens, model_usd)
        by_agent: dict[str, CostLine] = {}
        for agent, models in sorted(self.agents.items()):
            usage = ZERO
            for part in models.values():
                usage = usage + part
            agent_usd, _ = estimate(models, prices)
            by_agent[agent] = CostLine(usage, agent_usd)
        usage = ZERO
        for line in by_model.values():
            usage = usage + line.usage
        final = None if unknown else max(self.peak_usd, total)
        source: Source = "cost-state" if all_covered else "estimate"
        return CostReport(usage, final, by_model, by_agent, source, sorted(unknown))

    # -- storage ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "v": LEDGER_VERSION,
            "seen": {m: list(u.as_row()) for m, u in self.seen.items()},
            "agents": {
                a: {m: list(u.as_row()) for m, u in models.items()}
                for a, models in self.agents.items()
            },
            "snapshots": {e: s.to_json() for e, s in self.snapshots.items()},
            "peak": self.peak_usd,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ledger:
        return cls(
            seen={str(m): Usage.from_row(row) for m, row in data.get("seen", {}).items()},
            agents={
                str(a): {str(m): Usage.from_row(row) for m, row in models.items()}
                for a, models in data.get("agents", {}).items()
            },
            snapshots={
                str(e): Snapshot.from_json(str(e), s) for e, s in data.get("snapshots", {}).items()
            },
            peak_usd=float(data.get("peak", 0.0)),
        )


def agent_of_conversation(conversation_id: str | None) -> str | None:
    """A subagent's transcript arrives as conversation ``agent-<id>``."""
    if conversation_id and conversation_id.startswith("agent-") and len(conversation_id) > 6:
        return conversation_id[6:]
    return None


class CostCounter:
    """Feed one session's lines in order (any number of conversations); read the report any time.

    ``counted`` maps the message ids counted already to the usage counted for them (the relay
    keeps them in its database); ``changed`` lists the ids whose entry this counter set.
    """

    def __init__(
        self,
        prices: Prices,
        ledger: Ledger | None = None,
        counted: Mapping[str, Usage] | None = None,
    ) -> None:
        self.prices = prices
        self.ledger = ledger if ledger is not None else Ledger()
        self.counted: dict[str, Usage] = dict(counted or {})
        self.changed: list[str] = []

    def add(self, facts: LineFacts, conversation_id: str | None = None) -> bool:
        """Count one line's facts; True when the figures changed."""
        if facts.cost_state is not None:
            snapshot = Snapshot.from_cost_state(
                facts.cost_state, facts.conversation_id or conversation_id
            )
            return snapshot is not None and self.ledger.add_snapshot(snapshot, self.prices)
        if facts.line_type != "assistant" or facts.usage is None:
            return False
        usage = Usage.from_api(facts.usage)
        if facts.message_id is not None:
            # A response's lines repeat its usage; should a later one say more (usage written
            # while streaming), only the difference is added: the response counts at its largest.
            before = self.counted.get(facts.message_id, ZERO)
            usage = usage.beyond(before)
            if usage.total == 0:
                return False
            self.counted[facts.message_id] = before + usage
            self.changed.append(facts.message_id)
        elif usage.total == 0:
            return False
        agent = facts.agent_id or agent_of_conversation(conversation_id)
        self.ledger.add_response(facts.model or UNKNOWN_MODEL, usage, agent)
        return True

    def add_text(self, line: str | bytes, conversation_id: str | None = None) -> bool:
        """Count one raw transcript line."""
        return self.add(convert_line(line).facts, conversation_id)

    def report(self) -> CostReport:
        return self.ledger.report(self.prices)
