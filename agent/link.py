"""The agent's link to the relay: the real protocol (wire/protocol.py) over a WebSocket that
comes back by itself.

Reconnects with exponential backoff and jitter; says hello with the archive's positions so the
relay sends back any numbered events the Mac missed; answers history requests from the archive;
sends a heartbeat so a dead connection is noticed. Transcript lines need no outbox of their own:
the transcript files are the outbox — after a reconnect the follower rewinds to the last
acknowledged line and sends again, and the relay drops what it already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterator

from pydantic import BaseModel

from agent.errors import BatchRefused as BatchRefused
from agent.errors import NotLinked as NotLinked
from wire.client import Archive, CommandHandler, DecisionAckHandler, MacLink
from wire.errors import LinkRefused
from wire.protocol import Ack, DeviceInfo, LineRecord, Ping, SessionInfo, Welcome
from wire.tasks import TaskSet

_log = logging.getLogger("agent.link")

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0
HEARTBEAT = 20.0

# Its own generator: the jitter never moves the global random state other code relies on.
_JITTER = random.Random()


class RelayLink:
    def __init__(
        self,
        relay_url: str,
        token: str,
        device: DeviceInfo,
        archive: Archive,
        on_command: CommandHandler,
        on_linked: Callable[[Welcome], Awaitable[None]],
        on_unlinked: Callable[[], None] | None = None,
    ) -> None:
        self.relay_url = relay_url
        self.token = token
        self.device = device
        self.archive = archive
        self.on_command = on_command
        self.on_linked = on_linked
        self.on_unlinked = on_unlinked
        self._link: MacLink | None = None
        self._tasks = TaskSet("relay link", _log)
        self._stopping = False
        self.linked = asyncio.Event()
        self.last_error: str | None = None
        self.refused: str | None = None  # set when the relay refuses the token: pairing needed
        self.on_decision_ack: DecisionAckHandler | None = None  # set by agent/decisions.py

    def start(self) -> None:
        if self._tasks.closed:  # started again after a stop
            self._tasks = TaskSet("relay link", _log)
        self._stopping = False
        self._tasks.start(self._run(), name="connect")

    async def stop(self) -> None:
        self._stopping = True
        await self._tasks.close()
        if self._link is not None:
            await self._link.close()

    async def _run(self) -> None:
        attempt = 0
        while not self._stopping:
            link = MacLink(
                self.relay_url,
                self.token,
                self.device,
                on_command=self.on_command,
                archive=self.archive,
                on_decision_ack=self.on_decision_ack,
            )
            try:
                welcome = await link.connect()
            except LinkRefused as exc:
                self.last_error = str(exc)
                if exc.token_refused:
                    self.refused = str(exc)
                    _log.error("the relay refused this Mac: %s — pair it again", exc)
                await self._backoff(attempt := attempt + 1, long=self.refused is not None)
                continue
            except (OSError, TimeoutError) as exc:  # LinkLost is an OSError
                self.last_error = f"cannot reach {self.relay_url}: {exc}"
                await self._backoff(attempt := attempt + 1)
                continue
            attempt = 0
            self.refused = None
            self.last_error = None
            self._link = link
            self.linked.set()
            _log.info("linked to %s", self.relay_url)
            try:
                await self.on_linked(welcome)
                await self._heartbeat(link)
            except Exception:
                _log.exception("link handler failed")
            finally:
                self.linked.clear()
                self._link = None
                if self.on_unlinked is not None:
                    self.on_unlinked()
                await link.abort()
            _log.info("link to %s lost; reconnecting", self.relay_url)

    async def _heartbeat(self, link: MacLink) -> None:
        """Ping every HEARTBEAT seconds while linked; a link that closes (its relay node died,
        the relay restarted) ends this at once, so the agent links again within its back-off,
        not at the next ping."""
        while link.connected:
            try:
                if await link.wait_closed(HEARTBEAT):
                    return
                await link.send_raw(Ping().model_dump_json())
            except OSError:  # LinkLost included
                return

    async def _backoff(self, attempt: int, long: bool = False) -> None:
        ceiling = BACKOFF_MAX * (4 if long else 1)
        delay = min(ceiling, BACKOFF_FIRST * 2 ** min(attempt, 10))
        await asyncio.sleep(delay * _JITTER.uniform(0.5, 1.0))  # jitter: Macs don't stampede

    # -- sending -----------------------------------------------------------------------

    def _require(self) -> MacLink:
        link = self._link
        if link is None or not link.connected:
            raise NotLinked(self.last_error or "not linked to the relay")
        return link

    async def send_lines(
        self, session_id: str, conversation_id: str, lines: list[LineRecord], cwd: str | None
    ) -> Ack:
        link = self._require()
        try:
            with _not_linked():
                ack = await link.send_lines(session_id, conversation_id, lines, cwd=cwd)
        except LinkRefused as exc:
            # The relay answered this batch with an error (e.g. "internal"): the lines stay in
            # the transcript and are sent again later, as after a lost link.
            raise BatchRefused(str(exc)) from exc
        _log_dropped(ack)
        return ack

    async def send(self, message: BaseModel) -> None:
        """Send one more link message (wire/protocol.py) as it is."""
        link = self._require()
        with _not_linked():
            await link.send_raw(message.model_dump_json())

    async def update(self, info: SessionInfo) -> None:
        link = self._require()
        with _not_linked():
            await link.update(info)


@contextlib.contextmanager
def _not_linked() -> Iterator[None]:
    """A link that drops or times out while sending: the work stays on the Mac (NotLinked)."""
    try:
        yield
    except (ConnectionError, TimeoutError) as exc:  # LinkLost is a ConnectionError
        raise NotLinked(str(exc)) from exc


def _log_dropped(ack: Ack) -> None:
    """Say which lines the relay did not store: a resend's duplicates are expected (debug), lines
    out of order or out of range are a bug on this side worth seeing (warning)."""
    if not ack.dropped:
        return
    by_reason: dict[str, list[int]] = {}
    for line in ack.dropped:
        by_reason.setdefault(line.reason, []).append(line.offset)
    for reason, offsets in sorted(by_reason.items()):
        shown = ", ".join(str(o) for o in offsets[:10]) + (" …" if len(offsets) > 10 else "")
        level = logging.DEBUG if reason == "duplicate" else logging.WARNING
        _log.log(
            level,
            "the relay dropped %d line(s) of session %s, conversation %s (%s) at offsets %s",
            len(offsets),
            ack.session_id,
            ack.conversation_id,
            reason,
            shown,
        )
