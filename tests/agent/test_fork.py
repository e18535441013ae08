"""Fork: a new session with its parent's history on the same Mac. The agent's part on the
in-memory seams (tests/support/agent_fakes.py): claude's command line, the copy of the forked
conversation whose lines are the fork's first history, reopen before and after the fork has a
transcript of its own. The relay's part with a scripted Mac on both store backends: the route,
``parent_id`` in lists and snapshots, and its refusals."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from agent.daemon import Agent
from agent.launch import claude_argv
from agent.transcript import transcript_path
from tests.support import agent_fakes as fakes
from tests.support.agent_fakes import FakeLink, FakeMux
from tests.support.api import SMALL, error_of, push
from tests.support.cli import cli
from tests.support.relay import RelayServer, mac
from wire.protocol import Command, CommandResult


def test_claude_is_asked_to_fork_under_the_new_id() -> None:
    argv = claude_argv("claude", "/s.json", session_id="new", resume="old", fork=True)
    assert argv == [
        "claude", "--settings", "/s.json",
        "--resume", "old", "--fork-session", "--session-id", "new",
    ]  # fmt: skip
    assert "--fork-session" not in claude_argv("claude", "/s.json", resume="old")


# -- the agent ----------------------------------------------------------------------------------


def with_agent(tmp_path: Path, body: Callable[[Agent, FakeMux, FakeLink], Awaitable[None]]) -> None:
    fakes.with_agent(tmp_path, lambda p: body(p.agent, p.mux, p.link))


def line(uuid_: str, text: str) -> str:
    return json.dumps({"type": "user", "uuid": uuid_, "message": {"role": "user", "content": text}})


def test_a_fork_resumes_its_parent_as_a_new_conversation_and_shows_its_history_first(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    cwd = os.path.realpath(folder)
    parent, fork = str(uuid.uuid4()), str(uuid.uuid4())
    home = tmp_path / "claude-home"

    async def body(agent: Agent, mux: FakeMux, link: FakeLink) -> None:
        made = await link.command("create_session", parent, cwd=cwd, permission_mode="plan")
        assert made.ok, made
        refused = await link.command("create_session", fork, cwd=cwd, fork_of=parent)
        assert (refused.ok, refused.code) == (False, "nothing_to_fork")
        theirs = transcript_path(home, cwd, parent)
        theirs.parent.mkdir(parents=True)
        theirs.write_text(line("u1", "hello parent") + "\n" + line("u2", "half"))  # no newline yet

        result = await link.command("create_session", fork, cwd="/ignored", fork_of=parent)
        assert result.ok, result
        assert result.data["parent_id"] == parent and result.data["cwd"] == cwd
        (_, started_in, argv, _) = mux.started[-1]
        assert started_in == cwd
        assert argv[argv.index("--resume") + 1] == parent and "--fork-session" in argv
        assert argv[argv.index("--session-id") + 1] == fork
        assert argv[argv.index("--permission-mode") + 1] == "plan"  # the parent's mode
        record = agent.registry.get(fork)
        assert record is not None and record.parent_id == parent
        assert record.fork_conversation == parent and record.fork_copy is not None
        copy = Path(record.fork_copy)
        assert copy.read_text() == line("u1", "hello parent") + "\n"  # complete lines only
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700

        # The fork's first history: the copy's lines, filed under the conversation they are of.
        await agent.send_transcript(agent.runtimes[fork])
        sent = [(s, c, [x.uuid for x in lines]) for s, c, lines in link.batches if s == fork]
        assert sent == [(fork, parent, ["u1"])]

        # Ended before its first prompt: it has no transcript, so it is forked again.
        await link.command("end", fork)
        assert (await link.command("reopen", fork)).ok
        assert "--fork-session" in mux.started[-1][2]
        # Once claude wrote the fork's transcript, a reopen resumes that.
        own = transcript_path(home, cwd, fork)
        own.write_text(line("u1", "hello parent") + "\n" + line("u3", "hello fork") + "\n")
        await link.command("end", fork)
        assert (await link.command("reopen", fork)).ok
        again = mux.started[-1][2]
        assert "--fork-session" not in again and again[again.index("--resume") + 1] == fork

        stranger = str(uuid.uuid4())
        missing = await link.command("create_session", stranger, cwd=cwd, fork_of=stranger)
        assert (missing.ok, missing.code) == (False, "unknown_session")
        both = await link.command(
            "create_session", str(uuid.uuid4()), cwd=cwd, fork_of=parent, worktree=True
        )
        assert (both.ok, both.code) == (False, "bad_args")

        deleted = await link.command("delete_history", fork)
        assert deleted.ok and not copy.parent.exists()
        assert own.exists()  # Claude Code's own transcript is the person's

    with_agent(tmp_path, body)


# -- the relay ----------------------------------------------------------------------------------


REFUSED_PARENT = str(uuid.uuid4())  # the session whose forks the Mac below refuses


class ForkingMac:
    """A scripted Mac that starts every session it is asked to (a fork too)."""

    def __init__(self) -> None:
        self.commands: list[Command] = []

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.args.get("fork_of") == REFUSED_PARENT:
            return CommandResult(command_id=command.command_id, ok=False, code="x", error="no")
        data: dict[str, Any] = {}
        if command.name == "create_session":
            data = {"cwd": command.args.get("cwd"), "parent_id": command.args.get("fork_of")}
        return CommandResult(command_id=command.command_id, ok=True, data=data)


def test_the_fork_route_links_the_fork_to_its_parent(relay: RelayServer) -> None:
    acct = relay.account()
    handler = ForkingMac()
    parent = str(uuid.uuid4())

    async def go() -> None:
        async with mac(relay, acct.device_token, on_command=handler):
            await asyncio.to_thread(scenario)

    def scenario() -> None:
        headers = {"Authorization": f"Bearer {acct.phone_token}"}
        with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
            made = phone.post(
                "/api/sessions",
                json={
                    "device_id": acct.device_id,
                    "cwd": "/Users/test/project",
                    "session_id": parent,
                },
            )
            assert made.status_code == 201, made.text
            assert made.json()["session"]["parent_id"] is None

            forked = phone.post(f"/api/sessions/{parent}/fork", json={"prompt": "go on"})
            assert forked.status_code == 201, forked.text
            fork = forked.json()["id"]
            assert fork != parent and forked.json()["session"]["parent_id"] == parent
            command = handler.commands[-1]
            assert (command.name, command.session_id) == ("create_session", fork)
            assert command.args["fork_of"] == parent and command.args["prompt"] == "go on"
            assert command.args["cwd"] == "/Users/test/project"
            listed = {s["id"]: s for s in phone.get("/api/sessions").json()["sessions"]}
            assert listed[fork]["parent_id"] == parent and listed[parent]["parent_id"] is None
            assert phone.get(f"/api/sessions/{fork}").json()["parent_id"] == parent

            error_of(
                phone.post(f"/api/sessions/{uuid.uuid4()}/fork", json={}), 404, "unknown_session"
            )
            error_of(
                phone.post(f"/api/sessions/{parent}/fork", json={"session_id": "nope"}),
                422,
                "bad_session_id",
            )
            chosen = str(uuid.uuid4())
            named = phone.post(f"/api/sessions/{parent}/fork", json={"session_id": chosen})
            assert named.json()["id"] == chosen
            taken = phone.post(f"/api/sessions/{parent}/fork", json={"session_id": chosen})
            error_of(taken, 409, "session_exists")

            # From a terminal, naming the parent by its title.
            phone.patch(f"/api/sessions/{parent}", json={"title": "Parent of forks"})
            said = cli(relay, acct.phone_token, "fork", "parent of FORKS", "carry", "on").stdout
            command = handler.commands[-1]
            assert command.args["fork_of"] == parent and command.args["prompt"] == "carry on"
            assert f"into {command.session_id}: the same history" in said
            # A fork is "<title> (fork)" until it is renamed; one of an untitled parent is
            # named after its folder.
            titled = phone.get(f"/api/sessions/{command.session_id}").json()
            assert titled["title"] == "Parent of forks (fork)"
            assert listed[fork]["title"] == "project (fork)"
            phone.patch(f"/api/sessions/{fork}", json={"title": "My own"})
            assert phone.get(f"/api/sessions/{fork}").json()["title"] == "My own"

    asyncio.run(go())


def test_a_fork_the_mac_refuses_or_an_offline_mac_leaves_no_trace(relay: RelayServer) -> None:
    acct = relay.account()
    parent = REFUSED_PARENT

    async def go() -> None:
        async with mac(relay, acct.device_token, on_command=ForkingMac()) as link:
            await push(link, parent, SMALL)
            await asyncio.to_thread(scenario, True)
        await asyncio.to_thread(scenario, False)

    def scenario(online: bool) -> None:
        headers = {"Authorization": f"Bearer {acct.phone_token}"}
        with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
            before = {s["id"] for s in phone.get("/api/sessions").json()["sessions"]}
            answer = phone.post(f"/api/sessions/{parent}/fork", json={})
            if online:
                error_of(answer, 409, "x")
            else:
                error_of(answer, 409, "device_offline")
            after = {s["id"] for s in phone.get("/api/sessions").json()["sessions"]}
            assert after == before

    asyncio.run(go())
