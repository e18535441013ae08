"""Per-session permission rules: allow, ask or deny, by tool and by category.

Pure: no I/O. The agent applies a session's policy to each ``PermissionRequest`` hook
(``allow`` answers before the dialog is drawn, ``deny`` answers with a reason the model reads,
``ask`` lets Claude Code draw its dialog, which becomes a card on the phone); the relay uses the
same rules to check a policy sent from the phone.

How a tool is decided, first match wins:

1. ``AskUserQuestion`` and ``ExitPlanMode`` are always **ask**: a hook's "allow" does not answer
   them and the person's answer is the point, so no rule auto-answers them.
2. A rule for the tool itself (``tools``: ``{"Bash": "deny"}``).
3. A rule for the tool's category (``categories``: ``{"execute": "allow"}``), see
   ``TOOL_CATEGORIES``; ``mcp__…`` tools are ``mcp``; any other tool has no category.
4. ``allow_all``: every tool that no rule names is allowed, until ``allow_all_until`` (an
   absolute time, Unix seconds, kept with the policy so it holds across restarts) or, with no
   time, until the session ends. It is never open-ended: a request gives ``allow_all_for``
   (seconds, or ``"session"``), which becomes that time where the policy is held (the Mac).
5. Otherwise **ask**.

So explicit rules beat "allow all" (allow everything but ``Bash``: ``allow_all`` plus
``{"Bash": "deny"}`` or ``{"Bash": "ask"}``), and a tool's rule beats its category's.

The JSON form, used on the link (``set_policy``), in the agent's registry and in the API::

    {"allow_all": false, "allow_all_until": null,
     "categories": {"read": "allow", "execute": "ask"}, "tools": {"Bash": "deny"}}
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from wire.errors import PolicyError as PolicyError

Rule = Literal["allow", "ask", "deny"]
RULES: tuple[Rule, ...] = ("allow", "ask", "deny")
Category = Literal["read", "edit", "execute", "web", "mcp"]
CATEGORIES: tuple[Category, ...] = ("read", "edit", "execute", "web", "mcp")

TOOL_CATEGORIES: Mapping[str, Category] = {
    "Read": "read",
    "Glob": "read",
    "Grep": "read",
    "LS": "read",
    "NotebookRead": "read",
    "Write": "edit",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "WebFetch": "web",
    "WebSearch": "web",
}
MCP_PREFIX = "mcp__"

#: Never answered by a rule: "allow" does not answer them, and they exist to ask the person.
NEVER_AUTO: frozenset[str] = frozenset({"AskUserQuestion", "ExitPlanMode"})

MAX_TOOL_RULES = 200
MAX_TOOL_NAME = 200
MAX_ALLOW_ALL_SECONDS = 31 * 86400  # a month: longer is surely a mistake
UNTIL_SESSION_ENDS = "session"  # allow_all_for: until the session ends


def category_of(tool: str | None) -> Category | None:
    """The category of one of Claude Code's tools, or None (e.g. ``Task``, ``TodoWrite``)."""
    if not tool:
        return None
    if tool.startswith(MCP_PREFIX):
        return "mcp"
    return TOOL_CATEGORIES.get(tool)


@dataclass(frozen=True)
class Verdict:
    """What the policy says for one tool, and which rule said it (for the deny message)."""

    rule: Rule
    # "grant": a card's "always" for this claude process allowed it (agent/grants.py)
    source: Literal["never_auto", "tool", "category", "allow_all", "default", "grant"]
    category: Category | None = None

    def deny_message(self, tool: str) -> str:
        """The reason Claude Code shows the model when the hook denies a tool."""
        if self.source == "category" and self.category is not None:
            why = f"the session's rule for {self.category} tools"
        else:
            why = f"the session's rule for {tool}"
        return (
            f"claude-bridge: this session's permission policy denies {tool} ({why} is deny). "
            "Do not retry it; the person can change the session's permissions from the phone."
        )


@dataclass(frozen=True)
class Policy:
    allow_all: bool = False
    categories: Mapping[Category, Rule] = field(default_factory=dict)
    tools: Mapping[str, Rule] = field(default_factory=dict)
    allow_all_until: float | None = None  # Unix seconds; None: until the session ends

    # -- deciding -------------------------------------------------------------------------

    def allowing_all(self, now: float | None = None) -> bool:
        """Is "allow all" on at ``now`` (default: the clock)? Off once its time is past."""
        if not self.allow_all:
            return False
        if self.allow_all_until is None:
            return True
        return (time.time() if now is None else now) < self.allow_all_until

    def without_allow_all(self) -> Policy:
        return dataclasses.replace(self, allow_all=False, allow_all_until=None)

    def verdict(self, tool: str | None, now: float | None = None) -> Verdict:
        category = category_of(tool)
        if not tool or tool in NEVER_AUTO:
            return Verdict("ask", "never_auto", category)
        rule = self.tools.get(tool)
        if rule is not None:
            return Verdict(rule, "tool", category)
        if category is not None:
            rule = self.categories.get(category)
            if rule is not None:
                return Verdict(rule, "category", category)
        if self.allowing_all(now):
            return Verdict("allow", "allow_all", category)
        return Verdict("ask", "default", category)

    def decide(self, tool: str | None, now: float | None = None) -> Rule:
        return self.verdict(tool, now).rule

    # -- changing -------------------------------------------------------------------------

    def always_allow(self, tool: str | None) -> Policy:
        """The card answer's "always allow this category for this session".

        Allows the tool's category; a tool with no category is allowed by name. A rule for the
        tool itself that says otherwise is dropped, since the person just allowed it. Questions
        and plans are never changed.
        """
        if not tool or tool in NEVER_AUTO:
            return self
        tools = dict(self.tools)
        category = category_of(tool)
        if category is None:
            tools[tool] = "allow"
            return dataclasses.replace(self, categories=dict(self.categories), tools=tools)
        if tools.get(tool) not in (None, "allow"):
            del tools[tool]
        categories = dict(self.categories)
        categories[category] = "allow"
        return dataclasses.replace(self, categories=categories, tools=tools)

    def changed(self, changes: Any, now: float | None = None) -> Policy:
        """This policy with some rules changed, the others kept (``PATCH …/policy``).

        ``changes`` is ``{"reset"?, "allow_all"?, "allow_all_for"?, "allow_all_until"?,
        "categories"?, "tools"?}``: ``reset: true`` starts from the default (ask for
        everything), a rule of ``null`` drops that rule, ``allow_all_for`` (seconds or
        ``"session"``) bounds "allow all" from ``now``. Made on the Mac, against the policy it
        holds, so a change from elsewhere in between (a card's "always allow") is kept. Raises
        PolicyError like :meth:`from_json`.
        """
        if not isinstance(changes, Mapping):
            raise PolicyError(
                "policy changes are a JSON object: {reset, allow_all, categories, tools}"
            )
        unknown = set(changes) - {"reset", *_FIELDS}
        if unknown:
            raise PolicyError(f"unknown policy field(s): {', '.join(sorted(map(str, unknown)))}")
        reset = changes.get("reset", False)
        if not isinstance(reset, bool):
            raise PolicyError("reset must be true or false")
        base = Policy() if reset else self
        merged: dict[str, Any] = {
            "allow_all": changes.get("allow_all", base.allow_all),
            "categories": dict(base.categories),
            "tools": dict(base.tools),
        }
        bound = {k: changes[k] for k in ("allow_all_for", "allow_all_until") if k in changes}
        merged.update(bound or {"allow_all_until": base.allow_all_until})
        for field_name in ("categories", "tools"):
            for name, rule in _mapping(changes.get(field_name), field_name).items():
                if rule is None:
                    merged[field_name].pop(name, None)
                else:
                    merged[field_name][name] = rule
        return Policy.from_json(merged, now)

    # -- JSON -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """``allow_all_until`` is there when "allow all" is on (null: until the session ends)."""
        data: dict[str, Any] = {"allow_all": self.allow_all}
        if self.allow_all:
            data["allow_all_until"] = self.allow_all_until
        data["categories"] = {c: self.categories[c] for c in CATEGORIES if c in self.categories}
        data["tools"] = dict(sorted(self.tools.items()))
        return data

    @classmethod
    def from_json(cls, data: Any, now: float | None = None) -> Policy:
        """Read and check a policy; ``None`` or ``{}`` is the default (ask for everything).

        "Allow all" is bounded by ``allow_all_until`` (Unix seconds) or ``allow_all_for``
        (seconds from ``now``, default the clock, or ``"session"``); with neither it lasts
        until the session ends. Raises PolicyError for an unknown category or rule, a bad tool
        name, a bad bound, or unknown keys.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PolicyError("a policy is a JSON object: {allow_all, categories, tools}")
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise PolicyError(f"unknown policy field(s): {', '.join(sorted(map(str, unknown)))}")
        allow_all = data.get("allow_all", False)
        if not isinstance(allow_all, bool):
            raise PolicyError("allow_all must be true or false")
        until = _allow_all_until(data, time.time() if now is None else now) if allow_all else None
        categories: dict[Category, Rule] = {}
        for name, rule in _mapping(data.get("categories"), "categories").items():
            if name not in CATEGORIES:
                raise PolicyError(f"unknown category {name!r}: use one of {', '.join(CATEGORIES)}")
            categories[name] = _rule(rule, f"categories.{name}")
        tools: dict[str, Rule] = {}
        raw_tools = _mapping(data.get("tools"), "tools")
        if len(raw_tools) > MAX_TOOL_RULES:
            raise PolicyError(f"at most {MAX_TOOL_RULES} tool rules")
        for name, rule in raw_tools.items():
            if not name or len(name) > MAX_TOOL_NAME or not name.isprintable() or " " in name:
                raise PolicyError(f"not a tool name: {name[:40]!r}")
            tools[name] = _rule(rule, f"tools.{name}")
        return cls(allow_all, categories, tools, until)


_FIELDS = ("allow_all", "allow_all_for", "allow_all_until", "categories", "tools")


def _allow_all_until(data: Mapping[str, Any], now: float) -> float | None:
    for_ = data.get("allow_all_for")
    until = data.get("allow_all_until")
    if for_ is not None and until is not None:
        raise PolicyError("give allow_all_for or allow_all_until, not both")
    if for_ is not None:
        if for_ == UNTIL_SESSION_ENDS:
            return None
        if isinstance(for_, bool) or not isinstance(for_, int | float) or not math.isfinite(for_):
            raise PolicyError('allow_all_for is a number of seconds or "session"')
        if not 0 < for_ <= MAX_ALLOW_ALL_SECONDS:
            raise PolicyError(
                f"allow_all_for must be between 1 second and {MAX_ALLOW_ALL_SECONDS // 86400} days"
            )
        return now + float(for_)
    if until is None:
        return None
    if isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until):
        raise PolicyError("allow_all_until is a time in Unix seconds (or null)")
    return float(until)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise PolicyError(f"{where} must be an object of name → rule")
    return dict(value)


def _rule(value: Any, where: str) -> Rule:
    if value not in RULES:
        raise PolicyError(f"{where} must be allow, ask or deny, not {value!r}")
    return cast(Rule, value)


def from_record(policy: Mapping[str, Any] | None, allow_all: bool) -> Policy:
    """A session's policy as the agent's registry keeps it; a record from before policies
    existed had only ``allow_all``. A damaged stored policy falls back to asking."""
    try:
        found = Policy.from_json(policy)
    except PolicyError:
        found = Policy()
    if allow_all and not found.allow_all:
        found = dataclasses.replace(found, allow_all=True, allow_all_until=None)
    return found
