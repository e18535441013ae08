"""Property-based tests of the phone API: generated bodies, parameters and path ids.

Hypothesis throws generated requests at the write routes of a real relay under uvicorn
(``PATCH /api/sessions/ID``, ``POST /api/sessions``, messages, cards, policy, push subscribe,
pair, pin, and unknown routes): JSON of every shape (non-finite and huge numbers, wrong types,
lone surrogates, deep nesting), bodies that are not UTF-8 or not JSON, and path ids of every
shape (another account's session, ``../``, empty, long, odd characters). A Mac of the account is
linked and answers every command with ok, so requests get past "the Mac is offline". After every
request it checks:

* never a 5xx other than the documented 504 ``device_timeout``;
* every error is the documented body ``{"error": {"code": str, "message": str}}`` (relay/errors.py);
* every answer, ``/api/sessions`` and the ``/api/stream`` snapshot are strict JSON (no NaN or
  Infinity, which the page's ``JSON.parse`` refuses);
* a session the API created has a UUID id (what ``claude --session-id`` takes);
* a push endpoint the relay accepts is an ``https`` URL that does not name a local address;
* nothing stored before is lost (a session's events are unchanged) and another account's session
  is never visible (404 on every route, never listed).

Settings: ``max_examples=60`` per test (``CB_PROPS_API_EXAMPLES`` to change it), ``deadline=None``,
``derandomize=True``, ``database=None`` (reproducible in CI, nothing left behind).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.relay import Account, RelayServer, mac, transcript
from wire.protocol import LineRecord
from wire.transcript import read_lines

EXAMPLES = int(os.environ.get("CB_PROPS_API_EXAMPLES", "60"))
API_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# The relay and the Macs run in threads beside the test, and websockets draws its ping payloads
# from the global `random` module: Hypothesis would take that for a strategy using `random`.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning"
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (JSON.parse refuses it)")


def strict_json(text: str | bytes) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity, as a browser's JSON.parse does."""
    return json.loads(text, parse_constant=_reject_constant)


# -- the world: an account with a linked Mac and a stored session, and another account ----------


class AnsweringMac:
    """A Mac on a raw link that answers every command ok, in a thread of its own."""

    def __init__(self, server: RelayServer, token: str) -> None:
        url = server.url.replace("http://", "ws://") + "/api/agent/link"
        self.ws = connect(url, additional_headers={"Authorization": f"Bearer {token}"}, legacy=True)
        self.ws.send(json.dumps({"type": "hello", "device": {"name": "answering mac"}}))
        welcome = json.loads(self.ws.recv(timeout=10))
        assert welcome["type"] == "welcome", welcome
        self.commands: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(ConnectionClosed, OSError):
            for raw in self.ws:
                message = json.loads(raw)
                if message.get("type") == "command":
                    self.commands.append(message)
                    answer = {"type": "command_result", "command_id": message["command_id"]}
                    self.ws.send(json.dumps({**answer, "ok": True, "data": {}}))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        self.thread.join(5)


@dataclass(repr=False)
class World:
    server: RelayServer
    acct: Account
    other: Account
    session_id: str  # a session of acct with stored events
    foreign_id: str  # a session of the other account
    events_before: list[dict[str, Any]]
    foreign_before: list[dict[str, Any]]
    phone: httpx.Client
    other_phone: httpx.Client

    def __repr__(self) -> str:  # short, for Hypothesis's failing-example report
        return f"World(session={self.session_id}, foreign={self.foreign_id})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _store_session(server: RelayServer, acct: Account, session_id: str, prefix: str) -> None:
    lines: list[LineRecord] = list(read_lines(transcript(prefix).read_bytes()))

    async def run() -> None:
        async with mac(server, acct.device_token, name="seed mac") as link:
            await link.send_lines(session_id, "conv-1", lines, cwd="/w")

    asyncio.run(run())


def _all_events(client: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = 0
    while True:
        response = client.get(f"/api/sessions/{session_id}/events", params={"after": after})
        assert response.status_code == 200, response.text
        page = strict_json(response.text)
        out += page["events"]
        if not page["has_more"]:
            return out
        assert page["events"], f"an empty page with has_more at after={after}"
        after = page["events"][-1]["seq"]


@pytest.fixture(scope="module")
def api_relay(
    tmp_path_factory: pytest.TempPathFactory, relay_overrides: Callable[[], dict[str, Any]]
) -> Iterator[RelayServer]:
    data = Path(tmp_path_factory.mktemp("props-api"))
    server = RelayServer(data, command_timeout=3.0, **relay_overrides()).start()
    print(
        f"\nAPI properties: Hypothesis max_examples={API_SETTINGS.max_examples} per test, "
        "deadline=None, derandomize=True, database=None"
    )
    yield server
    server.stop()


@pytest.fixture
def world(api_relay: RelayServer) -> Iterator[World]:
    """Fresh accounts for each test, so one test's findings cannot spill into the next."""
    server = api_relay
    acct, other = server.account(), server.account()
    session_id, foreign_id = str(uuid.uuid4()), str(uuid.uuid4())
    _store_session(server, acct, session_id, "d_bash_permission")
    _store_session(server, other, foreign_id, "f_ask_question")
    phone = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {acct.phone_token}"}, timeout=20
    )
    other_phone = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {other.phone_token}"}, timeout=20
    )
    answering = AnsweringMac(server, acct.device_token)
    w = World(
        server,
        acct,
        other,
        session_id,
        foreign_id,
        _all_events(phone, session_id),
        _all_events(other_phone, foreign_id),
        phone,
        other_phone,
    )
    try:
        yield w
    finally:
        answering.close()
        phone.close()
        other_phone.close()


def restore(world: World) -> None:
    """Undo what an example may have changed on the stored session (position, title, lock),
    so every example starts from the same state."""
    world.phone.patch(
        f"/api/sessions/{world.session_id}",
        json={"position": 0, "title": "t", "group": "", "locked": False},
    )


# -- generated input --------------------------------------------------------------------------

BIG_NUMBERS = st.sampled_from(
    [2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**400, 1e308, -1e308, 5e-324]
)
ODD_TEXT = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "\ud83d", "\udfff tail", "a\x00b", "../../../x", "é" * 300]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    BIG_NUMBERS,
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
RAW_BODIES = st.sampled_from(
    [
        b"",
        b"{",
        b"null",
        b"[]",
        b'"text"',
        b"\xff\xfe{}",
        b'{"title": "\xed\xa0\xbd"}',  # a surrogate as raw bytes: not UTF-8
        b'{"title": "\xc3"}',
        b'{"position": 1e999}',
        b'{"position": -1e999}',
        b'{"position": Infinity}',
        b'{"position": NaN}',
        b'{"position": "Infinity"}',
        b'{"position": "NaN"}',
        b'{"position": "-inf"}',
        b'{"position": 12345678901234567890123456789}',
        b'{"title": "\\ud83d"}',
        b"DEEP_LIST",
        b"DEEP_OBJECT",
    ]
)
# Stand-ins replaced in the test, so a failing example prints a short name, not 200 kB.
DEEP = {
    b"DEEP_LIST": b"[" * 100_000 + b"]" * 100_000,
    b"DEEP_OBJECT": b'{"a":' * 5000 + b"1" + b"}" * 5000,
}


def _encode(value: Any) -> bytes:
    """JSON as a careless client writes it: NaN/Infinity included, surrogates as escapes."""
    return json.dumps(value, allow_nan=True).encode()


# Field names each route reads, so generated values reach the code behind validation.
FIELDS = {
    "patch": ["title", "group", "locked", "position"],
    "create": [
        "device_id",
        "cwd",
        "prompt",
        "permission_mode",
        "model",
        "session_id",
        "allow_all",
        "policy",
    ],
    "message": ["text", "now", "id"],
    "card": ["key", "keys", "text", "always"],
    "policy": ["allow_all", "categories", "tools", "reset"],
    "subscribe": ["endpoint", "keys", "turn_end", "lang"],
    "pair": ["code", "name"],
}


@st.composite
def bodies(draw: st.DrawFn, route: str, world_device: str) -> bytes:
    how = draw(st.sampled_from(["shaped", "shaped", "shaped", "any", "raw"]))
    if how == "raw":
        raw = draw(RAW_BODIES)
        return DEEP.get(raw, raw)
    if how == "any":
        return _encode(draw(JSON_VALUES))
    keys = draw(st.lists(st.sampled_from(FIELDS[route]), unique=True, max_size=4))
    body: dict[str, Any] = {k: draw(JSON_VALUES) for k in keys}
    if route == "create" and draw(st.booleans()):
        body.update(device_id=world_device, cwd=draw(st.sampled_from(["/w", "/tmp/x", "~"])))
        if draw(st.booleans()):
            body["session_id"] = draw(
                st.one_of(ODD_TEXT, st.uuids().map(str), st.just("../../../x"))
            )
    if route == "patch" and draw(st.booleans()):
        body["position"] = draw(st.floats(allow_nan=True, allow_infinity=True) | BIG_NUMBERS)
    if route == "subscribe" and draw(st.booleans()):
        body["endpoint"] = draw(ENDPOINTS)
        body["keys"] = {"p256dh": VALID_P256DH, "auth": "AAAAAAAAAAAAAAAAAAAAAA"}
    return _encode(body)


def _p256dh() -> str:
    """A real P-256 public key in base64url, so a subscription gets past the key check."""
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    point = key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return base64.urlsafe_b64encode(point).rstrip(b"=").decode()


VALID_P256DH = _p256dh()

ENDPOINTS = st.sampled_from(
    [
        "http://127.0.0.1:9/push",
        "https://127.0.0.1/push",
        "https://localhost/push",
        "https://10.0.0.1/push",
        "https://192.168.1.1/push",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/push",
        "https://[fd00::1]/push",
        "https://0.0.0.0/push",
        "http://fcm.googleapis.com/fcm/send/x",
        "https://2130706433/push",  # 127.0.0.1 as one number
    ]
)

PATH_IDS = st.one_of(
    st.sampled_from(["own", "foreign", "new-uuid"]),
    st.sampled_from(["", "..", "../../x", "%2e%2e%2fx", "x" * 5000, " ", "\u202e", "null", "0"]),
    st.text(min_size=1, max_size=20),
)

_ROUTES = [
    ("PATCH", "/api/sessions/{id}", "patch"),
    ("POST", "/api/sessions", "create"),
    ("POST", "/api/sessions/{id}/messages", "message"),
    ("POST", "/api/sessions/{id}/cards/{card}", "card"),
    ("PUT", "/api/sessions/{id}/policy", "policy"),
    ("PATCH", "/api/sessions/{id}/policy", "policy"),
    ("POST", "/api/push/subscribe", "subscribe"),
    ("POST", "/api/pair", "pair"),
    ("POST", "/api/sessions/{id}/pin", "patch"),
    ("POST", "/api/sessions/{id}/nothing-here", "patch"),
    ("GET", "/api/no-such-route/{id}", "patch"),
]


def _path_id(world: World, choice: str) -> str:
    if choice == "own":
        return world.session_id
    if choice == "foreign":
        return world.foreign_id
    if choice == "new-uuid":
        return str(uuid.uuid4())
    return quote(choice.encode("utf-8", "surrogatepass"), safe="")


# -- invariants -------------------------------------------------------------------------------


def check_answer(response: httpx.Response, what: str) -> Any:
    status = response.status_code
    assert status < 500 or (status == 504 and "device_timeout" in response.text), (
        f"{what}: {status} {response.text[:300]}"
    )
    if status == 204 or not response.content:
        assert status < 400, f"{what}: an error with no body ({status})"
        return None
    try:
        body = strict_json(response.content)
    except ValueError as exc:
        raise AssertionError(
            f"{what}: {status} answer is not strict JSON ({exc}): {response.text[:300]}"
        ) from None
    if status >= 400:
        error = body.get("error") if isinstance(body, dict) else None
        assert (
            isinstance(error, dict)
            and isinstance(error.get("code"), str)
            and isinstance(error.get("message"), str)
        ), f"{what}: {status} body is not the documented error body: {response.text[:300]}"
    return body


def check_world(world: World) -> None:
    listed = world.phone.get("/api/sessions")
    body = check_answer(listed, "GET /api/sessions")
    ids = {s["id"] for s in body["sessions"]}
    assert world.foreign_id not in ids, "another account's session is listed"
    assert world.session_id in ids, "a stored session vanished from the list"
    assert _all_events(world.phone, world.session_id) == world.events_before, (
        "a stored session's events changed"
    )
    assert _all_events(world.other_phone, world.foreign_id) == world.foreign_before, (
        "another account's events changed"
    )
    with world.phone.stream("GET", "/api/stream", timeout=10) as stream:
        data: list[str] = []
        for line in stream.iter_lines():
            if line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line == "" and data:
                break
        snapshot = "\n".join(data)
        try:
            strict_json(snapshot)
        except ValueError as exc:
            raise AssertionError(
                f"/api/stream snapshot is not strict JSON ({exc}): {snapshot[:300]}"
            ) from None


# -- the tests --------------------------------------------------------------------------------


def _send(world: World, method: str, path: str, body: bytes) -> httpx.Response:
    # Connection: close, so a server that stops reading an odd body cannot break the next request.
    headers = {"Content-Type": "application/json", "Connection": "close"}
    return world.phone.request(method, path, content=body, headers=headers)


@API_SETTINGS
@given(
    data=st.data(), route=st.sampled_from(_ROUTES[:8]), path_id=st.sampled_from(["own", "new-uuid"])
)
def test_write_route_bodies_answer_documented_json(
    world: World, data: st.DataObject, route: tuple[str, str, str], path_id: str
) -> None:
    """Generated bodies on the write routes: never a 500, errors documented, nothing lost."""
    restore(world)
    method, template, kind = route
    path = template.replace("{id}", _path_id(world, path_id)).replace("{card}", "card-1")
    body = data.draw(bodies(kind, world.acct.device_id), label="body")
    response = _send(world, method, path, body)
    answer = check_answer(response, f"{method} {path[:80]} {body[:120]!r}")
    if kind == "create" and response.status_code == 201:
        created = answer["id"]
        assert str(uuid.UUID(created)) == created.lower(), f"created session id {created!r}"
    check_world(world)


@API_SETTINGS
@given(route=st.sampled_from(_ROUTES[:9]), body=RAW_BODIES)
def test_bodies_that_are_not_json_or_too_deep(
    world: World, route: tuple[str, str, str], body: bytes
) -> None:
    """Bodies that are not UTF-8, not JSON, JSON with NaN/Infinity, or nested 5000 deep."""
    restore(world)
    body = DEEP.get(body, body)
    method, template, _ = route
    path = template.replace("{id}", world.session_id).replace("{card}", "card-1")
    response = _send(world, method, path, body)
    check_answer(response, f"{method} {path[:80]} {body[:60]!r}")
    check_world(world)


@API_SETTINGS
@given(route=st.sampled_from(_ROUTES), path_id=PATH_IDS, card=ODD_TEXT)
def test_path_ids_of_every_shape(
    world: World, route: tuple[str, str, str], path_id: str, card: str
) -> None:
    """Path ids of every shape (another account's session included) and unknown routes."""
    restore(world)
    method, template, kind = route
    path = template.replace("{id}", _path_id(world, path_id)).replace(
        "{card}", quote((card or "c").encode("utf-8", "surrogatepass"), safe="")
    )
    body = _encode({"title": "t"} if kind == "patch" else {})
    response = _send(world, method, path, body)
    what = f"{method} {path[:80]}"
    check_answer(response, what)
    if path_id == "foreign" and "/api/sessions/" in template:
        # Another account's session answers exactly as a session that does not exist.
        unknown_path = path.replace(world.foreign_id, str(uuid.uuid4()))
        unknown = _send(world, method, unknown_path, body)
        assert response.status_code == unknown.status_code and _code(response) == _code(unknown), (
            f"{what}: another account's session answered {response.status_code} "
            f"{response.text[:200]}, an unknown one {unknown.status_code} {unknown.text[:200]}"
        )
        assert response.status_code in (400, 404, 405, 413, 422), what
    check_world(world)


def _code(response: httpx.Response) -> str | None:
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        return str(strict_json(response.content)["error"]["code"])
    return None


@API_SETTINGS
@given(
    session_id=st.one_of(
        ODD_TEXT, st.uuids().map(str), st.sampled_from(["../../../x", "a/b", "-rf", "x" * 200])
    )
)
def test_a_new_session_id_is_a_uuid_or_refused(world: World, session_id: str) -> None:
    """POST /api/sessions: an id that is not a UUID is refused before anything is stored."""
    restore(world)
    body = _encode({"device_id": world.acct.device_id, "cwd": "/w", "session_id": session_id})
    response = _send(world, "POST", "/api/sessions", body)
    answer = check_answer(response, f"POST /api/sessions {body[:120]!r}")
    try:
        valid = str(uuid.UUID(session_id)) == session_id.lower()
    except ValueError:
        valid = False
    if not valid:
        assert 400 <= response.status_code < 500, (
            f"session id {session_id!r} answered {response.status_code} {answer}"
        )
        listed = strict_json(world.phone.get("/api/sessions").content)["sessions"]
        assert session_id not in {s["id"] for s in listed}, f"{session_id!r} was stored"
    check_world(world)


@API_SETTINGS
@given(endpoint=ENDPOINTS)
def test_push_endpoints_are_public_https(world: World, endpoint: str) -> None:
    """A push endpoint that is not https or names a local address is refused at subscribe."""
    restore(world)
    body = _encode(
        {"endpoint": endpoint, "keys": {"p256dh": VALID_P256DH, "auth": "AAAAAAAAAAAAAAAAAAAAAA"}}
    )
    response = _send(world, "POST", "/api/push/subscribe", body)
    check_answer(response, f"subscribe {endpoint}")
    assert 400 <= response.status_code < 500, (
        f"a push endpoint {endpoint!r} was accepted ({response.status_code})"
    )
    check_world(world)


@API_SETTINGS
@given(
    position=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        BIG_NUMBERS,
        st.sampled_from(["Infinity", "-Infinity", "NaN", "1e999", "inf"]),
    ),
    raw=st.booleans(),
)
def test_a_position_never_breaks_the_page(world: World, position: Any, raw: bool) -> None:
    """PATCH position: whatever is sent, the stream and the list stay JSON the page can read."""
    restore(world)
    if raw and isinstance(position, str):
        body = f'{{"position": {position}}}'.encode()  # a bare token, not a string
    else:
        body = _encode({"position": position})
    response = _send(world, "PATCH", f"/api/sessions/{world.session_id}", body)
    check_answer(response, f"PATCH position {body!r}")
    check_world(world)
