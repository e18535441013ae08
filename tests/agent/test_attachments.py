"""Attachments on the Mac (agent/attachments.py): checked against their declared type, kept in
the agent's data folder under names the Mac makes (0600 in 0700 folders), found again by id,
deleted with the session; and the relay's upload route in front of it."""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import os
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import attachments
from agent import held as heldrules
from agent.errors import CommandFailed
from tests.support.agent_fakes import Parts, fake_options, with_agent
from tests.support.api import SMALL, error_of, new_id, push
from tests.support.relay import Account, RelayServer, mac
from wire.protocol import (
    ATTACHMENT_TYPES,
    AttachmentInfo,
    AttachmentType,
    Command,
    CommandResult,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 20
SID = str(uuid.uuid4())


def test_the_type_table_and_the_wire_type_name_the_same_types() -> None:
    assert set(ATTACHMENT_TYPES) == set(get_args(AttachmentType))


@pytest.mark.parametrize(
    ("data", "media_type", "problem"),
    [
        (PNG, "image/png", None),
        (b"\xff\xd8\xff\xe0rest", "image/jpeg", None),
        (b"GIF89a...", "image/gif", None),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp", None),
        (b"%PDF-1.7\n", "application/pdf", None),
        ("héllo".encode(), "text/plain", None),
        (b'{"a": 1}', "application/json", None),
        (b"<html>", "image/png", "the file's bytes are not image/png"),
        (PNG, "image/jpeg", "the file's bytes are not image/jpeg"),
        (b"\xff\xfe\xfd", "text/plain", "the file is not UTF-8 text, as text/plain must be"),
        (b"a\0b", "text/csv", "the file's bytes are not text/csv"),
        (b"", "image/png", "the file is empty"),
        (PNG, "text/html", "'text/html' is not a type that can be attached"),
    ],
)
def test_the_bytes_must_be_what_the_type_says(
    data: bytes, media_type: str, problem: str | None
) -> None:
    assert attachments.problem(data, media_type) == problem


def test_a_file_over_the_limit_is_refused() -> None:
    assert attachments.problem(PNG, "image/png", limit=10) == (
        "the file is 28 bytes; attachments are limited to 10"
    )


@pytest.mark.parametrize(
    ("given", "shown"),
    [("shot.png", "shot.png"), ("../../etc/passwd", "passwd"), ("C:\\x\\y.txt", "y.txt"),
     ("a\nb\x1b[31m.png", "ab[31m.png"), ("", "file"), ("x" * 300, "x" * 200)],
)  # fmt: skip
def test_the_phones_name_is_only_shown_and_cleaned(given: str, shown: str) -> None:
    assert attachments.shown_name(given) == shown


def test_saved_privately_under_a_name_the_mac_makes_and_found_by_id(tmp_path: Path) -> None:
    info = attachments.save(tmp_path, SID, "../../evil.sh", "image/png", PNG, limit=1 << 20)
    assert info.name == "evil.sh" and info.media_type == "image/png" and info.size == len(PNG)
    [(found, path)] = attachments.find(tmp_path, SID, [info.id])
    assert found == info
    assert path == tmp_path / "attachments" / SID / f"{info.id}.png"
    assert path.read_bytes() == PNG
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (path.parent, path.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert attachments.path_of(tmp_path, SID, info) == path


def test_an_id_the_mac_does_not_hold_is_a_clear_error(tmp_path: Path) -> None:
    info = attachments.save(tmp_path, SID, "a.png", "image/png", PNG, limit=1 << 20)
    other = str(uuid.uuid4())
    for session, ids in ((SID, ["a" + "f" * 24]), (other, [info.id])):
        with pytest.raises(CommandFailed) as refused:
            attachments.find(tmp_path, session, ids)
        assert refused.value.code == "unknown_attachment"


def test_a_bad_file_is_not_written(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed) as refused:
        attachments.save(tmp_path, SID, "a.png", "image/png", b"not a png", limit=1 << 20)
    assert refused.value.code == "bad_attachment"
    assert not (tmp_path / "attachments").exists()


def test_deleting_a_session_removes_its_attachments_only(tmp_path: Path) -> None:
    other = str(uuid.uuid4())
    attachments.save(tmp_path, SID, "a.png", "image/png", PNG, limit=1 << 20)
    kept = attachments.save(tmp_path, other, "b.png", "image/png", PNG, limit=1 << 20)
    assert attachments.delete_for(tmp_path, SID) is True
    assert not (tmp_path / "attachments" / SID).exists()
    assert attachments.delete_for(tmp_path, SID) is False  # again: nothing left, no error
    assert attachments.find(tmp_path, other, [kept.id])
    with pytest.raises(CommandFailed):
        attachments.delete_for(tmp_path, "../other")  # never a path outside the folder


# -- the relay's side: the upload route and a message naming attachments -------------------------


def test_an_upload_reaches_the_mac_as_base64_and_a_message_names_its_id(
    relay: RelayServer, account: Account
) -> None:
    seen: list[Command] = []
    saved = {"id": "a" + "3" * 24, "name": "shot.png", "media_type": "image/png", "size": 28}

    async def on_command(command: Command) -> CommandResult:
        seen.append(command)
        data = saved if command.name == "save_attachment" else {"state": "held"}
        return CommandResult(command_id="", ok=True, data=data)

    session_id = new_id()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{session_id}"

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=on_command) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            up = await client.post(
                f"{base}/attachments",
                params={"name": "shot.png"},
                content=PNG,
                headers={"Content-Type": "image/png"},
            )
            assert up.status_code == 201, up.text
            assert up.json() == {"ok": True, **saved}
            command = seen[-1]
            assert command.name == "save_attachment"
            assert command.args == {
                "filename": "shot.png",
                "media_type": "image/png",
                "data": base64.b64encode(PNG).decode(),
            }
            sent = await client.post(
                f"{base}/messages",
                json={"text": "what is this?", "when": "after_turn", "attachments": [saved["id"]]},
            )
            assert sent.status_code == 200, sent.text
            assert seen[-1].args == {
                "text": "what is this?",
                "now": False,
                "when": "after_turn",
                "attachments": [saved["id"]],
            }
            count = len(seen)
            # Refused before the Mac is asked: a type that cannot be attached, a file over the
            # limit, an empty one, ids that are not the Mac's, kinds that disagree.
            error_of(
                await client.post(
                    f"{base}/attachments", content=b"<p>", headers={"Content-Type": "text/html"}
                ),
                422,
                "bad_attachment_type",
            )
            big = b"\x89PNG" + b"\0" * relay.state.config.int("attachment_max_bytes")
            error_of(
                await client.post(
                    f"{base}/attachments", content=big, headers={"Content-Type": "image/png"}
                ),
                413,
                "attachment_too_large",
            )
            error_of(
                await client.post(
                    f"{base}/attachments", content=b"", headers={"Content-Type": "image/png"}
                ),
                400,
                "bad_attachment",
            )
            for body in (
                {"text": "x", "attachments": ["../../etc/passwd"]},
                {"text": "x", "when": "soon"},
            ):
                error_of(await client.post(f"{base}/messages", json=body), 400, "bad_request")
            error_of(
                await client.post(
                    f"{base}/messages", json={"text": "x", "now": True, "when": "held"}
                ),
                400,
                "bad_request",
            )
            error_of(
                await client.post(
                    "/api/sessions/nope/attachments",
                    content=PNG,
                    headers={"Content-Type": "image/png"},
                ),
                404,
                "unknown_session",
            )
            assert len(seen) == count

    asyncio.run(go())


# -- the agent's commands: save, send naming it, delete with the session ------------------------


def test_the_agent_keeps_a_file_hands_it_with_the_message_and_deletes_it_with_the_session(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    sid = str(uuid.uuid4())
    options = fake_options(tmp_path)

    async def go(p: Parts) -> None:
        agent, link = p.agent, p.link
        assert (await link.command("create_session", sid, cwd=str(folder))).ok
        data = base64.b64encode(PNG).decode()
        saved = await link.command(
            "save_attachment", sid, filename="shot.png", media_type="image/png", data=data
        )
        assert saved.ok, saved
        info = AttachmentInfo.model_validate(saved.data)
        path = options.data_dir / "attachments" / sid / f"{info.id}.png"
        assert path.read_bytes() == PNG and not any(folder.iterdir())  # not in the working tree
        fake = await link.command(
            "save_attachment", sid, filename="x.png", media_type="image/png",
            data=base64.b64encode(b"GIF89a").decode(),
        )  # fmt: skip
        assert (fake.ok, fake.code) == (False, "bad_attachment")
        sent = await link.command(
            "send", sid, text="what is it?", when="after_turn", attachments=[info.id]
        )
        assert sent.ok and sent.data["state"] == "held", sent  # claude is still starting
        record = agent.registry.get(sid)
        assert record is not None
        [held] = record.held
        assert (held.when, held.attachments) == ("after_turn", [info])
        assert heldrules.block_text(record.held, {info.id: str(path)}) == f"@{path}\nwhat is it?"
        unknown = await link.command("send", sid, text="x", attachments=["a" + "e" * 24])
        assert (unknown.ok, unknown.code) == (False, "unknown_attachment")
        assert (await link.command("delete_history", sid)).ok
        assert not (options.data_dir / "attachments" / sid).exists()

    with_agent(tmp_path, go)


# -- what one session keeps is bounded; a full disk leaves nothing half-written -----------------


KEPT = st.lists(
    st.builds(
        attachments.Kept,
        id=st.integers(0, 10**6).map(lambda n: f"a{n:024x}"),
        size=st.integers(1, 1000),
        saved_at=st.floats(0, 1000, allow_nan=False),
    ),
    max_size=12,
    unique_by=lambda k: k.id,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    kept=KEPT,
    incoming=st.integers(1, 1000),
    files=st.integers(0, 8),
    total=st.integers(0, 5000),
    data=st.data(),
)
def test_room_is_made_from_the_oldest_files_no_waiting_message_names(
    kept: list[attachments.Kept], incoming: int, files: int, total: int, data: st.DataObject
) -> None:
    needed = frozenset(data.draw(st.sets(st.sampled_from([k.id for k in kept] or ["a0"]))))
    room = attachments.Room(files=files, total_bytes=total, needed=needed)
    planned = attachments.make_room(kept, incoming, room)
    free = sorted((k for k in kept if k.id not in needed), key=lambda k: (k.saved_at, k.id))
    if isinstance(planned, str):
        # Refused only when removing every file it may remove would still not be enough.
        left = [k for k in kept if k.id in needed]
        assert (files and len(left) + 1 > files) or (
            total and sum(k.size for k in left) + incoming > total
        )
        setting = "per_session" if files and len(left) + 1 > files else "bytes_per_session"
        assert f"attachments_max_{setting}" in planned
        return
    assert planned == [k.id for k in free[: len(planned)]]  # the oldest first, never a needed one
    left = [k for k in kept if k.id not in planned]
    assert not files or len(left) + 1 <= files
    assert not total or sum(k.size for k in left) + incoming <= total
    if planned:  # and no more than needed: one file fewer removed would not have fitted
        fewer = [k for k in kept if k.id not in planned[:-1]]
        assert (files and len(fewer) + 1 > files) or (
            total and sum(k.size for k in fewer) + incoming > total
        )


def test_past_the_bound_the_oldest_typed_file_makes_room_and_a_needed_one_never(
    tmp_path: Path,
) -> None:
    room = attachments.Room(files=2, total_bytes=0)
    first = attachments.save(tmp_path, SID, "1.png", "image/png", PNG, 1 << 20, room)
    second = attachments.save(tmp_path, SID, "2.png", "image/png", PNG, 1 << 20, room)
    third = attachments.save(tmp_path, SID, "3.png", "image/png", PNG, 1 << 20, room)
    assert [k.id for k in attachments.kept(tmp_path, SID)] == [second.id, third.id]
    with pytest.raises(CommandFailed, match="upload it again"):
        attachments.find(tmp_path, SID, [first.id])
    assert sorted(p.name for p in (tmp_path / "attachments" / SID).iterdir()) == sorted(
        [f"{second.id}.png", f"{second.id}.json", f"{third.id}.png", f"{third.id}.json"]
    )
    needed = attachments.Room(files=2, total_bytes=0, needed=frozenset({second.id, third.id}))
    with pytest.raises(CommandFailed) as refused:
        attachments.save(tmp_path, SID, "4.png", "image/png", PNG, 1 << 20, needed)
    assert refused.value.code == "attachments_full"
    assert "attachments_max_per_session" in refused.value.message
    by_bytes = attachments.Room(files=0, total_bytes=len(PNG) * 2, needed=frozenset({third.id}))
    fourth = attachments.save(tmp_path, SID, "4.png", "image/png", PNG, 1 << 20, by_bytes)
    assert [k.id for k in attachments.kept(tmp_path, SID)] == [third.id, fourth.id]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB filesystem (tmpfs), so a write really meets a full disk."""
    where = tmp_path / "small"
    where.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_keeps_nothing_half_written_and_says_so(small_disk: Path) -> None:
    big = PNG + b"\0" * (36 * 1024)
    kept = attachments.save(small_disk, SID, "first.png", "image/png", big, 1 << 20)
    with pytest.raises(CommandFailed) as full:
        attachments.save(small_disk, SID, "second.png", "image/png", big, 1 << 20)
    assert full.value.code == "disk_full" and "free some space" in full.value.message
    folder = small_disk / "attachments" / SID
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{kept.id}.png", f"{kept.id}.json"]
    )  # no part of the second, no temporary file
    [(found, path)] = attachments.find(small_disk, SID, [kept.id])
    assert found == kept and path.read_bytes() == big
    small = attachments.save(small_disk, SID, "small.png", "image/png", PNG, 1 << 20)
    assert attachments.find(small_disk, SID, [small.id])  # the disk works again with room


def test_a_write_that_fails_midway_leaves_no_file_found_or_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync
    calls = 0

    def fsync(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:  # the description, after the file itself was renamed into place
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(CommandFailed) as full:
        attachments.save(tmp_path, SID, "a.png", "image/png", PNG, 1 << 20)
    assert full.value.code == "disk_full"
    assert list((tmp_path / "attachments" / SID).iterdir()) == []
    assert attachments.kept(tmp_path, SID) == []


def test_the_agent_bounds_a_sessions_files_by_its_own_settings(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    sid = str(uuid.uuid4())
    data = base64.b64encode(PNG).decode()

    async def go(p: Parts) -> None:
        link = p.link
        assert (await link.command("create_session", sid, cwd=str(folder))).ok

        async def upload(name: str) -> Any:
            return await link.command(
                "save_attachment", sid, filename=name, media_type="image/png", data=data
            )

        first, second = (await upload("1.png")), (await upload("2.png"))
        assert first.ok and second.ok
        # Both named by messages that wait (claude is still starting): neither may go.
        for saved, text in ((first, "look at one"), (second, "and two")):
            sent = await link.command("send", sid, text=text, attachments=[saved.data["id"]])
            assert sent.ok and sent.data["state"] == "held", sent
        refused = await upload("3.png")
        assert (refused.ok, refused.code) == (False, "attachments_full")
        assert "attachments_max_per_session" in (refused.error or "")
        cancelled = await link.command("cancel_held", sid, message_id=sent.data["message_id"])
        assert cancelled.ok
        third = await upload("3.png")  # the cancelled message's file makes room
        assert third.ok
        kept = [k.id for k in attachments.kept(fake_options(tmp_path).data_dir, sid)]
        assert kept == [first.data["id"], third.data["id"]]

    with_agent(tmp_path, go, attachments_max_per_session=2)


def test_the_agent_bounds_the_messages_a_session_holds(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    sid = str(uuid.uuid4())

    async def go(p: Parts) -> None:
        link = p.link
        assert (await link.command("create_session", sid, cwd=str(folder))).ok
        for i in range(2):
            sent = await link.command("send", sid, text=f"message {i}", message_id=f"phone-00{i}")
            assert sent.ok and sent.data["state"] == "held", sent
        full = await link.command("send", sid, text="one more", message_id="phone-002")
        assert (full.ok, full.code) == (False, "held_full")
        assert "held_max_per_session" in (full.error or "")
        again = await link.command("send", sid, text="message 0", message_id="phone-000")
        assert again.ok and again.data["duplicate"] is True  # a retry is never "one more"
        assert (await link.command("cancel_held", sid, message_id="phone-001")).ok
        wide = await link.command("send", sid, text="é" * 600, message_id="phone-003")
        assert (wide.ok, wide.code) == (False, "held_full")  # 1,200 bytes: past the bytes
        assert "held_max_bytes_per_session" in (wide.error or "")
        assert (await link.command("send", sid, text="é" * 400, message_id="phone-004")).ok
        record = p.agent.registry.get(sid)
        assert record is not None
        assert [m.id for m in record.held if m.state == "held"] == ["phone-000", "phone-004"]

    with_agent(tmp_path, go, held_max_per_session=2, held_max_bytes_per_session=1000)


def test_an_upload_is_measured_before_its_body_is_read(make_relay: Any) -> None:
    """A Content-Length over the limit is refused at once, before a byte of the body is sent; a
    body without one (chunked) is read only up to the limit: the relay answers 413 while the
    rest of the body has not even been sent, so it never held more than the limit."""
    limit = 1 << 20
    server: RelayServer = make_relay(attachment_max_bytes=limit)
    account = server.account()
    chunk = b"\x89PNG\r\n\x1a\n" + b"\0" * (64 * 1024 - 8)

    async def go() -> None:
        async with mac(server, account.device_token) as link:
            sid = new_id()
            await push(link, sid, SMALL)
            upload = (
                f"POST /api/sessions/{sid}/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {account.phone_token}\r\nContent-Type: image/png\r\n"
            )
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"{upload}Content-Length: {50 * limit}\r\n\r\n".encode())
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)  # no body sent
            assert head.startswith(b"HTTP/1.1 413"), head
            writer.close()

            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"{upload}Transfer-Encoding: chunked\r\n\r\n".encode())
            for _ in range(limit // len(chunk) + 2):  # just past the limit, and no end
                writer.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert head.startswith(b"HTTP/1.1 413"), head
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            body = json.loads(await asyncio.wait_for(reader.readexactly(length), 5))
            assert body["error"]["code"] == "attachment_too_large"
            assert body["error"]["limit"] == limit
            writer.close()

    asyncio.run(go())
