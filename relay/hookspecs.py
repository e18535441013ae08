"""Every point where a feature (relay/features/) plugs into the relay's core, declared once.

After datasette's ``hookspecs.py``: each extension point is a Protocol with what it is given,
when the core calls it and what it may do; the core calls the points and nothing else of a
feature, and a feature reaches the core only through them, the store's functions
(relay/store/) and the request helpers (relay/deps.py).

A feature registers at start-up (``Feature.start``, relay/feature.py): the store's points on the
store (``store.add_observer`` / ``add_listener`` / ``add_notice``: they run with its
transactions), the others on ``state.hooks`` (:class:`Hooks`). Its own state stays with its
running part (``state.part(SearchIndex)``), never on ``RelayState``.

Inside the ingest transaction (relay/store/ingest.py), once per batch:

- :class:`LineObserver` — derives its own rows from the batch's new lines (titles, usage,
  search); :class:`CommitNotice` — tells someone on commit only (the other relay nodes).

After the commit, in commit order: :class:`EventListener` (the hub, the audit log).

Around a session and its Mac: :class:`SessionWatcher` (every report of a Mac),
:class:`CommandGuard` (before a command), :class:`ResultReader` (the Mac's answer),
:class:`DecisionRecorder` (a Mac's own permission decision), :class:`AnswerLogger` and
:class:`MessageLogger` (a phone's answer to a card, a message sent while one is shown),
:class:`NudgeHandler` (another relay node has news of a session for a feature).

What a session shows: :class:`SessionFields` (every snapshot of it), :class:`ListFields` (each
of an account's list), :class:`SnapshotFields` (its full snapshot), :class:`EventFields` (its
``session`` event on the account stream).

A feature's tables are its ``Feature.schema`` (relay/db/base.py ``Schema``), made as the store
opens; its running part is closed when the relay stops (relay/feature.py ``Part``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.requests import Request

    from relay.bodies import CardAnswer
    from relay.convert import Conversion
    from relay.db import Connection
    from relay.store.accounts import Principal
    from relay.store.sessions import Session
    from wire.protocol import Card, Decision, LineRecord, SessionInfo

Events = list[tuple[int, str]]  # (seq, NumberedEvent JSON), oldest first


# -- in the ingest transaction -----------------------------------------------------------------


@dataclass(frozen=True)
class NewLines:
    """One ingest batch as its observers see it: the lines of one conversation stored for the
    first time (never a line sent again), each with its conversion (the line parsed once), and
    the events numbered for them, all at once."""

    account_id: str
    session_id: str
    conversation_id: str
    lines: list[tuple[LineRecord, Conversion]]
    events: Sequence[tuple[int, str]] = ()  # (seq, NumberedEvent JSON), in seq order


class LineObserver(Protocol):
    """Derives its own data from new transcript lines (usage, titles, search…).

    ``setup`` makes its tables on the writer's connection when it is added. ``on_lines`` runs
    inside the ingest transaction, once per batch, with the whole batch (:class:`NewLines`): what
    it writes is stored exactly when the lines are, never twice for a line sent again. It writes
    its own tables, and core rows only through the store's functions (relay/store/sessions.py
    ``set_derived_title``); a failure it does not catch refuses the batch (nothing is stored),
    so an observer that must never refuse lines catches its own inside a savepoint."""

    def setup(self, conn: Connection, /) -> None: ...

    def on_lines(self, conn: Connection, new: NewLines, /) -> None: ...


class CommitNotice(Protocol):
    """Inside each ingest transaction that numbered events, after they are numbered: (the
    transaction's connection, account id, session id, the events). E.g. a notification to the
    other relay nodes, delivered on commit only (relay/cluster.py)."""

    def __call__(
        self, conn: Connection, account_id: str, session_id: str, events: Events, /
    ) -> None: ...


class EventListener(Protocol):
    """After COMMIT, in commit order, on the writer's thread: (account id, session id, the
    events just stored). Quick, and hands real work to the event loop (the hub, the audit log's
    hook markers)."""

    def __call__(self, account_id: str, session_id: str, events: Events, /) -> None: ...


# -- around a session and its Mac ----------------------------------------------------------------


class SessionWatcher(Protocol):
    """Told of every ``session_update`` from a Mac: (account id, the session, its live side
    before, after). Synchronous, on the event loop: it starts its own work on its part's
    TaskSet (Web Push, the outbox, an end-of-session summary)."""

    def __call__(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo, /
    ) -> None: ...


class CommandGuard(Protocol):
    """Runs before every command to a session's Mac (relay/deps.py ``send_command``) and before
    a fork or a move; raises a RelayError to refuse it (an archived or moving session)."""

    def __call__(self, session: Session, /) -> Awaitable[None]: ...


class ResultReader(Protocol):
    """Sees what a Mac answered to a command for a session: (session id, the answer's data),
    e.g. the policy it now holds (relay/features/permissions.py)."""

    def __call__(self, session_id: str, data: Mapping[str, Any], /) -> Awaitable[None]: ...


class DecisionRecorder(Protocol):
    """Keeps a Mac's own decision on a permission (relay/features/audit.py): (account id,
    device id, the decision); answers the error code to send back, or "" when kept. One at a
    time: a relay without one answers ``not_recorded``."""

    def __call__(
        self, account_id: str, device_id: str, decision: Decision, /
    ) -> Awaitable[str]: ...


class AnswerLogger(Protocol):
    """A phone's answer to a card, seen before it is sent (the card as shown): answers what to
    do once the Mac took it, e.g. write it to the audit log."""

    def __call__(
        self,
        request: Request,
        principal: Principal,
        session: Session,
        card: Card,
        answer: CardAnswer,
        /,
    ) -> Callable[[], Awaitable[None]]: ...


class MessageLogger(Protocol):
    """A phone's message sent while a card was shown (relay/routes.py ``send_message``): given
    the card as shown and the message's text, answers what to do with the Mac's answer (its
    ``data``); e.g. the audit log keeps a question or plan card the message closed."""

    def __call__(
        self, request: Request, principal: Principal, session: Session, card: Card, text: str, /
    ) -> Callable[[Mapping[str, Any]], Awaitable[None]]: ...


class NudgeHandler(Protocol):
    """Another relay node says a session has news for this feature (``Cluster.nudge`` with the
    feature's topic): the session id. E.g. the outbox delivers what another node queued for a
    Mac linked here."""

    def __call__(self, session_id: str, /) -> None: ...


# -- what a session shows ----------------------------------------------------------------------


class SessionFields(Protocol):
    """More fields of every snapshot of a session (``RelayState.session_json``), from what the
    feature holds in memory: synchronous, no I/O (e.g. its cost, its queued messages)."""

    def __call__(self, session: Session, /) -> Mapping[str, Any]: ...


class ListFields(Protocol):
    """More fields of each session of an account's list (GET /api/sessions, the account
    stream's snapshot): given the account id, read once, what to add to each session by id."""

    def __call__(self, account_id: str, /) -> Awaitable[Callable[[str], Mapping[str, Any]]]: ...


class SnapshotFields(Protocol):
    """More fields of one session's full snapshot (GET /api/sessions/{id})."""

    def __call__(self, session: Session, /) -> Awaitable[Mapping[str, Any]]: ...


class EventFields(Protocol):
    """More fields of a session's ``session`` event on the account stream, as it is published
    (e.g. a summary taken since the relay started, so lists need not read it again)."""

    def __call__(self, session: Session, /) -> Mapping[str, Any]: ...


# -- the registry ---------------------------------------------------------------------------------


@dataclass
class Hooks:
    """What the features registered on the core, by extension point; the core calls them here."""

    watchers: list[SessionWatcher] = field(default_factory=list)
    command_guards: list[CommandGuard] = field(default_factory=list)
    result_readers: list[ResultReader] = field(default_factory=list)
    decision_recorder: DecisionRecorder | None = None
    answer_loggers: list[AnswerLogger] = field(default_factory=list)
    message_loggers: list[MessageLogger] = field(default_factory=list)
    nudge_handlers: dict[str, NudgeHandler] = field(default_factory=dict)  # by topic
    session_fields: list[SessionFields] = field(default_factory=list)
    list_fields: list[ListFields] = field(default_factory=list)
    snapshot_fields: list[SnapshotFields] = field(default_factory=list)
    event_fields: list[EventFields] = field(default_factory=list)

    def watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        for watcher in self.watchers:
            watcher(account_id, session, before, after)

    async def guard(self, session: Session) -> None:
        """Every guard's word on a command to the session (the first refusal raises)."""
        for guard in self.command_guards:
            await guard(session)

    async def read_result(self, session_id: str, data: Mapping[str, Any]) -> None:
        for reader in self.result_readers:
            await reader(session_id, data)

    async def listed(self, account_id: str) -> Callable[[str], dict[str, Any]]:
        """The fields each feature adds to a session of the account's list, by session id."""
        extras = [await fields(account_id) for fields in self.list_fields]

        def of(session_id: str) -> dict[str, Any]:
            found: dict[str, Any] = {}
            for extra in extras:
                found.update(extra(session_id))
            return found

        return of

    async def snapshot(self, session: Session) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for fields in self.snapshot_fields:
            found.update(await fields(session))
        return found

    def nudged(self, topic: str, session_id: str) -> None:
        handler = self.nudge_handlers.get(topic)
        if handler is not None:
            handler(session_id)
