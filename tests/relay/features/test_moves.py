"""Moving a session to another Mac (relay/features/moves.py, agent/moving.py): the pure steps, the
chunk protocol (Hypothesis: any cuts and repeats of chunks give the source's bytes), the relay's
route and its refusals, and a whole move between two scripted Macs over the real link, on both
store backends: the session keeps its id, events and seq; the old Mac can no longer speak for it,
the new one can; a failure leaves it where it was with the reason."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.errors import CommandFailed
from agent.moving import (
    adopt_stored,
    arrival_mode,
    carried_events,
    conversation_groups,
    conversation_of,
    moved_record,
    own_default_mode,
    resumed,
    settled,
    staged_name,
    write_plan,
)
from agent.registry import SessionRecord
from relay.features.moves import chunk_plan, have_sizes, next_step
from tests.support.relay import Account, RelayServer
from tests.support.web import (
    LoopThread,
    ScriptedMac,
    new_sid,
    relay_client,
    user_line,
    wait_for,
)
from wire.errors import LinkRefused
from wire.moved import read_record
from wire.protocol import Command, CommandResult, EventKind, MoveFile, NumberedEvent

# -- pure steps ----------------------------------------------------------------------------------


@given(size=st.integers(0, 5000), have=st.integers(-10, 6000), chunk=st.integers(1, 700))
def test_a_chunk_plan_covers_the_rest_of_a_file_once_in_order(
    size: int, have: int, chunk: int
) -> None:
    plan = chunk_plan(size, have, chunk)
    start = min(max(have, 0), size)
    assert sum(length for _, length in plan) == size - start
    at = start
    for offset, length in plan:
        assert offset == at and 1 <= length <= chunk
        at += length
    assert at == size


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=3000),
    chunk=st.integers(1, 400),
    script=st.lists(st.tuples(st.sampled_from(["send", "repeat", "cut"]), st.integers(0, 50))),
)
def test_chunks_cut_and_repeated_in_any_order_give_the_sources_bytes(
    data: bytes, chunk: int, script: list[tuple[str, int]]
) -> None:
    """The relay's side (chunk_plan from what the target has) against the target's (write_plan):
    chunks sent twice, a link cut that loses the target's last writes, the relay asking again
    what it has — the file ends the same as the source's, and never longer."""
    written = bytearray()
    sent: list[tuple[int, int]] = []

    def deliver(offset: int, length: int) -> None:
        plan = write_plan(len(written), offset, length, len(data))
        if plan is not None:
            skip, start = plan
            written[start:] = data[offset + skip : offset + length]

    for action, n in script:
        if action == "send":
            for offset, length in chunk_plan(len(data), len(written), chunk)[:1]:
                deliver(offset, length)
                sent.append((offset, length))
        elif action == "repeat" and sent:
            offset, length = sent[n % len(sent)]
            try:
                deliver(offset, length)  # an old chunk again: had already, or a gap refused
            except CommandFailed as exc:
                assert exc.code == "move_gap"
        elif action == "cut":
            del written[max(0, len(written) - n) :]  # the target lost its last bytes
        assert bytes(written) == data[: len(written)]
    for offset, length in chunk_plan(len(data), len(written), chunk):
        deliver(offset, length)
    assert bytes(written) == data


def test_a_chunk_past_the_end_or_past_what_is_had_is_refused() -> None:
    with pytest.raises(CommandFailed) as gap:
        write_plan(10, 20, 5, 100)
    assert gap.value.code == "move_gap"
    with pytest.raises(CommandFailed) as over:
        write_plan(90, 90, 20, 100)
    assert over.value.code == "bad_offset"
    assert write_plan(50, 10, 20, 100) is None  # had already
    assert write_plan(50, 40, 20, 100) == (10, 50)  # the part not had is written


def test_what_is_left_of_a_move_whoever_drives_it() -> None:
    assert next_step("running", False, False) == "abort"  # its driver died before the commit
    assert next_step("committed", True, False) == "tell"
    assert next_step("aborting", False, True) == "tell"
    assert next_step("committed", True, True) == "close"
    assert next_step("done", True, True) is None
    assert next_step("failed", True, True) is None


def test_the_source_packs_only_once_no_turn_runs() -> None:
    assert settled("idle", None, True, "idle")
    assert settled("busy", None, False, "idle")  # its claude is not running at all
    assert not settled("busy", None, True, "idle")
    assert not settled("waiting", "permission", True, "idle")
    assert not settled("waiting", "stuck", True, "idle")  # idle waits for a real end
    assert settled("waiting", "stuck", True, "now")  # the interruption notice after Esc
    assert not settled("waiting", "permission", True, "now")


def test_a_resumed_claude_is_up_once_idle_or_waiting_on_what_is_the_persons() -> None:
    """The move commits once the target's claude is idle, or shows what the person answers
    once the session is theirs: the turn the move interrupted, or the trust of the folder that
    arrived; never on another card, busy or starting."""
    assert resumed("idle", None, False)
    assert resumed("waiting", "stuck", False)  # moved "now": the interrupted turn's notice
    assert resumed("waiting", "keyed", True)  # the trust dialog of the folder that arrived
    assert not resumed("waiting", "keyed", False)  # another start-up dialog
    assert not resumed("waiting", "permission", False)
    assert not resumed("starting", "keyed", False) and not resumed("busy", None, False)


def test_transcripts_keep_their_place_under_the_project(tmp_path: Any) -> None:
    project = tmp_path / "projects" / "-Users-ada-src"
    conv = "5f0c3a58-0000-4000-8000-000000000001"
    main = staged_name(project / f"{conv}.jsonl", project, conv)
    sub = staged_name(project / conv / "subagents" / "agent-a1.jsonl", project, conv)
    assert main == f"transcripts/{conv}.jsonl"
    assert sub == f"transcripts/{conv}/subagents/agent-a1.jsonl"
    assert conversation_of(main) == conv == conversation_of(sub)


def test_the_record_arrives_as_this_macs_and_goes_on_from_the_relays_offsets() -> None:
    sid, conversation = str(uuid.uuid4()), str(uuid.uuid4())
    record = SessionRecord(
        id=sid,
        cwd="/Users/ada/src",
        created_at=1.0,
        conversation_id=conversation,
        conversation_ids=[conversation],
        secret="s3cret",
        transcript_path="/Users/ada/.claude/projects/x/c1.jsonl",
        permission_mode="bypassPermissions",
        allow_all=True,
        policy={"allow_all": True, "categories": {"read": "allow", "execute": "deny"}},
        grants=[{"id": "g1"}],
        acked={conversation: 100},
        marker_seq=3,
        pending_markers=[{"offset": 2, "text": "a"}, {"offset": 3, "text": "b"}],
        fork_copy="/Users/ada/.ssh/id_ed25519",
        worktree="/Users/ada/src-wt",
    )
    files = {"folder.bin": 10, "session.json": 1, f"transcripts/{conversation}.jsonl": 5}
    checked = read_record(json.dumps(record.to_json()).encode(), sid, files)
    arrived = moved_record(checked, "/home/ada/src", "manual", 50.0, "Studio\x1b[2J\nMac")
    assert (arrived.cwd, arrived.secret, arrived.transcript_path) == ("/home/ada/src", "", None)
    assert arrived.arrived_from == "Studio [2J Mac"  # the person trusts its folder here, or not
    assert moved_record(checked, "/w", "manual", 1.0, "\x00\t").arrived_from == "another Mac"
    assert len(moved_record(checked, "/w", "manual", 1.0, "M" * 500).arrived_from or "") == 80
    assert (arrived.permission_mode, arrived.allow_all, arrived.grants) == ("manual", False, [])
    assert arrived.policy == {"allow_all": False, "categories": {"execute": "deny"}, "tools": {}}
    assert (arrived.fork_copy, arrived.worktree, arrived.acked) == (None, None, {})
    assert (arrived.marker_seq, arrived.pending_markers) == (0, [])
    arrived.pending_markers = [{"offset": 1, "text": "queued here meanwhile"}]
    adopt_stored(
        arrived,
        {conversation: 250, "bridge": 2, "../x/secret": 0, "agent-a1": 2**40, "agent-b2": 9},
    )
    assert arrived.acked == {conversation: 250, "bridge": 2, "agent-b2": 9}
    assert arrived.pending_markers == [{"offset": 3, "text": "queued here meanwhile"}]
    assert arrived.marker_seq == 3
    adopt_stored(arrived, {"bridge": 9})
    assert arrived.acked == {"bridge": 9} and arrived.marker_seq == 10


def test_a_moved_sessions_mode_is_never_the_moves(tmp_path: Path) -> None:
    assert arrival_mode("bypassPermissions", None) == "manual"
    assert arrival_mode("auto", None) == "manual"
    assert arrival_mode("acceptEdits", "default") == "default"
    assert arrival_mode("plan", "bypassPermissions") == "plan"  # it only restricts
    assert arrival_mode(None, "acceptEdits") == "acceptEdits"  # this Mac's own choice
    assert own_default_mode(tmp_path) is None
    (tmp_path / "settings.json").write_text('{"permissions": {"defaultMode": "acceptEdits"}}')
    assert own_default_mode(tmp_path) == "acceptEdits"
    (tmp_path / "settings.json").write_text('{"permissions": {"defaultMode": "--yolo"}}')
    assert own_default_mode(tmp_path) is None


def numbered(seq: int, epoch: str = "e1", session: str = "s1") -> NumberedEvent:
    return NumberedEvent(
        kind=EventKind.USER, text=f"#{seq}", session_id=session, seq=seq, epoch=epoch
    )


def test_carried_events_are_kept_only_as_the_relay_numbered_them() -> None:
    honest = [numbered(1, "e0"), numbered(2, "e0"), numbered(5), numbered(7)]
    assert carried_events(honest, "s1", 9, "e1", 5) == (honest, None)  # gaps, an older epoch
    refused = {
        "past": [numbered(1), numbered(2**53 - 2)],
        "order": [numbered(2), numbered(1)],
        "repeat": [numbered(2), numbered(2)],
        "epoch": [numbered(1), numbered(6, "e9")],
        "other": [numbered(1, session="s2")],
    }
    for events in refused.values():
        kept, why = carried_events(events, "s1", 9, "e1", 5)
        assert kept == [] and why
    assert carried_events(honest, "s1", None, None, 1)[0] == []  # an older relay said nothing


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    seqs=st.lists(
        st.tuples(
            st.one_of(st.integers(1, 40), st.just(2**53 - 1)),
            st.sampled_from(["e0", "e1"]),
            st.sampled_from(["s1", "s1", "s1", "s2"]),
        ),
        max_size=12,
    ),
    last=st.integers(0, 30),
    start=st.integers(1, 31),
)
def test_carried_events_never_go_past_the_relays_numbering(
    seqs: list[tuple[int, str, str]], last: int, start: int
) -> None:
    events = [numbered(seq, epoch, session) for seq, epoch, session in seqs]
    kept, why = carried_events(events, "s1", last, "e1", start)
    assert (kept == events and why is None) or (kept == [] and why)
    numbers = [e.seq for e in kept]
    assert numbers == sorted(set(numbers)) and all(n <= last for n in numbers)
    assert all(e.session_id == "s1" and (e.seq < start or e.epoch == "e1") for e in kept)


def test_moved_transcripts_are_placed_by_conversation() -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    names = [
        "folder.bin",
        f"transcripts/{a}.jsonl",
        f"transcripts/{a}/subagents/agent-x.jsonl",
        "transcripts/memory/notes.md",
        f"transcripts/{b}.jsonl",
        "attachments/a0123456789abcdef01234567.png",
    ]
    assert conversation_groups(names) == {
        a: [f"{a}.jsonl", f"{a}/subagents/agent-x.jsonl", "memory/notes.md"],
        b: [f"{b}.jsonl"],
    }


def test_what_a_target_says_it_has_stays_within_each_file() -> None:
    files = [
        MoveFile(name="a", size=10, sha256="0" * 64),
        MoveFile(name="b", size=5, sha256="1" * 64),
    ]
    assert have_sizes({"a": 99, "b": -3, "c": 4, "d": True}, files) == {"a": 10, "b": 0}
    assert have_sizes("nonsense", files) == {}


# -- two scripted Macs over the real link --------------------------------------------------------


@dataclass
class MovingMac(ScriptedMac):
    """A scripted Mac that answers a move's commands as agent/moving.py does, from files in
    memory: ``packed`` are the source's, ``received`` the target's."""

    packed: dict[str, bytes] = field(default_factory=dict)
    received: dict[str, bytearray] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    refuse: dict[str, tuple[str, str]] = field(default_factory=dict)
    exports: int = 0
    turn_running: bool = False  # export answers "waiting" while it is
    place_status: str = "ready"  # what move_place answers (a target that never finishes)

    async def _on_command(self, command: Command) -> CommandResult:
        if not command.name.startswith("move_"):
            return await super()._on_command(command)
        self.commands.append(command)
        if command.name in self.refuse:
            code, message = self.refuse[command.name]
            return CommandResult(command_id=command.command_id, ok=False, code=code, error=message)
        args = command.parsed_args().model_dump()
        data: dict[str, Any] = {}
        if command.name == "move_probe":
            data = {"state": {"exists": False}, "have": [], "free_bytes": 10**12}
        elif command.name == "move_export":
            self.exports += 1
            if self.exports == 1 or self.turn_running:
                data = {"status": "waiting"}  # the turn runs: asked again
            else:
                files = [
                    {"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                    for n, b in self.packed.items()
                ]
                data = {"status": "ready", "manifest": {"kind": "plain"}, "files": files}
        elif command.name == "move_accept":
            self.sizes = {f["name"]: f["size"] for f in args["files"]}
            data = {"have": {n: len(self.received.get(n, b"")) for n in self.sizes}}
        elif command.name == "move_read":
            chunk = self.packed[args["file"]][args["offset"] : args["offset"] + args["length"]]
            data = {"data": base64.b64encode(chunk).decode()}
        elif command.name == "move_write":
            got = self.received.setdefault(args["file"], bytearray())
            body = base64.b64decode(args["data"])
            try:
                plan = write_plan(len(got), args["offset"], len(body), self.sizes[args["file"]])
            except CommandFailed as exc:
                return CommandResult(
                    command_id=command.command_id, ok=False, code=exc.code, error=exc.message
                )
            if plan is not None:
                got[plan[1] :] = body[plan[0] :]
            data = {"size": len(got)}
        elif command.name == "move_place":
            data = {"status": self.place_status}
        elif command.name == "move_finish":
            data = {"done": True}
        return CommandResult(command_id=command.command_id, ok=True, data=data)

    def finishes(self) -> list[str]:
        return [c.args["outcome"] for c in self.commands if c.name == "move_finish"]


def second_mac(server: RelayServer, account: Account, name: str = "Laptop") -> tuple[str, str]:
    token, _, device_id = server.state.store.create_token(account.account_id, "device", name)
    return token, device_id


def two_macs(
    relay: RelayServer, loop: LoopThread, **target: Any
) -> tuple[Account, MovingMac, MovingMac, str, str]:
    account = relay.account()
    token, target_id = second_mac(relay, account)
    source = MovingMac(relay, account.device_token, loop, name="Studio").connect()
    other = MovingMac(relay, token, loop, name="Laptop", **target).connect()
    sid = new_sid()
    source.send_json_lines(sid, [user_line("hello", str(uuid.uuid4()))])
    source.update(sid, state="idle")
    return account, source, other, sid, target_id


def packed(sid: str, folder: bytes) -> dict[str, bytes]:
    """What a source packs: the folder's archive and the session's record (here one never
    prompted: nothing to resume, no transcript)."""
    record = SessionRecord(id=sid, cwd="/Users/ada/src", created_at=1.0, conversation_id=sid)
    return {"folder.bin": folder, "session.json": json.dumps(record.to_json()).encode()}


def move_of(c: Any, sid: str) -> dict[str, Any]:
    return dict(c.get(f"/api/sessions/{sid}/move").json()["move"])


# Chunks of 300 kB (a few per test file); a Mac gone is waited for a second only.
SETTINGS = {"move_chunk_bytes": 300_000, "move_reconnect_wait": 1.0}


@pytest.fixture
def relay(make_relay: Any) -> RelayServer:  # this module's relay has its own settings
    server: RelayServer = make_relay(**SETTINGS)
    return server


def test_a_session_moves_whole_and_only_the_new_mac_speaks_for_it(
    relay: RelayServer, loop: LoopThread
) -> None:
    account, source, target, sid, target_id = two_macs(relay, loop)
    blob = bytes(range(256)) * 5000  # 1.28 MB: several chunks
    source.packed = packed(sid, blob)
    try:
        with relay_client(relay, account) as c:
            before = c.get(f"/api/sessions/{sid}").json()
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id, "when": "idle"})
            assert r.status_code == 202, r.text
            assert r.json()["move"]["state"] == "moving"
            wait_for(lambda: move_of(c, sid)["phase"] == "done", 20, "the move over")
            after = c.get(f"/api/sessions/{sid}").json()
            assert after["device_id"] == target_id
            assert after["mark"] is None and after["move"] is None
            assert (after["title"], after["last_seq"], after["epoch"]) == (
                before["title"], before["last_seq"], before["epoch"]
            )  # fmt: skip
            assert move_of(c, sid)["state"] == "done"
            assert bytes(target.received["folder.bin"]) == blob
            reads = [
                c2.args["offset"]
                for c2 in source.commands
                if c2.name == "move_read" and c2.args["file"] == "folder.bin"
            ]
            assert reads == [0, 300_000, 600_000, 900_000, 1_200_000]  # in 300 kB chunks
            assert source.finishes() == ["commit"] and target.finishes() == ["commit"]
            # the old Mac is refused, the new one numbered on from the same seq
            with pytest.raises(LinkRefused, match="not_your_session"):
                source.send_json_lines(sid, [user_line("from the old Mac", str(uuid.uuid4()))])
            target.offsets[sid] = source.offsets[sid]
            seq = target.send_json_lines(sid, [user_line("from the new Mac", str(uuid.uuid4()))])
            assert seq == before["last_seq"] + 1
            texts = [e["text"] for e in c.get(f"/api/sessions/{sid}/events").json()["events"]]
            assert texts == ["hello", "from the new Mac"]
    finally:
        source.close()
        target.close()


def test_a_refused_move_leaves_the_session_where_it_was_with_the_reason(
    relay: RelayServer, loop: LoopThread
) -> None:
    account, source, target, sid, target_id = two_macs(
        relay,
        loop,
        refuse={"move_accept": ("folder_differs", "the folder differs: README.md changed")},
    )
    source.packed = packed(sid, b"x" * 10)
    try:
        with relay_client(relay, account) as c:
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert r.status_code == 202, r.text
            move = wait_for(
                lambda: (m := move_of(c, sid))["state"] == "failed" and m, 20, "the move failed"
            )
            assert move["error"] == {
                "code": "folder_differs",
                "message": "the folder differs: README.md changed",
            }
            snap = c.get(f"/api/sessions/{sid}").json()
            assert snap["device_id"] == source.link.welcome.device_id  # type: ignore[union-attr]
            assert snap["mark"] is None
            assert snap["move"]["state"] == "failed"
            assert source.finishes() == ["abort"] and target.finishes() == ["abort"]
            assert (
                c.post(f"/api/sessions/{sid}/messages", json={"text": "still here"}).status_code
                == 200
            )
    finally:
        source.close()
        target.close()


def test_the_move_route_refuses_what_cannot_move(relay: RelayServer, loop: LoopThread) -> None:
    account = relay.account()
    _, target_id = second_mac(relay, account)
    source = MovingMac(relay, account.device_token, loop).connect()
    sid = new_sid()
    source.send_json_lines(sid, [user_line("hello", str(uuid.uuid4()))])
    try:
        with relay_client(relay, account) as c:

            def refused(body: dict[str, Any], session: str = sid) -> tuple[int, str]:
                r = c.post(f"/api/sessions/{session}/move", json=body)
                return r.status_code, r.json()["error"]["code"]

            assert refused({"device_id": target_id}) == (409, "device_offline")  # target offline
            assert refused({"device_id": "mac_nope"}) == (404, "unknown_device")
            assert refused({"device_id": account.device_id}) == (409, "same_device")
            assert refused({"device_id": target_id, "when": "later"}) == (400, "bad_request")
            assert refused({"device_id": target_id, "cwd": "relative/path"})[0] in (400, 409)
            assert refused({"device_id": target_id}, new_sid()) == (404, "unknown_session")
            other = relay.account()  # another account's Mac is unknown here
            assert refused({"device_id": other.device_id}) == (404, "unknown_device")
            r = c.get(f"/api/sessions/{sid}/move")
            assert (r.status_code, r.json()["error"]["code"]) == (404, "no_move")
    finally:
        source.close()


def test_while_a_session_moves_nothing_else_reaches_it(
    relay: RelayServer, loop: LoopThread
) -> None:
    account, source, target, sid, target_id = two_macs(relay, loop)
    source.packed = packed(sid, b"y" * 100)
    source.turn_running = True  # the move waits for the turn to end
    try:
        with relay_client(relay, account) as c:
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert r.status_code == 202
            wait_for(lambda: move_of(c, sid)["step"] == "waiting", 10, "waiting for the turn")
            listed = {s["id"]: s for s in c.get("/api/sessions").json()["sessions"]}
            assert listed[sid]["mark"] == "moving" and listed[sid]["move"]["to"] == target_id
            sent = c.post(f"/api/sessions/{sid}/messages", json={"text": "hi"})
            assert (sent.status_code, sent.json()["error"]["code"]) == (409, "session_moving")
            again = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert again.json()["error"]["code"] == "session_moving"
            target.close()  # the target goes away and does not come back in time
            source.turn_running = False
            move = wait_for(
                lambda: (m := move_of(c, sid))["state"] == "failed" and m, 20, "the move failed"
            )
            assert move["error"]["code"] == "device_offline"
            assert "Laptop" in move["error"]["message"]
            assert c.get(f"/api/sessions/{sid}").json()["mark"] is None
            assert source.finishes() == ["abort"]
    finally:
        source.close()


def test_a_move_nobody_drives_is_aborted_and_one_committed_is_finished(
    relay: RelayServer, loop: LoopThread
) -> None:
    """What a relay finds after a restart (the driver of these moves died): the store decides."""
    account, source, target, sid, target_id = two_macs(relay, loop)
    moves = relay.app.state.moves
    store = relay.state.store
    now = time.time()

    def row(move_id: str, phase: str) -> None:
        loop.run(
            store.write(
                lambda conn: conn.execute(
                    "INSERT INTO moves (id, session_id, account_id, source_device, target_device,"
                    " source_cwd, target_cwd, how, phase, driver, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, '/a', '/a', 'idle', ?, 'relay-dead', ?, ?)",
                    (
                        move_id,
                        sid,
                        account.account_id,
                        account.device_id,
                        target_id,
                        phase,
                        now,
                        now,
                    ),
                )
            )
        )

    try:
        with relay_client(relay, account) as c:
            row("mv_deadbeef00000001", "running")
            loop.run(store.update_session(account.account_id, sid, mark="moving"))
            wait_for(lambda: move_of(c, sid)["state"] == "failed", 10, "the orphan aborted")
            assert move_of(c, sid)["error"]["code"] == "relay_restarted"
            assert c.get(f"/api/sessions/{sid}").json()["mark"] is None
            assert source.finishes() == ["abort"] and target.finishes() == ["abort"]
            row("mv_deadbeef00000002", "committed")
            wait_for(lambda: move_of(c, sid)["phase"] == "done", 10, "the committed one finished")
            assert source.finishes() == ["abort", "commit"]
            assert target.finishes() == ["abort", "commit"]
            assert moves.tasks == {}
    finally:
        source.close()
        target.close()


def test_a_move_never_gives_a_mac_more_sessions_than_sessions_max_per_mac(
    make_relay: Any, loop: LoopThread
) -> None:
    """The one transaction that hands a session over counts the target's sessions as a new
    session of its own would be: past the limit the move fails there, and the session stays."""
    relay: RelayServer = make_relay(sessions_max_per_mac=1, **SETTINGS)
    account, source, target, sid, target_id = two_macs(relay, loop)
    source.packed = packed(sid, b"x" * 10)
    target.send_json_lines(new_sid(), [user_line("the laptop's own", str(uuid.uuid4()))])
    try:
        with relay_client(relay, account) as c:
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert r.status_code == 202, r.text
            move = wait_for(
                lambda: (m := move_of(c, sid))["phase"] == "failed" and m, 20, "the move over"
            )
            assert move["error"]["code"] == "too_many_sessions", move
            assert "sessions_max_per_mac" in move["error"]["message"]
            snap = c.get(f"/api/sessions/{sid}").json()
            assert snap["device_id"] == account.device_id and snap["mark"] is None
            assert source.finishes() == ["abort"] and target.finishes() == ["abort"]
            on_target = [
                s for s in c.get("/api/sessions").json()["sessions"] if s["device_id"] == target_id
            ]
            assert len(on_target) == 1
    finally:
        source.close()
        target.close()


def test_finished_moves_are_kept_only_the_newest_and_a_list_shows_each_sessions_latest(
    make_relay: Any, loop: LoopThread
) -> None:
    """A phone starting moves over and over grows the moves table by at most
    moves_kept_per_session finished moves a session; the list shows a session's latest move,
    as its snapshot does (not an older failure once it has moved since)."""
    relay: RelayServer = make_relay(moves_kept_per_session=2, **SETTINGS)
    account, source, target, sid, target_id = two_macs(
        relay, loop, refuse={"move_accept": ("folder_differs", "the folder differs")}
    )
    source.packed = packed(sid, b"x" * 10)

    def rows() -> list[Any]:
        return relay.state.store.db.query("SELECT phase FROM moves WHERE session_id = ?", (sid,))

    try:
        with relay_client(relay, account) as c:
            for _ in range(5):
                r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
                assert r.status_code == 202, r.text
                wait_for(lambda: move_of(c, sid)["phase"] == "failed", 20, "the move over")
            assert [r[0] for r in rows()] == ["failed"] * 3  # two kept, and the latest
            listed = {s["id"]: s for s in c.get("/api/sessions").json()["sessions"]}
            assert listed[sid]["move"]["error"]["code"] == "folder_differs"
            target.refuse.clear()
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert r.status_code == 202, r.text
            wait_for(lambda: move_of(c, sid)["phase"] == "done", 20, "the move over")
            assert sorted(r[0] for r in rows()) == ["done", "failed", "failed"]
            listed = {s["id"]: s for s in c.get("/api/sessions").json()["sessions"]}
            assert listed[sid]["device_id"] == target_id
            assert listed[sid]["move"] is None  # it moved: no older failure is its news
            assert c.get(f"/api/sessions/{sid}").json()["move"] is None
    finally:
        source.close()
        target.close()


def test_a_target_that_never_finishes_placing_fails_the_move_and_the_session_stays(
    make_relay: Any, loop: LoopThread
) -> None:
    """The target answers move_place "placing" for ever: move_place_timeout ends the move
    before the commit, and both Macs are told it is aborted."""
    relay: RelayServer = make_relay(move_place_timeout=1.5, **SETTINGS)
    account, source, target, sid, target_id = two_macs(relay, loop, place_status="placing")
    source.packed = packed(sid, b"x" * 10)
    try:
        with relay_client(relay, account) as c:
            r = c.post(f"/api/sessions/{sid}/move", json={"device_id": target_id})
            assert r.status_code == 202, r.text
            move = wait_for(
                lambda: (m := move_of(c, sid))["phase"] == "failed" and m, 20, "the move over"
            )
            assert move["error"]["code"] == "place_timeout", move
            assert "Laptop" in move["error"]["message"]
            assert "move_place_timeout" in move["error"]["message"]
            snap = c.get(f"/api/sessions/{sid}").json()
            assert snap["device_id"] == account.device_id and snap["mark"] is None
            assert source.finishes() == ["abort"] and target.finishes() == ["abort"]
    finally:
        source.close()
        target.close()
