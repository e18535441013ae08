"""Property-based tests of the agent link: generated link messages against a real relay.

A Hypothesis state machine plays up to two Macs of one account (raw ``websockets`` clients, so
it can send anything) against a real relay under uvicorn. It mixes real transcript lines
(tests/fixtures/transcripts/) with odd ones: lone surrogates, lines over the relay's line limit,
non-JSON and partial lines, lines held back and sent out of order, batches sent twice, numbers at
and past the 64-bit range, hello twice, binary frames, other Macs' and other accounts' sessions,
aborted TCP connections. After every step it checks the invariants of docs/protocol.md:

* the relay still answers (``/api/health`` and an authenticated ``/api/me``);
* every Mac with an open link shows online in ``/api/devices``, every other one offline;
* a valid ``hello`` always gets a ``welcome``; every message on an open link gets its answer
  (``ack``/``error`` for a batch, ``pong`` for a ping) and the relay never drops the link for one
  bad message;
* each session's stored events (``GET /events?after=0``, paged) are seq 1..N, no gap, no repeat,
  and a page is never empty while saying ``has_more``;
* nothing acknowledged is lost: every event the relay sent the Mac is still stored as sent, every
  new line an ``ack`` covered is reflected in stored events (as many as the line makes, a marker
  for an unreadable or too large line), and a line the relay dropped is named in the ack.

Settings: ``max_examples=50`` per test (three machines, about 35 s together on a 2-core machine;
on the PostgreSQL backend the first 25 of the same examples),
``stateful_step_count=12``, ``deadline=None``, ``derandomize=True`` and ``database=None``, so a CI
run is reproducible and leaves nothing behind. ``CB_PROPS_EXAMPLES`` changes the example count for
a longer local run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from relay.convert import ConversionLimits, convert_line
from tests.support.relay import TRANSCRIPTS, Account, RelayServer
from wire import config as configmod

MAX_LINE_BYTES = 16 * 1024  # small limits keep "too large" cheap to generate
MAX_LINK_MESSAGE_BYTES = 256 * 1024
REPLY_TIMEOUT = 3.0
SETTLE_TIMEOUT = 2.0
EXAMPLES = int(os.environ.get("CB_PROPS_EXAMPLES", "50"))
# On PostgreSQL each step is a few network round trips, not calls into a file: the same machine
# (the same derandomized examples, first to last) runs half as many there.
EXAMPLES_ON_POSTGRES = max(1, EXAMPLES // 2)

PROPS_SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# The relay and the Macs run in threads beside the test, and websockets draws its ping payloads
# from the global `random` module: Hypothesis would take that for a strategy using `random`.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning"
)

_LIMITS = ConversionLimits.from_config(configmod.load({}, environ={}))


# -- real transcript lines ---------------------------------------------------------------------


def _real_lines() -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            found: Any = None
            with contextlib.suppress(ValueError, AttributeError):
                found = json.loads(raw).get("uuid")
            out.append((raw, found if isinstance(found, str) else None))
    return out


REAL_LINES = _real_lines()


def fresh_copy(index: int) -> tuple[str, str | None]:
    """A captured line with a new uuid, so it is new to the relay wherever it is sent."""
    text, old = REAL_LINES[index % len(REAL_LINES)]
    if old is None:
        return text, None
    new = str(uuid.uuid4())
    return text.replace(f'"uuid":"{old}"', f'"uuid":"{new}"', 1), new


def chat_line(content: str, escaped: bool = True) -> str:
    """A user prompt line; ``escaped`` writes non-ASCII as ``\\uXXXX`` as JSON.stringify does."""
    body = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-11-29T21:33:53.764Z",
        "message": {"role": "user", "content": content},
    }
    return json.dumps(body, ensure_ascii=escaped)


def events_made(text: str) -> int:
    """What the relay under test makes of one line: a line over its ``max_line_bytes`` is one
    "line too large" marker, whatever it holds."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        return 1
    return len(convert_line(text, _LIMITS).events)


# -- a raw link -------------------------------------------------------------------------------


class RawLink:
    """One agent link on a raw WebSocket: sends anything, reads with a timeout."""

    def __init__(self, server: RelayServer, token: str) -> None:
        url = server.url.replace("http://", "ws://") + "/api/agent/link"
        self.ws: ClientConnection = connect(
            url,
            additional_headers={"Authorization": f"Bearer {token}"},
            max_size=None,
            open_timeout=REPLY_TIMEOUT,
            close_timeout=1,
            legacy=True,  # a plain connection object, not a context manager
        )
        self.close_code: int | None = None
        self.close_reason = ""

    @property
    def open(self) -> bool:
        return self.close_code is None

    def send(self, data: str | bytes) -> bool:
        try:
            self.ws.send(data)
            return True
        except (ConnectionClosed, OSError) as exc:
            self._closed(exc)
            return False

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when the link closed or nothing came in time."""
        try:
            raw = self.ws.recv(timeout=timeout)
        except TimeoutError:
            return None
        except (ConnectionClosed, OSError) as exc:
            self._closed(exc)
            return None
        message: dict[str, Any] = json.loads(raw)
        return message

    def _closed(self, exc: Exception) -> None:
        if self.close_code is None:
            rcvd = getattr(exc, "rcvd", None)
            self.close_code = rcvd.code if rcvd is not None else -1
            self.close_reason = rcvd.reason if rcvd is not None else repr(exc)

    def abort(self) -> None:
        """Drop the TCP connection without a close frame (RST), as a crashed Mac would."""
        sock = self.ws.socket
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
        self.close_code = self.close_code or -2
        with contextlib.suppress(Exception):
            self.ws.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        self.close_code = self.close_code or 1000


# -- the model -------------------------------------------------------------------------------


@dataclass
class Conversation:
    next_offset: int = 0  # where the next fresh line starts
    high: int = -1  # the highest offset the relay acked
    stored: set[int] = field(default_factory=set)  # offsets the relay holds
    held: list[tuple[int, str, str | None]] = field(default_factory=list)  # skipped lines
    sent: list[tuple[int, str, str | None]] = field(default_factory=list)  # for resends


@dataclass
class SessionModel:
    id: str
    owner: str  # the Mac the session was created on
    conversations: dict[str, Conversation] = field(default_factory=dict)
    uuids: set[str] = field(default_factory=set)
    # (conversation, offset) -> events the line must have made; -1 = at least one
    expected: dict[tuple[str, int], int] = field(default_factory=dict)
    archive: dict[int, dict[str, Any]] = field(default_factory=dict)  # events sent to the Mac


@dataclass
class MacModel:
    name: str
    token: str
    device_id: str
    link: RawLink | None = None


@dataclass
class LineSpec:
    offset: int
    text: str
    uuid: str | None
    kind: str  # real, surrogate, raw_surrogate, huge, junk, held, resend, far
    expect: int | None  # events if stored fresh; -1 = at least one; None = anything


LINE_KINDS = st.sampled_from(
    ["real", "real", "real", "real", "surrogate", "raw_surrogate", "huge", "junk", "partial"]
)
BIG_INTS = st.sampled_from([2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30, -1, -(2**63) - 1])


def _numbers_in(value: Any) -> set[int]:
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, str):
        return {int(x) for x in re.findall(r"\d+", value)}
    if isinstance(value, dict):
        return set().union(*(_numbers_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_numbers_in(v) for v in value)) if value else set()
    return set()


def reported_offsets(ack: dict[str, Any]) -> set[int]:
    """Offsets an ack names as dropped or rejected (any field beyond the fixed ones)."""
    fixed = {"type", "batch", "session_id", "conversation_id", "through_offset", "last_seq"}
    fixed |= {"epoch", "duplicates"}
    return _numbers_in({k: v for k, v in ack.items() if k not in fixed})


def wait_for(check: Callable[[], str | None], timeout: float = SETTLE_TIMEOUT) -> str | None:
    """Poll ``check`` (None = satisfied, else what is wrong) until it holds or time runs out."""
    deadline = time.monotonic() + timeout
    problem = check()
    while problem is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        problem = check()
    return problem


def read_all_events(
    client: httpx.Client, session_id: str
) -> tuple[list[dict[str, Any]], str | None]:
    """Every stored event of a session, paged from after=0; the second item names a problem."""
    events: list[dict[str, Any]] = []
    after = 0
    for _ in range(1000):
        response = client.get(
            f"/api/sessions/{session_id}/events", params={"after": after, "limit": 200}
        )
        if response.status_code != 200:
            return events, f"GET events after={after}: {response.status_code} {response.text}"
        page = response.json()
        got = page["events"]
        if page["has_more"] and not got:
            return events, f"after={after} answered an empty page with has_more: true"
        events += got
        if not page["has_more"]:
            return events, None
        after = got[-1]["seq"]
    return events, "more than 1000 pages"


def when(rule_name: str, extra: Callable[[Any], bool] | None = None) -> Callable[[Any], bool]:
    """A rule runs only in the machines that enable it (see the tests at the end)."""
    return lambda self: rule_name in self.enabled and (extra is None or bool(extra(self)))


def _any_link(self: Any) -> bool:
    return any(self._connected(n) for n in ("A", "B"))


class LinkMachine(RuleBasedStateMachine):
    server: RelayServer  # set by the test
    enabled: frozenset[str] = frozenset()  # the rules this machine runs
    odd_lines = True  # False: send_lines sends real lines only, at true offsets

    def __init__(self) -> None:
        super().__init__()
        self.acct: Account = self.server.account()
        store = self.server.state.store
        token_b, _, device_b = store.create_token(self.acct.account_id, "device", "mac b")
        self.macs = {
            "A": MacModel("A", self.acct.device_token, self.acct.device_id),
            "B": MacModel("B", token_b, device_b),
        }
        self.phone = httpx.Client(
            base_url=self.server.url,
            headers={"Authorization": f"Bearer {self.acct.phone_token}"},
            timeout=15,
        )
        self.sessions: dict[str, SessionModel] = {}
        self.batch = 0
        self.foreign_session = ""
        self.foreign_events: list[dict[str, Any]] = []
        self.foreign_phone: httpx.Client | None = None

    def teardown(self) -> None:
        for m in self.macs.values():
            if m.link is not None:
                m.link.close()
        self.phone.close()
        if self.foreign_phone is not None:
            self.foreign_phone.close()

    # -- setup ------------------------------------------------------------------------------

    @initialize()
    def other_account(self) -> None:
        """Another account with a session of its own: never visible, never changed from here."""
        other = self.server.account()
        self.foreign_session = str(uuid.uuid4())
        link = RawLink(self.server, other.device_token)
        try:
            assert link.send(json.dumps({"type": "hello", "sessions": []}))
            assert self._expect(link, lambda m: m["type"] == "welcome") is not None
            lines = [{"offset": i * 1000, "text": fresh_copy(i)[0], "uuid": None} for i in range(3)]
            message = {
                "type": "lines",
                "batch": 1,
                "session_id": self.foreign_session,
                "conversation_id": "c-foreign",
                "cwd": "/w",
                "lines": lines,
            }
            assert link.send(json.dumps(message))
            assert self._expect(link, lambda m: m["type"] == "ack") is not None
        finally:
            link.close()
        self.foreign_phone = httpx.Client(
            base_url=self.server.url,
            headers={"Authorization": f"Bearer {other.phone_token}"},
            timeout=15,
        )
        self.foreign_events, problem = read_all_events(self.foreign_phone, self.foreign_session)
        assert problem is None, problem

    # -- helpers ----------------------------------------------------------------------------

    def _expect(
        self, link: RawLink, want: Callable[[dict[str, Any]], bool], timeout: float = REPLY_TIMEOUT
    ) -> dict[str, Any] | None:
        """Read until a message ``want`` accepts; events on the way go to the archive."""
        deadline = time.monotonic() + timeout
        while link.open:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            message = link.recv(left)
            if message is None:
                continue
            if message.get("type") == "events":
                self._archive(message)
            if want(message):
                return message
        return None

    def _archive(self, message: dict[str, Any]) -> None:
        model = self.sessions.get(message.get("session_id", ""))
        if model is None:
            return
        for event in message["events"]:
            model.archive.setdefault(event["seq"], event)

    def _connected(self, name: str) -> RawLink | None:
        link = self.macs[name].link
        return link if link is not None and link.open else None

    def _drop(self, name: str) -> None:
        link = self.macs[name].link
        self.macs[name].link = None
        if link is not None:
            link.close()

    def _owned(self, name: str) -> list[SessionModel]:
        return [s for s in self.sessions.values() if s.owner == name]

    def _ping(self, link: RawLink, what: str) -> None:
        """The link must still be open and answering after ``what``."""
        assert link.send(json.dumps({"type": "ping"})), f"the relay closed the link after {what}"
        pong = self._expect(link, lambda m: m["type"] == "pong")
        assert pong is not None, (
            f"no pong after {what}: link closed={not link.open} "
            f"code={link.close_code} reason={link.close_reason!r}"
        )

    # -- connecting -------------------------------------------------------------------------

    @precondition(when("connect"))
    @rule(
        name=st.sampled_from(["A", "A", "B"]),
        stale=st.booleans(),
        new_session=st.booleans(),
    )
    def connect(self, name: str, stale: bool, new_session: bool) -> None:
        """A Mac says hello with true (or older) positions; a welcome must come back."""
        self._drop(name)
        positions = []
        for s in self._owned(name):
            last = max(s.archive, default=0)
            positions.append({"session_id": s.id, "last_seq": last // 2 if stale else last})
        if new_session:
            sid = str(uuid.uuid4())
            self.sessions[sid] = SessionModel(sid, name)
            positions.append({"session_id": sid, "last_seq": 0})
        link = RawLink(self.server, self.macs[name].token)
        hello = {"type": "hello", "device": {"name": f"mac {name}"}, "sessions": positions}
        assert link.send(json.dumps(hello))
        welcome = self._expect(link, lambda m: m["type"] in ("welcome", "error"))
        assert welcome is not None and welcome["type"] == "welcome", (
            f"a valid hello got no welcome: {welcome} (closed={not link.open}, "
            f"code={link.close_code}, reason={link.close_reason!r})"
        )
        self.macs[name].link = link
        self._ping(link, "welcome")  # the missed events come before the pong

    @precondition(
        when("hello_naming_others_sessions", lambda m: any(s.archive for s in m.sessions.values()))
    )
    @rule(
        data=st.data(),
        last_seq=st.one_of(
            st.just(5000), st.integers(1, 2**62), st.sampled_from([2**63 - 1, 2**63, 2**64])
        ),
    )
    def hello_naming_others_sessions(self, data: st.DataObject, last_seq: int) -> None:
        """Mac B names Mac A's session (or another account's) with a far position."""
        self._drop("B")
        targets = [s.id for s in self.sessions.values() if s.owner == "A" and s.archive]
        targets.append(self.foreign_session)
        target = data.draw(st.sampled_from(targets), label="target")
        link = RawLink(self.server, self.macs["B"].token)
        hello = {"type": "hello", "sessions": [{"session_id": target, "last_seq": last_seq}]}
        assert link.send(json.dumps(hello))
        answer = self._expect(link, lambda m: m["type"] in ("welcome", "error"))
        if answer is not None and answer["type"] == "welcome":
            self.macs["B"].link = link
            self._ping(link, "a hello naming another Mac's session")
            return
        # Refused (a number past any real history): the refusal must say why.
        assert last_seq > 2**53, f"hello with last_seq {last_seq} was refused: {answer}"
        assert answer is not None and answer["type"] == "error", (
            f"hello with last_seq {last_seq} got neither welcome nor error "
            f"(code={link.close_code}, reason={link.close_reason!r})"
        )
        link.close()

    @precondition(when("hello_with_out_of_range_number"))
    @rule(name=st.sampled_from(["A", "B"]), value=BIG_INTS, where=st.sampled_from(["seq", "proto"]))
    def hello_with_out_of_range_number(self, name: str, value: int, where: str) -> None:
        """A hello whose numbers are out of range: refused or accepted, never a stuck Mac."""
        if where == "seq" and 0 <= value < 2**63:
            value = 2**63  # a Mac's own true position below that is a legal hello (connect)
        self._drop(name)
        positions = [{"session_id": s.id, "last_seq": value} for s in self._owned(name)[:1]]
        hello: dict[str, Any] = {"type": "hello", "sessions": positions}
        if where == "proto" or not positions:
            hello["protocol"] = value
        link = RawLink(self.server, self.macs[name].token)
        link.send(json.dumps(hello))
        answer = self._expect(link, lambda m: m["type"] in ("welcome", "error"))
        link.close()  # either way this link ends here; the next connect must get a welcome
        assert answer is not None, (
            f"hello with {where}={value} got no answer "
            f"(code={link.close_code}, reason={link.close_reason!r})"
        )

    @precondition(when("hello_then_abort"))
    @rule(name=st.sampled_from(["A", "B"]))
    def hello_then_abort(self, name: str) -> None:
        """hello, then the TCP connection is aborted before or after the welcome."""
        self._drop(name)
        link = RawLink(self.server, self.macs[name].token)
        positions = [{"session_id": s.id, "last_seq": 0} for s in self._owned(name)]
        link.send(json.dumps({"type": "hello", "sessions": positions}))
        link.abort()

    @precondition(when("disconnect", lambda m: any(x.link is not None for x in m.macs.values())))
    @rule(name=st.sampled_from(["A", "B"]), abort=st.booleans())
    def disconnect(self, name: str, abort: bool) -> None:
        link = self.macs[name].link
        self.macs[name].link = None
        if link is not None:
            if abort:
                link.abort()
            else:
                link.close()

    # -- lines ------------------------------------------------------------------------------

    def _make_line(self, conv: Conversation, kind: str, index: int) -> LineSpec:
        offset = conv.next_offset
        if kind == "real":
            text, line_uuid = fresh_copy(index)
            spec = LineSpec(offset, text, line_uuid, kind, events_made(text))
        elif kind == "surrogate":  # what JSON.stringify writes for half an emoji
            text = chat_line("cut emoji \ud83d here")
            spec = LineSpec(offset, text, None, kind, -1)
        elif kind == "raw_surrogate":  # the code point itself in the link message
            text = chat_line("cut emoji \ud83d here", escaped=False)
            spec = LineSpec(offset, text, None, kind, -1)
        elif kind == "huge":
            text = chat_line("x" * (MAX_LINE_BYTES + 10))
            spec = LineSpec(offset, text, None, kind, 1)
        elif kind == "partial":
            full, _ = fresh_copy(index)
            text = full[: max(1, len(full) // 2)]
            spec = LineSpec(offset, text, None, kind, events_made(text))
        else:
            text = "\x00not json {" + "é" * (index % 7)
            spec = LineSpec(offset, text, None, kind, events_made(text))
        conv.next_offset += len(spec.text.encode("utf-8", "surrogatepass")) + 1
        return spec

    @precondition(when("send_lines", _any_link))
    @rule(
        data=st.data(),
        kinds=st.lists(LINE_KINDS, min_size=0, max_size=6),
        hold=st.booleans(),
        release=st.booleans(),
        resend=st.integers(0, 3),
        far=st.sampled_from([None, None, None, 2**63 - 1, 2**63, 2**64, 10**30, -1]),
        batch_value=st.sampled_from([None, None, None, None, 2**63, 2**64, -5]),
        conversation=st.sampled_from(["conv-1", "conv-2", "agent-sub1"]),
    )
    def send_lines(
        self,
        data: st.DataObject,
        kinds: list[str],
        hold: bool,
        release: bool,
        resend: int,
        far: int | None,
        batch_value: int | None,
        conversation: str,
    ) -> None:
        """A lines batch of real and odd lines, possibly with resent and out-of-order ones."""
        if not self.odd_lines:
            kinds, far, batch_value = ["real"] * len(kinds), None, None
        name = data.draw(st.sampled_from([n for n in ("A", "B") if self._connected(n)]))
        link = self._connected(name)
        assert link is not None
        owned = self._owned(name)
        choice = data.draw(st.integers(0, len(owned)), label="session")
        if choice == len(owned):
            sid = str(uuid.uuid4())
            session = SessionModel(sid, name)
            self.sessions[sid] = session
        else:
            session = owned[choice]
        conv = session.conversations.setdefault(conversation, Conversation())

        specs: list[LineSpec] = []
        if release and conv.held:  # lines skipped earlier, now sent late (out of order)
            for offset, text, line_uuid in conv.held:
                specs.append(LineSpec(offset, text, line_uuid, "held", events_made(text)))
            conv.held.clear()
        resent = conv.sent[-resend:] if resend else []
        specs += [LineSpec(o, t, u, "resend", None) for o, t, u in resent]
        for i, kind in enumerate(kinds):
            spec = self._make_line(conv, kind, self.batch * 7 + i)
            if hold and i == 0 and kind == "real" and spec.expect:
                conv.held.append((spec.offset, spec.text, spec.uuid))
                continue  # skipped now: the agent sends it later
            specs.append(spec)
        if far is not None:
            text = chat_line("far away")
            specs.append(LineSpec(far, text, None, "far", events_made(text)))

        self.batch += 1
        batch = self.batch if batch_value is None else batch_value
        message = {
            "type": "lines",
            "batch": batch,
            "session_id": session.id,
            "conversation_id": conversation,
            "cwd": "/w",
            "lines": [{"offset": s.offset, "text": s.text, "uuid": s.uuid} for s in specs],
        }
        ok = link.send(json.dumps(message))
        assert ok, f"the link was closed before the batch (code={link.close_code})"
        answer = self._expect(
            link,
            lambda m: (
                (m["type"] in ("ack", "error") and m.get("batch") == batch)
                or (m["type"] == "error" and "batch" not in m)
            ),
        )
        assert answer is not None, (
            f"batch {batch} ({[s.kind for s in specs]}) got no ack or error: "
            f"link closed={not link.open} code={link.close_code} reason={link.close_reason!r}"
        )
        if answer["type"] == "error":
            # Refused as a whole: a reason is given and the link stays usable. Only numbers out
            # of range (and a lone surrogate escaped in the link message itself, which the
            # relay's JSON parser refuses) may refuse a batch: any other line is stored, as a
            # marker when it cannot be read, with the rest of its batch.
            assert answer.get("code") and answer.get("message"), answer
            assert far is not None or batch_value is not None or "raw_surrogate" in kinds, (
                f"batch {batch} ({[s.kind for s in specs]}) was refused: {answer}"
            )
            self._ping(link, f"a refused batch ({answer['code']})")
            return
        self._after_ack(link, session, conv, conversation, specs, answer)
        conv.sent += [(s.offset, s.text, s.uuid) for s in specs if s.kind != "far"]

    def _after_ack(
        self,
        link: RawLink,
        session: SessionModel,
        conv: Conversation,
        conversation: str,
        specs: list[LineSpec],
        ack: dict[str, Any],
    ) -> None:
        # The batch's events come right after its ack; a ping answered later means all are in.
        self._ping(link, "an acked batch")
        made: dict[int, int] = {}
        for seq, event in session.archive.items():
            if event.get("conversation_id") == conversation and seq <= ack["last_seq"]:
                made[event["offset"]] = made.get(event["offset"], 0) + 1
        reported = reported_offsets(ack)
        high = conv.high
        for spec in specs:
            if spec.offset in conv.stored:
                continue  # stored before: a duplicate
            if spec.offset <= high:
                # Below what the relay holds and never stored: stored now, or named in the ack.
                if made.get(spec.offset, 0) > 0:
                    conv.stored.add(spec.offset)
                    session.expected[(conversation, spec.offset)] = made[spec.offset]
                elif spec.expect and spec.offset not in reported:
                    raise AssertionError(
                        f"acked line at offset {spec.offset} ({spec.kind}) of {conversation} is "
                        f"neither stored nor named in the ack {ack}"
                    )
                continue
            high = spec.offset
            conv.stored.add(spec.offset)
            if spec.uuid is not None:
                if spec.uuid in session.uuids:
                    continue  # the same line copied into another conversation
                session.uuids.add(spec.uuid)
            if spec.expect is not None:
                session.expected[(conversation, spec.offset)] = spec.expect
        assert ack["through_offset"] >= high, (
            f"ack through_offset {ack['through_offset']} is below the highest line acked {high}"
        )
        conv.high = max(high, ack["through_offset"])

    # -- odd messages -----------------------------------------------------------------------

    @precondition(when("send_junk", _any_link))
    @rule(
        data=st.data(),
        junk=st.sampled_from(
            [
                "not json",
                '{"type": "lines", "batch": 1',
                "[]",
                "null",
                "1e999",
                '{"type": "nope"}',
                '{"type": "lines", "batch": "seven", "session_id": 1, "conversation_id": [],'
                ' "lines": {}}',
                '{"type": "lines", "batch": 1, "session_id": "s", "conversation_id": "c",'
                ' "lines": [{"offset": "zero", "text": 5}]}',
                '{"type": "hello"}',
                '{"type": "ping", "extra": NaN}',
                '{"type": "command_result", "command_id": "none", "ok": true}',
                '{"type": "history", "request_id": "none", "events": [{"kind": "user"}]}',
                '{"type": "session_update", "session": {"session_id": "%s", "state": "busy",'
                ' "card": {"id": "x", "kind": "permission"}}}',
                '{"type": "session_update", "session": {"session_id": "%s", "preview": "\\ud800"}}',
                "BINARY",
            ]
        ),
    )
    def send_junk(self, data: st.DataObject, junk: str) -> None:
        """Anything at all on an open link: the link answers (or ignores) it and stays."""
        name = data.draw(st.sampled_from([n for n in ("A", "B") if self._connected(n)]))
        link = self._connected(name)
        assert link is not None
        if "%s" in junk:
            ids = [s.id for s in self.sessions.values()] + [self.foreign_session, "../../x"]
            junk = junk.replace("%s", data.draw(st.sampled_from(ids), label="session"))
        if junk == "BINARY":
            link.send(b"\x00\xff binary")
        else:
            link.send(junk)
        # Only these are answered without an error (or not at all): everything else gets
        # exactly one error (or, for the ping with NaN, a pong); read it before the next ping,
        # so no stale answer is taken for a later one.
        silent = ('"command_result"', '"history"', '"session_update"')
        if not any(word in junk for word in silent):
            answer = self._expect(link, lambda m: m["type"] in ("error", "pong"))
            assert answer is not None, (
                f"no answer to {junk[:60]!r}: link closed={not link.open} "
                f"code={link.close_code} reason={link.close_reason!r}"
            )
        self._ping(link, f"the message {junk[:60]!r}")

    @precondition(when("send_frame_the_server_refuses", _any_link))
    @rule(data=st.data(), bad_utf8=st.booleans())
    def send_frame_the_server_refuses(self, data: st.DataObject, bad_utf8: bool) -> None:
        """A frame over the link limit (1009) or a text frame that is not UTF-8 (1007) may close
        that link at the WebSocket level; the Mac must then show offline."""
        name = data.draw(st.sampled_from([n for n in ("A", "B") if self._connected(n)]))
        link = self._connected(name)
        assert link is not None
        if bad_utf8:  # a surrogate as raw bytes in a text frame
            with contextlib.suppress(ConnectionClosed, OSError):
                link.ws.send(b'{"type": "ping", "x": "\xed\xa0\xbd"}', text=True)
        else:
            link.send('{"type": "ping", "pad": "' + "p" * (MAX_LINK_MESSAGE_BYTES + 10) + '"}')
        self._expect(link, lambda m: False, timeout=2.0)  # read until the close
        if link.open:  # the relay may also answer with an error and keep it
            self._ping(link, "an oversized frame")
        else:
            self.macs[name].link = None

    @precondition(when("lines_for_another_accounts_session", lambda m: m._connected("A")))
    @rule()
    def lines_for_another_accounts_session(self) -> None:
        link = self._connected("A")
        assert link is not None
        self.batch += 1
        message = {
            "type": "lines",
            "batch": self.batch,
            "session_id": self.foreign_session,
            "conversation_id": "c-foreign",
            "lines": [{"offset": 10**6, "text": chat_line("intruder"), "uuid": None}],
        }
        link.send(json.dumps(message))
        answer = self._expect(link, lambda m: m["type"] in ("ack", "error"))
        assert answer is not None and answer["type"] == "error", (
            f"lines for another account's session were answered {answer}"
        )
        self._ping(link, "lines for another account's session")

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def relay_answers(self) -> None:
        health = self.phone.get("/api/health")
        assert health.status_code == 200, health.text
        me = self.phone.get("/api/me")
        assert me.status_code == 200, me.text

    @invariant()
    def links_stay_open(self) -> None:
        """The relay closes no open link by itself (nothing here replaces or revokes one)."""
        for m in self.macs.values():
            link = m.link
            if link is None or not link.open:
                continue
            while link.open:  # answers nobody waited for; a close shows in link.open
                message = link.recv(0)
                if message is None:
                    break
                if message.get("type") == "events":
                    self._archive(message)
            assert link.open, (
                f"the relay closed Mac {m.name}'s link: code={link.close_code} "
                f"reason={link.close_reason!r}"
            )

    @invariant()
    def online_means_linked(self) -> None:
        def check() -> str | None:
            response = self.phone.get("/api/devices")
            if response.status_code != 200:
                return f"/api/devices: {response.status_code} {response.text}"
            online = {d["id"]: d["online"] for d in response.json()["devices"]}
            for m in self.macs.values():
                want = self._connected(m.name) is not None
                if online.get(m.device_id, False) != want:
                    return f"Mac {m.name} shows online={online.get(m.device_id)}, linked={want}"
            return None

        problem = wait_for(check)
        assert problem is None, problem

    @invariant()
    def histories_are_whole(self) -> None:
        for session in self.sessions.values():
            response = self.phone.get(f"/api/sessions/{session.id}")
            if response.status_code == 404 and not session.archive and not session.expected:
                continue  # never stored (its only batch was refused)
            events, problem = read_all_events(self.phone, session.id)
            assert problem is None, f"session {session.id}: {problem}"
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1)), (
                f"session {session.id}: seqs {seqs[:20]}… are not 1..N"
            )
            by_seq = {e["seq"]: e for e in events}
            for seq, sent in session.archive.items():
                have = by_seq.get(seq)
                same = have is not None and all(
                    have.get(k) == sent.get(k) for k in ("kind", "text", "offset", "epoch")
                )
                assert same, (
                    f"session {session.id}: event seq {seq} sent to the Mac as "
                    f"{_brief(sent)} is stored as {_brief(have)}"
                )
            counts: dict[tuple[str, int], int] = {}
            for e in events:
                offset = e.get("offset")
                key = (e.get("conversation_id") or "", -1 if offset is None else offset)
                counts[key] = counts.get(key, 0) + 1
            for key, want in session.expected.items():
                have_n = counts.get(key, 0)
                ok = have_n >= 1 if want == -1 else have_n == want
                assert ok, (
                    f"session {session.id}: the acked line {key} should have made "
                    f"{'at least one event' if want == -1 else want} and made {have_n}"
                )

    @invariant()
    def other_account_untouched(self) -> None:
        if self.foreign_phone is None:
            return
        response = self.phone.get(f"/api/sessions/{self.foreign_session}/events")
        assert response.status_code == 404, f"another account's session: {response.status_code}"
        events, problem = read_all_events(self.foreign_phone, self.foreign_session)
        assert problem is None, problem
        assert events == self.foreign_events, "another account's history changed"


def _brief(event: dict[str, Any] | None) -> str:
    if event is None:
        return "missing"
    return json.dumps({k: event.get(k) for k in ("seq", "kind", "offset", "epoch")})


@pytest.fixture(scope="module")
def link_relay(
    tmp_path_factory: pytest.TempPathFactory, relay_overrides: Callable[[], dict[str, Any]]
) -> Iterator[RelayServer]:
    """A relay with small line and message limits (so too large input is cheap) and a short
    history timeout (this Mac never answers history requests)."""
    server = RelayServer(
        Path(tmp_path_factory.mktemp("props-link")),
        max_line_bytes=MAX_LINE_BYTES,
        max_link_message_bytes=MAX_LINK_MESSAGE_BYTES,
        history_timeout=1.0,
        **relay_overrides(),
    ).start()
    yield server
    server.stop()


LINES = frozenset({"connect", "send_lines", "send_junk", "lines_for_another_accounts_session"})
CONNECTIONS = frozenset(
    {
        "connect",
        "disconnect",
        "hello_then_abort",
        "hello_with_out_of_range_number",
        "send_frame_the_server_refuses",
        "send_lines",
    }
)
OTHER_MACS = frozenset({"connect", "send_lines", "hello_naming_others_sessions", "disconnect"})


def _run(server: RelayServer, rules: frozenset[str], what: str, odd_lines: bool) -> None:
    chosen = PROPS_SETTINGS
    if server.config.str("database_url"):
        chosen = settings(PROPS_SETTINGS, max_examples=EXAMPLES_ON_POSTGRES)
    print(
        f"\n{what}: Hypothesis max_examples={chosen.max_examples}, "
        f"stateful_step_count={PROPS_SETTINGS.stateful_step_count}, deadline=None, "
        f"derandomize=True, database=None; rules {sorted(rules)}"
    )
    machine = type(
        f"LinkMachine_{what}",
        (LinkMachine,),
        {"server": server, "enabled": rules, "odd_lines": odd_lines},
    )
    started = time.monotonic()
    try:
        run_state_machine_as_test(machine, settings=chosen)
    finally:
        print(f"{what}: {time.monotonic() - started:.1f} s")


# A pass takes seconds; a failure is shrunk for up to 5 minutes (Hypothesis's own bound) and then
# reported, which the default 300 s test timeout would cut short.
SHRINK_ROOM = pytest.mark.timeout(600)


@SHRINK_ROOM
def test_link_lines_and_odd_messages(link_relay: RelayServer) -> None:
    """Real and odd lines, resends, out-of-order and far offsets, junk messages."""
    _run(link_relay, LINES, "lines", odd_lines=True)


@SHRINK_ROOM
def test_link_connections(link_relay: RelayServer) -> None:
    """hello with bad numbers, aborted connections, frames the server refuses, reconnects."""
    _run(link_relay, CONNECTIONS, "connections", odd_lines=False)


@SHRINK_ROOM
def test_link_other_macs(link_relay: RelayServer) -> None:
    """A second Mac of the account names the first one's sessions (and another account's)."""
    _run(link_relay, OTHER_MACS, "other-macs", odd_lines=False)
