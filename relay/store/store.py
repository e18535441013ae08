"""The relay's store: every write through one writer thread, on SQLite or PostgreSQL (relay/db/).

``Store`` is the one door to the database: it opens it (migrated, with the features' schemas),
runs the concept modules' functions — relay/store/accounts.py (accounts, tokens, pairing codes),
devices.py (Macs and phones), sessions.py (sessions, last_known), ingest.py (numbering events:
conversations.py, events.py, batch.py) — in the writer's transaction or on a reader, and holds
the hooks that run with its transactions (relay/hookspecs.py: line observers, commit notices,
event listeners). A feature with tables of its own runs its jobs through :meth:`Store.write` and
:meth:`Store.read`; what it changes of a core row, it changes through the concept modules.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from relay.convert import ConversionLimits
from relay.db import Connection, Database, Schema, StepLog, open_database
from relay.errors import Unauthorized
from relay.store import accounts, batch, conversations, devices, events, ingest, sessions
from relay.store.accounts import DEFAULT_ACCOUNT, Principal, hash_secret
from relay.store.devices import Device, Phone
from relay.store.ingest import IngestResult, Reconciliation
from relay.store.sessions import Session
from wire.config import Config
from wire.protocol import DisplayEvent, LineRecord, SessionPosition

if TYPE_CHECKING:
    from relay.hookspecs import CommitNotice, EventListener, LineObserver

T = TypeVar("T")


class Store:
    def __init__(
        self, config: Config, schemas: Sequence[Schema] = (), log: StepLog | None = None
    ) -> None:
        self.config = config
        self.db: Database = open_database(config, tuple(schemas), log)
        self.dialect = self.db.dialect
        # The SQLite file (None on PostgreSQL): what tools and tests open beside the relay.
        self.path = getattr(self.db, "path", None)
        self._limits = batch.Limits(
            max_line_bytes=config.int("max_line_bytes"),
            events_kept=config.int("events_kept"),
            conversion=ConversionLimits.from_config(config),
        )
        self._hooks = ingest.Hooks([], [], [])
        self._writer = self.db.writer

    def describe(self) -> str:
        """Where the store keeps its data, for a person (no password)."""
        return self.db.describe()

    def close(self) -> None:
        self.db.close()

    # -- hooks (relay/hookspecs.py) ---------------------------------------------------------

    def add_notice(self, notice: CommitNotice) -> None:
        """Run ``notice`` inside each ingest transaction that numbered events."""
        self._hooks = ingest.Hooks(
            self._hooks.observers, [*self._hooks.notices, notice], self._hooks.listeners
        )

    def add_listener(self, listener: EventListener) -> None:
        """Tell ``listener`` of the events each ingest stored, after its commit."""
        self._hooks = ingest.Hooks(
            self._hooks.observers, self._hooks.notices, [*self._hooks.listeners, listener]
        )

    def add_observer(self, observer: LineObserver) -> None:
        """Derive more from new lines, in the ingest transaction (see LineObserver)."""
        self._writer.run_sync(lambda conn, _: observer.setup(conn))
        self._hooks = ingest.Hooks(
            [*self._hooks.observers, observer], self._hooks.notices, self._hooks.listeners
        )

    # -- jobs ---------------------------------------------------------------------------------

    def write(self, job: Callable[[Connection], T]) -> Awaitable[T]:
        """Run ``job`` in the writer's transaction (for modules that keep their own tables)."""
        return self._writer.run(lambda conn, _: job(conn))

    async def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The rows of one read (a feature's own tables), off the event loop."""
        try:
            return await self.db.aquery(sql, params)
        except self.db.errors as exc:
            raise self.db.translate(exc) from exc

    async def reading(self, work: Callable[[Connection], T]) -> T:
        """``work`` (a concept module's read) on a reader connection, off the event loop."""
        try:
            return await asyncio.to_thread(self.db.read, work)
        except self.db.errors as exc:
            raise self.db.translate(exc) from exc

    def _now(self, work: Callable[[Connection], T]) -> T:
        """``work`` on a reader connection from this thread (start-up, the CLI)."""
        try:
            return self.db.read(work)
        except self.db.errors as exc:
            raise self.db.translate(exc) from exc

    # -- accounts, tokens, pairing (sync: used by the CLI and at start-up) --------------------

    def ensure_account(self, name: str = DEFAULT_ACCOUNT) -> str:
        return self._writer.run_sync(lambda conn, _: accounts.ensure_account(conn, name))

    def create_token(
        self, account_id: str, kind: str, name: str, ttl_days: float | None = None
    ) -> tuple[str, str, str]:
        """Make a device or phone with a fresh token; return (token, token_id, subject_id)."""
        token = accounts.new_token(kind)
        days = self.config.float("token_ttl_days") if ttl_days is None else ttl_days
        now = time.time()

        def job(conn: Connection, _: object) -> tuple[str, str]:
            subject_id = accounts.new_id(devices.ID_PREFIXES[kind])
            devices.add(conn, kind, subject_id, account_id, name, now)
            expires = accounts.expiry(now, days)
            token_id = accounts.add_token(conn, token, account_id, kind, subject_id, now, expires)
            return token_id, subject_id

        token_id, subject_id = self._writer.run_sync(job)
        return token, token_id, subject_id

    def authenticate(self, token: str, now: float | None = None) -> Principal:
        """The principal holding ``token``; Unauthorized when unknown, revoked or expired."""
        return self.authenticate_hash(hash_secret(token), now)

    def authenticate_hash(self, token_hash: str, now: float | None = None) -> Principal:
        return self._now(lambda conn: accounts.authenticate(conn, token_hash, now))

    async def authenticate_async(self, token_hash: str, now: float | None = None) -> Principal:
        """``authenticate_hash`` off the event loop (a network round trip on PostgreSQL)."""
        return await self.reading(lambda conn: accounts.authenticate(conn, token_hash, now))

    def create_pair_code(self, account_id: str, kind: str, name: str) -> str:
        """A one-time code, ``ABCD-EFGH-JKLM-NPQR``: its first group is its id, the rest secret."""
        now = time.time()
        expires = now + self.config.float("pair_code_ttl")
        plain = self._writer.run_sync(
            lambda conn, _: accounts.add_pair_code(conn, account_id, kind, name, now, expires)
        )
        return accounts.shown_code(plain)

    async def redeem_pair_code(self, code: str, name: str | None) -> tuple[str, str, str, str]:
        """Trade a one-time code for a new token: (token, kind, subject_id, its name).

        A wrong secret for a live code's id is counted against that code (committed, not rolled
        back with the refusal); after PAIR_CODE_GUESSES of them the code no longer works.
        """
        normalized = accounts.normalized_code(code)
        found = await self._writer.run(
            lambda conn, _: accounts.use_pair_code(conn, normalized, name, time.time())
        )
        if isinstance(found, str):
            raise Unauthorized(found, code="bad_pair_code")
        token, _, subject_id = await asyncio.to_thread(
            self.create_token, found.account_id, found.kind, found.name
        )
        return token, found.kind, subject_id, found.name

    async def revoke(self, account_id: str, kind: str, subject_id: str) -> list[str]:
        """Revoke a phone or a device and every token it holds; return the token hashes."""

        def job(conn: Connection, _: object) -> list[str]:
            now = time.time()
            devices.revoke(conn, account_id, kind, subject_id, now)
            return accounts.revoke_tokens_of(conn, subject_id, now)

        return await self._writer.run(job)

    def revoke_token_sync(self, token_id: str) -> bool:
        return self._writer.run_sync(
            lambda conn, _: accounts.revoke_token(conn, token_id, time.time())
        )

    def list_tokens_sync(self) -> list[dict[str, Any]]:
        return [t.to_json() for t in self._now(accounts.list_tokens)]

    # -- devices and phones -------------------------------------------------------------------

    async def list_devices(self, account_id: str) -> list[Device]:
        return await self.reading(lambda conn: devices.of_account(conn, account_id))

    async def list_phones(self, account_id: str) -> list[Phone]:
        return await self.reading(lambda conn: devices.phones_of_account(conn, account_id))

    async def device_seen(self, device_id: str, info: dict[str, Any] | None = None) -> None:
        await self._writer.run(lambda conn, _: devices.seen(conn, device_id, time.time(), info))

    async def phone_seen(self, phone_id: str) -> None:
        await self._writer.run(lambda conn, _: devices.phone_seen(conn, phone_id, time.time()))

    # -- sessions -------------------------------------------------------------------------------

    async def list_sessions(self, account_id: str) -> list[Session]:
        return await self.reading(lambda conn: sessions.of_account(conn, account_id))

    async def get_session(self, account_id: str, session_id: str) -> Session:
        """The account's session; NotFound ``unknown_session`` (also for another account's)."""
        return await self.reading(lambda conn: sessions.get(conn, account_id, session_id))

    async def sessions_by_id(
        self, account_id: str, session_ids: Sequence[str]
    ) -> dict[str, Session]:
        """The account's sessions among ``session_ids``, by id (the others are left out)."""
        return await self.reading(lambda conn: sessions.by_ids(conn, account_id, session_ids))

    async def create_session(
        self,
        account_id: str,
        device_id: str,
        session_id: str,
        cwd: str,
        title: str = "",
        *,
        parent_id: str | None = None,
    ) -> Session:
        room = self.config.int("sessions_max_per_mac")
        return await self._writer.run(
            lambda conn, _: sessions.create(
                conn, account_id, device_id, session_id, cwd, title, parent_id=parent_id, room=room
            )
        )

    async def discard_empty_session(self, account_id: str, session_id: str) -> bool:
        """Forget a session that never stored an event (its start was refused)."""
        return await self._writer.run(
            lambda conn, _: sessions.discard_empty(conn, account_id, session_id)
        )

    async def save_last_known(self, session_id: str, data: dict[str, Any]) -> None:
        """What the session's Mac last said of it (state, waiting card): kept across restarts so
        a session of an offline Mac still shows it."""
        await self._writer.run(lambda conn, _: sessions.keep_last_known(conn, session_id, data))

    async def read_last_known(self) -> dict[str, dict[str, Any]]:
        """Every session's last known state, by session id."""
        return await self.reading(sessions.last_known)

    async def update_session(self, account_id: str, session_id: str, **fields: Any) -> Session:
        return await self._writer.run(
            lambda conn, _: sessions.update(conn, account_id, session_id, fields)
        )

    async def hand_over(
        self,
        account_id: str,
        session_id: str,
        from_device: str,
        to_device: str,
        cwd: str,
        also: Callable[[Connection], None] | None = None,
    ) -> Session:
        """Give the session to another Mac of the account, in one transaction: from then on
        only ``to_device`` may send its lines, positions and reports (``from_device`` is
        refused, as any other Mac is). Its id, title, group, events and seq stay; its folder is
        the one on the new Mac and its mark goes. ``also`` runs in the same transaction (the
        move's own record): if it raises, nothing changes. Conflict ``not_your_session`` when
        the session is no longer on ``from_device``, ``too_many_sessions`` when ``to_device``
        has ``sessions_max_per_mac`` already."""
        room = self.config.int("sessions_max_per_mac")

        def job(conn: Connection, _: object) -> Session:
            session = sessions.hand_over(
                conn, account_id, session_id, from_device, to_device, cwd, room
            )
            if also is not None:
                also(conn)
            return session

        return await self._writer.run(job)

    async def stored_offsets(self, session_id: str) -> dict[str, int]:
        """How far each conversation of the session is stored: conversation id → the offset of
        its last stored line (what a Mac's follower goes on from)."""
        return await self.reading(lambda conn: conversations.offsets(conn, session_id))

    # -- events -------------------------------------------------------------------------------

    async def ingest(
        self,
        account_id: str,
        device_id: str,
        session_id: str,
        conversation_id: str,
        lines: Sequence[LineRecord],
        cwd: str | None = None,
    ) -> IngestResult:
        """Store a batch of transcript lines as numbered events, once each (relay/store/ingest.py)."""
        ingest.check_conversation_id(conversation_id)
        batch_of = ingest.Lines(account_id, device_id, session_id, conversation_id, lines, cwd)
        rules = ingest.Rules(
            limits=self._limits,
            conversations_kept=self.config.int("conversations_max_per_session"),
            sessions_per_mac=self.config.int("sessions_max_per_mac"),
        )
        hooks = self._hooks
        return await self._writer.run(
            lambda conn, after_commit: ingest.ingest(conn, after_commit, batch_of, rules, hooks)
        )

    async def add_event(
        self, account_id: str, session_id: str, event: DisplayEvent
    ) -> tuple[Session, list[tuple[int, str]]] | None:
        """Store one event the relay made for a session, numbered after its last
        (relay/store/ingest.py ``add_event``); None when the session is gone."""
        kept = self._limits.events_kept
        hooks = self._hooks
        return await self._writer.run(
            lambda conn, after_commit: ingest.add_event(
                conn, after_commit, (account_id, session_id), event, kept, hooks
            )
        )

    async def reconcile(
        self, account_id: str, device_id: str, positions: Iterable[SessionPosition]
    ) -> Reconciliation:
        """Apply the Mac's hello (relay/store/ingest.py ``reconcile``)."""
        wanted = list(positions)
        room = self.config.int("sessions_max_per_mac")
        return await self._writer.run(
            lambda conn, _: ingest.reconcile(conn, account_id, device_id, wanted, room)
        )

    async def read_events(
        self,
        session_id: str,
        first: int,
        last: int,
        *,
        max_bytes: int | None = None,
        newest: bool = False,
    ) -> list[tuple[int, str]]:
        """Stored events with first <= seq <= last, oldest first, as (seq, JSON).

        With ``max_bytes`` it stops once the events read would pass that many bytes of JSON (at
        least one event is read): from ``first`` on, or with ``newest`` from ``last`` back, so a
        huge range never sits in memory at once."""
        if last < first:
            return []
        wanted = events.Range(session_id, first, last, max_bytes, newest)
        return await self.reading(lambda conn: events.read(conn, wanted))

    def read_events_sync(self, session_id: str, first: int, last: int) -> list[tuple[int, str]]:
        return self._now(lambda conn: events.read(conn, events.Range(session_id, first, last)))
