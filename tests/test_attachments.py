"""Attachments on the Mac (agent/attachments.py): checked against their declared type, kept in
the agent's data folder under names the Mac makes (0600 in 0700 folders), found again by id,
deleted with the session; and the relay's upload route in front of it."""

from __future__ import annotations

import asyncio
import base64
import stat
import uuid
from pathlib import Path
from typing import get_args

import httpx
import pytest

from agent import attachments
from agent import held as heldrules
from agent.errors import CommandFailed
from tests.agent_fakes import Parts, fake_options, with_agent
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
