"""Usage and cost: features/cost.py on the captured transcripts, the CLI, and the API.

Expected figures are computed here, independently, from the raw JSON of the transcripts: tokens
from each API response counted once by message id, USD from their ``cost-state`` lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features import cost
from tests.support.paths import REPO
from tests.support.postgres import PostgresCluster
from tests.support.relay import TRANSCRIPTS, Account, RelayServer, mac, phone_client, transcript
from wire.protocol import LineRecord
from wire.transcript import read_lines

ROOT = REPO
TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
# claude-opus-5-5 as Claude Code 2.1.328 prices it (USD per million tokens): in, out, read, write.
OPUS_55 = (4.0, 20.0, 0.2, 5.0)
ALL = sorted(TRANSCRIPTS.glob("*.jsonl"))
WITH_COST_STATE = [p for p in ALL if b'"type":"cost-state"' in p.read_bytes()]
SUBAGENT = TRANSCRIPTS / "m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl"
PARENT = transcript("m_subagent__b9a")
IJ_BEFORE_CLEAR = TRANSCRIPTS / "ij_clear_compact__5d5356b2-0124-47ba-a14f-3db705579c69.jsonl"
IJ_AFTER_CLEAR = TRANSCRIPTS / "ij_clear_compact__f5213fa4-0e8e-478c-9c7a-812e27e71c8f.jsonl"


# -- the expectation, from the raw JSON ----------------------------------------------------


def raw_lines(*paths: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for p in paths for raw in p.read_bytes().splitlines() if raw.strip()]


def deduplicated_usage(*paths: Path) -> dict[str, int]:
    """Each API response once (by message id), whatever number of lines repeat it."""
    totals = dict.fromkeys(TOKEN_KEYS, 0)
    seen: set[str] = set()
    for line in raw_lines(*paths):
        if line.get("type") != "assistant":
            continue
        message = line["message"]
        if message.get("model") == "<synthetic>" or message["id"] in seen:
            continue
        seen.add(message["id"])
        usage = message["usage"]
        totals["input_tokens"] += usage["input_tokens"]
        totals["output_tokens"] += usage["output_tokens"]
        totals["cache_read_tokens"] += usage["cache_read_input_tokens"]
        totals["cache_write_tokens"] += usage["cache_creation_input_tokens"]
    return totals


def last_cost_state(path: Path) -> dict[str, Any]:
    states = [line for line in raw_lines(path) if line["type"] == "cost-state"]
    return states[-1]


def cost_state_tokens(state: dict[str, Any]) -> dict[str, int]:
    totals = dict.fromkeys(TOKEN_KEYS, 0)
    for entry in state["modelUsage"].values():
        totals["input_tokens"] += entry["inputTokens"]
        totals["output_tokens"] += entry["outputTokens"]
        totals["cache_read_tokens"] += entry["cacheReadInputTokens"]
        totals["cache_write_tokens"] += entry["cacheCreationInputTokens"]
    return totals


def opus_usd(tokens: dict[str, int]) -> float:
    return sum(tokens[k] * p for k, p in zip(TOKEN_KEYS, OPUS_55, strict=True)) / 1e6


def tokens_of(report: dict[str, Any]) -> dict[str, int]:
    return {k: report[k] for k in TOKEN_KEYS}


def count(*paths: Path, prices: cost.Prices | None = None) -> cost.CostCounter:
    counter = cost.CostCounter(prices or cost.load_prices())
    for path in paths:
        for raw in path.read_bytes().splitlines():
            counter.add_text(raw, path.stem)
    return counter


# -- the captured transcripts ------------------------------------------------------------------


def test_the_fixtures_repeat_message_ids_and_carry_cost_state() -> None:
    """The cases below mean something: responses do repeat across lines, cost-state is there."""
    lines = raw_lines(*ALL)
    ids = [x["message"]["id"] for x in lines if x["type"] == "assistant"]
    assert len(ids) > len(set(ids))
    assert {p.name.split("__")[0] for p in WITH_COST_STATE} == {"ij_clear_compact", "k_resume", "n_permissionrequest_allow_hook"}  # fmt: skip


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name.split("__")[0] + p.name[-12:-6])
def test_tokens_are_the_deduplicated_usage_and_usd_the_catalogue_or_cost_state(
    path: Path,
) -> None:
    report = count(path).report().to_json()
    expected = deduplicated_usage(path)
    if path in WITH_COST_STATE:
        state = last_cost_state(path)
        # Claude Code's own totals are authoritative: its USD, and its tokens, which include
        # calls that never reach the transcript (ij's compaction summary call).
        assert report["usd"] == pytest.approx(state["totalCostUSD"], abs=1e-9)
        assert tokens_of(report) == {
            k: max(v, expected[k]) for k, v in cost_state_tokens(state).items()
        }
        assert report["source"] == "cost-state"
    else:
        assert tokens_of(report) == expected
        assert report["usd"] == pytest.approx(opus_usd(expected), abs=1e-9)
        assert report["source"] == "estimate"
    assert report["unknown_models"] == []
    assert set(report["by_model"]) <= {"claude-opus-5-5"}


@pytest.mark.parametrize("name", ["k_resume", "n_permissionrequest_allow_hook"])
def test_deduplicated_usage_is_what_claude_code_itself_counted(name: str) -> None:
    path = transcript(name)
    state = last_cost_state(path)
    assert deduplicated_usage(path) == cost_state_tokens(state)
    # ...and the catalogue prices it as Claude Code does: the estimate equals its cost-state.
    lines = [raw for raw in path.read_bytes().splitlines() if b'"type":"cost-state"' not in raw]
    counter = cost.CostCounter(cost.load_prices())
    for raw in lines:
        counter.add_text(raw)
    estimate = counter.report()
    assert estimate.source == "estimate"
    assert estimate.usd == pytest.approx(state["totalCostUSD"], abs=1e-9)


def test_compaction_call_is_counted_from_cost_state_and_nothing_goes_down() -> None:
    counter = cost.CostCounter(cost.load_prices())
    figures: list[float] = []
    kinds: list[str] = []
    for raw in IJ_BEFORE_CLEAR.read_bytes().splitlines():
        counter.add_text(raw)
        report = counter.report()
        assert report.usd is not None
        figures.append(report.usd)
        kinds.append(json.loads(raw)["type"] + "/" + str(json.loads(raw).get("subtype", "")))
    assert "system/compact_boundary" in kinds
    assert figures == sorted(figures)  # never down, through the compaction
    state = last_cost_state(IJ_BEFORE_CLEAR)
    assert deduplicated_usage(IJ_BEFORE_CLEAR)["input_tokens"] < 4000  # the transcript's part
    assert counter.report().usage.input_tokens == state["modelUsage"]["claude-opus-5-5"]["inputTokens"]  # fmt: skip
    assert figures[-1] == pytest.approx(state["totalCostUSD"])


def test_a_resumed_conversation_is_not_counted_twice() -> None:
    """k_resume: three claude processes on one conversation, each cost-state cumulative."""
    path = transcript("k_resume")
    states = [x for x in raw_lines(path) if x["type"] == "cost-state"]
    assert len(states) == 3 and len({s["startTime"] for s in states}) == 1
    report = count(path).report()
    assert report.usd == pytest.approx(max(s["totalCostUSD"] for s in states))


def test_clear_conversations_and_subagents_add_up_as_one_session() -> None:
    both = count(IJ_BEFORE_CLEAR, IJ_AFTER_CLEAR).report().to_json()
    assert both["usd"] == pytest.approx(last_cost_state(IJ_BEFORE_CLEAR)["totalCostUSD"])
    session = count(PARENT, SUBAGENT).report().to_json()
    expected = deduplicated_usage(PARENT, SUBAGENT)
    assert tokens_of(session) == expected
    assert session["usd"] == pytest.approx(opus_usd(expected))
    agent = session["by_agent"]["a0f2c7af82d1d7fd7"]
    assert tokens_of(agent) == deduplicated_usage(SUBAGENT)
    assert agent["usd"] == pytest.approx(opus_usd(deduplicated_usage(SUBAGENT)))
    assert set(count(PARENT).report().by_agent) == set()


# -- cost-state rules on made-up lines -----------------------------------------------------------


def assistant(message_id: str, model: str, tokens: tuple[int, int, int, int], **extra: Any) -> str:
    inp, out, read, write = tokens
    usage = {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read}
    usage["cache_creation_input_tokens"] = write
    body = {
        "type": "assistant",
        "uuid": str(uuid.uuid4()),
        "sessionId": "conv",
        "message": {"id": message_id, "model": model, "content": [{"type": "text", "text": "x"}],
                    "usage": usage},
        **extra,
    }  # fmt: skip
    return json.dumps(body)


def cost_state(usd: float, start: int, models: dict[str, tuple[int, int, int, int, float]],
               unknown: bool = False) -> str:  # fmt: skip
    usage = {
        m: {"inputTokens": t[0], "outputTokens": t[1], "cacheReadInputTokens": t[2],
            "cacheCreationInputTokens": t[3], "costUSD": t[4]}
        for m, t in models.items()
    }  # fmt: skip
    body = {"type": "cost-state", "sessionId": "conv", "totalCostUSD": usd, "startTime": start,
            "modelUsage": usage, "hasUnknownModelCost": unknown}  # fmt: skip
    return json.dumps(body)


def feed(lines: Iterable[str], prices: cost.Prices | None = None) -> list[cost.CostReport]:
    counter = cost.CostCounter(prices or cost.load_prices())
    reports = []
    for line in lines:
        counter.add_text(line)
        reports.append(counter.report())
    return reports


def test_a_later_lower_cost_state_of_the_same_tracker_does_not_lower_the_total() -> None:
    reports = feed([
        cost_state(1.0, 100, {"claude-opus-5-5": (1000, 10, 0, 0, 1.0)}),
        cost_state(0.25, 100, {"claude-opus-5-5": (200, 2, 0, 0, 0.25)}),
    ])  # fmt: skip
    assert [r.usd for r in reports] == [1.0, 1.0]
    assert reports[-1].usage.input_tokens == 1000


def test_a_new_tracker_after_a_restart_adds_to_the_total() -> None:
    reports = feed([
        cost_state(1.0, 100, {"claude-opus-5-5": (1000, 10, 0, 0, 1.0)}),
        cost_state(0.25, 200, {"claude-opus-5-5": (200, 2, 0, 0, 0.25)}),
    ])  # fmt: skip
    assert reports[-1].usd == pytest.approx(1.25)
    assert reports[-1].usage.input_tokens == 1200


def test_between_cost_states_the_new_responses_are_estimated_and_each_counted_once() -> None:
    opus = "claude-opus-5-5"
    lines = [
        assistant("m1", opus, (1000, 100, 0, 0)),
        assistant("m1", opus, (1000, 100, 0, 0)),  # the same response, a second content block
        cost_state(0.5, 100, {opus: (1000, 100, 0, 0, 0.5)}),  # Claude Code charged 0.5
        assistant("m2", opus, (2000, 0, 0, 0)),
        assistant("m2", opus, (2000, 0, 0, 0)),
    ]
    reports = feed(lines)
    assert reports[1].usd == pytest.approx(0.006)  # 1000 × $4 + 100 × $20 per million
    assert reports[2].usd == pytest.approx(0.5) and reports[2].source == "cost-state"
    assert reports[4].usd == pytest.approx(0.5 + 0.008) and reports[4].source == "estimate"
    assert reports[4].usage.input_tokens == 3000


def test_a_response_counts_at_the_largest_usage_its_lines_show() -> None:
    opus = "claude-opus-5-5"
    reports = feed([
        assistant("m1", opus, (1000, 1, 50, 0)),  # usage written while streaming...
        assistant("m1", opus, (1000, 90, 50, 0)),  # ...and final on the next block's line
        assistant("m1", opus, (1000, 90, 50, 0)),
    ])  # fmt: skip
    assert reports[-1].usage == cost.Usage(1000, 90, 50, 0)


def test_an_estimate_above_the_next_cost_state_is_kept_as_a_floor() -> None:
    dear = cost.load_prices({"claude-opus-5-5": cost.Price(100, 100, 100, 100)})
    reports = feed(
        [
            assistant("m1", "claude-opus-5-5", (10_000, 0, 0, 0)),  # $1 at the dear price
            cost_state(0.04, 100, {"claude-opus-5-5": (10_000, 0, 0, 0, 0.04)}),
        ],
        dear,
    )
    assert [r.usd for r in reports] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_free_is_zero_and_unknown_is_not() -> None:
    lines = [
        assistant("m1", "claude-opus-5-5", (1000, 0, 0, 0)),
        assistant("m2", "my-local-model", (5000, 500, 0, 0)),
    ]
    unknown = feed(lines)[-1]
    assert unknown.usd is None and unknown.unknown_models == ["my-local-model"]
    body = unknown.to_json()
    assert body["usd"] is None and body["by_model"]["my-local-model"]["usd"] is None
    assert body["by_model"]["claude-opus-5-5"]["usd"] == pytest.approx(0.004)

    free = cost.load_prices('{"my-local-model": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}}')  # fmt: skip
    price = free.get("my-local-model")
    assert price is not None and price.free
    report = feed(lines, free)[-1].to_json()
    assert report["usd"] == pytest.approx(0.004) and report["unknown_models"] == []
    assert report["by_model"]["my-local-model"] == {
        "input_tokens": 5000, "output_tokens": 500, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "usd": 0.0,
    }  # fmt: skip


def test_a_model_claude_code_could_not_price_is_unknown_unless_overridden() -> None:
    line = cost_state(0.01, 100, {"claude-opus-5-5": (1000, 0, 0, 0, 0.004), "mystery": (1000, 0, 0, 0, 0.006)}, unknown=True)  # fmt: skip
    report = feed([line])[-1]
    assert report.usd is None and report.unknown_models == ["mystery"]
    priced = cost.load_prices({"mystery": cost.Price(1, 1, 1, 1)})
    report = feed([line], priced)[-1]
    assert report.usd == pytest.approx(0.004 + 0.001)  # Claude Code's guess replaced by ours


def test_overrides_change_estimates_not_cost_state() -> None:
    # Cheaper than Claude Code's price: its cost-state lines then lift each estimate to theirs
    # (a dearer one would stay as the floor: see test_an_estimate_above_the_next_cost_state...).
    cheap = cost.load_prices({"claude-opus-5-5": cost.Price(0.1, 0.1, 0.1, 0.1)})
    estimated = count(PARENT, prices=cheap).report()
    assert estimated.usd == pytest.approx(sum(deduplicated_usage(PARENT).values()) / 1e7)
    authoritative = count(transcript("k_resume"), prices=cheap).report()
    assert authoritative.usd == pytest.approx(last_cost_state(transcript("k_resume"))["totalCostUSD"])  # fmt: skip


def test_overrides_from_a_file_and_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"x-model": {"input": 1, "output": 2, "cache_read": 0, "cache_write": 0}}')
    assert cost.load_prices(str(path)).get("x-model") == cost.Price(1, 2, 0, 0)
    with pytest.raises(cost.PriceError, match=r"model 'x': missing 'cache_write'"):
        cost.parse_overrides('{"x": {"input": 1, "output": 2, "cache_read": 0}}')
    with pytest.raises(cost.PriceError, match="output wants a number ≥ 0"):
        cost.parse_overrides('{"x": {"input": 1, "output": -2, "cache_read": 0, "cache_write": 0}}')
    with pytest.raises(cost.PriceError, match="cannot read"):
        cost.parse_overrides(str(tmp_path / "missing.json"))


@pytest.mark.parametrize(
    ("written", "catalogue"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4-0"),
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-sonnet-5-5[1m]", "claude-sonnet-5-5"),
    ],
)
def test_model_ids_find_their_catalogue_price(written: str, catalogue: str) -> None:
    prices = cost.load_prices()
    assert prices.get(written) is not None and prices.get(written) == prices.get(catalogue)


def test_the_ledger_survives_storage() -> None:
    counter = count(PARENT, SUBAGENT, transcript("k_resume"))
    again = cost.Ledger.from_json(json.loads(json.dumps(counter.ledger.to_json())))
    assert again.report(counter.prices) == counter.report()


# -- the command --------------------------------------------------------------------------------


def run_cost(*files: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / ".venv/bin/python"), "-m", "cli", "cost", *map(str, files)],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_cli_prints_the_figures_as_json() -> None:
    path = transcript("n_permissionrequest_allow_hook")
    result = run_cost(path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert list(out) == [*TOKEN_KEYS, "usd", "by_model", "by_agent", "unknown_models", "source"]
    state = last_cost_state(path)
    assert out["usd"] == pytest.approx(state["totalCostUSD"]) and out["source"] == "cost-state"
    assert tokens_of(out) == deduplicated_usage(path) == cost_state_tokens(state)


def test_cli_takes_all_files_as_one_session_with_overrides_from_the_environment() -> None:
    result = run_cost(PARENT, SUBAGENT, env={"CB_MODEL_PRICES": json.dumps(
        {"claude-opus-5-5": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}})})  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert tokens_of(out) == deduplicated_usage(PARENT, SUBAGENT)
    assert out["usd"] == 0.0 and out["source"] == "estimate"
    assert list(out["by_agent"]) == ["a0f2c7af82d1d7fd7"]


def test_cli_errors_say_what_to_do(tmp_path: Path) -> None:
    missing = run_cost(tmp_path / "nope.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bad = run_cost(PARENT, env={"CB_MODEL_PRICES": '{"m": {"input": 1}}'})
    assert (
        bad.returncode == 2 and "missing 'output'" in bad.stderr and "CB_MODEL_PRICES" in bad.stderr
    )


# -- through the relay ------------------------------------------------------------------------------


def lines_of(path: Path) -> list[LineRecord]:
    return list(read_lines(path.read_bytes()))


def send(server: RelayServer, acct: Account, session_id: str,
         batches: list[tuple[str, list[LineRecord]]]) -> None:  # fmt: skip
    async def run() -> None:
        async with mac(server, acct.device_token) as link:
            for conversation_id, lines in batches:
                await link.send_lines(session_id, conversation_id, lines, cwd="/w")

    asyncio.run(run())


def get(client: httpx.Client, url: str, **params: Any) -> Any:
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_relay_keeps_each_sessions_cost_as_lines_arrive(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    parent, sub = lines_of(PARENT), lines_of(SUBAGENT)
    # Batches of 5: the repeated lines 19 and 20 (one response) fall into different batches.
    batches = [("b9a49076-7ef0-4409-b3eb-ff11c5c634e6", parent[i : i + 5]) for i in range(0, len(parent), 5)]  # fmt: skip
    batches += [("agent-a0f2c7af82d1d7fd7", sub), ("agent-a0f2c7af82d1d7fd7", sub)]
    send(relay, account, session_id, batches)
    expected = count(PARENT, SUBAGENT).report().to_json()
    with phone_client(relay, account.phone_token) as client:
        body = get(client, f"/api/sessions/{session_id}/cost")
        assert body.pop("session_id") == session_id
        assert body == expected
        assert tokens_of(body) == deduplicated_usage(PARENT, SUBAGENT)
        assert body["usd"] == pytest.approx(opus_usd(deduplicated_usage(PARENT, SUBAGENT)))
        assert list(body["by_agent"]) == ["a0f2c7af82d1d7fd7"]
        # The listing carries the compact form (filled after the commit: allow it a moment).
        summary = {"usd": expected["usd"], "tokens": sum(tokens_of(expected).values()), "source": "estimate"}  # fmt: skip
        deadline = time.monotonic() + 5
        while True:
            listed = {s["id"]: s for s in get(client, "/api/sessions")["sessions"]}
            if listed[session_id]["cost"] == summary or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert listed[session_id]["cost"] == summary
        assert get(client, f"/api/sessions/{session_id}")["cost"] == summary
        costs = get(client, "/api/costs", ids=f"{session_id},no-such-session")["costs"]
        assert list(costs) == [session_id] and costs[session_id] == expected


def test_the_relay_follows_cost_state_and_never_lowers_it(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    path = transcript("k_resume")
    state = last_cost_state(path)
    lower = json.dumps({**state, "totalCostUSD": 0.001, "modelUsage": {}})
    extra = LineRecord(offset=path.stat().st_size + 100, text=lower, uuid=None)
    send(relay, account, session_id, [("a310e412", lines_of(path)), ("a310e412", [extra])])
    with phone_client(relay, account.phone_token) as client:
        body = get(client, f"/api/sessions/{session_id}/cost")
        assert body["usd"] == pytest.approx(state["totalCostUSD"])
        assert body["source"] == "cost-state"
        everything = get(client, "/api/costs")["costs"]
        assert everything[session_id]["usd"] == body["usd"]
        missing = client.get(f"/api/sessions/{uuid.uuid4()}/cost")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_session"


def test_costs_need_a_phone_login(relay: RelayServer, account: Account) -> None:
    with phone_client(relay, None) as client:
        assert client.get("/api/costs").status_code == 401
    with phone_client(relay, account.device_token) as client:
        assert client.get("/api/costs").status_code in (401, 403)


def test_every_node_on_postgres_lists_the_cost_of_lines_another_node_took(
    postgres: PostgresCluster, make_relay: Any
) -> None:
    url = postgres.new_database("cost")
    macs, phones = make_relay(database_url=url), make_relay(database_url=url)
    account = macs.account()
    session_id = str(uuid.uuid4())
    with phone_client(phones, account.phone_token) as client:
        get(client, "/api/sessions")  # the phone's node has listed before the lines came
        send(
            macs, account, session_id, [("b9a49076-7ef0-4409-b3eb-ff11c5c634e6", lines_of(PARENT))]
        )
        expected = count(PARENT).report().to_json()
        summary = {"usd": expected["usd"], "tokens": sum(tokens_of(expected).values()), "source": "estimate"}  # fmt: skip
        listed = {s["id"]: s for s in get(client, "/api/sessions")["sessions"]}
        assert listed[session_id]["cost"] == summary
        assert get(client, f"/api/sessions/{session_id}")["cost"] == summary
        body = get(client, f"/api/sessions/{session_id}/cost")
        assert body.pop("session_id") == session_id and body == expected
