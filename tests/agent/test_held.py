"""Held messages (agent/held.py): when a message is typed, from the session's state and card;
by kind, "held" at the next safe point, "now" at once, "after_turn" only once the turn has ended;
held ones go as one block in order and cancel only while held; and their attachments as ``@path``
references."""

from __future__ import annotations

import pytest

from agent import held
from agent import held as heldrules
from agent.held import Delivery, Situation
from wire.protocol import AttachmentInfo, HeldMessage, SendArgs


def message(text: str, when: str = "held", state: str = "held") -> HeldMessage:
    return heldrules.new_message(text, message_id=text, when=when).model_copy(  # type: ignore[arg-type]
        update={"state": state}
    )


@pytest.mark.parametrize(
    ("now", "when", "kind"),
    [(False, None, "held"), (True, None, "now"), (False, "after_turn", "after_turn"),
     (True, "now", "now"), (False, "now", "now")],
)  # fmt: skip
def test_a_sends_kind_is_when_else_now_else_held(now: bool, when: str | None, kind: str) -> None:
    assert heldrules.when_of(now, when) == kind  # type: ignore[arg-type]


def test_after_a_tool_or_a_card_only_the_held_kind_is_due() -> None:
    messages = [
        message("a"),
        message("b", "after_turn"),
        message("c"),
        message("d", "held", "typed"),
    ]
    for reason in ("PostToolUse", "PostToolUseFailure", "card"):
        assert [m.id for m in heldrules.due(messages, reason)] == ["a", "c"]
    for reason in ("Stop", "idle", "interrupted"):
        assert [m.id for m in heldrules.due(messages, reason)] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("state", "card", "delivery"),
    [
        ("busy", None, Delivery.HOLD),
        ("waiting", "question", Delivery.HOLD),  # a card of the running turn stays the person's
        ("waiting", "permission", Delivery.HOLD),
        ("waiting", "stuck", Delivery.TYPE_NOW),  # the turn was interrupted: it has ended
        ("idle", None, Delivery.TYPE_NOW),
        ("starting", None, Delivery.HOLD),
        ("ended", None, Delivery.REOPEN_THEN_TYPE),
    ],
)
def test_after_this_turn_is_typed_only_once_no_turn_runs(
    state: str, card: str | None, delivery: Delivery
) -> None:
    assert heldrules.decide(Situation(state, card), False, when="after_turn") is delivery


def test_the_held_kind_still_dismisses_a_question_card() -> None:
    assert heldrules.decide(Situation("waiting", "question"), False) is Delivery.DISMISS_THEN_TYPE


def test_send_now_takes_the_held_ones_with_it_but_not_those_for_the_turns_end() -> None:
    later, held = message("later", "after_turn"), message("held")
    now = message("now", "now")
    assert [m.id for m in heldrules.with_now([later, held, now], now)] == ["held", "now"]


def test_attachments_go_before_the_text_as_at_references_quoted_with_a_space() -> None:
    shot = AttachmentInfo(id="a" + "1" * 24, name="shot.png", media_type="image/png", size=10)
    doc = AttachmentInfo(id="a" + "2" * 24, name="notes.txt", media_type="text/plain", size=3)
    first = heldrules.new_message("what is this?", attachments=[shot, doc])
    second = heldrules.new_message("and then this")
    paths = {shot.id: "/data/attachments/s/a1.png", doc.id: "/Application Support/a2.txt"}
    assert heldrules.block_text([first, second], paths) == (
        '@/data/attachments/s/a1.png @"/Application Support/a2.txt"\nwhat is this?\n\nand then this'
    )
    # an attachment whose file is gone is left out, never typed as a path to nothing
    assert heldrules.block_text([first], {doc.id: "/x/a2.txt"}) == "@/x/a2.txt\nwhat is this?"


def test_a_held_message_written_by_an_older_agent_reads_as_the_held_kind() -> None:
    old = HeldMessage.model_validate({"id": "m1", "text": "hi", "state": "held"})
    assert (old.when, old.attachments) == ("held", [])
    assert SendArgs(text="hi").when is None


@pytest.mark.parametrize(
    ("state", "card", "now", "expected"),
    [
        ("idle", None, False, held.Delivery.TYPE_NOW),
        ("busy", None, False, held.Delivery.HOLD),
        ("busy", None, True, held.Delivery.INTERRUPT_THEN_TYPE),
        ("starting", None, False, held.Delivery.HOLD),
        ("waiting", "permission", False, held.Delivery.HOLD),
        ("waiting", "keyed", True, held.Delivery.HOLD),
        ("waiting", "question", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "plan", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "dialog", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "stuck", False, held.Delivery.TYPE_NOW),
        ("ended", None, False, held.Delivery.REOPEN_THEN_TYPE),
    ],
)
def test_when_a_message_is_typed(
    state: str, card: str | None, now: bool, expected: held.Delivery
) -> None:
    assert held.decide(held.Situation(state, card), now) is expected


def test_held_messages_go_as_one_block_in_order_and_cancel_only_while_held() -> None:
    a, b = held.new_message("first", 1.0), held.new_message("second", 2.0)
    messages = [a, b]
    assert held.block_text(held.pending(messages)) == "first\n\nsecond"
    messages, done = held.cancel(messages, b.id)
    assert done and [m.state for m in messages] == ["held", "cancelled"]
    messages = held.mark(messages, {a.id}, "typed")
    messages, done = held.cancel(messages, a.id)
    assert not done  # typed text cannot be taken back
