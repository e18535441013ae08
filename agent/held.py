"""Held messages: text sent from the phone while a turn runs, typed at the next safe point.

Pure rules: a message is typed at once when the session is idle; while a turn runs it
is held, and all held messages are typed as one block after a tool finishes, after the turn ends
or after a card is answered. "Send now" interrupts the turn and types at once. With a card open:
question, plan and dialog cards are closed and the text is sent as a message; permission and
keyed cards keep the text held (keys typed now would go into that dialog). The agent checks a
fresh read of the screen with ``may_escape`` / ``may_type`` right before each key it sends for a
message, not only the last state it knew: a dialog may have opened since.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from enum import StrEnum

from wire.protocol import HeldMessage

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


def decide(situation: Situation, now_requested: bool) -> Delivery:
    if situation.state == "ended":
        return Delivery.REOPEN_THEN_TYPE
    if situation.state == "starting":
        return Delivery.HOLD  # typed once the prompt is up (keys are dropped during start-up)
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


def new_message(text: str, now: float | None = None, message_id: str | None = None) -> HeldMessage:
    """A message to hold; ``message_id`` is the sender's own id when it gave one."""
    return HeldMessage(
        id=message_id or secrets.token_hex(6),
        text=text,
        state="held",
        created_at=now or time.time(),
    )


def pending(messages: list[HeldMessage]) -> list[HeldMessage]:
    return [m for m in messages if m.state == "held"]


def block_text(messages: list[HeldMessage]) -> str:
    """All held messages as one block, in the order they were sent."""
    return "\n\n".join(m.text for m in messages)


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
