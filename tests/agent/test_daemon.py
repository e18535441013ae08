"""The daemon's logic on the in-memory fakes of its seams (tests/support/agent_fakes.py): no tmux, no
relay, no socket, so each test takes milliseconds. The same paths run on real tmux and the fake
claude in tests/agent/test_fake_claude_journeys.py."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import get_args

from agent.mux import session_name
from tests.support.agent_fakes import Parts, with_agent
from wire.protocol import COMMAND_ARGS, CommandName


def test_every_command_of_the_protocol_has_a_handler(tmp_path: Path) -> None:
    async def body(p: Parts) -> None:
        assert set(p.agent.commands) == set(get_args(CommandName))

    with_agent(tmp_path, body)


def test_a_new_session_starts_claude_in_its_own_terminal_and_is_starting(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        result = await p.link.command("create_session", sid, cwd=str(folder), prompt="hi")
        assert result.ok, result
        assert result.data["cwd"] == os.path.realpath(folder)
        [(name, cwd, argv, env)] = p.mux.started
        assert (name, cwd) == (session_name(sid), os.path.realpath(folder))
        assert argv[0] == "/opt/claude/bin/claude" and argv[argv.index("--session-id") + 1] == sid
        # Its hooks report to this agent, with the session's own secret.
        assert env["CB_HOOK"].split(":") == [sid, p.agent.registry.sessions[sid].secret, "49999"]
        assert p.link.updates[0].session_id == sid and p.link.updates[0].state == "starting"
        record = p.agent.registry.get(sid)
        assert record is not None and [h.text for h in record.held] == ["hi"]

    with_agent(tmp_path, body)


def test_a_session_that_cannot_start_leaves_no_trace(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        p.mux.fail_launch = "no server running"
        result = await p.link.command("create_session", sid, cwd=str(folder))
        assert (result.ok, result.code) == (False, "launch_failed")
        assert result.error is not None and "no server running" in result.error
        assert p.agent.registry.get(sid) is None and sid not in p.agent.runtimes
        assert p.mux.killed[-1] == session_name(sid) and not p.link.updates

    with_agent(tmp_path, body)


def test_bad_commands_answer_at_once_and_change_nothing(tmp_path: Path) -> None:
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        gone = await p.link.command("create_session", sid, cwd=str(tmp_path / "nowhere"))
        assert (gone.ok, gone.code) == (False, "bad_folder")
        unknown = await p.link.command("interrupt", sid)
        assert (unknown.ok, unknown.code) == (False, "unknown_session")
        mode = await p.link.command("create_session", sid, cwd=str(tmp_path), permission_mode="x")
        assert (mode.ok, mode.code) == (False, "bad_args")
        assert not p.mux.started and not p.agent.registry.sessions and not p.link.updates

    with_agent(tmp_path, body)


def test_a_permission_hook_is_answered_by_the_sessions_policy(tmp_path: Path) -> None:
    from agent.hookserver import permission_decision

    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        result = await p.link.command("create_session", sid, cwd=str(tmp_path), allow_all=True)
        assert result.ok, result
        bash = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
        assert await p.hooks.report(sid, "PermissionRequest", bash) == permission_decision("allow")
        # A question is for the person, whatever the policy: no answer, the dialog is shown.
        question = {"tool_name": "AskUserQuestion", "tool_input": {"questions": []}}
        assert await p.hooks.report(sid, "PermissionRequest", question) is None
        stranger = str(uuid.uuid4())  # a session this agent does not run: ignored
        assert (
            await p.hooks.on_hook(stranger, "Stop", {}) is None and stranger not in p.agent.runtimes
        )

    with_agent(tmp_path, body)


def test_a_message_to_a_session_still_starting_is_held_and_never_typed_twice(
    tmp_path: Path,
) -> None:
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        assert (await p.link.command("create_session", sid, cwd=str(tmp_path))).ok
        first = await p.link.command("send", sid, text="hello", message_id="m1")
        assert first.ok and first.data["state"] == "held", first
        again = await p.link.command("send", sid, text="hello", message_id="m1")  # a retry
        assert again.data == {"message_id": "m1", "state": "held", "duplicate": True}
        record = p.agent.registry.get(sid)
        assert record is not None and [m.id for m in record.held] == ["m1"]
        assert not p.mux.pasted and not p.mux.keys  # nothing typed before the prompt is up
        empty = await p.link.command("send", sid, text="   ")
        assert (empty.ok, empty.code) == (False, "empty_message")

    with_agent(tmp_path, body)


def test_each_handler_takes_its_commands_args_model(tmp_path: Path) -> None:
    async def body(p: Parts) -> None:
        assert {name: h.model for name, h in p.agent.commands.items()} == COMMAND_ARGS

    with_agent(tmp_path, body)


def test_args_that_do_not_fit_the_commands_model_answer_bad_args_at_once(tmp_path: Path) -> None:
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        assert (await p.link.command("create_session", sid, cwd=str(tmp_path))).ok
        record = p.agent.registry.get(sid)
        assert record is not None
        held = list(record.held)
        long = await p.link.command("send", sid, text="x" * 100_001)
        assert (long.ok, long.code) == (False, "bad_args")
        assert long.error is not None and long.error.startswith("text: ")
        card = await p.link.command("answer_card", sid, key="1" * 33, card_id="c", always=False)
        assert (card.ok, card.code) == (False, "bad_args") and "key: " in (card.error or "")
        cancel = await p.link.command("cancel_held", sid, message_id="../etc")
        assert (cancel.ok, cancel.code) == (False, "bad_args")
        # None of them reached the session: nothing held, typed or pressed.
        assert record.held == held and not p.mux.pasted and not p.mux.keys

    with_agent(tmp_path, body)


def test_a_start_tells_the_relay_its_resume_scope_with_starting(tmp_path: Path) -> None:
    """The usage report counts resumes by the scope the Mac used (SessionInfo.resume_scope): a
    new session's first start has none; a start that resumed says which."""
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        assert (await p.link.command("create_session", sid, cwd=str(tmp_path))).ok
        record = p.agent.registry.get(sid)
        assert record is not None
        rt = p.agent.sessions.driver(record)
        await rt.send_update(force=True)
        assert p.link.updates[-1].resume_scope is None
        record.resumed_scope = "summary"  # as a start sets it from the launch plan
        rt.sent.clear()  # a relaunch sends everything again, with ``starting``
        await rt.send_update()
        assert p.link.updates[-1].resume_scope == "summary"

    with_agent(tmp_path, body)
