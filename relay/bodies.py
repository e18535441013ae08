"""The request bodies more than one part reads: the base of every body, and a card's answer
(the route in relay/routes.py, the audit log in relay/features/audit.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from wire.protocol import MAX_CARD_KEYS, MAX_MESSAGE_CHARS, CardKey


class Body(BaseModel):
    """The base of every request body: a number must be finite. ``1e999``, ``"Infinity"`` and
    ``NaN`` are refused (422 ``not_finite``): one of them stored would reach every phone of the
    account, whose JSON.parse cannot read it."""

    model_config = ConfigDict(allow_inf_nan=False)


class CardAnswer(Body):
    """An answer to a card (relay/routes.py), as the audit log records it (features/audit.py)."""

    # The limits of the answer_card command's args (wire/protocol.py AnswerCardArgs).
    key: CardKey | None = None
    keys: list[CardKey] | None = Field(default=None, max_length=MAX_CARD_KEYS)
    text: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    always: bool = False  # "always allow this category for this session" (permission cards)
