"""What a hostile source Mac can send in a move, and what the target and the relay make of it
(issue 20): a real relay, a real target agent process (its own HOME, data folder and tmux socket,
the fake claude), the phone's real HTTP API, and a source that answers the move with whatever the
test crafted (tests/support/hostile.py).

The promises, each with its test below: ids from a move are UUIDs and name only what arrived
with it; ``--resume`` gets nothing else; no file outside the session's own transcripts is read as
its history; a move never decides the mode, the policy or a flag of the target's claude; a move
never takes over a session the target runs; carried events and offsets never stop the session
recording; a held message's attachment travels or the move is refused, and a file arriving as
an attachment is one; and the folder's archive attacks (a planted repository layout, symlink
chains, a checkout's ignored files, a big folder that differs) and the folder hold (one move at a
time into a folder; an abort takes back only what its own move laid down).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.transcript import project_slug
from tests.support.hostile import (
    PNG,
    AgentMac,
    Cargo,
    World,
    agent_mac,
    event,
    events_file,
    file,
    folder,
    folder_archive,
    hostile_world,
    packed_folder,
    record,
    symlink,
    transcript,
)
from tests.support.journeys import say_and_wait_answer, wait_card, wait_event, wait_state
from tests.support.macs import git, wait_online
from tests.support.relay import RelayServer
from tests.support.waits import wait_for
from wire.protocol import CONVERSATION_KEY, MAX_SEQ

# A Mac gone is waited for a short while only; commands answer within seconds.
SETTINGS = {"move_reconnect_wait": 2.0, "move_chunk_bytes": 256 * 1024}


@pytest.fixture
def world(make_relay: Any, tmp_path: Path) -> Iterator[World]:
    relay: RelayServer = make_relay(**SETTINGS)
    with hostile_world(relay, tmp_path) as w:
        yield w


def ids() -> tuple[str, str]:
    return str(uuid.uuid4()), str(uuid.uuid4())


def honest_cargo(session_id: str, cwd: str, conversation: str, **fields: Any) -> Cargo:
    """What an honest source sends: an empty folder, the conversation, the session's record
    (``fields`` changed)."""
    archive, manifest = folder_archive([])
    made = record(session_id, cwd, conversation)
    made.update(fields)
    return Cargo(
        record=made,
        folder=archive,
        manifest=manifest,
        transcripts={
            f"{conversation}.jsonl": transcript(conversation, cwd, [("prompt 1", "answer 1")])
        },
    )


def moved_in(world: World, session_id: str, cargo: Cargo, name: str = "shop") -> dict[str, Any]:
    """Report the session on the source, move it to a new folder ``name`` on the target with
    ``cargo`` (its record's cwd there), and wait until the move is over."""
    said = cargo.record.get("conversation_id")
    # The source's own lines go under a conversation id the relay takes (a path is refused).
    taken = said if isinstance(said, str) and CONVERSATION_KEY.match(said) else str(uuid.uuid4())
    world.report(session_id, "/Users/eve/shop", taken)
    cwd = world.target.folder(name)
    cargo.record["cwd"] = cwd
    world.move(session_id, cwd, cargo)
    return world.outcome(session_id)


def refused_whole(world: World, session_id: str, move: dict[str, Any], cwd: str) -> None:
    """The move failed; the session is the source's still, and nothing of it is on the target."""
    assert move["phase"] == "failed", move
    assert world.snapshot(session_id)["device_id"] == world.account.device_id
    assert world.source.finishes(session_id) == ["abort"]
    assert session_id not in world.target.registry()
    assert world.target.claude_argv(session_id) == []
    assert not Path(cwd).exists()


def test_an_honest_cargo_moves_whole_and_goes_on_there(world: World) -> None:
    """The harness itself: a source that tells the truth moves its session to the target, its
    conversation with a subagent's transcript and the project's memory."""
    sid, conversation = ids()
    cargo = honest_cargo(sid, "", conversation)
    cargo.transcripts[f"{conversation}/subagents/agent-a1.jsonl"] = b'{"type":"user"}\n'
    cargo.transcripts["memory/notes.md"] = b"# remembered\n"
    move = moved_in(world, sid, cargo)
    assert move["phase"] == "done", move
    slug = project_slug(world.target.registry()[sid]["cwd"])
    placed = world.target.home / ".claude" / "projects" / slug
    assert (placed / conversation / "subagents" / "agent-a1.jsonl").is_file()
    assert (placed / "memory" / "notes.md").read_text() == "# remembered\n"
    assert world.snapshot(sid)["device_id"] == world.target.device_id
    argv = wait_for(lambda: world.target.claude_argv(sid), 30, "its claude running")
    assert argv[argv.index("--resume") + 1] == conversation
    assert world.source.finishes(sid) == ["commit"]
    say_and_wait_answer(world.phone, sid, "still there?", 60, "the conversation going on")


# -- defect 2: the moved record is checked ------------------------------------------------------


def test_a_move_never_sets_the_mode_or_the_policy_of_the_targets_claude(world: World) -> None:
    """bypassPermissions, "allow all", allow rules and grants arrive: the target's claude starts
    as the target would start it (manual, its own Claude Code settings naming no other), what
    only restricts is kept, and it asks before running a command."""
    sid, conversation = ids()
    cargo = honest_cargo(
        sid,
        "",
        conversation,
        permission_mode="bypassPermissions",
        allow_all=True,
        policy={
            "allow_all": True,
            "allow_all_until": None,
            "categories": {"execute": "allow", "edit": "allow"},
            "tools": {"Bash": "allow", "WebFetch": "deny"},
        },
        grants=[{"id": "g1", "tool": "Bash", "kind": "category", "given_at": time.time()}],
    )
    move = moved_in(world, sid, cargo)
    assert move["phase"] == "done", move
    argv = wait_for(lambda: world.target.claude_argv(sid), 30, "its claude running")
    assert "bypassPermissions" not in argv, argv
    assert argv[argv.index("--permission-mode") + 1] == "manual", argv  # the target's own
    kept = world.target.registry()[sid]
    assert kept["permission_mode"] == "manual"
    assert kept["allow_all"] is False and kept["policy"].get("allow_all") is False
    assert "allow" not in kept["policy"]["categories"].values()
    assert kept["policy"]["tools"] == {"WebFetch": "deny"}  # what restricts is kept
    assert kept["grants"] == [] and kept["secret"] != "the-source-secret"
    # The relay shows what the target holds, and the target asks before running a command.
    shown = world.phone.get(f"/api/sessions/{sid}/policy").json()
    assert shown["policy"]["allow_all"] is False, shown
    wait_state(world.phone, sid, "idle", 60)
    world.phone.post(f"/api/sessions/{sid}/messages", json={"text": "RUN_BASH please"})
    card = wait_card(world.phone, sid, "permission", 60)
    assert card["tool"] == "Bash"
    assert not (Path(kept["cwd"]) / "bash_made.txt").exists()


@pytest.mark.parametrize(
    ("model", "kept"),
    [
        ("--dangerously-skip-permissions", None),
        ("opus --permission-mode bypassPermissions", None),
        ("x" * 300, None),
        ("claude-opus-5-5[1m]", "claude-opus-5-5[1m]"),
    ],
    ids=["a-flag", "words", "too-long", "plain"],
)
def test_a_model_from_a_move_is_a_plain_name_or_none(
    world: World, model: str, kept: str | None
) -> None:
    """A model name ends up on claude's command line: one that is not a plain, bounded name is
    not taken (claude starts with the target's own default model); a plain one is."""
    sid, conversation = ids()
    move = moved_in(world, sid, honest_cargo(sid, "", conversation, model=model))
    assert move["phase"] == "done", move
    argv = wait_for(lambda: world.target.claude_argv(sid), 30, "its claude running")
    assert model not in argv or model == kept
    assert (argv[argv.index("--model") + 1] if "--model" in argv else None) == kept, argv
    assert world.target.registry()[sid]["model"] == kept


@pytest.mark.parametrize(
    "fields",
    [
        {"conversation_id": "../../../.ssh/id_ed25519"},
        {"conversation_ids": ["{conversation}", "../-Users-eve-other/secret"]},
        {"fork_conversation": "../../.aws/credentials", "conversation_id": None},
        {"conversation_id": "{absent}", "conversation_ids": ["{absent}"]},
        {"fork_conversation": "{absent}", "conversation_id": "{session}"},
        {"parent_id": "--resume"},
        {"id": "{other}"},
    ],
    ids=[
        "conversation-path",
        "conversations-path",
        "fork-path",
        "conversation-not-arrived",
        "fork-not-arrived",
        "parent-not-uuid",
        "record-of-another-session",
    ],
)
def test_ids_from_a_move_are_uuids_of_what_arrived_with_it(
    world: World, fields: dict[str, Any]
) -> None:
    """An id that is no UUID, or names a conversation that did not arrive with the move (one
    the target's Claude Code might find elsewhere in its home), refuses the move: ``--resume``
    and ``--fork-session`` only ever get a checked id of the session's own."""
    sid, conversation = ids()
    names = {
        "{conversation}": conversation,
        "{absent}": str(uuid.uuid4()),
        "{session}": sid,
        "{other}": str(uuid.uuid4()),
    }

    def named(value: Any) -> Any:
        if isinstance(value, list):
            return [named(v) for v in value]
        return names.get(value, value) if isinstance(value, str) else value

    cargo = honest_cargo(sid, "", conversation, **{k: named(v) for k, v in fields.items()})
    move = moved_in(world, sid, cargo)
    assert move["error"] is not None and move["error"]["code"] == "bad_record", move
    refused_whole(world, sid, move, cargo.record["cwd"])
    assert names["{other}"] not in world.target.registry()


@pytest.mark.parametrize(
    ("fields", "extra", "code"),
    [
        ({"id": "{other}"}, {}, "bad_record"),
        ({"fork_conversation": "../../.aws/credentials"}, {}, "bad_record"),
        ({"conversation_id": "{absent}", "conversation_ids": []}, {}, "bad_record"),
        ({"held": "{held}"}, {}, "attachment_missing"),
        ({}, {"notes.txt": b"a file no move carries"}, "bad_args"),
    ],
    ids=["another-session", "fork-path", "conversation-not-arrived", "attachment", "file"],
)
def test_the_target_checks_what_arrives_itself(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    fields: dict[str, Any],
    extra: dict[str, bytes],
    code: str,
) -> None:
    """The relay's own check switched off (a relay that let it through): the target refuses
    the same records and files by itself, before it lays anything down."""
    monkeypatch.setattr("relay.features.moves.read_record", lambda *_: None)
    monkeypatch.setattr("relay.features.moves.files_problem", lambda _: None)
    sid, conversation = ids()
    names = {
        "{other}": str(uuid.uuid4()),
        "{absent}": str(uuid.uuid4()),
        "{held}": [held_with("a" + secrets.token_hex(12))],
    }
    chosen = {k: names.get(v, v) if isinstance(v, str) else v for k, v in fields.items()}
    cargo = honest_cargo(sid, "", conversation, **chosen)
    cargo.extra.update(extra)
    move = moved_in(world, sid, cargo)
    assert move["error"] is not None and move["error"]["code"] == code, move
    refused_whole(world, sid, move, cargo.record["cwd"])


def test_a_move_never_takes_over_a_session_the_target_runs(world: World) -> None:
    """A record naming the target's own session (not the one moving) is refused; that session
    runs on untouched."""
    target = world.target
    own_cwd = target.mac.folder("own")
    made = world.phone.post("/api/sessions", json={"device_id": target.device_id, "cwd": own_cwd})
    assert made.status_code == 201, made.text
    own = made.json()["id"]
    wait_state(world.phone, own, "idle", 60)
    before = target.registry()[own]
    sid, conversation = ids()
    cargo = honest_cargo(
        sid, "", conversation, id=own, permission_mode="bypassPermissions", allow_all=True
    )
    move = moved_in(world, sid, cargo)
    assert move["phase"] == "failed" and move["error"]["code"] == "bad_record", move
    after = target.registry()[own]
    assert (after["cwd"], after["secret"], after["permission_mode"], after["allow_all"]) == (
        before["cwd"], before["secret"], before["permission_mode"], before["allow_all"]
    )  # fmt: skip
    assert target.claude_argv(own), "the target's own session stopped"
    say_and_wait_answer(world.phone, own, "still mine?", 60, "the own session going on")


def test_nothing_outside_the_sessions_own_transcripts_is_read_as_its_history(
    world: World,
) -> None:
    """A record pointing its fork's copy or its transcript at a private file of the target
    (here: a conversation of another folder, written as Claude Code writes one): the file is
    never read, nothing of it reaches the relay."""
    private_id = str(uuid.uuid4())
    private = (
        world.target.home / ".claude" / "projects" / "-home-eve-private" / f"{private_id}.jsonl"
    )
    private.parent.mkdir(parents=True)
    private.write_bytes(transcript(private_id, "/home/eve/private", [("TOP SECRET", "noted")]))
    sid, conversation = ids()
    fork = str(uuid.uuid4())
    cargo = honest_cargo(
        sid,
        "",
        conversation,
        fork_conversation=fork,
        fork_copy=str(private),
        transcript_path=str(private),
        acked={conversation: -1, f"../-home-eve-private/{private_id}": -1},
    )
    cargo.transcripts[f"{fork}.jsonl"] = transcript(fork, "/Users/eve/shop", [("forked", "ok")])
    cargo.record["conversation_ids"] = [conversation]
    move = moved_in(world, sid, cargo)
    if move["phase"] == "done":  # and again when the target's agent starts over
        wait_for(lambda: any(e.get("marker") == "moved" for e in world.events(sid)), 30, "moved")
        world.target.restart()
        wait_for(lambda: world.target.claude_argv(sid), 60, "its claude running")
        wait_state(world.phone, sid, "idle", 60)
        say_and_wait_answer(world.phone, sid, "what now?", 60, "the conversation going on")
    texts = [e.get("text", "") for e in world.events(sid)]
    assert not any("TOP SECRET" in t or t == "noted" for t in texts), texts


# -- defect 5: carried events and offsets -------------------------------------------------------


def test_carried_events_never_exhaust_the_sessions_seq(world: World) -> None:
    """The source's event archive carries a seq near 2^53 (and events out of order, of another
    session): the target keeps none the relay did not number, and after it restarts (its hello
    says what it holds) the session goes on recording, one seq after the other."""
    sid, conversation = ids()
    last = world.report(sid, "/Users/eve/shop", conversation)
    before = world.snapshot(sid)
    epoch = before["epoch"]
    carried = [
        event(sid, 1, epoch, "prompt 1"),
        event(sid, 2, epoch, "answer 1", kind="assistant"),
        event(str(uuid.uuid4()), 3, epoch, "another session's"),
        event(sid, MAX_SEQ - 1, epoch, "the end of numbering"),
    ]
    cargo = honest_cargo(sid, "", conversation)
    cargo.events = events_file(carried)
    cwd = world.target.folder("shop")
    cargo.record["cwd"] = cwd
    world.move(sid, cwd, cargo)
    move = world.outcome(sid)
    assert move["phase"] == "done", move
    archive = world.target.data / "events" / f"{sid}.jsonl"
    wait_for(lambda: archive.exists(), 30, "the target's archive")
    kept = [json.loads(line) for line in archive.read_text().splitlines()]
    assert all(e["session_id"] == sid and e["seq"] <= last + 5 for e in kept), kept
    world.target.restart()
    wait_for(lambda: world.target.claude_argv(sid), 60, "its claude running")
    wait_state(world.phone, sid, "idle", 60)
    say_and_wait_answer(world.phone, sid, "still counting?", 60, "the answer recorded")
    after = world.snapshot(sid)
    assert after["epoch"] == epoch and after["last_seq"] < last + 20, after
    seqs = [e["seq"] for e in world.events(sid)]
    assert seqs == list(range(1, len(seqs) + 1)), seqs


def test_offsets_from_a_move_never_stop_the_session_recording(world: World) -> None:
    """The record says every line of its conversation and every marker was stored up to a
    huge offset: the target goes on from what the relay stored, so what is said after the move
    is recorded, and so is the line saying where the session came from."""
    sid, conversation = ids()
    huge = 2**40 - 2
    cargo = honest_cargo(
        sid,
        "",
        conversation,
        acked={conversation: huge, "bridge": huge},
        marker_seq=huge,
        pending_markers=[{"offset": huge + 1, "text": "{}"}],
    )
    move = moved_in(world, sid, cargo)
    assert move["phase"] == "done", move
    wait_state(world.phone, sid, "idle", 60)
    say_and_wait_answer(world.phone, sid, "recorded?", 60, "what was said after the move")
    wait_for(lambda: any(e.get("marker") == "moved" for e in world.events(sid)), 30, "moved")


# -- defect 11: attachments travel --------------------------------------------------------------


def held_with(attachment_id: str, name: str = "pixel.png", size: int = len(PNG)) -> dict[str, Any]:
    return {
        "id": "held-" + secrets.token_hex(6),
        "text": "look at this picture",
        "state": "held",
        "created_at": time.time(),
        "when": "held",
        "attachments": [
            {"id": attachment_id, "name": name, "media_type": "image/png", "size": size}
        ],
    }


def test_a_held_messages_attachment_travels_with_the_session(world: World) -> None:
    sid, conversation = ids()
    attachment = "a" + secrets.token_hex(12)
    cargo = honest_cargo(
        sid, "", conversation, held=[held_with(attachment, name="../../../etc/pixel\x1b[2J.png")]
    )
    cargo.attachments[f"{attachment}.png"] = PNG
    move = moved_in(world, sid, cargo)
    assert move["phase"] == "done", move
    folder_here = world.target.data / "attachments" / sid
    kept = folder_here / f"{attachment}.png"
    assert kept.read_bytes() == PNG
    assert kept.stat().st_mode & 0o777 == 0o600
    assert json.loads((folder_here / f"{attachment}.json").read_text())["name"] == "pixel[2J.png"
    typed = wait_for(
        lambda: next(
            (e for e in world.events(sid) if e["kind"] == "user" and "look at this" in e["text"]),
            None,
        ),
        60,
        "the held message typed on the target",
    )
    assert str(kept) in typed["text"], typed


@pytest.fixture
def two_agents(
    make_relay: Any, tmp_path: Path
) -> Iterator[tuple[httpx.Client, AgentMac, AgentMac]]:
    """A phone and two honest Macs of one account, each a real agent process."""
    relay: RelayServer = make_relay(**SETTINGS)
    account = relay.account()
    macs = [agent_mac(relay, account, tmp_path / n.lower(), n) for n in ("Studio", "Laptop")]
    phone = httpx.Client(
        base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}, timeout=30
    )
    try:
        for mac in macs:
            mac.start()
            wait_online(phone, mac.device_id)
        yield phone, macs[0], macs[1]
    finally:
        phone.close()
        for mac in macs:
            mac.stop()
            mac.mac.kill_tmux()


def held_with_picture(phone: httpx.Client, studio: AgentMac) -> tuple[str, dict[str, Any]]:
    """A session on the studio with a turn running and a message held with a picture."""
    cwd = studio.mac.folder("shop")
    made = phone.post("/api/sessions", json={"device_id": studio.device_id, "cwd": cwd})
    assert made.status_code == 201, made.text
    sid = str(made.json()["id"])
    wait_state(phone, sid, "idle", 60)
    phone.post(f"/api/sessions/{sid}/messages", json={"text": "SLOW please"})
    wait_state(phone, sid, "busy", 30)
    saved = phone.post(
        f"/api/sessions/{sid}/attachments",
        params={"name": "pixel.png"},
        content=PNG,
        headers={"Content-Type": "image/png"},
    )
    assert saved.status_code == 201, saved.text
    info = dict(saved.json())
    sent = phone.post(
        f"/api/sessions/{sid}/messages",
        json={"text": "look at this picture", "attachments": [info["id"]]},
    )
    assert sent.status_code == 200, sent.text
    return sid, info


def move_over(phone: httpx.Client, sid: str, device_id: str, cwd: str) -> dict[str, Any]:
    begun = phone.post(f"/api/sessions/{sid}/move", json={"device_id": device_id, "cwd": cwd})
    assert begun.status_code == 202, begun.text
    return dict(
        wait_for(
            lambda: (
                (m := phone.get(f"/api/sessions/{sid}/move").json()["move"])["phase"]
                in ("done", "failed")
                and m
            ),
            90,
            "the move over",
        )
    )


def test_an_honest_source_sends_a_held_messages_attachment_along(
    two_agents: tuple[httpx.Client, AgentMac, AgentMac],
) -> None:
    phone, studio, laptop = two_agents
    sid, info = held_with_picture(phone, studio)
    move = move_over(phone, sid, laptop.device_id, laptop.folder("shop"))
    assert move["phase"] == "done", move
    kept = laptop.data / "attachments" / sid / f"{info['id']}.png"
    assert kept.read_bytes() == PNG

    def typed() -> dict[str, Any] | None:
        page = phone.get(f"/api/sessions/{sid}/events", params={"after": 0}).json()
        return next(
            (e for e in page["events"] if e["kind"] == "user" and "look at this" in e["text"]),
            None,
        )

    message = wait_for(typed, 60, "the held message typed on the laptop")
    assert str(kept) in message["text"], message
    assert not (studio.data / "attachments" / sid).exists()  # the studio forgot the session


def test_a_source_that_lost_a_held_attachment_refuses_the_move(
    two_agents: tuple[httpx.Client, AgentMac, AgentMac],
) -> None:
    phone, studio, laptop = two_agents
    sid, info = held_with_picture(phone, studio)
    (studio.data / "attachments" / sid / f"{info['id']}.png").unlink()
    move = move_over(phone, sid, laptop.device_id, laptop.folder("shop"))
    assert move["error"] is not None and move["error"]["code"] == "attachment_missing", move
    assert "pixel.png" in move["error"]["message"]
    assert phone.get(f"/api/sessions/{sid}").json()["device_id"] == studio.device_id


@pytest.mark.parametrize("case", ["missing", "not-an-image", "unasked-for", "wrong-size", "bad-id"])
def test_an_attachment_that_did_not_travel_whole_refuses_the_move(world: World, case: str) -> None:
    """The held message's file is missing, is not what it says, is not any held message's, or
    is named wrongly: the move is refused with the reason, the session stays where it was."""
    sid, conversation = ids()
    attachment = "a" + secrets.token_hex(12)
    held = held_with(attachment)
    files = {f"{attachment}.png": PNG}
    if case == "missing":
        files = {}
    elif case == "not-an-image":
        files = {f"{attachment}.png": b"#!/bin/sh\nrm -rf ~\n"}
        held["attachments"][0]["size"] = len(files[f"{attachment}.png"])
    elif case == "unasked-for":
        files[f"a{secrets.token_hex(12)}.png"] = PNG
    elif case == "wrong-size":
        held["attachments"][0]["size"] = len(PNG) + 1
    elif case == "bad-id":
        held["attachments"][0]["id"] = "../../sessions"
    cargo = honest_cargo(sid, "", conversation, held=[held])
    cargo.attachments.update(files)
    move = moved_in(world, sid, cargo)
    expected = {
        "missing": "attachment_missing",
        "not-an-image": "bad_attachment",
        "unasked-for": "bad_attachment",
        "wrong-size": "bad_attachment",
        "bad-id": "bad_record",
    }[case]
    assert move["error"] is not None and move["error"]["code"] == expected, move
    assert move["error"]["message"]
    refused_whole(world, sid, move, cargo.record["cwd"])
    assert not (world.target.data / "attachments" / sid).exists()


# -- a moved folder's Claude Code trust is the person's (agent/autopass.py) ---------------------


def trusts(world: World, cwd: str) -> bool:
    """The target's Claude Code recorded trust for ``cwd`` (``~/.claude.json``)."""
    config = json.loads((world.target.home / ".claude.json").read_text())
    return bool((config.get("projects", {}).get(cwd) or {}).get("hasTrustDialogAccepted"))


def moved_untrusted(world: World, sid: str, conversation: str) -> tuple[str, dict[str, Any]]:
    """Move the session into a folder the target's Claude Code never trusted; once the move is
    over (it never waits for the person), the trust card its claude then shows."""
    world.report(sid, "/Users/eve/shop", conversation)
    cwd = str(world.target.mac.root / "shop")
    world.move(sid, cwd, honest_cargo(sid, cwd, conversation))
    move = world.outcome(sid)
    assert move["phase"] == "done", move
    card = wait_card(world.phone, sid, "keyed", 30)
    return cwd, card


def answer(world: World, sid: str, card: dict[str, Any], key: str) -> None:
    response = world.phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": key})
    assert response.status_code == 200, response.text


def test_a_moved_folder_is_trusted_on_the_target_only_by_the_person(world: World) -> None:
    """The target never passes Claude Code's trust dialog for a folder that came with a move:
    the session needs the person (a card saying where the folder came from and what trusting
    it runs), and goes on as any session once they said yes."""
    sid, conversation = ids()
    cwd, card = moved_untrusted(world, sid, conversation)
    assert world.snapshot(sid)["state"] == "waiting"
    assert "Evil Mac" in card["title"] and "Evil Mac" in card["text"]
    assert "project settings" in card["text"] and ".mcp.json" in card["text"]
    assert [o["label"] for o in card["options"]] == ["No, exit", "Yes, I trust this folder"]
    assert world.target.registry()[sid]["arrived_from"] == "Evil Mac"
    assert not trusts(world, cwd)  # nothing pressed by the agent
    answer(world, sid, card, "2")
    wait_state(world.phone, sid, "idle", 30)
    assert trusts(world, cwd)
    assert world.target.registry()[sid]["arrived_from"] is None  # later starts as any session's
    say_and_wait_answer(world.phone, sid, "still there?", 60, "the conversation going on")


def test_a_moved_folder_not_trusted_ends_the_session_with_the_reason(world: World) -> None:
    sid, conversation = ids()
    cwd, card = moved_untrusted(world, sid, conversation)
    answer(world, sid, card, "1")
    ended = wait_state(world.phone, sid, "ended", 30)
    assert "Evil Mac" in ended["error"] and "not trusted" in ended["error"], ended
    kept = world.target.registry()[sid]
    assert kept["alive"] is False and kept["arrived_from"] == "Evil Mac"
    assert not trusts(world, cwd)


def test_a_revive_before_the_person_answered_still_asks_them(world: World) -> None:
    """The Mac restarts (its terminals gone) while the trust card waits: the revived claude's
    trust dialog is a card again, never passed (sessions.json keeps where the folder came from)."""
    sid, conversation = ids()
    cwd, _ = moved_untrusted(world, sid, conversation)
    world.target.stop()
    world.target.mac.kill_tmux()
    world.target.start()
    wait_event(world.phone, sid, lambda e: e.get("marker") == "revived", "the session revived")

    def answered() -> bool:
        """The revived claude's card answered (the card shown before the restart is closed)."""
        card = world.snapshot(sid)["card"]
        assert not trusts(world, cwd), "the agent passed the trust dialog after the revive"
        if not card or card["kind"] != "keyed" or "Evil Mac" not in card["title"]:
            return False
        sent = world.phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": "2"})
        return sent.status_code == 200

    wait_for(answered, 60, "the revived claude's trust card answered")
    wait_state(world.phone, sid, "idle", 30)
    assert trusts(world, cwd)


# -- a folder the target's Claude Code trusts gets no project settings from a move --------------

HOOKS = json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "id"}]}]}})


def repository(root: Path, files: dict[str, str]) -> str:
    """A git repository at ``root`` with one commit of ``files``; its HEAD."""
    root.mkdir(parents=True)
    git(str(root), "init", "-q", "-b", "main")
    for name, text in files.items():
        Path(root, name).parent.mkdir(parents=True, exist_ok=True)
        Path(root, name).write_text(text)
    git(str(root), "add", ".")
    git(str(root), "commit", "-q", "-m", "first")
    return git(str(root), "rev-parse", "HEAD")


def commit(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        Path(root, name).write_text(text)
    git(str(root), "commit", "-q", "-am", "more")


def moved_with(world: World, cwd: str, folder: tuple[bytes, dict[str, Any]]) -> dict[str, Any]:
    sid, conversation = ids()
    cargo = honest_cargo(sid, cwd, conversation)
    cargo.folder, cargo.manifest = folder
    world.report(sid, "/Users/eve/shop", conversation)
    world.move(sid, cwd, cargo)
    return {"sid": sid, **world.outcome(sid)}


def folder_read(world: World, sid: str) -> bool:
    return any(
        c.name == "move_read" and c.session_id == sid and c.args["file"] == "folder.bin"
        for c in world.source.commands
    )


def test_a_folder_the_target_trusts_gets_no_project_settings_from_a_move(
    world: World, tmp_path: Path
) -> None:
    """An honest source (the real packer) says its plain folder holds .claude/settings.json; the
    target's Claude Code trusts the folder (it would ask nobody): refused as the target accepts,
    before the folder travels, naming the file and what to do."""
    source = tmp_path / "src"
    (source / ".claude").mkdir(parents=True)
    (source / ".claude" / "settings.json").write_text(HOOKS)
    (source / "app.py").write_text("print('hi')\n")
    archive, manifest = packed_folder(source)
    assert manifest["claude_files"][0][0] == ".claude/settings.json"
    cwd = world.target.folder("shop")  # trusted, not made yet
    move = moved_with(world, cwd, (archive, manifest))
    assert move["error"]["code"] == "trusted_folder_settings", move
    message = move["error"]["message"]
    assert ".claude/settings.json" in message and "another folder" in message and cwd in message
    refused_whole(world, move["sid"], move, cwd)
    assert not folder_read(world, move["sid"])  # refused before a byte of the folder travelled


def test_a_source_that_hides_project_settings_is_refused_before_they_are_laid_down(
    world: World,
) -> None:
    """The manifest names no Claude Code file, the archive holds a .mcp.json: the target reads
    the archive itself and lays nothing down."""
    servers = json.dumps({"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}})
    cwd = world.target.folder("shop")
    folder = folder_archive([file(".mcp.json", servers.encode()), file("app.py", b"1\n")])
    assert "claude_files" not in folder[1]
    move = moved_with(world, cwd, folder)
    assert move["error"]["code"] == "trusted_folder_settings", move
    assert ".mcp.json" in move["error"]["message"]
    assert folder_read(world, move["sid"])  # it travelled: the archive itself was read
    refused_whole(world, move["sid"], move, cwd)


def test_trust_of_a_folder_above_counts_as_claude_code_counts_it(
    world: World, tmp_path: Path
) -> None:
    """Claude Code 2.1.332 trusts a folder below a trusted one, but not across a repository's
    top: a plain folder under a trusted ``code`` is refused project settings; a repository under
    it is not trusted, so the move is done and the person's card asks."""
    code = world.target.mac.folder("code")  # trusted, made
    plain = folder_archive([file(".claude/settings.local.json", HOOKS.encode())])
    move = moved_with(world, str(Path(code, "notes")), plain)
    assert move["error"]["code"] == "trusted_folder_settings", move
    assert f"({code})" in move["error"]["message"]  # the trusted folder it goes by
    origin = tmp_path / "origin"
    repository(origin, {".claude/settings.json": HOOKS, "app.py": "print('one')\n"})
    move = moved_with(world, str(Path(code, "repo")), packed_folder(origin))
    assert move["phase"] == "done", move
    card = wait_card(world.phone, move["sid"], "keyed", 30)
    assert "Evil Mac" in card["title"]


def test_a_checkout_the_target_trusts_takes_commits_that_leave_its_project_settings_alone(
    world: World, tmp_path: Path
) -> None:
    """The target has a trusted checkout of the repository, with its .claude/settings.json: a
    move bringing it forward without touching that file is done (the same bytes are no
    change); one that changes it is refused, as accepted (an honest manifest) or, for a source
    that hides it, from the archive, and the checkout stays as it was."""
    origin = tmp_path / "origin"
    base = repository(origin, {".claude/settings.json": HOOKS, "app.py": "print('one')\n"})
    cwd = world.target.folder("shop")
    subprocess.run(["git", "clone", "-q", str(origin), cwd], check=True, capture_output=True)
    commit(origin, {"app.py": "print('two')\n"})
    move = moved_with(world, cwd, packed_folder(origin, have=(base,)))
    assert move["phase"] == "done", move
    assert Path(cwd, "app.py").read_text() == "print('two')\n"
    head = git(cwd, "rev-parse", "HEAD")
    commit(origin, {".claude/settings.json": HOOKS.replace("id", "touch /tmp/owned")})
    archive, manifest = packed_folder(origin, have=(head,))
    honest = moved_with(world, cwd, (archive, manifest))
    assert honest["error"]["code"] == "trusted_folder_settings", honest
    assert not folder_read(world, honest["sid"])
    unchanged = [[".claude/settings.json", hashlib.sha256(HOOKS.encode()).hexdigest()]]
    hidden = moved_with(world, cwd, (archive, {**manifest, "claude_files": unchanged}))
    assert hidden["error"]["code"] == "trusted_folder_settings", hidden
    assert folder_read(world, hidden["sid"])
    assert git(cwd, "rev-parse", "HEAD") == head
    assert Path(cwd, ".claude", "settings.json").read_text() == HOOKS
    assert git(cwd, "status", "--porcelain") == ""


# -- a source that stalls: every phase the relay drives is bounded --------------------------------


def stalled_world(
    make_relay: Any, tmp_path: Path, **settings: Any
) -> contextlib.AbstractContextManager[World]:
    relay: RelayServer = make_relay(**{**SETTINGS, **settings})
    return hostile_world(relay, tmp_path)


def stays_with_the_source(world: World, sid: str, move: dict[str, Any], code: str) -> None:
    """The move failed with ``code``; the session is the source's, no longer marked moving (a
    message reaches it), and nothing of it is on the target."""
    assert move["phase"] == "failed", move
    assert move["error"]["code"] == code, move
    snap = world.snapshot(sid)
    assert snap["device_id"] == world.account.device_id and snap["mark"] is None, snap
    sent = world.phone.post(f"/api/sessions/{sid}/messages", json={"text": "still here?"})
    assert sent.status_code == 200, sent.text
    assert world.source.finishes(sid) == ["abort"]
    assert sid not in world.target.registry()
    assert not any((world.target.data / "moves").glob("*/in"))


def test_a_source_that_packs_forever_fails_the_move_and_the_session_stays(
    make_relay: Any, tmp_path: Path
) -> None:
    """The source answers move_export "packing" for ever: move_pack_timeout ends the move."""
    with stalled_world(make_relay, tmp_path, move_pack_timeout=2.0) as world:
        sid, conversation = ids()
        world.source.packing.add(sid)
        world.report(sid, "/Users/eve/shop", conversation)
        cwd = world.target.folder("shop")
        world.move(sid, cwd, honest_cargo(sid, cwd, conversation))
        move = world.outcome(sid, timeout=30)
        stays_with_the_source(world, sid, move, "pack_timeout")
        assert "Evil Mac" in move["error"]["message"]
        assert "move_pack_timeout" in move["error"]["message"]
        assert not any(c.name == "move_accept" for c in world.source.commands)


def test_a_source_that_never_sends_a_chunk_fails_the_move_and_the_session_stays(
    make_relay: Any, tmp_path: Path
) -> None:
    """The source, linked, never answers a move_read: the move fails device_timeout (not
    "offline"), and the target takes back what it had accepted."""
    with stalled_world(make_relay, tmp_path, command_timeout=1.0) as world:
        sid, conversation = ids()
        world.source.hold(sid)
        world.report(sid, "/Users/eve/shop", conversation)
        cwd = world.target.folder("shop")
        world.move(sid, cwd, honest_cargo(sid, cwd, conversation))
        move = world.outcome(sid, timeout=30)
        world.source.release(sid)
        stays_with_the_source(world, sid, move, "device_timeout")
        assert "move_read" in move["error"]["message"]
        assert not Path(cwd).exists()


def test_a_source_that_sends_too_slowly_fails_the_move_and_the_session_stays(
    make_relay: Any, tmp_path: Path
) -> None:
    """Each chunk comes, but slowly (within command_timeout): move_transfer_timeout ends it."""
    with stalled_world(
        make_relay, tmp_path, move_chunk_bytes=1024, move_transfer_timeout=1.5
    ) as world:
        sid, conversation = ids()
        world.source.read_delay = 0.3
        world.report(sid, "/Users/eve/shop", conversation)
        cwd = world.target.folder("shop")
        cargo = honest_cargo(sid, cwd, conversation)
        cargo.folder, cargo.manifest = folder_archive([file("big.bin", os.urandom(40_000))])
        world.move(sid, cwd, cargo)
        move = world.outcome(sid, timeout=30)
        stays_with_the_source(world, sid, move, "transfer_timeout")
        assert "move_transfer_timeout" in move["error"]["message"]
        assert not Path(cwd).exists()


# -- defect 3: one folder, one move (agent/foldersync.py's hold) --------------------------------


def test_a_second_move_into_a_folder_a_first_holds_is_refused(world: World) -> None:
    first, second = ids()
    conversations = ids()
    cwd = world.target.folder("shared")
    for sid, conversation in zip((first, second), conversations, strict=True):
        world.report(sid, "/Users/eve/shop", conversation)
    world.source.hold(first)
    world.move(first, cwd, honest_cargo(first, cwd, conversations[0]))
    world.source.wait_reading(first)
    world.move(second, cwd, honest_cargo(second, cwd, conversations[1]))
    refused = world.outcome(second)
    world.source.release(first)
    assert refused["phase"] == "failed", refused
    assert world.outcome(first)["phase"] == "done"


def test_an_aborted_move_never_deletes_a_folder_another_session_runs_in(world: World) -> None:
    """The first move into a new folder is held mid-transfer; a second moves into the same
    folder meanwhile and lays down a file there, so the first fails once it is placed. Whatever
    the target lets happen, a session that moved in keeps its folder."""
    first, second = ids()
    conversations = ids()
    cwd = world.target.folder("shared")
    for sid, conversation in zip((first, second), conversations, strict=True):
        world.report(sid, "/Users/eve/shop", conversation)
    world.source.hold(first)
    world.move(first, cwd, honest_cargo(first, cwd, conversations[0]))
    world.source.wait_reading(first)
    laying = honest_cargo(second, cwd, conversations[1])
    laying.folder, laying.manifest = folder_archive([file("second.txt", b"mine\n")])
    world.move(second, cwd, laying)
    second_move = world.outcome(second)
    world.source.release(first)
    first_move = world.outcome(first)
    assert "done" in (first_move["phase"], second_move["phase"]), (first_move, second_move)
    if second_move["phase"] == "done":
        assert Path(cwd, "second.txt").is_file(), "the folder of a session that moved in is gone"
        assert world.target.claude_argv(second)


# -- archive attacks (agent/foldersync.py) ------------------------------------------------------


def test_a_planted_repository_never_runs_a_program_on_the_target(
    world: World, tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"
    config = (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
        f'\tfsmonitor = "touch {marker}; false"\n'
    ).encode()
    archive, manifest = folder_archive(
        [
            file("HEAD", b"ref: refs/heads/main\n"),
            file("config", config),
            folder("objects"),
            folder("refs"),
            folder("refs/heads"),
            file("app.py", b"print('hi')\n"),
        ]
    )
    sid, conversation = ids()
    cargo = honest_cargo(sid, "", conversation)
    cargo.folder, cargo.manifest = archive, manifest
    move = moved_in(world, sid, cargo)
    if move["phase"] == "done":
        world.phone.get(f"/api/sessions/{sid}/git/status")  # the Changes view
        world.phone.get(f"/api/sessions/{sid}/files")
    assert not marker.exists(), "a program planted in the moved folder ran on the target"


def test_a_symlink_chain_never_points_out_of_the_moved_folder(world: World) -> None:
    """``sub/up`` → ``..`` and ``sub2/esc`` → ``../sub/up/../..`` each read as inside the folder,
    but together resolve above it."""
    archive, manifest = folder_archive(
        [
            folder("sub"),
            symlink("sub/up", ".."),
            folder("sub2"),
            symlink("sub2/esc", "../sub/up/../.."),
            file("app.py", b"print('hi')\n"),
        ]
    )
    sid, conversation = ids()
    cargo = honest_cargo(sid, "", conversation)
    cargo.folder, cargo.manifest = archive, manifest
    move = moved_in(world, sid, cargo)
    cwd = os.path.realpath(cargo.record["cwd"])
    if move["phase"] == "done":
        for where, dirs, names in os.walk(cwd):
            for name in dirs + names:
                path = os.path.join(where, name)
                if os.path.islink(path):
                    resolved = os.path.realpath(path)
                    assert resolved == cwd or resolved.startswith(cwd + "/"), (path, resolved)


def test_a_move_never_overwrites_the_targets_ignored_files(world: World, tmp_path: Path) -> None:
    """The target has a checkout of the same repository with an ignored ``.env``; the source's
    history adds a ``.env`` of its own on top of the target's commit."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(str(origin), "init", "-q", "-b", "main")
    (origin / ".gitignore").write_text(".env\n")
    (origin / "app.py").write_text("print('one')\n")
    git(str(origin), "add", ".")
    git(str(origin), "commit", "-q", "-m", "first")
    base = git(str(origin), "rev-parse", "HEAD")
    cwd = world.target.folder("shop")
    subprocess.run(["git", "clone", "-q", str(origin), cwd], check=True, capture_output=True)
    Path(cwd, ".env").write_text("TARGET_SECRET=mine\n")
    (origin / ".env").write_text("EVIL=1\n")
    git(str(origin), "add", "-f", ".env")
    git(str(origin), "commit", "-q", "-m", "a .env of the source's")
    archive, manifest = packed_folder(origin, have=(base,))
    sid, conversation = ids()
    cargo = honest_cargo(sid, cwd, conversation)
    cargo.folder, cargo.manifest = archive, manifest
    world.report(sid, "/Users/eve/shop", conversation)
    world.move(sid, cwd, cargo)
    world.outcome(sid)
    assert Path(cwd, ".env").read_text() == "TARGET_SECRET=mine\n"


def test_a_big_mismatching_folder_is_refused_quickly(make_relay: Any, tmp_path: Path) -> None:
    """The target's folder holds 16 GiB (sparse: hashing it takes many seconds); the source's
    is one small file. The relay waits 4 s for an answer: the target must see the mismatch
    before that and say ``folder_differs``."""
    relay: RelayServer = make_relay(**{**SETTINGS, "command_timeout": 4.0})
    with hostile_world(relay, tmp_path) as world:
        cwd = world.target.mac.folder("big")
        with open(os.path.join(cwd, "big.bin"), "wb") as big:
            big.truncate(16 << 30)
        archive, manifest = folder_archive([file("app.py", b"print('hi')\n")], changes="ab" * 32)
        sid, conversation = ids()
        cargo = honest_cargo(sid, cwd, conversation)
        cargo.folder, cargo.manifest = archive, manifest
        world.report(sid, "/Users/eve/shop", conversation)
        world.move(sid, cwd, cargo)
        move = world.outcome(sid, timeout=60)
        assert move["error"] is not None and move["error"]["code"] == "folder_differs", move
