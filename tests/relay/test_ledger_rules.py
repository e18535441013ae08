"""relay.ledger_rules: a session's decisions ledger built from its stored events (captured and in
Claude Code 2.1.332's shapes), plus what the relay knows beside them."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import grants
from relay.ledger import (
    DECISION_KINDS,
    HeldMessage,
    Ledger,
    ModeChange,
    PendingCard,
    Pin,
    RelaySide,
    Source,
    Task,
    TaskList,
    anchor_seq,
    mode_changes,
    rule_from_card,
)
from relay.ledger_rules import ENTRY_MAX_CHARS, MAX_DECISIONS, build_ledger, source_texts
from relay.tool_answers import TYPED_PREFIX, TYPED_SUFFIX
from tests.support.transcripts import (
    assistant_line,
    converted,
    lines_of,
    marker_line,
    prompt_line,
    stored_events,
    tool_result_line,
    tool_use_line,
    transcript,
)
from wire.protocol import EventKind, MarkerKind, NumberedEvent

PROPERTIES = settings(
    max_examples=120,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
QUESTION = "Which colour should the widget be?"
ASK_INPUT = {
    "questions": [
        {
            "question": QUESTION,
            "header": "Colour",
            "multiSelect": False,
            "options": [{"label": "Red"}, {"label": "Blue"}],
        }
    ]
}
PLAN = "# Plan\n\n1. Create hello.txt\n2. Run echo hi\n3. Report back"
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). "
)
STOP = "STOP what you are doing and wait for the user to tell you how to proceed."
SAID = "To tell you how to proceed, the user said:\n"


def decisions(ledger: Ledger) -> list[tuple[str, str, str]]:
    return [(d.kind, d.text, d.context) for d in ledger.decisions]


def test_a_captured_answer_to_a_question() -> None:
    ledger = build_ledger(stored_events(transcript("f_ask_question")))
    # The second question card was dismissed (Esc): a rejection without words is no decision.
    assert decisions(ledger) == [("answer", "Blue", QUESTION)]
    decision = ledger.decisions[0]
    assert decision.source.at == "2026-11-29T21:35:26.389Z" and decision.id.startswith("e")


def test_a_captured_declined_plan_is_answered_by_the_next_prompt() -> None:
    ledger = build_ledger(stored_events(transcript("g_plan_approval")))
    assert decisions(ledger) == [("plan_rejected", "MAKE_PLAN again", PLAN)]


def test_a_captured_model_change() -> None:
    ledger = build_ledger(stored_events(transcript("l_model")))
    assert decisions(ledger) == [
        ("model", "Set model to `Opus 5.5` and saved as your default for new sessions", "")
    ]


def test_captured_sessions_without_decisions_have_none() -> None:
    # Permission cards answered once and rejections without words, a compaction, /clear.
    for scenario in ("d_bash_permission", "e_write_edit_permission", "ij_clear_compact"):
        assert build_ledger(stored_events(transcript(scenario))).decisions == ()


def test_a_typed_answer_a_plan_approved_and_a_rejection_with_words() -> None:
    events = stored_events(
        prompt_line("ASK_ME something"),
        tool_use_line("AskUserQuestion", ASK_INPUT, "t1"),
        tool_result_line("t1", f'{TYPED_PREFIX}"{QUESTION}"="Purple, with dots"{TYPED_SUFFIX}'),
        tool_use_line("ExitPlanMode", {"plan": PLAN}, "t2"),
        tool_result_line("t2", "User has approved exiting plan mode. You can now proceed."),
        tool_use_line("Bash", {"command": "npm install"}, "t3"),
        tool_result_line("t3", REJECTED + SAID + "use pnpm, not npm", is_error=True),
    )
    ledger = build_ledger(events)
    assert decisions(ledger) == [
        ("typed_answer", "Purple, with dots", QUESTION),
        ("plan_approved", PLAN, ""),
        ("rejected", "use pnpm, not npm", "Bash: npm install"),
    ]
    # The approved plan's source is the tool use that carries it.
    plan = ledger.decisions[1]
    assert plan.source.seq == next(e.seq for e in events if e.tool_use_id == "t2")


def test_a_plan_approved_with_its_text_in_the_result_is_that_text() -> None:
    edited = "# Plan\n\n1. Create hello.txt only"
    events = stored_events(
        tool_use_line("ExitPlanMode", {"plan": PLAN}, "t1"),
        tool_result_line(
            "t1",
            "User has approved your plan. You can now start coding.\n\n"
            f"## Approved Plan (edited by user):\n{edited}",
        ),
    )
    assert decisions(build_ledger(events)) == [("plan_approved", edited, "")]


def test_a_plan_rejected_with_words_or_declined_without_a_prompt() -> None:
    with_words = stored_events(
        tool_use_line("ExitPlanMode", {"plan": PLAN}, "t1"),
        tool_result_line("t1", REJECTED + SAID + "add a rollback step", is_error=True),
    )
    assert decisions(build_ledger(with_words)) == [("plan_rejected", "add a rollback step", "")]
    declined = stored_events(
        tool_use_line("ExitPlanMode", {"plan": PLAN}, "t1"),
        tool_result_line("t1", REJECTED + STOP, is_error=True),
        assistant_line("Understood."),
    )
    assert decisions(build_ledger(declined)) == [("plan_declined", PLAN, "")]


def test_rule_markers_of_the_agent_are_rules_but_a_grant_ending_with_its_process_is_not() -> None:
    grant = grants.Grant("g_0123456789ab", "tool", "Bash", "Bash", "c1", 1.0, 1.0)
    events = stored_events(
        marker_line(MarkerKind.GRANT, grants.given_line(grant)),
        marker_line(MarkerKind.ALLOW_ALL, "🔓 Allow all is on until the session ends: …"),
        marker_line(MarkerKind.GRANT, grants.ended_line([grant])),
        marker_line(MarkerKind.GRANT, grants.revoked_line(grant)),
        marker_line(MarkerKind.AUTO_PASSED, "Passed the trust dialog"),
    )
    kinds = decisions(build_ledger(events))
    assert [k for k, _, _ in kinds] == ["rule", "rule", "rule"]
    assert kinds[0][1] == grants.given_line(grant) and kinds[2][1] == grants.revoked_line(grant)


def test_what_the_relay_knows_beside_the_events() -> None:
    events = stored_events(transcript("f_ask_question"))
    at = "2026-11-29T21:35:27.000Z"
    rule = rule_from_card(
        "41",
        ["Yes, and always allow access to /tmp/work"],
        "Bash",
        "ls /tmp/work",
        Source(anchor_seq(events, at), at),
    )
    assert rule is not None and rule_from_card("42", ["Yes"], "Bash", "ls", Source(1, at)) is None
    relay = RelaySide(
        modes=(ModeChange("7", "acceptEdits", Source(2, at)),),
        rules=(rule,),
        pins=(Pin("c1", "Never push to main", Source(None, at)),),
        tasks=TaskList(
            (
                Task("1", "Write the parser", "completed"),
                Task("2", "Add parser tests", "in_progress"),
                Task("3", "Update the docs", "pending"),
            ),
            Source(5, at),
        ),
        card=PendingCard("k1", "question", "Which toppings do you want?", Source(9, at)),
        held=(HeldMessage("h1", "also add a dark mode", Source(8, at)),),
    )
    ledger = build_ledger(events, relay)
    assert decisions(ledger) == [
        ("mode", "acceptEdits", ""),
        ("answer", "Blue", QUESTION),
        ("rule", "Yes, and always allow access to /tmp/work", "Bash: ls /tmp/work"),
    ]
    assert [d.id for d in ledger.decisions] == ["m7", "e3.0", "a41"]
    assert [c.text for c in ledger.constraints] == ["Never push to main"]
    assert [(o.kind, o.text, o.status) for o in ledger.open_items] == [
        ("task", "Add parser tests", "in_progress"),
        ("task", "Update the docs", "pending"),
        ("held", "also add a dark mode", ""),
        ("card", "Which toppings do you want?", "question"),
    ]
    assert Ledger.from_json(ledger.to_json()) == ledger


def test_mode_changes_from_the_captured_permission_mode_facts() -> None:
    lines = converted(lines_of(transcript("f_ask_question"), transcript("g_plan_approval")))
    observed = [
        (str(record.offset), Source(None, None), conversion.facts.permission_mode)
        for record, conversion in lines
    ]
    changes, last = mode_changes(None, observed)
    # f_ask_question ran in default mode, g_plan_approval in plan: one change, where it happened.
    assert [c.mode for c in changes] == ["plan"] and last == "plan"
    first_plan = next(i for i, (_, _, mode) in enumerate(observed) if mode == "plan")
    assert changes[0].id == str(first_plan)
    assert mode_changes("plan", observed[first_plan:])[0] == []


def test_a_snapshot_base_keeps_decisions_whose_events_aged_out() -> None:
    events = stored_events(transcript("f_ask_question"), transcript("l_model"))
    whole = build_ledger(events)
    cut = 5  # the answer (seq 3) is before it, the model change after
    base = build_ledger(events[:cut])
    assert base.through_seq == cut
    later = build_ledger(events[cut:], base=base)
    assert later.decisions == whole.decisions and later.through_seq == whole.through_seq


def test_anchor_seq_places_a_record_by_time() -> None:
    events = stored_events(transcript("f_ask_question"))
    assert anchor_seq(events, "2000-01-01T00:00:00Z") is None
    assert anchor_seq(events, "2100-01-01T00:00:00Z") == events[-1].seq
    assert anchor_seq(events, "not a time") is None


# -- properties ------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_MEANINGFUL = (
    f'Your questions have been answered: "{QUESTION}"="Blue". You can now continue with '
    "these answers in mind.",
    f'{TYPED_PREFIX}"{QUESTION}"="own words"{TYPED_SUFFIX}',
    "The user responded: later",
    "User has approved your plan.\n\n## Approved Plan:\nthe plan",
    "User has approved exiting plan mode. You can now proceed.",
    REJECTED + STOP,
    REJECTED + SAID + "do it differently",
    "Set model to Haiku 4.5 and saved as your default for new sessions",
    "🔓 Allow all is on until the session ends",
    "🔒 Grants ended with the previous claude process (Bash)",
)
_texts = st.one_of(st.sampled_from(_MEANINGFUL), st.text(max_size=60))
_inputs = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=8), _json, max_size=3),
    st.just(ASK_INPUT),
    st.just({"plan": PLAN}),
    st.fixed_dictionaries({"questions": _json, "plan": _json}),
)


def _event(draw: st.DrawFn, **fields: Any) -> dict[str, Any]:
    """An event's fields: the given ones, the rest drawn (any shape, some nonsense)."""
    kind = fields.pop("kind", None) or draw(st.sampled_from(list(EventKind)))
    drawn: dict[str, Any] = {
        "kind": kind,
        "text": draw(_texts),
        "tool": draw(st.sampled_from(["AskUserQuestion", "ExitPlanMode", "Bash", None])),
        "tool_use_id": draw(st.sampled_from(["t1", "t2", "t3", None])),
        "input": draw(_inputs),
        "is_error": draw(st.booleans()),
        "truncated": draw(st.booleans()),
        "timestamp": draw(st.sampled_from([None, "2026-12-05T10:00:00Z", "garbage"])),
        "agent_id": draw(st.sampled_from([None, None, "a1"])),
    }
    if kind is EventKind.MARKER:
        usual = st.sampled_from([MarkerKind.ALLOW_ALL, MarkerKind.GRANT, MarkerKind.LOCAL_COMMAND])
        drawn["marker"] = draw(usual | st.sampled_from(list(MarkerKind)))
    drawn.update(fields)
    return drawn


@st.composite
def _flow(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A tool use and its result (a question, a plan, a command), or one event of any kind."""
    if draw(st.booleans()):
        return [_event(draw)]
    tool = draw(st.sampled_from(["AskUserQuestion", "ExitPlanMode", "Bash"]))
    tool_id = draw(st.sampled_from(["t1", "t2", "t3"]))
    use = _event(draw, kind=EventKind.TOOL_USE, tool=tool, tool_use_id=tool_id)
    text = draw(st.sampled_from(_MEANINGFUL) | _texts)
    result = _event(draw, kind=EventKind.TOOL_RESULT, tool=None, tool_use_id=tool_id, text=text)
    after = [_event(draw, kind=EventKind.USER, agent_id=None)] if draw(st.booleans()) else []
    return [use, result, *after]


@st.composite
def event_lists(draw: st.DrawFn) -> list[NumberedEvent]:
    flows = draw(st.lists(_flow(), max_size=10))
    fields = [event for flow in flows for event in flow]
    seqs = sorted(draw(st.sets(st.integers(1, 1000), min_size=len(fields), max_size=len(fields))))
    return [
        NumberedEvent(**event, session_id="s", seq=seq, epoch="e")
        for seq, event in zip(seqs, fields, strict=True)
    ]


def _quoted_by(decision_text: str, event: NumberedEvent) -> bool:
    return any(decision_text in text for text in source_texts(event))


@PROPERTIES
@given(event_lists(), st.booleans())
def test_any_events_give_a_ledger_of_verbatim_decisions_in_seq_order(
    events: list[NumberedEvent], shuffled: bool
) -> None:
    given_events = list(reversed(events)) if shuffled else events
    ledger = build_ledger(given_events)
    assert build_ledger(given_events) == ledger  # deterministic, whatever the order given
    by_seq = {e.seq: e for e in events}
    seqs = [d.source.seq for d in ledger.decisions]
    assert seqs == sorted(s for s in seqs if s is not None)
    assert len(ledger.decisions) <= MAX_DECISIONS
    assert len({d.id for d in ledger.decisions}) == len(ledger.decisions)
    for decision in ledger.decisions:
        assert decision.kind in DECISION_KINDS
        assert decision.text.strip() and len(decision.text) <= ENTRY_MAX_CHARS
        assert decision.source.seq in by_seq
        assert _quoted_by(decision.text, by_seq[decision.source.seq])
    assert Ledger.from_json(ledger.to_json()) == ledger


@PROPERTIES
@given(event_lists(), st.integers(0, 1000))
def test_a_base_at_any_seq_gives_the_same_decisions_when_no_plan_waits_across_it(
    events: list[NumberedEvent], cut: int
) -> None:
    before = [e for e in events if e.seq <= cut]
    base = build_ledger(before)
    # A plan declined just before the cut may be answered by a prompt after it: that pairing
    # is only seen when both are read together (documented); leave such cuts out.
    waiting = any(d.kind == "plan_declined" for d in base.decisions[-1:])
    if waiting or base.through_seq != max((e.seq for e in before), default=0):
        return
    assert build_ledger(events, base=base).decisions == build_ledger(events).decisions
