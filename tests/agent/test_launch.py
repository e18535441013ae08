"""Which conversation a session's claude opens (agent/launch.py's ``plan_launch``), from plain
records and what is on disk: fresh, resumed, forked or left to claude to name, and the command
line each one makes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from agent.launch import LaunchPlan, OnDisk, Start, claude_argv, plan_launch

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
    assert plan == LaunchPlan("resume", resume=CONVERSATION)
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
    assert arrived == LaunchPlan("resume", resume=CONVERSATION)
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
    assert own == LaunchPlan("resume", resume=SESSION)
    # A fork that moved on to another conversation (/clear) is never forked again.
    cleared = Record(conversation_id=CONVERSATION, fork_conversation=PARENT)
    assert plan_launch(cleared, Start.REOPEN, NOTHING) == LaunchPlan("resume", resume=CONVERSATION)


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
