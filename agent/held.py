"""Held messages: text sent from the phone while a turn runs, typed at the next safe point.

Pure rules: a message is typed at once when the session is idle; while a turn runs it
is held, and all held messages are typed as one block after a tool finishes, after the turn ends
or after a card is answered. "Send now" interrupts the turn and types at once. With a card open:
question, plan and dialog cards are closed and the text is sent as a message; permission and
keyed cards keep the text held (keys typed now would go into that dialog). A message sent "after
this turn" (``when: after_turn``) waits for the turn's end only: not for a tool that finished, nor
a card answered or dismissed, nor a "send now". The agent checks a
fresh read of the screen with ``may_escape`` / ``may_type`` right before each key it sends for a
message, not only the last state it knew: a dialog may have opened since.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from wire.protocol import AttachmentInfo, HeldMessage, MessageWhen

# Cards that are dismissed (Escape) so a message can be typed instead of answering them.
DISMISSIBLE_CARDS = frozenset({"question", "plan", "dialog", "stuck"})


class Delivery(StrEnum):
    TYPE_NOW = "type_now"  # idle: type it
    HOLD = "hold"  # a turn runs or a dialog takes keys: keep it
    DISMISS_THEN_TYPE = "dismiss_then_type"  # close the card (Escape), then type
    INTERRUPT_THEN_TYPE = "interrupt_then_type"  # send now: Escape the turn, then type
    REOPEN_THEN_TYPE = "reopen_then_type"  # the session ended: reopen it first


@dataclass(frozen=True)
class Situation:
    state: str  # starting | idle | busy | waiting | ended
    card_kind: str | None = None


# The safe points a delivery is tried at, by what happened: a tool finished, the turn ended
# (its Stop, or the screen turned idle), a card was answered.
# An interrupted turn runs no Stop hook: its end is the "Interrupted" notice on the screen.
TURN_ENDED = frozenset({"Stop", "idle", "interrupted"})
SAFE_POINTS = frozenset({"PostToolUse", "PostToolUseFailure", "card", *TURN_ENDED})


def decide(situation: Situation, now_requested: bool, when: MessageWhen = "held") -> Delivery:
    if situation.state == "ended":
        return Delivery.REOPEN_THEN_TYPE
    if situation.state == "starting":
        return Delivery.HOLD  # typed once the prompt is up (keys are dropped during start-up)
    if when == "after_turn" and situation.card_kind != "stuck" and situation.state != "idle":
        return Delivery.HOLD  # the turn has not ended: a card of it stays the person's
    if situation.state == "waiting" and situation.card_kind is not None:
        if situation.card_kind in DISMISSIBLE_CARDS:
            return (
                Delivery.DISMISS_THEN_TYPE if situation.card_kind != "stuck" else Delivery.TYPE_NOW
            )
        return Delivery.HOLD
    if situation.state == "busy":
        return Delivery.INTERRUPT_THEN_TYPE if now_requested else Delivery.HOLD
    return Delivery.TYPE_NOW


def may_escape(card_kind: str | None) -> bool:
    """May Esc be pressed on this screen? Never on a permission or keyed dialog: Esc there is
    an answer ("No", or leaving the picker) that nobody gave."""
    return card_kind is None or card_kind in DISMISSIBLE_CARDS


def may_type(card_kind: str | None) -> bool:
    """May text (a paste, an Enter) go to this screen? Only with no dialog open (the interrupted
    turn's "stuck" notice is no dialog): keys typed into a dialog would answer it."""
    return card_kind is None or card_kind == "stuck"


def when_of(now: bool, when: MessageWhen | None) -> MessageWhen:
    """A send's kind: ``when`` as given, else "now" for the older ``now: true``, else "held"."""
    if when is not None:
        return when
    return "now" if now else "held"


def new_message(
    text: str,
    now: float | None = None,
    message_id: str | None = None,
    when: MessageWhen = "held",
    attachments: list[AttachmentInfo] | None = None,
) -> HeldMessage:
    """A message to hold; ``message_id`` is the sender's own id when it gave one."""
    return HeldMessage(
        id=message_id or secrets.token_hex(6),
        text=text,
        state="held",
        created_at=now or time.time(),
        when=when,
        attachments=list(attachments or []),
    )


def pending(messages: list[HeldMessage]) -> list[HeldMessage]:
    return [m for m in messages if m.state == "held"]


def due(messages: list[HeldMessage], reason: str) -> list[HeldMessage]:
    """The held messages a delivery at ``reason`` types: every one when the turn ended (or the
    session is idle), else all but those kept for the turn's end."""
    return [m for m in pending(messages) if reason in TURN_ENDED or m.when != "after_turn"]


def with_now(messages: list[HeldMessage], message: HeldMessage) -> list[HeldMessage]:
    """What a "send now" types: the held messages waiting for a safe point, and this one; those
    kept for the turn's end wait for the turn it starts."""
    return [m for m in pending(messages) if m.when != "after_turn" or m.id == message.id]


def block_text(messages: list[HeldMessage], paths: Mapping[str, str] | None = None) -> str:
    """All held messages as one block, in the order they were sent; a message's attachments
    as ``@path`` references (``paths``: attachment id → the file on the Mac) before its text."""
    return "\n\n".join(message_text(m, paths or {}) for m in messages)


def message_text(message: HeldMessage, paths: Mapping[str, str]) -> str:
    refs = [reference(paths[a.id]) for a in message.attachments if a.id in paths]
    return " ".join(refs) + "\n" + message.text if refs else message.text


def reference(path: str) -> str:
    """A file as Claude Code's ``@`` mention takes it: quoted when the path has a space."""
    return f'@"{path}"' if any(c.isspace() for c in path) else f"@{path}"


def mark(messages: list[HeldMessage], ids: set[str], state: str) -> list[HeldMessage]:
    return [m.model_copy(update={"state": state}) if m.id in ids else m for m in messages]


def cancel(messages: list[HeldMessage], message_id: str) -> tuple[list[HeldMessage], bool]:
    """Cancel a message that is still held; one already typed cannot be taken back."""
    for m in messages:
        if m.id == message_id and m.state == "held":
            return mark(messages, {message_id}, "cancelled"), True
    return messages, False


def prune(messages: list[HeldMessage], keep_done: int = 20) -> list[HeldMessage]:
    """Keep every open message and only the latest finished ones (the phone shows recent)."""
    open_ = [m for m in messages if m.state in ("held", "typing")]
    done = [m for m in messages if m.state not in ("held", "typing")]
    return sorted(open_ + done[-keep_done:], key=lambda m: m.created_at or 0)
