"""relay.convert: transcript lines to display events, checked against real 2.1.328 lines."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.convert import (
    DEFAULT_LIMITS,
    UNKNOWN_AGENT_ID,
    Conversion,
    ConversionLimits,
    convert_line,
    is_handled,
    unwrap_pasted,
)
from tests.support.paths import FIXTURES
from wire import config as relay_config
from wire import tools as tools_module
from wire.protocol import DisplayEvent, EventKind, MarkerKind

TRANSCRIPTS = FIXTURES / "transcripts"
SCHEMA = FIXTURES / "transcript_schema.txt"
SUBAGENT_ID = "a0f2c7af82d1d7fd7"


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def fixture_files() -> list[Path]:
    return sorted(TRANSCRIPTS.glob("*.jsonl"))


def scenario_files(scenario: str) -> list[Path]:
    """The main transcripts of a scenario (the part of the file name before ``__``)."""
    return [
        path
        for path in fixture_files()
        if path.name.split("__")[0] == scenario and "__subagent__" not in path.name
    ]


@cache
def converted(path: Path) -> list[tuple[dict[str, Any], Conversion]]:
    result = []
    for raw in path.read_bytes().splitlines():
        result.append((json.loads(raw), convert_line(raw)))
    return result


def events_of(*paths: Path) -> list[DisplayEvent]:
    return [event for path in paths for _, conv in converted(path) for event in conv.events]


def scenario_events(scenario: str) -> list[DisplayEvent]:
    files = scenario_files(scenario)
    assert files, f"no fixture for scenario {scenario}"
    return events_of(*files)


def markers(events: list[DisplayEvent], kind: MarkerKind) -> list[DisplayEvent]:
    return [e for e in events if e.kind is EventKind.MARKER and e.marker is kind]


def sub_of(line: dict[str, Any]) -> str:
    """The subtype a line is listed under in transcript_schema.txt."""
    kind = line["type"]
    if kind == "attachment":
        return str(line["attachment"]["type"])
    if kind == "system":
        return str(line.get("subtype", ""))
    if kind in ("user", "assistant"):
        content = line["message"]["content"]
        if isinstance(content, str):
            return "str"
        return str(content[0]["type"])
    return ""


def line(**fields: Any) -> str:
    return json.dumps(fields)


def user_line(content: Any, **fields: Any) -> str:
    return line(
        type="user",
        uuid="u-1",
        timestamp="2026-11-29T21:00:00.000Z",
        sessionId="conv-1",
        message={"role": "user", "content": content},
        **fields,
    )


def assistant_line(content: Any, **fields: Any) -> str:
    message = {"id": "msg_1", "role": "assistant", "model": "claude-x", "content": content}
    return line(
        type="assistant",
        uuid="a-1",
        timestamp="2026-11-29T21:00:01.000Z",
        sessionId="conv-1",
        message=message,
        **fields,
    )


def only_unreadable(conv: Conversion) -> DisplayEvent:
    assert len(conv.events) == 1, conv.events
    event = conv.events[0]
    assert event.kind is EventKind.MARKER
    assert event.marker is MarkerKind.UNREADABLE
    assert event.text.startswith("A transcript line could not be read")
    return event


# ---------------------------------------------------------------------------
# Every fixture, every line type
# ---------------------------------------------------------------------------


def test_fixtures_exist() -> None:
    names = {path.name.split("__")[0] for path in fixture_files()}
    assert {"d_bash_permission", "ij_clear_compact", "m_subagent"} <= names


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name[:40])
def test_every_fixture_line_converts_without_unreadable(path: Path) -> None:
    for raw in path.read_bytes().splitlines():
        for conv in (convert_line(raw), convert_line(raw.decode("utf-8"))):
            assert not markers(conv.events, MarkerKind.UNREADABLE), raw[:200]
            assert conv.facts.line_type == json.loads(raw)["type"]


def schema_headings() -> set[tuple[str, str]]:
    """The ``## type=X sub=Y`` headings of transcript_schema.txt (sidechain variants folded)."""
    text = SCHEMA.read_text(encoding="utf-8")
    found = set()
    for match in re.finditer(r"^## type=(\S+) sub=(.*?)\s+\(n=\d+\)$", text, re.M):
        sub = match.group(2).removesuffix("(sidechain)").strip()
        found.add((match.group(1), sub))
    return found


def fixture_kinds() -> set[tuple[str, str]]:
    return {(data["type"], sub_of(data)) for path in fixture_files() for data, _ in converted(path)}


def test_schema_lists_the_known_kinds() -> None:
    headings = schema_headings()
    # The parser must really read the file: these headings are in it.
    assert ("system", "compact_boundary") in headings
    assert ("attachment", "hook_permission_decision") in headings
    assert ("user", "tool_result") in headings
    assert ("cost-state", "") in headings
    assert len(headings) >= 30


def test_every_schema_kind_is_in_the_fixtures() -> None:
    missing = schema_headings() - fixture_kinds()
    assert not missing


def test_every_schema_and_fixture_kind_has_an_explicit_entry() -> None:
    kinds = schema_headings() | fixture_kinds()
    unhandled = sorted(kind for kind in kinds if not is_handled(*kind))
    assert not unhandled


def test_is_handled_rejects_what_has_no_entry() -> None:
    assert not is_handled("xyz")
    assert not is_handled("attachment", "no_such_attachment")
    assert not is_handled("system", "no_such_subtype")
    assert not is_handled("user", "no_such_block")
    assert is_handled("assistant", "thinking")
    assert is_handled("assistant", "redacted_thinking")


def test_sidechain_kinds_are_in_the_fixtures() -> None:
    (subagent,) = TRANSCRIPTS.glob("m_subagent__subagent__agent-*.jsonl")
    lines = [data for data, _ in converted(subagent)]
    assert any(d["type"] == "assistant" and d.get("isSidechain") is True for d in lines)


def test_events_carry_timestamp_and_uuid_of_their_line() -> None:
    checked = 0
    for path in fixture_files():
        for data, conv in converted(path):
            for event in conv.events:
                assert event.uuid == data.get("uuid")
                assert event.timestamp == data.get("timestamp")
                checked += 1
    assert checked > 100


def test_conversation_id_is_the_line_session_id() -> None:
    (path,) = scenario_files("b_idle")
    for data, conv in converted(path):
        assert conv.facts.conversation_id == data.get("sessionId")
        assert conv.facts.uuid == data.get("uuid")


# ---------------------------------------------------------------------------
# Specific expectations on the real transcripts
# ---------------------------------------------------------------------------


def test_bash_tool_use_and_linked_result() -> None:
    events = scenario_events("d_bash_permission")
    uses = [e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "Bash"]
    assert uses
    first = uses[0]
    assert first.summary == "touch bash_made.txt && echo hi"
    assert first.input == {
        "command": "touch bash_made.txt && echo hi",
        "description": "Create a file and print hi",
    }
    assert first.tool_use_id and first.tool_use_id.startswith("toolu_")
    assert first.message_id and first.model == "claude-opus-5-5"
    results = [e for e in events if e.kind is EventKind.TOOL_RESULT]
    linked = [e for e in results if e.tool_use_id == first.tool_use_id]
    assert len(linked) == 1
    assert linked[0].text == "hi"
    assert linked[0].is_error is False
    assert linked[0].truncated is False


def test_rejected_tool_use_is_recognisable() -> None:
    events = scenario_events("d_bash_permission")
    rejected = markers(events, MarkerKind.REJECTED)
    assert len(rejected) == 3  # RUN_BASH two, three and four were rejected
    errors = {e.tool_use_id for e in events if e.kind is EventKind.TOOL_RESULT and e.is_error}
    assert {m.tool_use_id for m in rejected} == errors
    # An accepted tool use has no REJECTED marker.
    accepted = next(e for e in events if e.kind is EventKind.TOOL_RESULT and not e.is_error)
    assert accepted.tool_use_id not in {m.tool_use_id for m in rejected}


def test_rejected_marker_follows_its_result_on_the_same_line() -> None:
    (path,) = scenario_files("d_bash_permission")
    for data, conv in converted(path):
        if data.get("toolUseResult") == "User rejected tool use":
            kinds = [(e.kind, e.marker) for e in conv.events]
            assert kinds == [
                (EventKind.TOOL_RESULT, None),
                (EventKind.MARKER, MarkerKind.REJECTED),
            ]


def test_failed_tool_is_an_error_but_not_a_rejection() -> None:
    events = scenario_events("n_permissionrequest_allow_hook")
    failed = [e for e in events if e.kind is EventKind.TOOL_RESULT and e.is_error]
    assert [e.text for e in failed] == ["Exit code 3"]
    assert not markers(events, MarkerKind.REJECTED)


def test_interrupted_markers() -> None:
    events = scenario_events("h_interrupt")
    interrupted = markers(events, MarkerKind.INTERRUPTED)
    assert [m.text for m in interrupted] == [
        "Interrupted by user",
        "Interrupted by user during a tool use",
    ]
    # The interrupt text is never shown as if the person had typed it.
    assert not any("[Request interrupted" in e.text for e in events if e.kind is EventKind.USER)


def test_compaction_marker_and_no_summary_prompt() -> None:
    events = scenario_events("ij_clear_compact")
    assert [m.text for m in markers(events, MarkerKind.COMPACTED)] == ["📦 context compacted"]
    users = [e.text for e in events if e.kind is EventKind.USER]
    assert not any(text.startswith("This session is being continued") for text in users)
    assert "hello three" in users


def test_clear_marker_appears_once() -> None:
    events = scenario_events("ij_clear_compact")
    cleared = markers(events, MarkerKind.CLEARED)
    assert [m.text for m in cleared] == ["🧹 /clear · conversation cleared"]


def test_local_commands_are_readable() -> None:
    events = scenario_events("ij_clear_compact")
    local = [m.text for m in markers(events, MarkerKind.LOCAL_COMMAND)]
    assert "/compact" in local
    output = next(text for text in local if text.startswith("Compacted"))
    assert "\x1b" not in output
    assert "<local-command-stdout>" not in output
    assert output.startswith("Compacted (ctrl+o to see full summary)\nPreCompact")

    model = [m.text for m in markers(scenario_events("l_model"), MarkerKind.LOCAL_COMMAND)]
    assert model == [
        "/model",
        "Set model to `Opus 5.5` and saved as your default for new sessions",
    ]


def test_hook_allowed_marker() -> None:
    events = scenario_events("n_permissionrequest_allow_hook")
    allowed = markers(events, MarkerKind.HOOK_ALLOWED)
    assert len(allowed) == 3
    assert all(m.text == "Allowed by PermissionRequest hook" for m in allowed)
    bash = next(e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "Bash")
    assert allowed[0].tool_use_id == bash.tool_use_id


def test_ask_user_question() -> None:
    events = scenario_events("f_ask_question")
    asks = [e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "AskUserQuestion"]
    assert [e.summary for e in asks] == [
        "Which colour should the widget be?",
        "Which colour should the widget be? (+1 more)",
    ]
    assert asks[0].input is not None
    assert asks[0].input["questions"][0]["options"][0]["label"] == "Red"


def test_exit_plan_mode() -> None:
    events = scenario_events("g_plan_approval")
    plans = [e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "ExitPlanMode"]
    assert len(plans) == 1
    assert plans[0].summary == "plan"
    assert plans[0].input == {
        "plan": "# Plan\n\n1. Create hello.txt\n2. Run echo hi\n3. Report back"
    }
    search = next(e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "ToolSearch")
    assert search.summary == "select:ExitPlanMode"
    loaded = next(
        e for e in events if e.kind is EventKind.TOOL_RESULT and e.tool_use_id == search.tool_use_id
    )
    assert loaded.text == "[tool loaded: ExitPlanMode]"


def test_subagent_events_carry_agent_id() -> None:
    (path,) = TRANSCRIPTS.glob("m_subagent__subagent__agent-*.jsonl")
    events = events_of(path)
    assert {e.kind for e in events} >= {
        EventKind.USER,
        EventKind.TOOL_USE,
        EventKind.TOOL_RESULT,
        EventKind.ASSISTANT,
    }
    assert all(e.agent_id == SUBAGENT_ID for e in events)
    assert all(conv.facts.agent_id == SUBAGENT_ID for _, conv in converted(path))
    # The main transcript's own events are not a subagent's.
    assert all(e.agent_id is None for e in scenario_events("m_subagent"))


def test_agent_tool_and_task_notification() -> None:
    events = scenario_events("m_subagent")
    agent = next(e for e in events if e.kind is EventKind.TOOL_USE and e.tool == "Agent")
    assert agent.summary == "general-purpose: Inspect folder"
    (note,) = markers(events, MarkerKind.TASK_NOTIFICATION)
    assert note.text == 'Agent "Inspect folder" finished\nSubagent report: the folder was listed.'
    assert note.tool_use_id == agent.tool_use_id
    assert not any("<task-notification>" in e.text for e in events)


def test_assistant_text() -> None:
    events = scenario_events("b_idle")
    (answer,) = [e for e in events if e.kind is EventKind.ASSISTANT]
    assert answer.text == "Hello! This is the mock API. How can I help?"
    assert answer.model == "claude-opus-5-5"
    assert answer.message_id == "msg_mock_f7cfdc696fcd41d6903f"


def test_user_prompts() -> None:
    users = [e.text for e in scenario_events("d_bash_permission") if e.kind is EventKind.USER]
    assert users == ["RUN_BASH one", "RUN_BASH two", "RUN_BASH three", "RUN_BASH four"]


def test_meta_lines_make_no_event() -> None:
    (path,) = scenario_files("l_model")
    metas = [conv for data, conv in converted(path) if data.get("isMeta") is True]
    assert metas
    assert all(conv.events == [] for conv in metas)


def test_synthetic_no_response_is_hidden() -> None:
    (path,) = scenario_files("k_resume")
    synthetic = [
        conv
        for data, conv in converted(path)
        if data["type"] == "assistant" and data["message"]["model"] == "<synthetic>"
    ]
    assert len(synthetic) == 1
    assert synthetic[0].events == []
    assert synthetic[0].facts.model is None


NOISE_TYPES = {
    "api-request",
    "api-request-blob",
    "api-request-shape",
    "atis-latch",
    "cost-state",
    "file-history-delta",
    "file-history-snapshot",
    "last-prompt",
    "mode",
    "permission-mode",
    "queue-operation",
    "tools-used",
}
NOISE_SYSTEM = {"stop_hook_summary", "turn_duration"}


def test_noise_lines_make_no_events() -> None:
    seen: set[str] = set()
    for path in fixture_files():
        for data, conv in converted(path):
            kind = data["type"]
            noise = (
                kind in NOISE_TYPES
                or (kind == "system" and data["subtype"] in NOISE_SYSTEM)
                or (
                    kind == "attachment"
                    and data["attachment"]["type"] != "hook_permission_decision"
                )
            )
            if noise:
                assert conv.events == [], data
                seen.add(kind)
    assert seen >= NOISE_TYPES | {"system", "attachment"}


def test_facts_of_noise_and_assistant_lines() -> None:
    (path,) = scenario_files("n_permissionrequest_allow_hook")
    facts = [conv.facts for _, conv in converted(path)]
    cost = [f.cost_state for f in facts if f.cost_state is not None]
    assert cost and cost[0]["type"] == "cost-state"
    assert cost[0]["totalCostUSD"] == pytest.approx(0.0727)
    assert {f.permission_mode for f in facts if f.line_type == "permission-mode"} == {"default"}
    assert [f.tools_used for f in facts if f.tools_used is not None][-1] == [
        "Bash",
        "Write",
        "AskUserQuestion",
    ]
    usage = [f for f in facts if f.usage is not None]
    assert usage and all(f.line_type == "assistant" for f in usage)
    assert usage[0].usage is not None and usage[0].usage["output_tokens"] > 0
    assert usage[0].message_id and usage[0].model == "claude-opus-5-5"
    touched = [p for f in facts for p in f.files_touched]
    assert "/opt/realclaude/hello.txt" in touched


def test_model_attachment_fact() -> None:
    (path,) = scenario_files("b_idle")
    models = [conv.facts.model for data, conv in converted(path) if data["type"] == "attachment"]
    assert "claude-opus-5-5" in models


# ---------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------


def tool_result_line(content: Any, is_error: bool = False) -> str:
    block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content}
    if is_error:
        block["is_error"] = True
    return user_line([block])


def test_tool_result_truncated() -> None:
    limits = ConversionLimits(tool_result_max_chars=100, tool_input_max_chars=100)
    (event,) = convert_line(tool_result_line("x" * 10_000), limits).events
    assert event.kind is EventKind.TOOL_RESULT
    assert len(event.text) == 100
    assert event.full_length == 10_000
    assert event.truncated is True


def test_tool_result_whole_without_the_cut() -> None:
    # "Show all" converts the line again with cut=False: the whole text, the same event otherwise.
    limits = ConversionLimits(tool_result_max_chars=100, tool_input_max_chars=100)
    text = "".join(f"line {n}\n" for n in range(5_000))
    (cut,) = convert_line(tool_result_line(text), limits).events
    (whole,) = convert_line(tool_result_line(text), limits, cut=False).events
    assert cut.truncated is True and len(cut.text) == 100
    assert whole.text == text and whole.truncated is False
    assert whole.full_length == cut.full_length == len(text)
    assert (whole.kind, whole.tool_use_id) == (cut.kind, cut.tool_use_id)
    # The default still cuts at the setting's limit.
    (default,) = convert_line(tool_result_line(text)).events
    assert default.truncated is True and len(default.text) == DEFAULT_LIMITS.tool_result_max_chars


def test_short_tool_result_not_truncated() -> None:
    (event,) = convert_line(tool_result_line("short")).events
    assert event.text == "short"
    assert event.truncated is False
    assert event.full_length == 5


def test_tool_result_blocks_joined_and_images_shown() -> None:
    content = [
        {"type": "text", "text": "first"},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
        {"type": "text", "text": "second"},
    ]
    (event,) = convert_line(tool_result_line(content, is_error=True)).events
    assert event.text == "first\n[image]\nsecond"
    assert event.is_error is True
    assert event.tool_use_id == "toolu_1"


def test_tool_input_long_strings_truncated() -> None:
    limits = ConversionLimits(tool_result_max_chars=100, tool_input_max_chars=50)
    tool_input = {
        "file_path": "/tmp/a.txt",
        "content": "c" * 10_000,
        "edits": [{"old_string": "o" * 60, "new_string": "new"}],
        "count": 3,
    }
    block = {"type": "tool_use", "id": "toolu_w", "name": "Write", "input": tool_input}
    conv = convert_line(assistant_line([block]), limits)
    (event,) = conv.events
    assert event.kind is EventKind.TOOL_USE
    assert isinstance(event.input, dict)
    assert event.input["file_path"] == "/tmp/a.txt"
    assert len(event.input["content"]) == 50
    assert event.input["edits"][0]["old_string"] == "o" * 50
    assert event.input["edits"][0]["new_string"] == "new"
    assert event.input["count"] == 3
    assert event.truncated is True
    assert event.summary == "/tmp/a.txt"
    assert conv.facts.files_touched == ["/tmp/a.txt"]


def test_short_tool_input_kept_whole() -> None:
    block = {
        "type": "tool_use",
        "id": "toolu_e",
        "name": "Edit",
        "input": {"file_path": "/a", "old_string": "old", "new_string": "new"},
    }
    (event,) = convert_line(assistant_line([block])).events
    assert event.input == {"file_path": "/a", "old_string": "old", "new_string": "new"}
    assert event.truncated is False


def test_huge_line_converts_and_is_truncated() -> None:
    size = 5 * 1024 * 1024
    raw = tool_result_line("y" * size).encode()
    assert len(raw) > size
    (event,) = convert_line(raw).events
    assert event.kind is EventKind.TOOL_RESULT
    assert len(event.text) == ConversionLimits().tool_result_max_chars
    assert event.full_length == size
    assert event.truncated is True


def test_limits_from_config() -> None:
    cfg = relay_config.load({"tool_result_max_chars": 123, "tool_input_max_chars": 45}, environ={})
    assert ConversionLimits.from_config(cfg) == ConversionLimits(123, 45)
    default = relay_config.load(environ={})
    assert ConversionLimits.from_config(default) == ConversionLimits()


def test_negative_limits_refused() -> None:
    with pytest.raises(ValueError):
        ConversionLimits(tool_result_max_chars=-1)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"type": "user", "message": ', "not valid JSON"),
        ("[1, 2, 3]", "not a JSON object"),
        ("42", "not a JSON object"),
        ("", "empty line"),
        ("   \n", "empty line"),
        (b"", "empty line"),
        (b'{"type": "user", "x": "\xff\xfe"}', "not valid UTF-8"),
        ('{"uuid": "x"}', "no line type"),
        ('{"type": "xyz"}', "unknown line type 'xyz'"),
        (user_line(42), "unexpected shape of a 'user' line"),
        (user_line([7]), "unexpected shape of a 'user' line"),
        (user_line([{"type": "text", "text": 5}]), "unexpected shape of a 'user' line"),
        (user_line([{"type": "tool_result", "content": 5}]), "unexpected shape of a 'user' line"),
        (line(type="user"), "unexpected shape of a 'user' line"),
        (assistant_line(None), "unexpected shape of a 'assistant' line"),
        (
            assistant_line([{"type": "tool_use", "name": "Bash", "input": "ls"}]),
            "unexpected shape of a 'assistant' line",
        ),
        (
            assistant_line([{"type": "tool_use", "name": 3, "input": {}}]),
            "unexpected shape of a 'assistant' line",
        ),
        (line(type="attachment", attachment="x"), "unexpected shape of a 'attachment' line"),
    ],
)
def test_bad_input_gives_one_unreadable_marker(raw: str | bytes, reason: str) -> None:
    event = only_unreadable(convert_line(raw))
    assert event.text == f"A transcript line could not be read ({reason})"


def test_unreadable_known_line_keeps_its_identity() -> None:
    conv = convert_line(user_line(42))
    event = only_unreadable(conv)
    assert event.uuid == "u-1"
    assert event.timestamp == "2026-11-29T21:00:00.000Z"
    assert conv.facts.line_type == "user"
    assert conv.facts.conversation_id == "conv-1"
    assert convert_line("{oops").facts.line_type is None


def test_unexpected_error_inside_a_handler_becomes_unreadable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Shape checks cannot foresee everything; whatever a malformed line makes the code raise
    # must end as a marker, never as an exception in the relay.
    def broken(tool_input: Any) -> str:
        raise TypeError("boom")

    monkeypatch.setitem(tools_module._SUMMARIZERS, "Bash", broken)
    raw = assistant_line([{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}])
    event = only_unreadable(convert_line(raw))
    assert event.text.endswith("(unexpected shape of a 'assistant' line)")


def test_deeply_nested_line_does_not_raise() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    only_unreadable(convert_line('{"type": "user", "message": ' + deep + "}"))


# ---------------------------------------------------------------------------
# Line kinds the fixtures do not show
# ---------------------------------------------------------------------------


def test_thinking_blocks() -> None:
    content = [
        {"type": "thinking", "thinking": "let me think", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "answer"},
    ]
    events = convert_line(assistant_line(content)).events
    assert [(e.kind, e.text) for e in events] == [
        (EventKind.THINKING, "let me think"),
        (EventKind.THINKING, ""),
        (EventKind.ASSISTANT, "answer"),
    ]
    assert all(e.message_id == "msg_1" and e.model == "claude-x" for e in events)


def test_api_error_line() -> None:
    raw = assistant_line(
        [{"type": "text", "text": "API Error: 529 Overloaded"}], isApiErrorMessage=True
    )
    (event,) = convert_line(raw).events
    assert event.marker is MarkerKind.API_ERROR
    assert event.text == "API Error: 529 Overloaded"


def test_hook_denied_marker() -> None:
    attachment = {
        "type": "hook_permission_decision",
        "decision": "deny",
        "toolUseID": "toolu_9",
        "hookEvent": "PermissionRequest",
    }
    (event,) = convert_line(line(type="attachment", uuid="x", attachment=attachment)).events
    assert event.marker is MarkerKind.HOOK_DENIED
    assert event.text == "Denied by PermissionRequest hook"
    assert event.tool_use_id == "toolu_9"


def test_system_local_command_clear_is_not_a_second_marker() -> None:
    raw = line(
        type="system",
        subtype="local_command",
        content="<local-command-stdout></local-command-stdout>",
        commandRun={"command": "clear", "args": ""},
    )
    assert convert_line(raw).events == []
    (cleared,) = convert_line(user_line("<command-name>/clear</command-name>")).events
    assert cleared.marker is MarkerKind.CLEARED


def test_unknown_system_subtype_with_text_is_info() -> None:
    raw = line(type="system", subtype="something_new", content="\x1b[1mHeads up\x1b[0m")
    (event,) = convert_line(raw).events
    assert event.marker is MarkerKind.INFO
    assert event.text == "Heads up"
    assert convert_line(line(type="system", subtype="something_new")).events == []


def test_unknown_attachment_type_is_quiet() -> None:
    raw = line(type="attachment", attachment={"type": "brand_new_context", "x": 1})
    conv = convert_line(raw)
    assert conv.events == []
    assert conv.facts.line_type == "attachment"


def test_title_lines() -> None:
    assert convert_line(line(type="custom-title", customTitle="My work")).facts.title == "My work"
    assert convert_line(line(type="ai-title", aiTitle="Fix bug")).facts.title == "Fix bug"
    assert convert_line(line(type="summary", summary="Old one", leafUuid="l")).facts.title == (
        "Old one"
    )
    assert convert_line(line(type="custom-title", customTitle="t")).events == []


def test_rejection_then_interrupt_then_new_prompt_in_one_message() -> None:
    # The API-side shape 2.1.328 sends after a rejection: all three blocks in one user message.
    content = [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_r",
            "is_error": True,
            "content": "The user doesn't want to proceed with this tool use. Stop.",
        },
        {"type": "text", "text": "[Request interrupted by user for tool use]"},
        {"type": "text", "text": "do something else"},
        {"type": "image", "source": {}},
    ]
    events = convert_line(user_line(content)).events
    assert [(e.kind, e.marker) for e in events] == [
        (EventKind.TOOL_RESULT, None),
        (EventKind.MARKER, MarkerKind.REJECTED),
        (EventKind.MARKER, MarkerKind.INTERRUPTED),
        (EventKind.USER, None),
    ]
    assert events[-1].text == "do something else\n[image]"


def test_system_reminder_block_is_not_a_prompt() -> None:
    content = [
        {"type": "text", "text": "<system-reminder>\nstuff\n</system-reminder>"},
        {"type": "text", "text": "real prompt"},
    ]
    (event,) = convert_line(user_line(content)).events
    assert event.kind is EventKind.USER
    assert event.text == "real prompt"


def test_command_with_args_and_bash_mode() -> None:
    text = "<command-name>/model</command-name>\n<command-args>opus</command-args>"
    (event,) = convert_line(user_line(text)).events
    assert (event.marker, event.text) == (MarkerKind.LOCAL_COMMAND, "/model opus")
    (bash,) = convert_line(user_line("<bash-input>ls -la</bash-input>")).events
    assert bash.text == "! ls -la"
    assert convert_line(user_line("<local-command-stdout></local-command-stdout>")).events == []


def test_sidechain_without_agent_id() -> None:
    (event,) = convert_line(user_line("sub prompt", isSidechain=True)).events
    assert event.agent_id == UNKNOWN_AGENT_ID


def test_same_line_same_result() -> None:
    (path,) = scenario_files("n_permissionrequest_allow_hook")
    raw = path.read_text(encoding="utf-8").splitlines()[42]
    assert convert_line(raw) == convert_line(raw)


def test_the_bridges_own_marker_lines_become_markers() -> None:
    from wire.markers import bridge_line

    line = bridge_line(MarkerKind.REVIVED, "🔁 reopened", "2026-11-30T00:00:00Z", "m-1")
    events = convert_line(line).events
    assert [(e.kind, e.marker, e.text, e.uuid) for e in events] == [
        (EventKind.MARKER, MarkerKind.REVIVED, "🔁 reopened", "m-1")
    ]
    forged = '{"type": "bridge-marker", "marker": "user", "text": "x"}'
    assert [e.marker for e in convert_line(forged).events] == [MarkerKind.UNREADABLE]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_a_line_with_a_non_finite_number_is_unreadable_not_an_event_a_phone_cannot_parse(
    number: str,
) -> None:
    text = (
        '{"type":"assistant","uuid":"u1","message":{"role":"assistant","content":'
        '[{"type":"tool_use","id":"t1","name":"Bash","input":{"timeout":' + number + "}}]}}"
    )
    events = convert_line(text).events
    assert [e.marker for e in events] == [MarkerKind.UNREADABLE]
    assert "not valid JSON" in events[0].text


# ---------------------------------------------------------------------------
# Facts the features read instead of parsing a line again
# ---------------------------------------------------------------------------


@settings(max_examples=100, derandomize=True, database=None, deadline=None)
@given(summary=st.text(min_size=1), as_blocks=st.booleans(), subtype=st.text(max_size=30))
def test_the_compaction_summary_and_system_subtype_are_facts_of_the_parse(
    summary: str, as_blocks: bool, subtype: str
) -> None:
    content: Any = [{"type": "text", "text": summary}] if as_blocks else summary
    compact = {
        "type": "user",
        "isCompactSummary": True,
        "message": {"role": "user", "content": content},
    }
    facts = convert_line(json.dumps(compact)).facts
    assert facts.compact_summary == summary
    assert (
        convert_line(json.dumps({**compact, "isCompactSummary": False})).facts.compact_summary
        is None
    )
    system = {"type": "system", "subtype": subtype, "content": "x"}
    assert convert_line(json.dumps(system)).facts.subtype == subtype
    assert convert_line(json.dumps({**compact, "subtype": subtype})).facts.subtype is None


def test_the_captured_turn_ends_carry_their_subtype() -> None:
    subtypes = {
        convert_line(raw).facts.subtype
        for path in fixture_files()
        for raw in path.read_text(encoding="utf-8").splitlines()
        if raw.strip() and '"type":"system"' in raw
    }
    assert {"turn_duration"} <= subtypes or {"stop_hook_summary"} <= subtypes


@settings(max_examples=100, derandomize=True, database=None, deadline=None)
@given(
    text=st.text(),
    extra=st.dictionaries(st.text(max_size=8), st.integers() | st.text(), max_size=3),
)
def test_the_parsed_line_travels_with_its_conversion(text: str, extra: dict[str, Any]) -> None:
    body = {**extra, "type": "user", "message": {"role": "user", "content": text or "x"}}
    raw = json.dumps(body)
    assert convert_line(raw).line == json.loads(raw)
    assert convert_line("not json").line is None
    assert convert_line(json.dumps({"type": "user", "message": 3})).line is None  # unreadable


def test_a_prompt_claude_code_wrapped_as_pasted_content_shows_as_typed() -> None:
    # As the real 2.1.332 writes a long paste (every message the bridge types is one).
    text = "[claude-bridge handoff] This conversation continues earlier work.\n## Decisions"
    wrapped = f'\n\n<pasted_content id="3dd1">\n{text}\n</pasted_content id="3dd1">\n'
    line = json.dumps({"type": "user", "message": {"role": "user", "content": wrapped}})
    (event,) = convert_line(line).events
    assert (event.kind, event.text) == (EventKind.USER, text)
    # Words of the person's own around a paste: the prompt stays as Claude Code wrote it.
    mixed = f"please read this{wrapped}"
    assert unwrap_pasted(mixed) == mixed
    assert unwrap_pasted('<pasted_content id="a">\nx\n</pasted_content id="b">') != "x"


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(st.text(max_size=300), st.text(alphabet="0123456789abcdef", min_size=1, max_size=8))
def test_unwrapping_a_paste_gives_back_exactly_what_was_pasted(text: str, paste_id: str) -> None:
    wrapped = f'\n\n<pasted_content id="{paste_id}">\n{text}\n</pasted_content id="{paste_id}">\n'
    assert unwrap_pasted(wrapped) == text
