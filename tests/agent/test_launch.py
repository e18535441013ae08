"""Launching a session's claude (agent/launch.py): which conversation it opens (``plan_launch``),
from plain records and what is on disk — fresh, resumed, forked or left to claude to name — and the
command line each one makes; the extra arguments a person may give, its environment, and the
warning for a Claude Code version this bridge was not tested with."""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.launch import (
    BadClaudeArgs,
    ClaudeBinary,
    LaunchPlan,
    OnDisk,
    ResumeChoice,
    Start,
    check_claude_args,
    claude_argv,
    plan_launch,
    session_env,
)
from wire.markers import SUMMARY_MARKER

SESSION = str(uuid.UUID(int=1))
CONVERSATION = str(uuid.UUID(int=2))
PARENT = str(uuid.UUID(int=3))
NOTHING = OnDisk(conversation=False, own_transcript=False)
ALL = OnDisk(conversation=True, own_transcript=True)


@dataclass
class Record:
    id: str = SESSION
    conversation_id: str | None = None
    fork_conversation: str | None = None
    resume_scope: str | None = None
    handoff: str | None = None
    handoff_decisions: int = 0


def argv(plan: LaunchPlan) -> list[str]:
    return claude_argv(
        "claude", "hooks.json", session_id=plan.session_id, resume=plan.resume, fork=plan.fork
    )[3:]


def test_a_new_session_starts_its_first_conversation_under_its_own_id() -> None:
    plan = plan_launch(Record(), Start.NEW, NOTHING)
    assert plan == LaunchPlan("fresh", session_id=SESSION, first_conversation=SESSION)
    assert argv(plan) == ["--session-id", SESSION]


@pytest.mark.parametrize("start", [Start.REOPEN, Start.REVIVE])
def test_a_session_with_a_conversation_resumes_it(start: Start) -> None:
    plan = plan_launch(Record(conversation_id=CONVERSATION), start, ALL)
    assert plan == LaunchPlan("resume", resume=CONVERSATION, scope="full")
    assert argv(plan) == ["--resume", CONVERSATION]


def test_a_reopened_session_without_a_conversation_names_its_first() -> None:
    plan = plan_launch(Record(), Start.REOPEN, NOTHING)
    assert plan == LaunchPlan("fresh", session_id=SESSION, first_conversation=SESSION)


def test_a_revived_session_without_a_conversation_lets_claude_name_it() -> None:
    # Its SessionStart hook then says which conversation claude started.
    plan = plan_launch(Record(), Start.REVIVE, NOTHING)
    assert plan == LaunchPlan("unnamed")
    assert argv(plan) == []


def test_a_moved_session_resumes_only_a_conversation_that_arrived() -> None:
    record = Record(conversation_id=CONVERSATION)
    arrived = plan_launch(record, Start.ARRIVE, OnDisk(conversation=True, own_transcript=False))
    assert arrived == LaunchPlan("resume", resume=CONVERSATION, scope="full")
    # Never prompted on the other Mac: no transcript came, it starts afresh under that id.
    missing = plan_launch(record, Start.ARRIVE, NOTHING)
    assert missing == LaunchPlan("fresh", session_id=CONVERSATION)
    assert argv(missing) == ["--session-id", CONVERSATION]


def test_a_fork_forks_its_parents_conversation_until_it_has_a_transcript_of_its_own() -> None:
    fork = Record(fork_conversation=PARENT)
    plan = plan_launch(fork, Start.NEW, NOTHING)
    assert plan == LaunchPlan("fork", session_id=SESSION, resume=PARENT, first_conversation=SESSION)
    assert argv(plan) == ["--resume", PARENT, "--fork-session", "--session-id", SESSION]
    # Ended before its first prompt (no transcript yet): forked again, under the same id.
    started = Record(conversation_id=SESSION, fork_conversation=PARENT)
    again = plan_launch(started, Start.REOPEN, NOTHING)
    assert again == LaunchPlan("fork", session_id=SESSION, resume=PARENT)
    # Once claude wrote the fork's own transcript, that is what it resumes.
    own = plan_launch(started, Start.REOPEN, OnDisk(conversation=True, own_transcript=True))
    assert own == LaunchPlan("resume", resume=SESSION, scope="full")
    # A fork that moved on to another conversation (/clear) is never forked again.
    cleared = Record(conversation_id=CONVERSATION, fork_conversation=PARENT)
    assert plan_launch(cleared, Start.REOPEN, ALL) == LaunchPlan(
        "resume", resume=CONVERSATION, scope="full"
    )
    assert plan_launch(cleared, Start.REOPEN, NOTHING) == LaunchPlan(
        "fresh", session_id=CONVERSATION
    )


@pytest.mark.parametrize("start", [Start.REOPEN, Start.REVIVE, Start.ARRIVE])
def test_a_conversation_never_saved_here_starts_afresh_under_its_id(start: Start) -> None:
    # claude exited before its first prompt (a failed login, say): no transcript, and
    # `--resume` would answer "No conversation found" at every later start.
    for conversation in (SESSION, CONVERSATION):
        plan = plan_launch(Record(conversation_id=conversation), start, NOTHING)
        assert plan == LaunchPlan("fresh", session_id=conversation)
        assert argv(plan) == ["--session-id", conversation]


def test_every_plan_makes_a_command_line_claude_takes() -> None:
    # Every record shape, every start, every disk: one conversation flag set, or none.
    records = [
        Record(),
        Record(conversation_id=CONVERSATION),
        Record(conversation_id=SESSION, fork_conversation=PARENT),
        Record(fork_conversation=PARENT),
    ]
    disks = [OnDisk(a, b) for a in (False, True) for b in (False, True)]
    for record in records:
        for start in Start:
            for disk in disks:
                plan = plan_launch(record, start, disk)
                flags = argv(plan)
                assert flags.count("--resume") <= 1 and flags.count("--session-id") <= 1
                assert ("--fork-session" in flags) == (plan.how == "fork")
                if plan.first_conversation is not None:
                    assert record.conversation_id is None
                    assert plan.first_conversation == record.id


NEW = str(uuid.UUID(int=4))
HANDOFF = "This session continues earlier work.\n## Decisions\n- answered: use sqlite"


@pytest.mark.parametrize("start", [Start.REOPEN, Start.REVIVE, Start.ARRIVE])
def test_a_fresh_scope_starts_a_new_conversation_with_the_handoff_first(start: Start) -> None:
    record = Record(
        conversation_id=CONVERSATION, resume_scope="fresh", handoff=HANDOFF, handoff_decisions=3
    )
    plan = plan_launch(record, start, ALL, ResumeChoice(new_id=NEW))
    assert plan == LaunchPlan(
        "fresh",
        session_id=NEW,
        first_conversation=NEW,
        scope="fresh",
        lead=(HANDOFF,),
        marker="resumed fresh from 3 decisions",
    )
    assert argv(plan) == ["--session-id", NEW]


def test_a_summary_scope_resumes_then_compacts_before_held_messages() -> None:
    record = Record(conversation_id=CONVERSATION, resume_scope="summary")
    plan = plan_launch(record, Start.REOPEN, ALL, ResumeChoice(new_id=NEW))
    assert plan == LaunchPlan(
        "resume", resume=CONVERSATION, scope="summary", lead=("/compact",), marker=SUMMARY_MARKER
    )
    assert argv(plan) == ["--resume", CONVERSATION]


def test_a_one_off_scope_beats_the_sessions_own() -> None:
    record = Record(conversation_id=CONVERSATION, resume_scope="summary", handoff="old")
    full = plan_launch(record, Start.REOPEN, ALL, ResumeChoice(scope="full", new_id=NEW))
    assert full == LaunchPlan("resume", resume=CONVERSATION, scope="full")
    fresh = plan_launch(
        record,
        Start.REOPEN,
        ALL,
        ResumeChoice(scope="fresh", handoff="new handoff", decisions=1, new_id=NEW),
    )
    assert fresh.lead == ("new handoff",) and fresh.marker == "resumed fresh from 1 decision"


def test_fresh_without_a_handoff_or_an_unknown_scope_resumes_in_full() -> None:
    nothing = Record(conversation_id=CONVERSATION, resume_scope="fresh")
    plan = plan_launch(nothing, Start.REOPEN, ALL, ResumeChoice(new_id=NEW))
    assert plan == LaunchPlan("resume", resume=CONVERSATION, scope="full")
    odd = Record(conversation_id=CONVERSATION, resume_scope="everything")
    assert plan_launch(odd, Start.REOPEN, ALL).scope == "full"


@pytest.mark.parametrize("scope", ["full", "summary", "fresh"])
def test_a_scope_never_touches_a_new_session_or_a_fork(scope: str) -> None:
    choice = ResumeChoice(new_id=NEW)
    fresh = Record(resume_scope=scope, handoff=HANDOFF)
    assert plan_launch(fresh, Start.NEW, NOTHING, choice).lead == ()
    fork = Record(fork_conversation=PARENT, resume_scope=scope, handoff=HANDOFF)
    assert plan_launch(fork, Start.NEW, NOTHING, choice).how == "fork"


def test_claude_argv_for_new_resumed_and_moded_sessions() -> None:
    assert claude_argv("claude", "/d/hooks.json", session_id="s1") == [
        "claude", "--settings", "/d/hooks.json", "--session-id", "s1",
    ]  # fmt: skip
    assert claude_argv("claude", "/h", resume="c9", permission_mode="manual", model="opus") == [
        "claude",
        "--settings",
        "/h",
        "--resume",
        "c9",
        "--permission-mode",
        "manual",
        "--model",
        "opus",
    ]
    with pytest.raises(ValueError):
        claude_argv("claude", "/h", permission_mode="yolo")
    extra = ["--chrome", "--add-dir", "/Users/ada/shared"]
    assert claude_argv("claude", "/h", session_id="s1", extra=extra) == [
        "claude", "--settings", "/h", "--session-id", "s1", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["--chrome"],
        ["--add-dir", "/Users/ada/shared", "--add-dir=/tmp/more"],
        ["--mcp-config", "/Users/ada/mcp.json", "--dangerously-load-development-channels", "x"],
        [],
    ],
)
def test_extra_claude_args_a_person_may_give(args: list[str]) -> None:
    assert check_claude_args(args) == args


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["hello"], "is not a flag"),
        (["--model", "opus"], "--model is set by claude-bridge"),
        (["--permission-mode=bypassPermissions"], "--permission-mode is set by claude-bridge"),
        (["--chrome", "--dangerously-skip-permissions"], "--dangerously-skip-permissions"),
        (["-p"], "-p is set by claude-bridge"),
        (["--resume", "abc"], "--resume is set"),
        (["--add-dir", "a\nb"], "newline"),
    ],
)
def test_extra_claude_args_the_agent_refuses(args: list[str], why: str) -> None:
    with pytest.raises(BadClaudeArgs, match=re.escape(why)):
        check_claude_args(args)


def test_session_env_keeps_the_agents_environment_and_drops_tmux() -> None:
    env = session_env(
        {"PATH": "/bin", "ANTHROPIC_BASE_URL": "http://x", "TMUX": "/tmp/t,1,0", "CB_HOOK": "old"},
        {"CB_HOOK": "s:secret:1"},
    )
    assert env["PATH"] == "/bin" and env["ANTHROPIC_BASE_URL"] == "http://x"
    assert "TMUX" not in env and env["CB_HOOK"] == "s:secret:1"


def test_a_login_at_the_desk_is_heard_without_restarting_the_agent(tmp_path: Path) -> None:
    """``claude auth status`` said "no login": asked again, a login made since is told at once
    (the page's Start was off); while it stays logged in nothing more is asked."""
    logged = tmp_path / "logged-in"
    asked = tmp_path / "asked"
    claude = tmp_path / "claude"
    claude.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "2.1.332 (Claude Code)"; exit 0; fi\n'
        f'echo x >> "{asked}"\n'
        f'if [ -e "{logged}" ]; then echo \'{{"loggedIn": true}}\'; '
        "else echo '{\"loggedIn\": false}'; exit 1; fi\n"
    )
    claude.chmod(0o700)
    told: list[str] = []

    async def tell(version: str) -> None:
        told.append(version)

    async def run() -> None:
        binary = ClaudeBinary(str(claude), tell)
        await binary.start()
        assert binary.standing == "logged_out"
        assert not await binary.recheck_login()  # still none: nothing told
        logged.touch()
        assert await binary.recheck_login()
        assert binary.standing in ("ok",) and told == ["2.1.332"]
        before = asked.read_text().count("x")
        assert not await binary.recheck_login()  # logged in: no process at all
        assert asked.read_text().count("x") == before

    asyncio.run(run())
