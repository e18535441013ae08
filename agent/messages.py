"""What the person says to a session from the phone: a message (typed now, held for a safe point,
or reopening a stopped session), a held message cancelled, a file kept for the next message, and
a card's answer.

The rules of when a message is typed are agent/held.py's, the typing is the session's driver's
(agent/driver.py); here are the bounds this Mac sets on what a session holds.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any, Protocol

from agent import attachments as attachmentfiles
from agent import held as heldrules
from agent.commands import Handler
from agent.driver import SessionDriver
from agent.errors import CommandFailed
from agent.registry import SessionRecord
from wire import pastetext
from wire.config import Config
from wire.protocol import (
    AnswerCardArgs,
    CancelHeldArgs,
    HeldMessage,
    SaveAttachmentArgs,
    SendArgs,
)

# Messages not typed yet: what the held bounds count, and whose attachments stay.
OPEN_HELD = frozenset({"held", "typing"})


class MessagesHost(Protocol):
    """What messages need of the sessions (agent/sessions.py's ``Sessions``)."""

    @property
    def config(self) -> Config: ...
    @property
    def data(self) -> Path: ...
    def record(self, session_id: str) -> SessionRecord: ...
    def driver(self, record: SessionRecord) -> SessionDriver: ...
    async def reopen(self, record: SessionRecord) -> None: ...
    def save(self) -> None: ...


def held_over_limit(
    messages: list[HeldMessage], text: str, max_count: int, max_bytes: int
) -> str | None:
    """Why the session cannot hold one more message of ``text`` (None: it can), naming the
    setting; only messages not typed yet count (0: no bound)."""
    waiting = [m for m in messages if m.state in OPEN_HELD]
    count = len(waiting) + 1
    size = sum(len(m.text.encode("utf-8", "surrogatepass")) for m in waiting)
    size += len(text.encode("utf-8", "surrogatepass"))
    if max_count > 0 and count > max_count:
        return (
            f"this session already holds {len(waiting):,} messages not typed yet, the most "
            f"held_max_per_session allows on this Mac; wait until they are typed, or cancel "
            "some, then send it again"
        )
    if max_bytes > 0 and size > max_bytes:
        return (
            f"the messages this session holds, not typed yet, and this one come to {size:,} "
            f"bytes, past held_max_bytes_per_session ({max_bytes:,}) on this Mac; wait until "
            "they are typed, or cancel some, then send it again"
        )
    return None


class Messages:
    """The commands that bring a session the person's words: send, cancel_held,
    save_attachment and answer_card."""

    def __init__(self, sessions: MessagesHost) -> None:
        self.sessions = sessions

    def handlers(self) -> list[Handler]:
        return [
            (SendArgs, self.send),
            (CancelHeldArgs, self.cancel_held),
            (SaveAttachmentArgs, self.save_attachment),
            (AnswerCardArgs, self.answer_card),
        ]

    async def send(self, session_id: str, args: SendArgs) -> dict[str, Any]:
        sessions = self.sessions
        record = sessions.record(session_id)
        text = args.text
        if not pastetext.has_text(text):
            raise CommandFailed(
                "empty_message", "the message is empty (control characters are never typed)"
            )
        sender_id = args.message_id
        known = next((m for m in record.held if sender_id and m.id == sender_id), None)
        if known is not None:
            # A retry of a message this Mac already has (its answer was lost): never twice.
            return {"message_id": known.id, "state": known.state, "duplicate": True}
        full = held_over_limit(
            record.held,
            text,
            sessions.config.int("held_max_per_session"),
            sessions.config.int("held_max_bytes_per_session"),
        )
        if full is not None:
            raise CommandFailed("held_full", full)
        when = heldrules.when_of(args.now, args.when)
        found = attachmentfiles.find(sessions.data, session_id, args.attachments or [])
        message = heldrules.new_message(
            text, message_id=sender_id, when=when, attachments=[info for info, _ in found]
        )
        record.held.append(message)
        sessions.save()
        rt = sessions.driver(record)
        if not rt.pane_alive:
            await sessions.reopen(record)
            rt = sessions.driver(record)
            await rt.send_update()
            # Which mode and model it came back in: those it had when it stopped.
            return {
                "message_id": message.id,
                "state": "held",
                "reopened": True,
                "permission_mode": record.permission_mode,
                "model": record.model,
            }
        await rt.send_now(message, when == "now")
        state = next((m.state for m in record.held if m.id == message.id), "held")
        return {"message_id": message.id, "state": state}

    async def cancel_held(self, session_id: str, args: CancelHeldArgs) -> dict[str, Any]:
        record = self.sessions.record(session_id)
        record.held, done = heldrules.cancel(record.held, args.message_id)
        if not done:
            raise CommandFailed("message_gone", "that message was already typed or cancelled")
        self.sessions.save()
        await self.sessions.driver(record).send_update()
        return {}

    async def save_attachment(self, session_id: str, args: SaveAttachmentArgs) -> dict[str, Any]:
        """Keep a file for the session's next message (agent/attachments.py)."""
        try:
            data = base64.b64decode(args.data, validate=True)
        except ValueError:
            raise CommandFailed("bad_attachment", "the file's data is not base64") from None
        config = self.sessions.config
        record = self.sessions.record(session_id)
        room = attachmentfiles.Room(
            files=config.int("attachments_max_per_session"),
            total_bytes=config.int("attachments_max_bytes_per_session"),
            # A message still waiting on this Mac types its files later: they stay.
            needed=frozenset(
                a.id for m in record.held if m.state in OPEN_HELD for a in m.attachments
            ),
        )
        info = await asyncio.to_thread(
            attachmentfiles.save,
            self.sessions.data,
            session_id,
            args.filename,
            args.media_type,
            data,
            config.int("attachment_max_bytes"),
            room,
        )
        return info.model_dump()

    async def answer_card(self, session_id: str, args: AnswerCardArgs) -> dict[str, Any]:
        """The card's answer, as keys in its dialog (a stuck card's is a message, sent as the
        phone's send is)."""
        rt = self.sessions.driver(self.sessions.record(session_id))
        return await rt.answer_card(args, lambda text: self.send(session_id, SendArgs(text=text)))
