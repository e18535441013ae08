"""agent.state: hook facts, and the session state computed from hooks, screen and status file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from agent.state import (
    Computed,
    HookFacts,
    SessionInputs,
    apply_hook,
    close_open_turn,
    compute,
    screen_idle_since,
)
from tests.support.paths import FIXTURES

HOOK_LOGS = FIXTURES / "hooks"
L = 1000.0  # launch time of every table case


@dataclass(frozen=True)
class Card:
    kind: str


@dataclass(frozen=True)
class Screen:
    card: Card | None = None
    busy: bool = False
    tool_running: bool = False
    exited: bool = False


@dataclass(frozen=True)
class ScreenPlus(Screen):
    """A reader that also gives the optional attributes."""

    interrupted: bool = False
    prompt_visible: bool = True


IDLE = Screen()
BUSY = Screen(busy=True)
TOOL = Screen(busy=True, tool_running=True)
BLANK = ScreenPlus(prompt_visible=False)
INTERRUPTED_WITH_DRAFT = ScreenPlus(interrupted=True)


def card(kind: str) -> Screen:
    return Screen(card=Card(kind))


# Hook reports: (event, payload, time)
Hook = tuple[str, dict[str, Any], float]


def ss(t: float, source: str = "startup", sid: str = "conv-1") -> Hook:
    return (
        "SessionStart",
        {"session_id": sid, "source": source, "transcript_path": f"/t/{sid}.jsonl"},
        t,
    )


def ups(t: float, prompt: str = "hello") -> Hook:
    return ("UserPromptSubmit", {"prompt": prompt, "permission_mode": "default"}, t)


def stop(t: float, running: tuple[str, ...] = ()) -> Hook:
    tasks = [{"id": a, "type": "subagent", "status": "running"} for a in running]
    return ("Stop", {"background_tasks": tasks}, t)


def pre(t: float, tool: str, tid: str = "tu1", agent: str | None = None) -> Hook:
    payload: dict[str, Any] = {"tool_name": tool, "tool_use_id": tid}
    if agent:
        payload["agent_id"] = agent
    return ("PreToolUse", payload, t)


def post(t: float, tool: str, tid: str = "tu1", agent: str | None = None) -> Hook:
    payload: dict[str, Any] = {"tool_name": tool, "tool_use_id": tid}
    if agent:
        payload["agent_id"] = agent
    return ("PostToolUse", payload, t)


def perm(t: float, tool: str = "Bash") -> Hook:
    return ("PermissionRequest", {"tool_name": tool}, t)


def end(t: float, reason: str) -> Hook:
    return ("SessionEnd", {"reason": reason}, t)


def sub_start(t: float, agent: str = "ag1") -> Hook:
    return ("SubagentStart", {"agent_id": agent, "agent_type": "general-purpose"}, t)


def sub_stop(t: float, agent: str = "ag1") -> Hook:
    return ("SubagentStop", {"agent_id": agent, "agent_type": "general-purpose"}, t)


def precompact(t: float) -> Hook:
    return ("PreCompact", {"trigger": "manual"}, t)


def fold(hooks: list[Hook] | tuple[Hook, ...]) -> HookFacts:
    facts = HookFacts()
    for event, payload, t in hooks:
        facts = apply_hook(facts, event, payload, t)
    return facts


STARTED = (ss(L + 0.5),)
TURN = (ss(L + 0.5), ups(L + 2.0))


@dataclass(frozen=True)
class Case:
    name: str
    hooks: tuple[Hook, ...]
    screen: Screen | None
    screen_at: float | None
    now: float
    state: str
    activity: str | None = None
    close: bool = False
    status: str | None = None
    status_at: float | None = None
    alive: bool = True
    idle_since: float | None = None
    first_frame: float | None = L + 0.5  # when the screen first showed something
    reasons: tuple[str, ...] = field(default_factory=tuple)  # must all be present


CASES = [
    # --- starting
    Case("fresh launch, nothing yet", (), None, None, L + 0.2, "starting"),
    Case("blank screen at launch", (), BLANK, L + 0.1, L + 0.2, "starting"),
    Case("trust dialog while starting", (), card("keyed"), L + 0.6, L + 1.0, "starting"),
    Case(
        "trust dialog while starting, status file present",
        (),
        card("keyed"),
        L + 0.6,
        L + 1.0,
        "starting",
        status="idle",
        status_at=L + 0.5,
    ),
    Case(
        "SessionStart after the trust dialog was read: starting until the next read",
        STARTED,
        card("keyed"),
        L + 0.4,
        L + 0.7,
        "starting",
    ),
    Case("SessionStart, no screen read yet", STARTED, None, None, L + 0.7, "starting"),
    Case("SessionStart and an idle screen", STARTED, IDLE, L + 1.5, L + 2.0, "idle"),
    Case("SessionStart and a blank-looking screen", STARTED, BLANK, L + 1.5, L + 2.0, "idle"),
    Case(
        "screen of an earlier life is ignored",
        (),
        IDLE,
        L - 5.0,
        L + 0.3,
        "starting",
    ),
    # --- no hooks: the screen decides
    Case("no hooks ever, idle prompt", (), IDLE, L + 1.5, L + 2.0, "idle", reasons=("no-hooks",)),
    Case("no hooks ever, busy screen", (), BUSY, L + 9.0, L + 9.5, "busy"),
    Case("no hooks ever, permission card", (), card("permission"), L + 9.0, L + 9.5, "waiting"),
    Case(
        "no hooks ever, keyed dialog is taken for a start-up dialog",
        (),
        card("keyed"),
        L + 60.0,
        L + 60.5,
        "starting",
    ),
    # --- busy
    Case(
        "UserPromptSubmit is busy although the status file still says idle",
        TURN,
        IDLE,
        L + 1.5,
        L + 2.1,
        "busy",
        status="idle",
        status_at=L + 0.6,
        reasons=("hook-turn",),
    ),
    Case("open turn and a busy screen", TURN, BUSY, L + 3.0, L + 3.5, "busy"),
    Case(
        "Edit tool running is coding",
        (*TURN, pre(L + 3.0, "Edit")),
        TOOL,
        L + 3.5,
        L + 4.0,
        "busy",
        activity="coding",
    ),
    Case(
        "Write tool running is coding",
        (*TURN, pre(L + 3.0, "Write")),
        BUSY,
        L + 3.5,
        L + 4.0,
        "busy",
        activity="coding",
    ),
    Case(
        "Bash running is a tool, not coding",
        (*TURN, pre(L + 3.0, "Bash")),
        TOOL,
        L + 3.5,
        L + 4.0,
        "busy",
        activity="tool",
    ),
    Case(
        "edit finished: no activity",
        (*TURN, pre(L + 3.0, "Edit"), post(L + 3.2, "Edit")),
        BUSY,
        L + 3.5,
        L + 4.0,
        "busy",
        activity=None,
    ),
    Case(
        "automatic follow-up turn (<task-notification>) is busy",
        (
            *TURN,
            pre(L + 2.2, "Agent", "tuA"),
            sub_start(L + 2.3),
            post(L + 2.3, "Agent", "tuA"),
            sub_stop(L + 3.0),
            stop(L + 3.1, running=("ag1",)),
            ups(L + 3.3, "<task-notification>\n<task-id>ag1</task-id>"),
        ),
        IDLE,
        L + 3.2,
        L + 3.5,
        "busy",
        activity="subagents",  # Stop's background_tasks still lists it until the follow-up ends
        reasons=("hook-turn-auto",),
    ),
    Case(
        "status busy newer than the screen read bridges its lag",
        STARTED,
        IDLE,
        L + 1.5,
        L + 2.6,
        "busy",
        status="busy",
        status_at=L + 2.5,
        reasons=("status-busy",),
    ),
    Case(
        "busy screen read before Stop is stale: idle at once",
        (*TURN, stop(L + 5.0)),
        BUSY,
        L + 4.5,
        L + 5.1,
        "idle",
    ),
    # --- waiting
    Case(
        "permission dialog on screen",
        (*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)),
        card("permission"),
        L + 3.0,
        L + 3.5,
        "waiting",
        status="waiting",
        status_at=L + 2.7,
    ),
    Case(
        "question card",
        (*TURN, pre(L + 2.5, "AskUserQuestion"), perm(L + 2.6, "AskUserQuestion")),
        card("question"),
        L + 3.0,
        L + 3.5,
        "waiting",
    ),
    Case(
        "plan card",
        (*TURN, pre(L + 2.5, "ExitPlanMode"), perm(L + 2.6, "ExitPlanMode")),
        card("plan"),
        L + 3.0,
        L + 3.5,
        "waiting",
    ),
    Case(
        "/model picker between turns",
        (*TURN, stop(L + 3.0)),
        card("dialog"),
        L + 5.0,
        L + 5.5,
        "waiting",
        status="waiting",
        status_at=L + 4.5,
    ),
    Case(
        "keyed dialog after a prompt is not start-up",
        (*TURN, stop(L + 3.0)),
        card("keyed"),
        L + 5.0,
        L + 5.5,
        "waiting",
    ),
    Case(
        "status waiting before the screen shows the card",
        (*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)),
        BUSY,
        L + 2.55,
        L + 2.8,
        "waiting",
        status="waiting",
        status_at=L + 2.7,
        reasons=("status-waiting",),
    ),
    Case(
        "status waiting but a newer screen has no card",
        (*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)),
        IDLE,
        L + 3.0,
        L + 3.2,
        "busy",
        activity="tool",
        status="waiting",
        status_at=L + 2.7,
    ),
    Case(
        "status waiting from before Stop is stale",
        (*TURN, stop(L + 3.0)),
        None,
        None,
        L + 3.2,
        "idle",
        status="waiting",
        status_at=L + 2.7,
    ),
    Case(
        "stuck card: waiting, and the turn is closed",
        (*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)),
        card("stuck"),
        L + 4.0,
        L + 4.1,
        "waiting",
        close=True,
        reasons=("stuck-close", "card:stuck"),
    ),
    Case(
        "stuck card read before a new prompt is stale: busy",
        (*TURN, ups(L + 5.0)),
        card("stuck"),
        L + 4.0,
        L + 5.1,
        "busy",
    ),
    # --- a turn whose Stop never came (Esc, reject, Ctrl-C)
    Case(
        "Esc, no Stop: idle screen for 14 s is still busy",
        TURN,
        IDLE,
        L + 18.0,
        L + 19.0,
        "busy",
        idle_since=L + 5.0,
    ),
    Case(
        "Esc, no Stop: idle screen for 15 s closes the turn",
        TURN,
        IDLE,
        L + 19.5,
        L + 20.0,
        "idle",
        close=True,
        idle_since=L + 5.0,
        reasons=("missed-hook-close",),
    ),
    Case(
        "a hook during the idle run restarts the clock",
        (*TURN, ("Notification", {"notification_type": "permission_prompt"}, L + 10.0)),
        IDLE,
        L + 19.5,
        L + 20.0,
        "busy",
        idle_since=L + 5.0,
    ),
    Case(
        "idle run not tracked: counted from the turn's last hook",
        TURN,
        IDLE,
        L + 16.5,
        L + 17.0,
        "idle",
        close=True,
    ),
    Case(
        "Esc: status idle after the turn's last hook closes at once",
        TURN,
        IDLE,
        L + 5.5,
        L + 5.6,
        "idle",
        close=True,
        status="idle",
        status_at=L + 5.0,
        reasons=("status-idle-close",),
    ),
    Case(
        "idle screen for 15 s but the status file says waiting: no close",
        (*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)),
        IDLE,
        L + 19.5,
        L + 20.0,
        "busy",
        activity="tool",
        status="waiting",
        status_at=L + 2.7,
        idle_since=L + 3.0,
    ),
    Case(
        "interrupted with a draft typed after it closes at once",
        TURN,
        INTERRUPTED_WITH_DRAFT,
        L + 5.0,
        L + 5.2,
        "idle",
        close=True,
        reasons=("interrupted-close",),
    ),
    Case(
        "no close while the screen is busy for long",
        TURN,
        BUSY,
        L + 59.0,
        L + 60.0,
        "busy",
    ),
    # --- subagents
    Case(
        "background subagent still running after Stop",
        (
            *TURN,
            pre(L + 2.2, "Agent", "tuA"),
            sub_start(L + 2.3),
            post(L + 2.3, "Agent", "tuA"),
            pre(L + 2.5, "Bash", "tuS", agent="ag1"),
            stop(L + 2.6, running=("ag1",)),
        ),
        IDLE,
        L + 3.0,
        L + 3.5,
        "idle",
        activity="subagents",
        status="busy",
        status_at=L + 2.1,
    ),
    Case(
        "status busy with an idle screen and no hooks of an agent",
        (*TURN, stop(L + 3.0)),
        IDLE,
        L + 4.0,
        L + 4.5,
        "idle",
        activity="subagents",
        status="busy",
        status_at=L + 2.1,
        reasons=("status-busy-background",),
    ),
    # --- /clear, compaction
    Case(
        "SessionEnd clear then SessionStart clear is not ended",
        (*TURN, stop(L + 3.0), end(L + 5.0, "clear"), ss(L + 5.1, "clear", "conv-2")),
        IDLE,
        L + 6.0,
        L + 6.5,
        "idle",
    ),
    Case(
        "SessionEnd clear alone is not ended",
        (*TURN, stop(L + 3.0), end(L + 5.0, "clear")),
        IDLE,
        L + 4.0,
        L + 5.05,
        "idle",
    ),
    Case(
        "compaction running",
        (*TURN, stop(L + 3.0), precompact(L + 5.0)),
        IDLE,
        L + 4.5,
        L + 5.2,
        "busy",
        activity="compacting",
    ),
    Case(
        "compaction done (SessionStart compact)",
        (*TURN, stop(L + 3.0), precompact(L + 5.0), ss(L + 5.3, "compact")),
        IDLE,
        L + 6.0,
        L + 6.5,
        "idle",
    ),
    Case(
        "auto-compaction inside a turn keeps the turn",
        (*TURN, precompact(L + 5.0), ss(L + 5.3, "compact")),
        BUSY,
        L + 6.0,
        L + 6.5,
        "busy",
    ),
    Case(
        "compaction whose SessionStart was missed is closed",
        (*TURN, stop(L + 3.0), precompact(L + 5.0)),
        IDLE,
        L + 20.5,
        L + 21.0,
        "idle",
        close=True,
        idle_since=L + 5.5,
    ),
    # --- ended
    Case(
        "SessionEnd other is ended",
        (*TURN, stop(L + 3.0), end(L + 4.0, "other")),
        IDLE,
        L + 3.5,
        L + 4.1,
        "ended",
    ),
    Case(
        "SessionEnd prompt_input_exit is ended while the pane lingers",
        (*STARTED, end(L + 4.0, "prompt_input_exit")),
        IDLE,
        L + 3.5,
        L + 4.1,
        "ended",
    ),
    Case(
        "SessionEnd of an earlier life does not end a relaunch",
        (ss(L - 50.0), end(L - 10.0, "other")),
        None,
        None,
        L + 0.3,
        "starting",
    ),
    Case(
        "process gone with a busy screen and an open turn",
        TURN,
        BUSY,
        L + 3.0,
        L + 3.5,
        "ended",
        alive=False,
    ),
    Case("process gone while starting", (), card("keyed"), L + 0.5, L + 1.0, "ended", alive=False),
    Case("screen says claude exited", STARTED, Screen(exited=True), L + 9.0, L + 9.5, "ended"),
    Case(
        "blank screen before the first frame (claude still loading)",
        (),
        Screen(exited=True),
        L + 3.0,
        L + 3.2,
        "starting",
        first_frame=None,
        reasons=("no-frame-yet",),
    ),
    Case(
        "a frame of an earlier life does not count",
        (),
        Screen(exited=True),
        L + 3.0,
        L + 3.2,
        "starting",
        first_frame=L - 5.0,
    ),
    Case(
        "blank screen after claude drew its first frame",
        (),
        Screen(exited=True),
        L + 9.0,
        L + 9.2,
        "ended",
        first_frame=L + 2.0,
        reasons=("screen-exited",),
    ),
]


def run(case: Case) -> Computed:
    return compute(
        SessionInputs(
            hooks=fold(case.hooks),
            screen=case.screen,
            screen_at=case.screen_at,
            status=case.status,
            status_at=case.status_at,
            process_alive=case.alive,
            launched_at=L,
            now=case.now,
            screen_idle_since=case.idle_since,
            first_frame_at=case.first_frame,
        )
    )


def test_table_is_big_and_names_are_unique() -> None:
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_state_table(case: Case) -> None:
    got = run(case)
    assert (got.state, got.close_turn) == (case.state, case.close), got.reasons
    if case.state in ("busy", "idle") or case.activity is not None:
        assert got.activity == case.activity, got.reasons
    for reason in case.reasons:
        assert reason in got.reasons


def test_priority_ended_beats_everything() -> None:
    got = run(
        Case("x", (*TURN, end(L + 9.0, "other")), card("permission"), L + 9.5, L + 9.6, "ended")
    )
    assert got.state == "ended"
    assert not got.close_turn


def test_closing_then_folding_close_open_turn_gives_idle() -> None:
    facts = fold([*TURN, pre(L + 2.5, "Bash"), perm(L + 2.6)])
    inputs = SessionInputs(
        hooks=facts,
        screen=card("stuck"),
        screen_at=L + 4.0,
        status="idle",
        status_at=L + 3.9,
        process_alive=True,
        launched_at=L,
        now=L + 4.1,
    )
    first = compute(inputs)
    assert first.close_turn and first.state == "waiting"
    closed = close_open_turn(facts)
    assert not closed.turn_open and closed.tools == () and not closed.permission_pending
    again = compute(replace(inputs, hooks=closed))
    assert again.state == "waiting" and not again.close_turn
    # the person types new instructions: a new turn, the stuck screen is stale
    new_turn = apply_hook(closed, "UserPromptSubmit", {"prompt": "do this instead"}, L + 6.0)
    later = compute(replace(inputs, hooks=new_turn, now=L + 6.1))
    assert later.state == "busy" and not later.close_turn


def test_a_tool_hook_reopens_a_turn_closed_by_mistake() -> None:
    facts = close_open_turn(fold(TURN))
    facts = apply_hook(facts, "PreToolUse", {"tool_name": "Edit", "tool_use_id": "x"}, L + 30.0)
    assert facts.turn_open and facts.tool_running == "Edit"


def test_screen_idle_since_folds_a_run_of_reads() -> None:
    since = None
    for at, screen, want in [
        (1.0, BUSY, None),
        (2.5, IDLE, 2.5),
        (4.0, IDLE, 2.5),
        (5.5, card("permission"), None),
        (7.0, IDLE, 7.0),
        (8.5, None, None),
    ]:
        since = screen_idle_since(since, screen, at)
        assert since == want


def test_apply_hook_is_pure() -> None:
    facts = fold(TURN)
    before = facts
    after = apply_hook(facts, "Stop", {}, L + 3.0)
    assert facts == before and facts.turn_open and not after.turn_open


def test_unknown_events_and_odd_payloads_only_refresh_times() -> None:
    facts = fold(TURN)
    after = apply_hook(facts, "SomethingNew", {"weird": [1, 2]}, L + 9.0)
    assert after.turn_open and after.last_hook_at == L + 9.0 and after.last_event == "SomethingNew"
    after = apply_hook(after, "PostToolUse", {"tool_name": 3}, L + 9.5)  # nothing was running
    assert after.tools == ()


def test_parallel_tools_finish_by_id() -> None:
    facts = fold([*TURN, pre(L + 3.0, "Read", "a"), pre(L + 3.1, "Edit", "b")])
    assert facts.tool_running == "Edit"
    facts = apply_hook(facts, "PostToolUse", {"tool_name": "Edit", "tool_use_id": "b"}, L + 3.5)
    assert facts.tool_running == "Read"


def test_prompt_queued_while_a_tool_runs_keeps_the_tool() -> None:
    facts = fold([*TURN, pre(L + 3.0, "Bash", "a"), ups(L + 4.0, "and then this")])
    assert facts.turn_open and facts.tool_running == "Bash" and facts.turn_started_at == L + 2.0


def test_prompt_after_a_rejected_dialog_drops_its_tool() -> None:
    facts = fold([*TURN, pre(L + 3.0, "Bash", "a"), perm(L + 3.1), ups(L + 9.0, "next")])
    assert facts.turn_open and facts.tools == () and not facts.permission_pending


# --- replays of the hook logs captured from the real binary (2.1.328)


def load(scenario: str) -> list[Hook]:
    rows = [
        json.loads(line)
        for line in (HOOK_LOGS / f"{scenario}.hooks.log").read_text().splitlines()
        if line.strip()
    ]
    # The 2.1.332 auto-mode capture was logged without times; its lines are in the order the
    # hooks arrived, so that order (a second apart) stands in for them.
    for index, row in enumerate(rows):
        row.setdefault("ts", float(index))
    rows.sort(key=lambda r: r["ts"])
    return [(r["event"], r["payload"], r["ts"]) for r in rows]


def steps(scenario: str) -> list[tuple[Hook, HookFacts]]:
    facts = HookFacts()
    out = []
    for event, payload, t in load(scenario):
        facts = apply_hook(facts, event, payload, t)
        out.append(((event, payload, t), facts))
    return out


def final(scenario: str) -> HookFacts:
    return steps(scenario)[-1][1]


def test_every_captured_log_replays() -> None:
    logs = sorted(HOOK_LOGS.glob("*.hooks.log"))
    assert len(logs) >= 13
    for log in logs:
        facts = final(log.name.removesuffix(".hooks.log"))
        assert facts.hooks_seen and facts.session_started_at is not None
        assert facts.conversation_id is not None and facts.transcript_path is not None


def test_replay_a_startup_trust_ends_by_exit() -> None:
    facts = final("a_startup_trust")
    assert facts.session_ended and facts.end_reason == "prompt_input_exit"
    assert facts.start_source == "startup" and not facts.turn_open


def test_replay_b_idle_closes_its_turn() -> None:
    facts = final("b_idle")
    assert not facts.turn_open and facts.prompts == 1 and facts.permission_mode == "default"
    assert facts.last_stop_at is not None and not facts.session_ended


def test_replay_c_busy_leaves_the_turn_open() -> None:
    facts = final("c_busy")
    assert facts.turn_open and facts.prompts == 2  # a queued second prompt, no Stop yet


def test_replay_d_bash_permission_leaves_a_turn_open_after_rejection() -> None:
    history = steps("d_bash_permission")
    # round 1: allowed with "1": PostToolUse then Stop
    first_stop = next(f for (e, _, _), f in history if e == "Stop")
    assert not first_stop.turn_open and first_stop.tools == ()
    facts = history[-1][1]
    # rounds 2-4 were rejected (Esc, "4", Tab+Esc): no Stop ever came
    assert facts.turn_open and facts.prompts == 4
    assert facts.permission_pending and facts.permission_tool == "Bash"
    assert facts.tool_running == "Bash" and len(facts.tools) == 1  # the rejected ones dropped
    assert facts.last_event == "PermissionRequest"


def test_replay_d_bash_permission_stuck_screen_closes_the_turn() -> None:
    facts = final("d_bash_permission")
    assert facts.last_main_hook_at is not None
    got = compute(
        SessionInputs(
            hooks=facts,
            screen=card("stuck"),
            screen_at=facts.last_main_hook_at + 1.5,
            status="idle",
            status_at=facts.last_main_hook_at + 1.0,
            process_alive=True,
            launched_at=facts.first_hook_at or 0.0,
            now=facts.last_main_hook_at + 1.6,
        )
    )
    assert got.state == "waiting" and got.close_turn


def test_replay_e_write_edit_permission_switches_to_accept_edits() -> None:
    history = steps("e_write_edit_permission")
    assert any(f.tool_running == "Write" for _, f in history)
    assert any(f.tool_running == "Edit" for _, f in history)
    facts = history[-1][1]
    assert not facts.turn_open and facts.tools == () and facts.permission_mode == "acceptEdits"


def test_replay_f_ask_question_waits_on_the_second_question() -> None:
    facts = final("f_ask_question")
    assert facts.turn_open and facts.permission_pending
    assert facts.permission_tool == "AskUserQuestion" and facts.notification == "permission_prompt"


def test_replay_g_plan_approval() -> None:
    history = steps("g_plan_approval")
    assert any(f.permission_tool == "ExitPlanMode" for _, f in history)
    facts = history[-1][1]
    assert not facts.turn_open and facts.permission_mode == "plan"


def test_replay_h_interrupt_leaves_a_tool_and_turn_open() -> None:
    facts = final("h_interrupt")
    assert facts.turn_open and facts.tool_running == "Bash" and facts.prompts == 2


def test_replay_ij_clear_compact_conversation_ids() -> None:
    history = steps("ij_clear_compact")
    first = history[0][1].conversation_id
    assert first is not None
    seen = {}
    for (event, payload, _), facts in history:
        if event == "PreCompact":
            assert facts.compacting
        if event == "SessionStart":
            seen[payload["source"]] = facts
            assert not facts.compacting and not facts.session_ended
        if event == "SessionEnd":
            assert payload["reason"] == "clear" and not facts.session_ended
    assert seen["compact"].conversation_id == first  # compaction keeps the conversation
    assert seen["clear"].conversation_id not in (None, first)  # /clear starts a new one
    facts = history[-1][1]
    assert facts.conversation_id == seen["clear"].conversation_id
    assert facts.transcript_path and facts.conversation_id in facts.transcript_path
    assert not facts.turn_open and not facts.session_ended and facts.end_reason == "clear"
    assert facts.background_agents == frozenset()  # compaction's internal SubagentStop


def test_replay_k_resume_ends_and_restarts() -> None:
    history = steps("k_resume")
    resumed = [f for (e, p, _), f in history if e == "SessionStart" and p["source"] == "resume"]
    assert len(resumed) == 2 and all(not f.session_ended for f in resumed)
    assert {f.conversation_id for f in resumed} == {history[0][1].conversation_id}
    facts = history[-1][1]
    assert facts.session_ended and facts.end_reason == "other"


def test_replay_l_model_turn_open() -> None:
    facts = final("l_model")
    assert facts.turn_open and facts.prompts == 1


def test_replay_m_subagent_background_and_automatic_turn() -> None:
    history = steps("m_subagent")
    after_start = next(f for (e, _, _), f in history if e == "SubagentStart")
    assert len(after_start.background_agents) == 1 and after_start.turn_open
    sub_tool = next(f for (e, p, _), f in history if e == "PreToolUse" and "agent_id" in p)
    assert sub_tool.tool_running is None  # the subagent's Bash is not the main agent's tool
    auto = next(f for (e, _, _), f in history if e == "UserPromptSubmit" and f.prompts == 2)
    assert auto.turn_open and auto.turn_automatic
    facts = history[-1][1]
    assert not facts.turn_open and not facts.turn_automatic
    assert facts.background_agents == frozenset()


def test_replay_n_permissionrequest_allow_hook_closes_every_turn() -> None:
    history = steps("n_permissionrequest_allow_hook")
    stops = [f for (e, _, _), f in history if e == "Stop"]
    assert len(stops) == 4 and all(not f.turn_open and f.tools == () for f in stops)
    facts = history[-1][1]
    assert facts.prompts == 4 and not facts.permission_pending
    assert facts.session_ended and facts.end_reason == "prompt_input_exit"


def test_replay_h_interrupt_through_compute() -> None:
    """Esc while the Bash tool ran: no Stop; the idle screen closes the turn after 15 s."""
    facts = final("h_interrupt")
    last = facts.last_main_hook_at
    assert last is not None
    base = SessionInputs(
        hooks=facts,
        screen=TOOL,
        screen_at=last + 10,
        status=None,
        status_at=None,
        process_alive=True,
        launched_at=(facts.first_hook_at or 0.0) - 0.5,
        now=last + 10.1,
    )
    running = compute(base)
    assert running.state == "busy" and running.activity == "tool"
    esc = last + 13.0
    for dt, state, close in [(1.5, "busy", False), (14.9, "busy", False), (15.0, "idle", True)]:
        got = compute(
            replace(
                base,
                screen=IDLE,
                screen_at=esc + min(dt, 13.5),
                now=esc + dt,
                screen_idle_since=esc,
            )
        )
        assert (got.state, got.close_turn) == (state, close), (dt, got.reasons)
