"""Web Push against a real relay: the request it makes to a (local) push service carries a valid
VAPID signature (RFC 8292) and an aes128gcm payload (RFC 8291) that the test decrypts with the
subscription's keys, made here the way a browser makes them."""

from __future__ import annotations

import asyncio
import json
import stat
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from relay.features import push
from relay.store import Session, Store
from tests.support.postgres import PostgresCluster
from tests.support.push import LOCAL_PUSH_HOST, BrowserKeys, PushService
from tests.support.relay import RelayServer, mac, phone_client, transcript
from wire import config as configmod
from wire.protocol import Card, CardOption, SessionInfo
from wire.transcript import read_lines

# RFC 8291, section 5 (the worked example), verbatim.
RFC_PLAINTEXT = b"When I grow up, I want to be a watermelon"
RFC_AS_PRIVATE = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
RFC_AS_PUBLIC = (
    "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
)
RFC_UA_PRIVATE = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
RFC_UA_PUBLIC = (
    "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
)
RFC_SALT = "DGv6ra1nlYgDCS1FRnbzlw"
RFC_AUTH = "BTBZMqHH6r4Tts7J_aSIgg"
RFC_BODY = (
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocIn"
    "mYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNW"
    "QexSgSxsj_Qulcy4a-fN"
)


def private_key(b64: str) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(int.from_bytes(push.unb64u(b64), "big"), ec.SECP256R1())


# -- the browser's side, written from the RFCs (not from relay/features/push.py) -------------------


def _hmac(key: bytes, data: bytes) -> bytes:
    mac_ = hmac.HMAC(key, hashes.SHA256())
    mac_.update(data)
    return mac_.finalize()


def decrypt(body: bytes, ua_key: ec.EllipticCurvePrivateKey, auth: bytes) -> bytes:
    """What a browser does with an aes128gcm push message (RFC 8188 + RFC 8291)."""
    salt, (rs, idlen) = body[:16], struct.unpack("!IB", body[16:21])
    as_public = body[21 : 21 + idlen]
    record = body[21 + idlen :]
    assert idlen == 65 and rs >= 18 and len(record) <= rs
    ua_public = ua_key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    shared = ua_key.exchange(
        ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public)
    )
    prk_key = _hmac(auth, shared)
    ikm = _hmac(prk_key, b"WebPush: info\x00" + ua_public + as_public + b"\x01")
    prk = _hmac(salt, ikm)
    cek = _hmac(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = _hmac(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    plain = AESGCM(cek).decrypt(nonce, record, None)
    plain = plain.rstrip(b"\x00")
    assert plain.endswith(b"\x02"), "the single record must end with the last-record delimiter"
    return plain[:-1]


def verify_vapid(header: str, endpoint_origin: str) -> dict[str, Any]:
    """Check an ``Authorization: vapid t=…, k=…`` header; return the JWT's claims."""
    scheme, _, params = header.partition(" ")
    assert scheme == "vapid"
    fields = dict(p.strip().split("=", 1) for p in params.split(","))
    token, key = fields["t"], fields["k"]
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), push.unb64u(key))
    head_b64, claims_b64, sig_b64 = token.split(".")
    assert json.loads(push.unb64u(head_b64)) == {"typ": "JWT", "alg": "ES256"}
    signature = push.unb64u(sig_b64)
    assert len(signature) == 64
    der = encode_dss_signature(
        int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    )
    public.verify(der, f"{head_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    claims: dict[str, Any] = json.loads(push.unb64u(claims_b64))
    assert claims["aud"] == endpoint_origin
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600
    assert claims["sub"].startswith(("mailto:", "https://"))
    claims["_k"] = key
    return claims


@pytest.fixture
def service() -> Iterator[PushService]:
    s = PushService()
    yield s
    s.close()


def card(card_id: str) -> Card:
    return Card(
        id=card_id,
        kind="permission",
        title="Bash command",
        text="Do you want to proceed?",
        options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
        tool="Bash",
        tool_input={"command": "rm -rf build"},
    )


# -- the RFC example ----------------------------------------------------------------------------


def test_encryption_matches_the_rfc_8291_example() -> None:
    ua = private_key(RFC_UA_PRIVATE)
    assert push.b64u(push.public_bytes(ua.public_key())) == RFC_UA_PUBLIC
    assert push.b64u(push.public_bytes(private_key(RFC_AS_PRIVATE).public_key())) == RFC_AS_PUBLIC
    body = push.encrypt(
        RFC_PLAINTEXT,
        push.unb64u(RFC_UA_PUBLIC),
        push.unb64u(RFC_AUTH),
        salt=push.unb64u(RFC_SALT),
        server_key=private_key(RFC_AS_PRIVATE),
    )
    assert push.b64u(body) == RFC_BODY
    assert decrypt(push.unb64u(RFC_BODY), ua, push.unb64u(RFC_AUTH)) == RFC_PLAINTEXT


def test_vapid_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = push.Vapid.load_or_create(tmp_path / "vapid.pem")
    again = push.Vapid.load_or_create(tmp_path / "vapid.pem")
    assert first.public_key == again.public_key
    assert len(push.unb64u(first.public_key)) == 65
    assert stat.S_IMODE((tmp_path / "vapid.pem").stat().st_mode) == 0o600
    claims = verify_vapid(
        first.authorization("https://push.example.net/send/abc", "mailto:me@example.net"),
        "https://push.example.net",
    )
    assert claims["_k"] == first.public_key and claims["sub"] == "mailto:me@example.net"


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """An empty database of the test's own on the run's PostgreSQL cluster."""
    return postgres.new_database("push")


def _pg_store(url: str, folder: Path) -> Store:
    config = configmod.load({"data_dir": str(folder), "database_url": url}, environ={})
    return Store(config, schemas=[push.setup])


def test_nodes_starting_together_on_postgres_end_with_one_vapid_key(
    pg_url: str, tmp_path: Path
) -> None:
    nodes = 4
    start = threading.Barrier(nodes)
    keys: list[str] = []
    failures: list[BaseException] = []

    def node(index: int) -> None:
        try:
            folder = tmp_path / f"node{index}"  # a data folder of its own, with no key file
            start.wait()
            store = _pg_store(pg_url, folder)  # opened at once: the schema made once too
            try:
                keys.append(
                    asyncio.run(push.Vapid.shared(store, folder / push.KEY_FILE)).public_key
                )
            finally:
                store.close()
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=node, args=(i,)) for i in range(nodes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert len(keys) == nodes and len(set(keys)) == 1
    store = _pg_store(pg_url, tmp_path / "later")
    try:
        rows = asyncio.run(store.read("SELECT pem FROM push_keys"))
        assert len(rows) == 1
        kept = push.Vapid.from_pem(str(rows[0][0]).encode(), "push_keys")
        assert kept.public_key == keys[0]
        assert not (tmp_path / "later" / push.KEY_FILE).exists()  # nothing in the data folder
    finally:
        store.close()


def test_a_relay_moved_to_postgres_keeps_its_vapid_key_and_subscriptions(
    pg_url: str, tmp_path: Path
) -> None:
    old = push.Vapid.load_or_create(tmp_path / push.KEY_FILE)  # the SQLite relay's key
    store = _pg_store(pg_url, tmp_path)
    account = store.ensure_account()
    phone = store.create_token(account, "phone", "p")[2]
    sub = push.Subscription(
        "https://push.example.net/send/1", "k" * 87, "a" * 22, account, phone, created_at=1.0
    )
    push.SubscriptionBook(tmp_path / push.SUBSCRIPTIONS_FILE).add(sub)
    try:
        assert asyncio.run(push.Vapid.shared(store, tmp_path / push.KEY_FILE)).public_key == (
            old.public_key
        )
        other = tmp_path / "other"  # another node: no file, the same key from the table
        assert asyncio.run(push.Vapid.shared(store, other / push.KEY_FILE)).public_key == (
            old.public_key
        )
        book = push.SharedSubscriptionBook(store)
        assert asyncio.run(book.import_file(tmp_path / push.SUBSCRIPTIONS_FILE)) == 1
        assert not (tmp_path / push.SUBSCRIPTIONS_FILE).exists()  # imported once
        assert book.for_account(account) == [sub]
        assert asyncio.run(book.find(sub.endpoint)) == sub
        assert asyncio.run(book.drop(sub.endpoint, "another account")) is False
        assert asyncio.run(book.drop(sub.endpoint)) is True
        assert book.for_account(account) == []
    finally:
        store.close()


def test_when_to_notify() -> None:
    session = Session(
        id="s1", account_id="a", device_id="d", cwd="/Users/ada/src/shop", title="",
        group="", position=1.0, locked=False, mark=None, created_at=0.0, updated_at=0.0,
        conversation_id=None, conversation_ids=[], permission_mode=None, epoch="e",
        last_seq=0, oldest_seq=0,
    )  # fmt: skip
    busy = SessionInfo(session_id="s1", state="busy")
    waiting = SessionInfo(session_id="s1", state="waiting", card=card("c1"))
    notice = push.notice_for(session, busy, waiting)
    assert notice == push.Notice("card", "s1", "shop", "permission", "Bash command")
    assert push.notice_for(session, waiting, waiting) is None  # the same card again
    assert push.notice_for(session, waiting, waiting.model_copy(update={"card": card("c2")}))
    idle = SessionInfo(session_id="s1", state="idle")
    assert push.notice_for(session, busy, idle) == push.Notice("turn_end", "s1", "shop")
    assert push.notice_for(session, idle, idle) is None
    assert push.notice_for(session, None, idle) is None


# -- against a real relay -------------------------------------------------------------------------


def subscribe(client: httpx.Client, service: PushService, keys: BrowserKeys, **extra: Any) -> str:
    endpoint = f"{service.origin}/push/{uuid.uuid4().hex}"
    response = client.post(
        "/api/push/subscribe", json={"endpoint": endpoint, "keys": keys.json(), **extra}
    )
    assert response.status_code == 200, response.text
    return endpoint


def open_card(server: RelayServer, token: str, session_id: str, *infos: SessionInfo) -> None:
    async def go() -> None:
        async with mac(server, token, name="Studio") as link:
            path = transcript("b_idle")
            await link.send_lines(
                session_id,
                path.stem,
                list(read_lines(path.read_bytes())),
                cwd="/Users/ada/src/shop",
            )
            for info in infos:
                await link.update(info)
            await asyncio.sleep(0.3)

    asyncio.run(go())


def test_a_card_sends_a_signed_encrypted_push(make_relay: Any, service: PushService) -> None:
    server: RelayServer = make_relay(push_allowed_hosts=LOCAL_PUSH_HOST)
    acct = server.account()
    keys = BrowserKeys.new()
    with phone_client(server, acct.phone_token) as client:
        key = client.get("/api/push/key").json()["key"]
        endpoint = subscribe(client, service, keys, turn_end=True)
    sid = str(uuid.uuid4())
    open_card(
        server,
        acct.device_token,
        sid,
        SessionInfo(session_id=sid, state="busy"),
        SessionInfo(session_id=sid, state="waiting", card=card("c-1")),
        SessionInfo(session_id=sid, state="waiting", card=card("c-1")),  # same card: no second push
        SessionInfo(session_id=sid, state="busy", clear_card=True),
        SessionInfo(session_id=sid, state="idle"),  # the turn ended
    )
    requests = service.wait(2)
    time.sleep(0.3)
    assert len(requests) == 2, [
        json.loads(decrypt(b, keys.private, keys.auth)) for _, _, b in requests
    ]
    # The two pushes travel concurrently: take the card's (high urgency) first.
    requests = sorted(requests, key=lambda r: r[1]["urgency"] != "high")
    with phone_client(server, acct.phone_token) as client:
        title = client.get(f"/api/sessions/{sid}").json()["title"] or "shop"

    path, headers, body = requests[0]
    assert service.origin + path == endpoint
    claims = verify_vapid(headers["authorization"], service.origin)
    assert claims["_k"] == key
    assert headers["content-encoding"] == "aes128gcm"
    assert int(headers["ttl"]) == 3600
    assert headers["urgency"] == "high"
    payload = json.loads(decrypt(body, keys.private, keys.auth))
    assert payload == {
        "session_id": sid,
        "title": f"{title} needs you",
        "body": "Permission: Bash command",
        "kind": "card",
    }

    _, headers, body = requests[1]
    verify_vapid(headers["authorization"], service.origin)
    payload = json.loads(decrypt(body, keys.private, keys.auth))
    assert payload["kind"] == "turn_end" and payload["session_id"] == sid
    assert headers["urgency"] == "normal"


def test_push_in_korean_and_only_for_cards_unless_asked(
    make_relay: Any, service: PushService
) -> None:
    server: RelayServer = make_relay(push_allowed_hosts=LOCAL_PUSH_HOST)
    acct = server.account()
    keys = BrowserKeys.new()
    with phone_client(server, acct.phone_token) as client:
        subscribe(client, service, keys, lang="ko")  # turn_end not asked for
    sid = str(uuid.uuid4())
    open_card(
        server,
        acct.device_token,
        sid,
        SessionInfo(session_id=sid, state="busy"),
        SessionInfo(session_id=sid, state="idle"),
        SessionInfo(session_id=sid, state="waiting", card=card("c-ko")),
    )
    (request,) = service.wait(1)
    time.sleep(0.3)
    assert len(service.requests) == 1
    payload = json.loads(decrypt(request[2], keys.private, keys.auth))
    with phone_client(server, acct.phone_token) as client:
        title = client.get(f"/api/sessions/{sid}").json()["title"] or "shop"
    assert payload["title"] == f"{title} · 응답 대기"
    assert payload["body"] == "권한 요청: Bash command"


def test_gone_subscriptions_and_revoked_phones_get_nothing(
    make_relay: Any, service: PushService
) -> None:
    server: RelayServer = make_relay(push_allowed_hosts=LOCAL_PUSH_HOST)
    acct = server.account()
    keys = BrowserKeys.new()
    with phone_client(server, acct.phone_token) as client:
        subscribe(client, service, keys)
    service.status = 410  # the browser unsubscribed: the service says the subscription is gone
    sid = str(uuid.uuid4())
    open_card(server, acct.device_token, sid, SessionInfo(session_id=sid, card=card("a")))
    service.wait(1)
    time.sleep(0.2)
    push_state: push.Push = server.app.state.push
    assert push_state.book.for_account(acct.account_id) == []

    # a phone that is revoked after subscribing hears nothing more
    service.status = 201
    with phone_client(server, acct.phone_token) as client:
        subscribe(client, service, BrowserKeys.new())
    asyncio.run(server.state.store.revoke(acct.account_id, "phone", acct.phone_id))
    open_card(server, acct.device_token, sid, SessionInfo(session_id=sid, card=card("b")))
    time.sleep(0.5)
    assert len(service.requests) == 1
    assert push_state.book.for_account(acct.account_id) == []


def test_push_routes_need_a_login_and_good_input(make_relay: Any, service: PushService) -> None:
    relay: RelayServer = make_relay(push_allowed_hosts=LOCAL_PUSH_HOST)
    acct = relay.account()
    keys = BrowserKeys.new()
    with phone_client(relay, None) as anonymous:
        assert anonymous.get("/api/push/key").status_code == 401
        assert anonymous.post("/api/push/subscribe", json={}).status_code == 401
    with phone_client(relay, acct.device_token) as device:
        assert device.get("/api/push/key").status_code == 403
    with phone_client(relay, acct.phone_token) as client:
        for endpoint in ("ftp://push.example/x", "http://push.example.net/x", "not a url at all"):
            r = client.post("/api/push/subscribe", json={"endpoint": endpoint, "keys": keys.json()})
            assert r.status_code == 400, (endpoint, r.text)
            assert "https://" in r.json()["error"]["message"]
        bad = {"p256dh": push.b64u(b"\x04" + b"\x01" * 64), "auth": keys.json()["auth"]}
        r = client.post(
            "/api/push/subscribe", json={"endpoint": "https://push.example.net/x", "keys": bad}
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"
        endpoint = subscribe(client, service, keys)
        r = client.post("/api/push/test", json={"endpoint": endpoint})
        assert r.status_code == 200 and r.json() == {"ok": True, "status": "sent"}
        payload = json.loads(decrypt(service.wait(1)[0][2], keys.private, keys.auth))
        assert payload["kind"] == "test"
        r = client.request("DELETE", "/api/push/subscribe", json={"endpoint": endpoint})
        assert r.json() == {"ok": True, "removed": True}
        r = client.post("/api/push/test", json={"endpoint": endpoint})
        assert r.status_code == 400
    # another account cannot remove this account's subscription
    other = relay.account()
    with phone_client(relay, acct.phone_token) as client:
        endpoint = subscribe(client, service, keys)
    with phone_client(relay, other.phone_token) as client:
        r = client.request("DELETE", "/api/push/subscribe", json={"endpoint": endpoint})
        assert r.json()["removed"] is False


def test_a_signature_from_another_key_does_not_verify() -> None:
    vapid = push.Vapid(ec.generate_private_key(ec.SECP256R1()))
    header = vapid.authorization("https://push.example.net/x", "mailto:a@example.net")
    forged = header.replace(
        vapid.public_key, push.Vapid(ec.generate_private_key(ec.SECP256R1())).public_key
    )
    with pytest.raises(InvalidSignature):
        verify_vapid(forged, "https://push.example.net")
