"""The session states the relay shows (relay/state.py): "starting" until the first message is
typed, though Claude Code's prompt is up already (issue 22, item 6)."""

from __future__ import annotations

from relay.state import first_message_pending
from wire.protocol import HeldMessage, SessionInfo


def info(*states: str) -> SessionInfo:
    held = [HeldMessage(id=f"m{i}", text="go", state=s) for i, s in enumerate(states)]  # type: ignore[arg-type]
    return SessionInfo(session_id="s", state="idle", held=held)


def test_a_new_session_is_starting_while_its_first_message_waits() -> None:
    assert first_message_pending(0, info("held"))
    assert first_message_pending(0, info("typing"))


def test_it_is_not_once_typed_once_it_has_history_or_with_nothing_to_type() -> None:
    assert not first_message_pending(0, info("typed"))
    assert not first_message_pending(0, info("cancelled", "failed"))
    assert not first_message_pending(3, info("held"))  # a later message, held: idle
    assert not first_message_pending(0, info())  # started without a prompt: ready for one
    assert not first_message_pending(0, None)
