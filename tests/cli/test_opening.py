"""Resume by reference and the read-only view: ``claude-bridge open`` / ``sessions`` as processes
against a real relay and a scripted Mac, and the API's refusals on a read-only view.

The Mac is a MacLink on its own event loop thread that answers commands the way the agent does
(create_session and reopen leave the session idle, end and rest end it) and records them, so a
test can tell exactly what reached the Mac.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.client import READ_ONLY_HEADER
from cli.display import cost_text, trouble_lines
from cli.listing import NO_SESSIONS
from cli.references import by_creation, parse_ref
from relay import routes
from tests.support.cli import cli
from tests.support.relay import Account, RelayServer, phone_client, transcript
from tests.support.web import LoopThread, ScriptedMac
from wire.protocol import Command, CommandResult, SessionInfo, StartFailureInfo
from wire.transcript import read_lines

READ_ONLY = {routes.READ_ONLY_HEADER: "1"}
LIFE = {"create_session": "idle", "reopen": "idle", "end": "ended", "rest": "ended"}
SMALL = "b_idle"  # "hello there" and the mock API's answer
BIG = "d_bash_permission"  # 23 events


class LifeMac(ScriptedMac):
    """A scripted Mac whose sessions live: after create/reopen they are idle, after end ended."""

    def command_names(self) -> list[str]:
        """The commands the person's steps sent (not the relay's own ``set_resume``, which follows
        a session's end: relay/features/snapshots.py)."""
        return [name for name in super().command_names() if name != "set_resume"]

    async def _on_command(self, command: Command) -> CommandResult:
        state = LIFE.get(command.name)
        if state is not None and self.link is not None and command.name not in self.fail:
            await self.link.update(SessionInfo(session_id=command.session_id, state=state))  # type: ignore[arg-type]
        return await super()._on_command(command)


@pytest.fixture
def studio(relay: RelayServer, account: Account, loop: LoopThread) -> Iterator[LifeMac]:
    mac = LifeMac(relay, account.device_token, loop, name="Studio")
    mac.connect()
    yield mac
    mac.close()


def open_json(server: RelayServer, acct: Account, *args: str) -> dict[str, Any]:
    out = cli(server, acct.phone_token, "open", "--json", *args).stdout
    body: dict[str, Any] = json.loads(out)
    return body


def new_id() -> str:
    """A fresh session id: a UUID, as `claude --session-id` takes (the relay refuses others)."""
    return str(uuid.uuid4())


def wait_offline(server: RelayServer, acct: Account) -> None:
    deadline = time.monotonic() + 5
    while server.state.live.link(acct.device_id) is not None:
        assert time.monotonic() < deadline, "the Mac's link did not close"
        time.sleep(0.02)


def push(mac: ScriptedMac, session_id: str, prefix: str) -> int:
    path = transcript(prefix)
    return mac.send_records(
        session_id, path.stem, list(read_lines(path.read_bytes())), "/Users/ada/src/shop"
    )


# -- resume by reference ---------------------------------------------------------------------


def test_open_with_a_scope_reopens_that_way_this_once(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    session_id = new_id()
    push(studio, session_id, SMALL)
    with phone_client(relay, account.phone_token) as client:
        assert client.post(f"/api/sessions/{session_id}/end").status_code == 200
    studio.commands.clear()
    out = cli(relay, account.phone_token, "open", session_id, "--scope", "fresh").stdout
    assert out.startswith("Reopened, fresh: a new conversation from its decisions.")
    sent = studio.commands[-1]
    assert sent.name == "reopen" and sent.args["scope"] == "fresh"
    assert "hello there" in sent.args["handoff"] and sent.args["decisions"] == 0
    with phone_client(relay, account.phone_token) as client:
        client.post(f"/api/sessions/{session_id}/end")
    summary = cli(relay, account.phone_token, "open", session_id, "--scope", "summary").stdout
    assert summary.startswith("Reopened, from a summary")
    assert studio.commands[-1].args == {"scope": "summary"}
    both = cli(relay, account.phone_token, "open", session_id, "--session", "-1", code=2)
    assert "say which session to open" in both.stderr


def test_open_an_explicit_id_reopens_an_ended_session_and_shows_a_running_one(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    session_id = new_id()
    last = push(studio, session_id, SMALL)
    with phone_client(relay, account.phone_token) as client:
        assert client.post(f"/api/sessions/{session_id}/end").status_code == 200
        assert client.get(f"/api/sessions/{session_id}").json()["mark"] == "ended"
    studio.commands.clear()

    out = cli(relay, account.phone_token, "open", "--session", session_id).stdout
    assert studio.command_names() == ["reopen"]
    assert studio.commands[0].session_id == session_id
    assert out.startswith("Reopened, the whole conversation.")
    assert f"Session {session_id}" in out and "Mac: Studio" in out and "state: idle" in out
    assert "you: hello there" in out and "claude: Hello! This is the mock API." in out
    assert f"#{last}" in out  # the last events, numbered
    assert f"{relay.url}/#/s/{session_id}" in out
    with phone_client(relay, account.phone_token) as client:
        snapshot = client.get(f"/api/sessions/{session_id}").json()
        assert (snapshot["mark"], snapshot["state"]) == (None, "idle")

    # Running already: shown, nothing sent to the Mac.
    body = open_json(relay, account, "--session", session_id)
    assert body["action"] == "Already running"
    assert body["session"]["id"] == session_id and body["link"].endswith(f"/#/s/{session_id}")
    # the conversation's events, then the snapshot taken at its end (relay/features/snapshots.py)
    assert [e["seq"] for e in body["events"] if e["kind"] != "snapshot"] == list(range(1, last + 1))
    assert studio.command_names() == ["reopen"]


def test_open_an_unknown_id_creates_a_session_with_exactly_that_id(
    relay: RelayServer, account: Account, studio: LifeMac, tmp_path: Any
) -> None:
    not_uuid = cli(relay, account.phone_token, "open", "--session", "nightly-build", code=2)
    assert "UUID" in not_uuid.stderr and studio.commands == []  # refused before the Mac is asked
    chosen = new_id()
    out = cli(relay, account.phone_token, "open", "--session", chosen, cwd=str(tmp_path)).stdout
    assert out.startswith(f"Started a new session on Studio in {tmp_path}")
    assert studio.command_names() == ["create_session"]
    command = studio.commands[0]
    assert command.session_id == chosen and command.args == {"cwd": str(tmp_path)}
    with phone_client(relay, account.phone_token) as client:
        snapshot = client.get(f"/api/sessions/{chosen}").json()
        assert (snapshot["id"], snapshot["cwd"], snapshot["device_id"]) == (
            chosen, str(tmp_path), account.device_id,
        )  # fmt: skip

    # The same id again is the same session: a script can reuse the ids it chose.
    again = open_json(relay, account, "--session", chosen, "--cwd", "/elsewhere")
    assert again["action"] == "Already running" and again["session"]["cwd"] == str(tmp_path)
    assert studio.command_names() == ["create_session"]

    # --cwd and --device by name.
    other = new_id()
    made = open_json(relay, account, "--session", other, "--cwd", "/srv/app", "--device", "studio")
    assert made["action"].startswith("Started a new session on Studio in /srv/app")
    assert studio.commands[-1].args == {"cwd": "/srv/app"}


def test_a_new_session_needs_one_online_mac_or_device(
    relay: RelayServer, account: Account, loop: LoopThread, tmp_path: Path
) -> None:
    store = relay.state.store
    second_token, _, second_id = store.create_token(account.account_id, "device", "Laptop")
    chosen = new_id()
    none_online = cli(relay, account.phone_token, "open", "--session", chosen, code=2).stderr
    assert "no Mac is online" in none_online and "test mac" in none_online

    first = LifeMac(relay, account.device_token, loop, name="Studio").connect()
    second = LifeMac(relay, second_token, loop, name="Laptop").connect()
    try:
        two = cli(relay, account.phone_token, "open", "--session", chosen, code=2).stderr
        assert "2 Macs are online" in two and "--device" in two
        assert "Studio" in two and "Laptop" in two and second_id in two
        unknown = cli(
            relay, account.phone_token, "open", "--session", chosen, "--device", "Nope", code=2
        ).stderr
        assert "no Mac 'Nope'" in unknown
        assert first.commands == [] and second.commands == []

        # Run on a Mac whose agent is linked to this account: that Mac is the one meant.
        here = tmp_path / "agent"
        here.mkdir()
        (here / "device-id").write_text(second_id + "\n")
        on_laptop = cli(
            relay, account.phone_token, "open", "--session", new_id(), "--cwd", "/w", "--json",
            agent_dir=str(here),
        ).stdout  # fmt: skip
        assert json.loads(on_laptop)["session"]["device_id"] == second_id
        assert second.command_names() == ["create_session"] and first.commands == []
        second.commands.clear()

        made = open_json(relay, account, "--session", chosen, "--device", second_id, "--cwd", "/w")
        assert made["session"]["device_id"] == second_id
        assert second.command_names() == ["create_session"] and first.commands == []
    finally:
        first.close()
        second.close()


def test_offsets_count_by_creation_not_by_last_use(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    older, newer = new_id(), new_id()
    open_json(relay, account, "--session", older, "--cwd", "/a")
    time.sleep(0.01)  # distinct creation times even on a fast machine
    open_json(relay, account, "--session", newer, "--cwd", "/b")
    with phone_client(relay, account.phone_token) as client:
        assert client.post(f"/api/sessions/{older}/end").status_code == 200
        # Moving it to the top of the list does not change its creation either.
        assert client.patch(f"/api/sessions/{older}", json={"position": -5}).status_code == 200
    assert open_json(relay, account, "--session", older)["action"] == "Reopened"
    assert studio.command_names() == ["create_session", "create_session", "end", "reopen"]

    assert open_json(relay, account, "--session", "-1", "--read-only")["session"]["id"] == newer
    assert open_json(relay, account, "--session", "-2", "--read-only")["session"]["id"] == older
    # Without --read-only, -N opens (here: both run already, so nothing is sent).
    assert open_json(relay, account, "--session", "-1")["session"]["id"] == newer
    assert open_json(relay, account, "--session=-2")["session"]["id"] == older
    assert studio.command_names()[-1] == "reopen"

    missing = cli(relay, account.phone_token, "open", "--session", "-3", code=2).stderr
    assert "no session -3: there are only 2 sessions" in missing
    assert "claude-bridge sessions" in missing
    zero = cli(relay, account.phone_token, "open", "--session", "-0", code=2).stderr
    assert "offsets start at -1" in zero

    rows = json.loads(cli(relay, account.phone_token, "sessions", "--json").stdout)
    assert [(r["ref"], r["id"]) for r in rows] == [(-1, newer), (-2, older)]
    assert rows[0]["mac"] == "Studio" and rows[0]["cwd"] == "/b" and rows[0]["state"] == "idle"


def test_an_offset_with_no_sessions_at_all_is_a_clear_error(
    relay: RelayServer, account: Account
) -> None:
    err = cli(relay, account.phone_token, "open", "--session", "-1", code=2).stderr
    assert "no session -1: there are no sessions yet" in err


def test_errors_say_what_to_do_and_exit_2(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    session_id = new_id()
    push(studio, session_id, SMALL)
    bad = cli(relay, "cbp_not-a-real-token", "open", "--session", session_id, code=2).stderr
    assert "pair again" in bad and "unauthorized" in bad
    device = cli(relay, account.device_token, "sessions", code=2).stderr
    assert "phone token" in device
    nothing = cli(relay, "", "sessions", code=2).stderr
    assert "no phone token" in nothing and "CB_TOKEN" in nothing
    unreachable = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "sessions",
            "--relay",
            "http://127.0.0.1:9",
            "--token",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unreachable.returncode == 2 and "cannot reach the relay" in unreachable.stderr

    studio.close()
    wait_offline(relay, account)

    # The Mac is offline: reopening says so with the relay's own message.
    offline = cli(relay, account.phone_token, "open", "--session", session_id, code=2).stderr
    assert "device_offline" in offline and "offline" in offline
    assert "claude-bridge agent" in offline


# -- sessions ---------------------------------------------------------------------------------


def test_sessions_lists_newest_created_first_with_cost_placeholder(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    first, second = new_id(), new_id()
    push(studio, first, SMALL)
    time.sleep(0.01)
    push(studio, second, BIG)
    with phone_client(relay, account.phone_token) as client:
        client.patch(f"/api/sessions/{first}", json={"title": "Fix the build"})
    table = cli(relay, account.phone_token, "sessions").stdout.splitlines()
    assert table[0].split() == ["REF", "ID", "TITLE", "MAC", "FOLDER", "STATE", "CREATED", "COST"]
    assert table[1].startswith("-1") and second in table[1]
    assert table[2].startswith("-2") and first in table[2] and "Fix the build" in table[2]
    assert "Studio" in table[2] and "/Users/ada/src/shop" in table[2]
    assert "ended" in table[1]  # no live state reported for it

    rows = json.loads(cli(relay, account.phone_token, "sessions", "--json").stdout)
    assert [r["id"] for r in rows] == [second, first]
    assert set(rows[0]) >= {"id", "title", "mac", "cwd", "state", "created_at", "cost", "ref"}
    with phone_client(relay, account.phone_token) as client:
        listed = {s["id"]: s for s in client.get("/api/sessions").json()["sessions"]}
    for row, line in zip(rows, table[1:], strict=True):
        # The session's cost object when the relay has one (its usd shown), else "—".
        assert row["cost"] == listed[row["id"]].get("cost")
        assert line.rstrip().endswith(cost_text(row))

    empty = relay.account()
    assert "No sessions yet" in cli(relay, empty.phone_token, "sessions").stdout


def test_cost_and_offsets_pure() -> None:
    assert cost_text({"cost": {"usd": 0.01234}}) == "$0.0123"
    assert cost_text({"cost": {"usd": 12.5}}) == "$12.50"
    assert cost_text({"cost": {"usd": None}}) == "—"
    assert cost_text({}) == "—"
    assert parse_ref("-12") == 12
    assert parse_ref("abc-1") == "abc-1"
    ordered = by_creation(
        [
            {"id": "a", "created_at": "2026-01-01T00:00:00.000Z", "position": 9},
            {"id": "b", "created_at": "2026-01-02T00:00:00.000Z", "position": 1},
        ]
    )
    assert [s["id"] for s in ordered] == ["b", "a"]
    assert READ_ONLY_HEADER == routes.READ_ONLY_HEADER


# -- the read-only view -----------------------------------------------------------------------


def test_read_only_prints_the_conversation_and_sends_nothing(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    session_id = new_id()
    last = push(studio, session_id, BIG)
    with phone_client(relay, account.phone_token) as client:
        client.post(f"/api/sessions/{session_id}/end")
    studio.commands.clear()

    out = cli(relay, account.phone_token, "open", "--session", session_id, "--read-only").stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"Session {session_id}") and lines[0].endswith("(read-only)")
    assert "state: ended" in lines[1]
    assert "#1    you: RUN_BASH one" in out
    assert "Bash: touch bash_made.txt && echo hi" in out and "  → hi" in out
    assert "· Rejected by user" in out
    assert f"#{last}" in out
    assert lines[-1] == f"Page: {relay.url}/#/s/{session_id}/read"
    assert studio.commands == []  # nothing reached the Mac
    with phone_client(relay, account.phone_token) as client:
        assert client.get(f"/api/sessions/{session_id}").json()["mark"] == "ended"  # still ended

    body = open_json(relay, account, "--session", session_id, "--read-only")
    assert [e["seq"] for e in body["events"] if e["kind"] != "snapshot"] == list(range(1, last + 1))
    assert studio.commands == []

    # An unknown id is never created by a read-only open.
    unknown = cli(
        relay, account.phone_token, "open", "--session", new_id(), "--read-only", code=2
    ).stderr
    assert "no session" in unknown and "never starts a session" in unknown
    assert studio.commands == []

    # The Mac away: an ended session still reads in full from the relay.
    studio.close()
    wait_offline(relay, account)
    offline = cli(relay, account.phone_token, "open", "--session", session_id, "--read-only")
    assert "#1    you: RUN_BASH one" in offline.stdout


def test_read_only_reads_in_pages_and_says_when_older_events_are_only_on_the_mac(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay(events_kept=5, catchup_page=4)
    acct = server.account()
    mac = LifeMac(server, acct.device_token, loop).connect()
    session_id = new_id()
    try:
        last = push(mac, session_id, BIG)
        loop.run(mac.link.wait_for_seq(session_id, last))  # type: ignore[union-attr]
        # Online: the Mac sends what the relay no longer keeps; pages of 4 join up.
        body = open_json(server, acct, "--session", session_id, "--read-only")
        assert [e["seq"] for e in body["events"] if e["kind"] != "snapshot"] == list(
            range(1, last + 1)
        )
    finally:
        mac.close()
    wait_offline(server, acct)
    out = cli(server, acct.phone_token, "open", "--session", session_id, "--read-only").stdout
    assert f"events before #{last - 4} are kept only on the Mac, which is offline" in out
    assert f"#{last - 4}" in out and "#1 " not in out


def changing_session_routes(routes_of: Any) -> list[tuple[str, str]]:
    """(method, path) of every route that changes a session, in these routes (any router)."""
    from tests.support.api import api_routes

    return sorted(
        (method, path)
        for path, methods, _ in api_routes(routes_of)
        for method in methods
        if path.startswith("/api/sessions") and method not in {"GET", "HEAD", "WEBSOCKET"}
    )


def marked_request(client: httpx.Client, method: str, path: str, session_id: str) -> httpx.Response:
    """A read-only request to a route, its path parts filled (the session's id, else "x")."""
    url = re.sub(r"\{[a-z_]+\}", "x", path.replace("{session_id}", session_id))
    return client.request(method, url, headers=READ_ONLY, json={})


def test_the_api_refuses_every_change_on_a_read_only_view(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    session_id = new_id()
    push(studio, session_id, SMALL)
    studio.update(session_id, state="idle")
    base = f"/api/sessions/{session_id}"
    calls: list[tuple[str, str, Any]] = [
        ("POST", f"{base}/messages", {"text": "hi"}),
        ("POST", f"{base}/messages", {"text": "now", "now": True}),
        ("POST", f"{base}/cards/c1", {"key": "1"}),
        ("POST", f"{base}/held/m1/cancel", None),
        ("POST", f"{base}/interrupt", None),
        ("POST", f"{base}/end", None),
        ("POST", f"{base}/rest", None),
        ("POST", f"{base}/reopen", None),
        ("PATCH", base, {"title": "renamed"}),
        ("POST", "/api/sessions", {"device_id": account.device_id, "cwd": "/tmp"}),
    ]
    listed = set(changing_session_routes(routes.router.routes))
    assert {
        ("POST", "/api/sessions/{session_id}/messages"),
        ("PATCH", "/api/sessions/{session_id}"),
    } <= listed

    with phone_client(relay, account.phone_token) as client:
        before = client.get(base).json()
        for method, url, body in calls:
            kwargs = {} if body is None else {"json": body}
            refused = client.request(method, url, headers=READ_ONLY, **kwargs)
            assert refused.status_code == 409, (method, url, refused.text)
            error = refused.json()["error"]
            assert error["code"] == "read_only" and "read-only" in error["message"], url
        # Every changing route of the phone API, including ones added later, refuses alike.
        for method, path in listed:
            refused = marked_request(client, method, path, session_id)
            assert refused.status_code == 409, (method, path, refused.text)
            assert refused.json()["error"]["code"] == "read_only", (method, path)
        assert studio.commands == []  # nothing reached the Mac
        after = client.get(base).json()
        assert after["title"] == before["title"] and after["mark"] == before["mark"]
        assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [session_id]

        # Reading works with the marker, ended sessions included.
        for url in (base, f"{base}/events", f"{base}/subagents", "/api/sessions"):
            assert client.get(url, headers=READ_ONLY).status_code == 200, url
        # A false marker is no marker; without it the same calls go through.
        sent = client.post(
            f"{base}/messages", json={"text": "hi"}, headers={routes.READ_ONLY_HEADER: "0"}
        )
        assert sent.status_code == 200 and studio.command_names() == ["send"]
        assert client.post(f"{base}/end").status_code == 200
        ended = client.get(base, headers=READ_ONLY).json()
        assert ended["mark"] == "ended"
        assert client.get(f"{base}/events", headers=READ_ONLY).json()["events"]

    # A missing or wrong login is still 401 first, with or without the marker.
    with httpx.Client(base_url=relay.url, timeout=15) as anonymous:
        refused = anonymous.post(f"{base}/messages", json={"text": "x"}, headers=READ_ONLY)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    with phone_client(relay, account.device_token) as device:
        refused = device.post(f"{base}/messages", json={"text": "x"}, headers=READ_ONLY)
        assert refused.status_code == 403


def test_every_router_honours_the_read_only_marker(relay: RelayServer, account: Account) -> None:
    """Routes other modules add under /api/sessions (titles, pins, policies…) must refuse too."""
    session_id = new_id()
    with phone_client(relay, account.phone_token) as client:
        ignored = [
            f"{method} {path}"
            for method, path in changing_session_routes(relay.app.routes)
            if marked_request(client, method, path, session_id).status_code != 409
        ]
    assert not ignored, (
        f"these routes change a session but ignore {routes.READ_ONLY_HEADER}: {ignored}; give "
        "their router dependencies=[Depends(routes.refuse_read_only)] (or the whole app, in "
        "relay/app.py: FastAPI(..., dependencies=[Depends(routes.refuse_read_only)]))"
    )


# -- on the relay's own machine, no phone token -------------------------------------------------


def _here(server: RelayServer, *args: str, code: int = 0, relay_url: str = "") -> str:
    """``claude-bridge ARGS`` on the relay's machine, as its user: no CB_TOKEN, its data folder."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(CB_RELAY=relay_url or server.url, CB_DATA_DIR=str(server.config.data_path))
    env["CB_AGENT_DIR"] = "/nonexistent/claude-bridge-agent"
    done = subprocess.run(
        [sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    return done.stdout if code == 0 else done.stderr


def test_the_relay_s_machine_needs_no_phone_token_and_reads_the_last_events(
    make_relay: Any, loop: LoopThread
) -> None:
    from cli.common import LOCAL_TOKEN_FILE
    from relay.localtoken import LOCAL_TOKEN_FILE as RELAYS_FILE

    assert LOCAL_TOKEN_FILE == RELAYS_FILE  # the name the command line repeats
    server: RelayServer = make_relay()
    kept = server.config.data_path / LOCAL_TOKEN_FILE
    assert kept.stat().st_mode & 0o777 == 0o600
    store = server.state.store
    device, _, _ = store.create_token(store.ensure_account(), "device", "Studio")
    mac = LifeMac(server, device, loop, name="Studio").connect()
    try:
        older, newer = new_id(), new_id()
        push(mac, older, SMALL)
        time.sleep(0.01)
        last = push(mac, newer, BIG)
        listed = _here(server, "sessions")
        assert newer in listed and older in listed
        # As the README says: the newest session, read only, with no token anywhere.
        whole = _here(server, "open", "-1", "--read-only")
        assert whole.splitlines()[0].startswith(f"Session {newer}")
        assert "#1    you: RUN_BASH one" in whole and f"#{last}" in whole
        tail = _here(server, "open", "-1", "--read-only", "--tail", "3")
        shown = [int(n) for n in re.findall(r"^#(\d+)", tail, re.MULTILINE)]
        assert shown == [last - 2, last - 1, last], tail
        assert mac.commands == []  # nothing reached the Mac
    finally:
        mac.close()
    # The token is never sent to a relay elsewhere: there, one must be given.
    refused = _here(server, "sessions", code=2, relay_url="https://relay.example.invalid")
    assert "no phone token" in refused


def test_a_session_that_did_not_start_says_why_and_what_to_do(
    relay: RelayServer, account: Account, studio: LifeMac
) -> None:
    """Claude Code ended before the session was live: `sessions` and `open --read-only` say what
    happened and what to do, as the page does, not only "ended"."""
    session_id = new_id()
    push(studio, session_id, SMALL)
    failure = StartFailureInfo(
        code="claude_not_logged_in",
        reason="Invalid API key · Please run /login",
        action="Run `claude` once in a terminal on Studio and log in, then send again.",
        last_lines=["Invalid API key · Please run /login"],
        status=1,
    )
    studio.update(session_id, state="ended", error="claude ended at start", failure=failure)
    wait_until(lambda: bool((relay_session(relay, account, session_id) or {}).get("failure")))

    listed = cli(relay, account.phone_token, "sessions").stdout.splitlines()
    assert listed[-3:] == [
        f"-1  {session_id}",
        "    Did not start: Invalid API key · Please run /login",
        f"    → {failure.action}",
    ]
    rows = json.loads(cli(relay, account.phone_token, "sessions", "--json").stdout)
    assert rows[0]["failure"]["code"] == "claude_not_logged_in"

    read = cli(relay, account.phone_token, "open", "-1", "--read-only").stdout.splitlines()
    assert read[2:4] == [
        "  Did not start: Invalid API key · Please run /login",
        f"  → {failure.action}",
    ]


def test_no_sessions_says_how_to_start_one_with_what_every_machine_has(
    relay: RelayServer,
) -> None:
    """The hint names the page and the drop-in, not `uuidgen` (missing on Debian by default)."""
    said = cli(relay, relay.account().phone_token, "sessions").stdout
    assert said.strip() == NO_SESSIONS
    assert "uuidgen" not in said and "claude-bridge claude" in said and "+ New session" in said


def relay_session(server: RelayServer, acct: Account, session_id: str) -> dict[str, Any] | None:
    with phone_client(server, acct.phone_token) as client:
        found = client.get(f"/api/sessions/{session_id}")
    return found.json() if found.status_code == 200 else None


def wait_until(ready: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "the relay did not hear of it"
        time.sleep(0.02)


@given(
    reason=st.text(max_size=200),
    action=st.text(max_size=200),
    error=st.one_of(st.none(), st.text(max_size=200)),
)
def test_trouble_lines_say_the_failure_first_else_the_error(
    reason: str, action: str, error: str | None
) -> None:
    failure = {"code": "claude_exited", "reason": reason, "action": action}
    lines = trouble_lines({"failure": failure, "error": error})
    assert lines[0] == f"  Did not start: {reason or 'claude_exited'}"
    assert lines[1:] == ([f"  → {action}"] if action else [])
    assert trouble_lines({"error": error}) == ([f"  Error: {error}"] if error else [])
    assert trouble_lines({"failure": None}) == []
