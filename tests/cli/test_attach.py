"""A terminal joined to a session (cli/attach.py): the ``claude`` drop-in's arguments, naming a
session by id, start of an id or title, and ``claude-bridge attach`` on a real tmux server: the
person's terminal (a pane of another tmux server) types into the session's pane, Ctrl-b d
detaches and leaves it running."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.attach import ClaudePlan, LocalAgent, attach_argv, latest_here, plan_claude
from cli.client import CommandError, SessionSnapshot
from cli.references import resolve
from tests.support.bridge import REPO
from tests.support.waits import wait_for

# -- the drop-in's arguments (pure) ------------------------------------------------------------


def test_a_plain_claude_starts_a_new_session() -> None:
    assert plan_claude([]) == ClaudePlan("new")
    plan = plan_claude(
        ["--model", "opus", "--permission-mode=plan", "fix", "the bug", "-n", "Bug", "-w"]
    )
    assert (plan.action, plan.model, plan.permission_mode) == ("new", "opus", "plan")
    assert (plan.prompt, plan.title, plan.worktree) == ("fix the bug", "Bug", True)
    named = plan_claude(["--worktree", "feat/x", "--session-id", "u-1", "--", "-odd prompt"])
    assert (named.worktree, named.session_id, named.prompt) == ("feat/x", "u-1", "-odd prompt")
    assert plan_claude(["--dangerously-skip-permissions"]).permission_mode == "bypassPermissions"


def test_resume_continue_and_fork_name_an_existing_session() -> None:
    resumed = plan_claude(["-r", "abcd1234", "and then"])
    assert (resumed.action, resumed.resume, resumed.prompt) == ("resume", "abcd1234", "and then")
    assert plan_claude(["-c"]).action == "continue"
    forked = plan_claude(["--continue", "--fork-session"])
    assert (forked.action, forked.fork) == ("continue", True)


def test_what_starts_no_session_runs_the_real_claude() -> None:
    for args in (["-p", "hi"], ["--version"], ["mcp", "list"], ["--model", "x", "--print", "q"]):
        plan = plan_claude(args)
        assert (plan.action, plan.argv) == ("run", args)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--mcp-config", "a.json"], "does not pass --mcp-config on"),
        (["--bare"], "does not pass --bare on"),
        (["--no-such-flag"], "no flag '--no-such-flag'"),
        (["--model"], "--model needs a value"),
        (["--resume"], "needs a session"),
        (["--fork-session"], "forks a session"),
        (["-c", "-w"], "start a new session"),
    ],
)
def test_what_it_cannot_do_is_refused_with_what_to_do(args: list[str], says: str) -> None:
    with pytest.raises(CommandError) as caught:
        plan_claude(args)
    assert says in caught.value.message


# -- naming a session (pure) -------------------------------------------------------------------

A = "aaaa1111-0000-4000-8000-000000000001"
B = "aaaa2222-0000-4000-8000-000000000002"
C = "bbbb3333-0000-4000-8000-000000000003"
LISTED = [
    SessionSnapshot(id=A, title="Fix the bug", created_at="2026-12-01T10:00:00Z", device_id="m1",
                    cwd="/p", updated_at="2026-12-01T11:00:00Z", conversation_id="c-a"),
    SessionSnapshot(id=B, title="Docs", created_at="2026-12-02T10:00:00Z", device_id="m1",
                    cwd="/p", updated_at="2026-12-01T12:00:00Z", conversation_id="c-b"),
    SessionSnapshot(id=C, title="docs", created_at="2026-12-03T10:00:00Z", device_id="m2",
                    cwd="/p", updated_at="2026-12-03T12:00:00Z", conversation_id="c-c"),
]  # fmt: skip


def test_a_session_is_named_by_id_start_of_id_title_offset_or_conversation() -> None:
    assert resolve(LISTED, A)["id"] == A
    assert resolve(LISTED, A.upper())["id"] == A
    assert resolve(LISTED, "bbbb")["id"] == C
    assert resolve(LISTED, "fix THE bug")["id"] == A
    assert resolve(LISTED, "-1")["id"] == C and resolve(LISTED, "-3")["id"] == A
    assert resolve(LISTED, "c-b")["id"] == B


def test_names_that_match_several_or_none_say_so() -> None:
    with pytest.raises(CommandError) as several:
        resolve(LISTED, "aaaa")
    assert "2 sessions match" in several.value.message and A in several.value.hint
    with pytest.raises(CommandError) as twins:
        resolve(LISTED, "docs")
    assert "2 sessions match" in twins.value.message
    with pytest.raises(CommandError) as short:
        resolve(LISTED, "bbb")
    assert "no session bbb" in short.value.message and "4 characters" in short.value.hint
    with pytest.raises(CommandError):
        resolve(LISTED, "-4")


def test_continue_takes_this_macs_latest_session_in_this_folder() -> None:
    assert latest_here(LISTED, "m1", "/p")["id"] == B
    with pytest.raises(CommandError) as none:
        latest_here(LISTED, "m1", "/elsewhere")
    assert "no session of this Mac in /elsewhere" in none.value.message


def test_attach_joins_the_agents_socket_and_exact_session() -> None:
    assert attach_argv("tmux", "claude-bridge", A) == [
        "tmux", "-L", "claude-bridge", "attach-session", "-t", f"=cb-{A}",
    ]  # fmt: skip


# -- on real tmux ------------------------------------------------------------------------------


@pytest.fixture
def servers() -> Iterator[tuple[str, str]]:
    """Two throw-away tmux servers: the agent's and the person's terminal."""
    agent, person = f"cbt-agent-{uuid.uuid4().hex[:6]}", f"cbt-term-{uuid.uuid4().hex[:6]}"
    yield agent, person
    for socket in (agent, person):
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def test_attach_types_into_the_sessions_pane_and_detaches(
    tmp_path: Path, servers: tuple[str, str]
) -> None:
    agent_socket, person = servers
    sid = str(uuid.uuid4())
    data = tmp_path / "agent"
    data.mkdir()
    (data / "mux.json").write_text(json.dumps({"program": "tmux", "socket": agent_socket}))
    (data / "device-id").write_text("mac-1\n")
    (data / "sessions.json").write_text(
        json.dumps({"version": 1, "sessions": [{"id": sid, "cwd": str(tmp_path), "created_at": 1}]})
    )
    name = f"cb-{sid}"
    tmux(agent_socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "cat")
    local = LocalAgent.read(data)
    assert (local.program, local.socket, local.device_id) == ("tmux", agent_socket, "mac-1")
    assert local.running(sid) and not local.running(str(uuid.uuid4()))
    assert [r["id"] for r in local.records()] == [sid]

    command = shlex.join([sys.executable, "-m", "cli", "attach", sid[:8]])
    env = f"cd {shlex.quote(str(REPO))} && CB_AGENT_DIR={shlex.quote(str(data))} CB_TOKEN= "
    tmux(person, "new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh")
    tmux(person, "send-keys", "-t", "t", env + command, "Enter")
    wait_for(lambda: tmux(agent_socket, "list-clients"), 20, "the terminal attached")
    tmux(person, "send-keys", "-t", "t", "-l", "typed at the desk")
    tmux(person, "send-keys", "-t", "t", "Enter")
    wait_for(
        lambda: "typed at the desk" in tmux(agent_socket, "capture-pane", "-p", "-t", name),
        10,
        "the keys in the session's pane",
    )
    tmux(person, "send-keys", "-t", "t", "C-b", "d")
    wait_for(
        lambda: "detached; session" in tmux(person, "capture-pane", "-p", "-J", "-t", "t"),
        10,
        "the terminal detached",
    )
    assert local.running(sid)  # it runs on
    size = tmux(
        agent_socket, "display-message", "-p", "-t", name, "#{window_width}x#{window_height}"
    )
    assert size.strip() == "120x40"  # the size the agent reads screens at, back


def test_attach_to_a_session_that_is_not_running_says_so(tmp_path: Path) -> None:
    data = tmp_path / "agent"
    data.mkdir()
    (data / "mux.json").write_text(json.dumps({"program": "tmux", "socket": "cbt-none"}))
    sid = str(uuid.uuid4())
    (data / "sessions.json").write_text(json.dumps({"sessions": [{"id": sid, "cwd": "/"}]}))
    for wanted, says in ((sid, "is not running on this Mac"), ("zzzz9999", "no session")):
        done = subprocess.run(
            [sys.executable, "-m", "cli", "attach", wanted],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={"PATH": "/usr/bin:/bin", "CB_AGENT_DIR": str(data), "HOME": str(tmp_path)},
            check=False,
        )
        assert done.returncode == 2 and says in done.stderr, done.stderr


class Devices:
    """The relay as ``join`` asks it: the account's Macs."""

    def devices(self) -> list[dict[str, str]]:
        return [{"id": "m1", "name": "Studio"}, {"id": "m2", "name": "Laptop"}]


def test_attach_to_a_session_of_another_mac_names_that_mac(tmp_path: Path) -> None:
    from cli.attach import join

    local = LocalAgent(tmp_path, "m1", "tmux", "cbt-none")
    with pytest.raises(CommandError) as caught:
        join(local, Devices(), LISTED[2])  # type: ignore[arg-type]
    assert "runs on the Mac 'Laptop', not on this one" in caught.value.message
    unlinked = LocalAgent(tmp_path, None, "tmux", "cbt-none")
    with pytest.raises(CommandError) as never:
        join(unlinked, Devices(), LISTED[0])  # type: ignore[arg-type]
    assert "has not linked to a relay yet" in never.value.message


class EndsAtStart(LocalAgent):
    """A session whose claude ran a moment, then ended (attach returns, nothing runs)."""

    attached = False

    def running(self, session_id: str) -> bool:
        return not self.attached

    def attach(self, session_id: str) -> int:
        self.attached = True
        return 0


class Heard:
    """The relay as ``join`` asks it after claude ended: first still starting, then ended, with
    why when it never started."""

    def __init__(self, failure: dict[str, object] | None) -> None:
        self.failure = failure
        self.asked = 0

    def session(self, session_id: str) -> dict[str, object]:
        self.asked += 1
        if self.asked < 3:
            return {"id": session_id, "state": "starting"}
        return {"id": session_id, "state": "ended", "failure": self.failure}


FAILED = {
    "code": "claude_not_logged_in",
    "reason": "Invalid API key · Please run /login",
    "action": "Run `claude` once in a terminal on Studio and log in, then send again.",
    "status": 1,
}


def test_the_drop_in_says_why_claude_did_not_start_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code ended before its session was live: the drop-in says why and what to do, as
    the page does, and ends in failure (claude's own status), as claude itself would."""
    from cli.attach import join

    local = EndsAtStart(tmp_path, "m1", "tmux", "cbt-none")
    relay = Heard(FAILED)
    code = join(local, relay, {"id": A, "device_id": "m1", "cwd": "/src"})  # type: ignore[arg-type]
    said = capsys.readouterr()
    assert code == 1 and relay.asked == 3
    assert f"claude exited; session {A} is stopped." in said.out
    assert said.err.splitlines() == [
        "claude-bridge: Did not start: Invalid API key · Please run /login",
        f"claude-bridge: → {FAILED['action']}",
    ]


def test_the_drop_in_ends_quietly_when_claude_ran_and_exited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.attach import join

    local = EndsAtStart(tmp_path, "m1", "tmux", "cbt-none")
    assert join(local, Heard(None), {"id": A, "device_id": "m1"}) == 0  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""
