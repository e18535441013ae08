"""What relay nodes tell each other (relay/cluster.py), as typed messages.

Three kinds of traffic travel between the nodes of a cluster, through PostgreSQL:

- **events** (channel ``cb_events``): :class:`SessionEvents`, sent inside the ingest transaction
  (delivered on commit only) — a session's new seqs, and the events themselves when they fit;
- **the bus** (``cb_bus``): one of :data:`BusMessage` — :class:`AccountUpdate` (what the hub
  published to an account's streams), :class:`LiveSession` (a session's live side),
  :class:`MacLinked` / :class:`MacUnlinked` (which node holds a Mac), :class:`Resync`,
  :class:`Revoke`, :class:`Nudge`; each names its kind in ``kind`` and its sender in ``sender``;
- **requests** to the node holding a Mac (``cb_request`` / ``cb_answer`` name a row of
  ``node_requests``): one of :data:`MacRequest` — :class:`MacCommand`, :class:`MacHistory`,
  :class:`MacClose` — and its :class:`RequestAnswer`.

Every message is read with :func:`read_bus` / :func:`read_events` / :func:`read_request`: a text
a node cannot read (another version's message, a damaged row) is logged and answered None, never
raised into the loop that listens, so no single message ends it.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from wire.protocol import SessionInfo

_log = logging.getLogger("relay.cluster")

SHOWN_CHARS: Final = 120  # of a message that could not be read, in the log


class _Message(BaseModel):
    # Unknown fields are ignored: a newer node may add one without silencing an older one.
    model_config = ConfigDict(frozen=True, extra="ignore")


# -- events ---------------------------------------------------------------------------------------


class SessionEvents(_Message):
    """A session's events ``first..last`` were stored by node ``sender``; ``events`` (their
    NumberedEvent JSON) when they fit in a notification, else read from the store."""

    sender: str
    session_id: str
    first: int
    last: int
    events: list[dict[str, Any]] | None = None


def events_notice(sender: str, session_id: str, stored: list[tuple[int, str]], limit: int) -> str:
    """A :class:`SessionEvents` as JSON text, with the stored JSON of the events put in as it is
    (never parsed and encoded again) when the whole fits in ``limit`` bytes."""
    head = SessionEvents(
        sender=sender, session_id=session_id, first=stored[0][0], last=stored[-1][0]
    ).model_dump_json(exclude_none=True)
    size = (
        len(head.encode()) + sum(len(data.encode()) + 1 for _, data in stored) + len(',"events":[]')
    )
    if size > limit:
        return head
    return head[:-1] + ',"events":[' + ",".join(data for _, data in stored) + "]}"


def read_events(text: str) -> SessionEvents | None:
    try:
        return SessionEvents.model_validate_json(text)
    except ValidationError as exc:
        _unreadable("an events notice", text, exc)
        return None


# -- the bus --------------------------------------------------------------------------------------


class AccountUpdate(_Message):
    """The hub published ``event`` (``session``, ``device``, ``preview`` …) to an account's
    streams: the other nodes' streams of that account get it too."""

    kind: Literal["account_update"] = "account_update"
    sender: str = ""
    account_id: str
    event: str
    data: dict[str, Any]


class LiveSession(_Message):
    """A session's live side (state, card, preview …) as its Mac, linked to ``sender``, says."""

    kind: Literal["live_session"] = "live_session"
    sender: str = ""
    account_id: str
    device_id: str
    info: SessionInfo


class MacLinked(_Message):
    """Node ``node_id`` holds the Mac's link now (a link of it elsewhere is the older one)."""

    kind: Literal["mac_linked"] = "mac_linked"
    sender: str = ""
    device_id: str
    account_id: str
    name: str
    node_id: str


class MacUnlinked(_Message):
    """The Mac's link on node ``node_id`` ended."""

    kind: Literal["mac_unlinked"] = "mac_unlinked"
    sender: str = ""
    device_id: str
    node_id: str


class Resync(_Message):
    """The session's history restarted (a new epoch): every viewer reloads."""

    kind: Literal["resync"] = "resync"
    sender: str = ""
    session_id: str
    reason: str


class Revoke(_Message):
    """These logins were revoked: their streams end everywhere."""

    kind: Literal["revoke"] = "revoke"
    sender: str = ""
    token_hashes: list[str]


class Nudge(_Message):
    """A feature (``topic``, e.g. ``outbox``) has news of a session on another node."""

    kind: Literal["nudge"] = "nudge"
    sender: str = ""
    topic: str
    session_id: str


BusMessage = Annotated[
    AccountUpdate | LiveSession | MacLinked | MacUnlinked | Resync | Revoke | Nudge,
    Field(discriminator="kind"),
]
_BUS: Final[TypeAdapter[BusMessage]] = TypeAdapter(BusMessage)


def bus_text(message: BusMessage, sender: str) -> str:
    """The message as the bus carries it, signed with its sender."""
    return message.model_copy(update={"sender": sender}).model_dump_json()


def read_bus(text: str) -> BusMessage | None:
    try:
        return _BUS.validate_json(text)
    except ValidationError as exc:
        _unreadable("a bus message", text, exc)
        return None


# -- requests to the node holding a Mac -----------------------------------------------------------


class MacCommand(_Message):
    """A command for a session of the Mac (wire/protocol.py ``Command``), with its timeout."""

    kind: Literal["command"] = "command"
    message: dict[str, Any]
    timeout: float


class MacHistory(_Message):
    """Events of a session older than the relay keeps, from the Mac's archive."""

    kind: Literal["history"] = "history"
    session_id: str
    before: int
    limit: int
    timeout: float


class MacClose(_Message):
    """Close the Mac's link (its token was revoked, or it links elsewhere)."""

    kind: Literal["close"] = "close"
    code: int
    reason: str


MacRequest = Annotated[MacCommand | MacHistory | MacClose, Field(discriminator="kind")]
_REQUEST: Final[TypeAdapter[MacRequest]] = TypeAdapter(MacRequest)


def read_request(text: str) -> MacRequest | None:
    try:
        return _REQUEST.validate_json(text)
    except ValidationError as exc:
        _unreadable("a request", text, exc)
        return None


class ErrorBody(_Message):
    """A RelayError as the node that raised it saw it (same status, code, message, details)."""

    status: int = 500
    code: str | None = None
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class RequestAnswer(_Message):
    """The node holding the Mac answers: what the Mac answered (``ok``), or the error; one of
    the two, always."""

    ok: dict[str, Any] | None = None
    error: ErrorBody | None = None

    @model_validator(mode="after")
    def _one_of_the_two(self) -> RequestAnswer:
        if (self.ok is None) == (self.error is None):
            raise ValueError("an answer is ok or an error")
        return self


def read_answer(text: str) -> RequestAnswer:
    """An answer as stored; one that cannot be read is an error answer saying so."""
    try:
        return RequestAnswer.model_validate_json(text)
    except ValidationError as exc:
        _unreadable("an answer", text, exc)
        return RequestAnswer(error=ErrorBody(code="internal", message="an unreadable answer"))


def address(target: str, request_id: str) -> str:
    """The payload of a ``cb_request`` / ``cb_answer`` notification: who it is for, and what."""
    return f"{target} {request_id}"


def addressed(payload: str) -> tuple[str, str]:
    """(the node it is for, the request id) of a notification's payload."""
    node, _, request_id = payload.partition(" ")
    return node, request_id


def _unreadable(what: str, text: str, exc: ValidationError) -> None:
    errors = exc.errors()
    why = errors[0].get("msg", "not valid") if errors else "not valid"
    _log.warning("%s from another relay node was skipped, unreadable (%s): %.*s", what, why,
                 SHOWN_CHARS, text)  # fmt: skip
