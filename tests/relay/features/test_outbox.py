"""Messages queued on the relay for an offline Mac (relay/features/outbox.py, issue 14): stored, kept
across a relay restart, delivered once and in order when the Mac links, sent again under the same
id after a link that broke mid-delivery, listed in the session's snapshot until the Mac took them."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.relay import Account, RelayServer, free_port
from tests.support.web import (
    LoopThread,
    PortRelay,
    ScriptedMac,
    new_sid,
    relay_client,
    user_line,
    wait_for,
)
from wire.protocol import Command, CommandResult


def sends(mac: ScriptedMac) -> list[tuple[str, str]]:
    return [(c.args["message_id"], c.args["text"]) for c in mac.commands if c.name == "send"]


def made_session(server: RelayServer, token: str, loop: LoopThread) -> tuple[ScriptedMac, str]:
    mac = ScriptedMac(server, token, loop).connect()
    sid = new_sid()
    mac.send_json_lines(sid, [user_line("start", str(uuid.uuid4()))])
    mac.update(sid, state="idle")
    mac.close()
    return mac, sid


def test_queued_while_offline_survives_a_restart_and_is_delivered_once_in_order(
    tmp_path: Path, loop: LoopThread, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    data, port = tmp_path / "data", free_port()
    store = relay_overrides()  # one store, kept across the restart
    # a long retry interval: delivery must start from the Mac's own report when it links
    server: RelayServer = PortRelay(data, port, outbox_retry_interval=60.0, **store).start()
    account = server.account()
    mac, sid = made_session(server, account.device_token, loop)
    try:
        with relay_client(server, account) as c:
            refused = c.post(f"/api/sessions/{sid}/messages", json={"text": "hello?"})
            assert refused.status_code == 409
            assert refused.json()["error"]["code"] == "device_offline"
            ids = []
            for i in range(3):
                r = c.post(f"/api/sessions/{sid}/outbox", json={"text": f"queued {i}"})
                assert r.status_code == 201, r.text
                assert r.json()["state"] == "queued"
                ids.append(r.json()["message_id"])
            again = c.post(f"/api/sessions/{sid}/outbox", json={"text": "queued 0", "id": ids[0]})
            assert again.json() == {"message_id": ids[0], "state": "queued", "duplicate": True}
            assert c.post(f"/api/sessions/{sid}/outbox", json={"text": ""}).status_code == 400
            snap = c.get(f"/api/sessions/{sid}").json()
            assert [m["id"] for m in snap["queued"]] == ids
    finally:
        server.stop()

    server = PortRelay(data, port, outbox_retry_interval=60.0, **store).start()
    try:
        with relay_client(server, account) as c:
            listed = c.get(f"/api/sessions/{sid}/outbox").json()["queued"]
            assert [(m["id"], m["preview"]) for m in listed] == [
                (ids[i], f"queued {i}") for i in range(3)
            ]
            mac.server, mac.url = server, server.url
            mac.connect()
            mac.update(sid, state="idle")  # what the agent reports of each session on linking
            wait_for(lambda: len(sends(mac)) >= 3, what="three sends")
            wait_for(
                lambda: c.get(f"/api/sessions/{sid}/outbox").json()["queued"] == [],
                what="an empty outbox",
            )
            mac.update(sid, state="busy")  # another report: nothing is sent twice
            time.sleep(0.5)
            assert sends(mac) == [(ids[i], f"queued {i}") for i in range(3)]
            assert c.get(f"/api/sessions/{sid}").json()["queued"] == []
    finally:
        mac.close()
        server.stop()


class DropsFirstSend(ScriptedMac):
    """A Mac whose link breaks while it is taking the first message (its answer never comes)."""

    async def _on_command(self, command: Command) -> CommandResult:
        if command.name == "send" and not any(c.name == "send" for c in self.commands):
            self.commands.append(command)
            assert self.link is not None
            asyncio.get_running_loop().create_task(self.link.abort())
            await asyncio.sleep(30)
        return await super()._on_command(command)


def test_a_link_broken_mid_delivery_sends_the_same_id_again(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay(outbox_retry_interval=0.3)
    account = server.account()
    _, sid = made_session(server, account.device_token, loop)
    with relay_client(server, account) as c:
        ids = [
            c.post(f"/api/sessions/{sid}/outbox", json={"text": t, "id": f"phone-{t}"}).json()[
                "message_id"
            ]
            for t in ("first", "second")
        ]
        assert ids == ["phone-first", "phone-second"]
        dropping = DropsFirstSend(server, account.device_token, loop).connect()
        wait_for(lambda: len(sends(dropping)) == 1, what="the first send")
        wait_for(lambda: server.state.live.link(account.device_id) is None, what="the cut")
        assert len(c.get(f"/api/sessions/{sid}/outbox").json()["queued"]) == 2  # nothing lost

        mac = ScriptedMac(server, account.device_token, loop).connect()
        try:
            wait_for(lambda: len(sends(mac)) >= 2, what="the sends after the cut")
            # the same id again (the Mac keeps one message per id: typed once), then the next
            assert sends(mac) == [("phone-first", "first"), ("phone-second", "second")]
            wait_for(lambda: c.get(f"/api/sessions/{sid}/outbox").json()["queued"] == [])
            time.sleep(0.8)  # a few retry intervals: nothing more is sent
            assert len(sends(mac)) == 2
        finally:
            mac.close()


def test_a_refused_message_waits_saying_why_and_can_be_dropped(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay(outbox_retry_interval=0.3)
    account = server.account()
    _, sid = made_session(server, account.device_token, loop)
    with relay_client(server, account) as c:
        c.post(f"/api/sessions/{sid}/outbox", json={"text": "x", "id": "phone-xxxx"})
        mac = ScriptedMac(server, account.device_token, loop)
        mac.fail["send"] = ("bad_args", "the session is gone from this Mac")
        mac.connect()
        try:
            wait_for(
                lambda: (
                    (c.get(f"/api/sessions/{sid}/outbox").json()["queued"] or [{}])[0].get("error")
                    == "the session is gone from this Mac"
                ),
                what="the refusal kept",
            )
            assert c.delete(f"/api/sessions/{sid}/outbox/phone-xxxx").status_code == 200
            gone = c.delete(f"/api/sessions/{sid}/outbox/phone-xxxx")
            assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_queued"
            assert c.get(f"/api/sessions/{sid}/outbox").json()["queued"] == []
        finally:
            mac.close()
    # every route needs a login
    with httpx.Client(base_url=server.url) as anon:
        assert anon.get(f"/api/sessions/{sid}/outbox").status_code == 401
        assert anon.post(f"/api/sessions/{sid}/outbox", json={"text": "x"}).status_code == 401


def test_queued_through_one_node_is_delivered_by_the_node_the_mac_links_to(
    relay_backend: str,
    relay_overrides: Callable[[], dict[str, Any]],
    make_relay: Any,
    loop: LoopThread,
) -> None:
    if relay_backend != "postgres":
        pytest.skip("relay nodes share a store on PostgreSQL only")
    pg_url = relay_overrides()["database_url"]  # one store, two nodes
    # The node the phone uses reads the table again often; the Mac's node only when it links.
    phones = make_relay(database_url=pg_url, outbox_retry_interval=0.3)
    macs = make_relay(database_url=pg_url, outbox_retry_interval=60.0)
    account = phones.account()
    mac, sid = made_session(phones, account.device_token, loop)
    try:
        with relay_client(phones, account) as c:
            ids = [
                c.post(f"/api/sessions/{sid}/outbox", json={"text": f"queued {i}"}).json()[
                    "message_id"
                ]
                for i in range(2)
            ]
            with relay_client(macs, account) as other:  # every node shows what is queued
                assert [
                    m["id"] for m in other.get(f"/api/sessions/{sid}/outbox").json()["queued"]
                ] == ids
                assert [m["id"] for m in other.get(f"/api/sessions/{sid}").json()["queued"]] == ids
                listed = {s["id"]: s for s in other.get("/api/sessions").json()["sessions"]}
                assert [m["id"] for m in listed[sid]["queued"]] == ids
            mac.server, mac.url = macs, macs.url
            mac.connect()
            mac.update(sid, state="idle")  # reported to the other node
            wait_for(lambda: len(sends(mac)) >= 2, what="two sends from the Mac's node")
            assert sends(mac) == [(ids[i], f"queued {i}") for i in range(2)]
            wait_for(
                lambda: c.get(f"/api/sessions/{sid}/outbox").json()["queued"] == [],
                what="the phone's node seeing an empty outbox",
            )
    finally:
        mac.close()


# -- bounds, previews and the whole text ----------------------------------------------------------


def queue(c: Any, sid: str, text: str, message_id: str | None = None) -> Any:
    body = {"text": text, **({"id": message_id} if message_id else {})}
    return c.post(f"/api/sessions/{sid}/outbox", json=body)


def refused_naming(response: Any, setting: str) -> None:
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "outbox_full" and setting in error["message"], error


def test_what_waits_is_bounded_per_session_and_per_mac_in_messages_and_bytes(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay(
        outbox_max_per_session=3,
        outbox_max_bytes_per_session=1000,
        outbox_max_per_mac=4,
        outbox_max_bytes_per_mac=1500,
    )
    account = server.account()
    mac, first = made_session(server, account.device_token, loop)
    mac.connect()
    second = new_sid()
    mac.send_json_lines(second, [user_line("start", str(uuid.uuid4()))])
    mac.close()
    with relay_client(server, account) as c:
        wide = "é" * 300  # 300 characters, 600 bytes: bytes are what is counted
        assert queue(c, first, wide, "phone-wide").status_code == 201
        refused_naming(queue(c, first, wide), "outbox_max_bytes_per_session")
        assert queue(c, first, "x", "phone-x1").status_code == 201
        assert queue(c, first, "y", "phone-y1").status_code == 201
        refused_naming(queue(c, first, "z"), "outbox_max_per_session")
        # A message sent again with its id is what already waits, not one more.
        again = queue(c, first, "x", "phone-x1")
        assert again.status_code == 201 and again.json()["duplicate"] is True
        assert queue(c, second, "b1").status_code == 201  # the Mac's fourth
        refused_naming(queue(c, second, "b2"), "outbox_max_per_mac")
        # Room made by dropping two: the Mac's bytes are the bound now.
        for message_id in ("phone-x1", "phone-y1"):
            assert c.delete(f"/api/sessions/{first}/outbox/{message_id}").status_code == 200
        refused_naming(queue(c, second, "é" * 450), "outbox_max_bytes_per_mac")
        assert queue(c, second, "é" * 440).status_code == 201  # 600 + 2 + 880 ≤ 1500
        listed = c.get(f"/api/sessions/{second}/outbox").json()["queued"]
        assert [m["length"] for m in listed] == [2, 440]


def test_listings_carry_a_preview_and_the_whole_text_is_read_on_request(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay()
    account = server.account()
    _, sid = made_session(server, account.device_token, loop)
    long = "".join(f"line {i} of a long message\n" for i in range(2000))  # ~50,000 characters
    with relay_client(server, account) as c:
        assert queue(c, sid, long, "phone-long").status_code == 201
        assert queue(c, sid, "short one", "phone-short").status_code == 201
        for listed in (
            c.get(f"/api/sessions/{sid}/outbox").json()["queued"],
            c.get(f"/api/sessions/{sid}").json()["queued"],
            next(s for s in c.get("/api/sessions").json()["sessions"] if s["id"] == sid)["queued"],
        ):
            big, small = listed
            assert "text" not in big and big["preview"] == long[:200]
            assert (big["length"], big["truncated"]) == (len(long), True)
            assert (small["preview"], small["length"], small["truncated"]) == (
                "short one",
                9,
                False,
            )
        whole = c.get(f"/api/sessions/{sid}/outbox/phone-long").json()
        assert (whole["id"], whole["text"], whole["length"]) == ("phone-long", long, len(long))
        gone = c.get(f"/api/sessions/{sid}/outbox/phone-none")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_queued"
    # The account stream's snapshot, what a page reconnecting reads first, is as small.
    with (
        httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {account.phone_token}"},
            timeout=15,
        ) as plain,
        plain.stream("GET", "/api/stream") as stream,
    ):
        first = ""
        for line in stream.iter_lines():
            if line.startswith("data: "):
                first = line[len("data: ") :]
                break
    snapshot = json.loads(first)
    [session] = [s for s in snapshot["sessions"] if s["id"] == sid]
    assert [m["preview"] for m in session["queued"]] == [long[:200], "short one"]
    assert len(first) < len(long) // 10


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=st.text(min_size=1, max_size=600))
def test_any_text_queued_reads_back_whole_with_its_preview_a_prefix(
    relay: RelayServer, account: Account, loop: LoopThread, text: str
) -> None:
    sid = outbox_session(relay, account, loop)
    with relay_client(relay, account) as c:
        made = queue(c, sid, text)
        assert made.status_code == 201, made.text
        message_id = made.json()["message_id"]
        [listed] = [
            m
            for m in c.get(f"/api/sessions/{sid}/outbox").json()["queued"]
            if m["id"] == message_id
        ]
        kept = text.replace("\x00", "\ufffd")  # no backend keeps a NUL: every one shows U+FFFD
        assert kept.startswith(listed["preview"]) and len(listed["preview"]) == min(len(text), 200)
        assert listed["truncated"] == (len(text) > 200) and listed["length"] == len(text)
        assert c.get(f"/api/sessions/{sid}/outbox/{message_id}").json()["text"] == kept
        assert c.delete(f"/api/sessions/{sid}/outbox/{message_id}").status_code == 200


_SESSIONS: dict[str, str] = {}


def outbox_session(server: RelayServer, account: Account, loop: LoopThread) -> str:
    """One session of the account's offline Mac, made once for the property's examples."""
    if account.account_id not in _SESSIONS:
        _SESSIONS[account.account_id] = made_session(server, account.device_token, loop)[1]
    return _SESSIONS[account.account_id]


def test_a_mac_holding_all_it_may_is_tried_again_not_marked_refused(
    make_relay: Any, loop: LoopThread
) -> None:
    server: RelayServer = make_relay(outbox_retry_interval=0.2)
    account = server.account()
    _, sid = made_session(server, account.device_token, loop)
    with relay_client(server, account) as c:
        assert queue(c, sid, "when you can", "phone-later").status_code == 201
        mac = ScriptedMac(server, account.device_token, loop)
        mac.fail["send"] = ("held_full", "this session already holds 50 messages not typed yet")
        mac.connect()
        try:
            wait_for(lambda: len(sends(mac)) >= 2, what="two tries")
            [waiting] = c.get(f"/api/sessions/{sid}/outbox").json()["queued"]
            assert waiting["error"] is None  # not the person's to drop: it is tried again
            del mac.fail["send"]
            wait_for(lambda: c.get(f"/api/sessions/{sid}/outbox").json()["queued"] == [])
            assert sends(mac)[-1] == ("phone-later", "when you can")
        finally:
            mac.close()


def test_an_outbox_from_before_sizes_were_kept_is_migrated_and_counted(
    tmp_path: Path, loop: LoopThread, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    """An older relay's outbox (no ``size``) gets the column, filled from each text, as the relay
    opens: what already waits counts against the byte limits at once."""
    data, port, store = tmp_path / "data", free_port(), relay_overrides()
    server: RelayServer = PortRelay(data, port, **store).start()
    try:
        account = server.account()
        _, sid = made_session(server, account.device_token, loop)
        with relay_client(server, account) as c:
            assert queue(c, sid, "é" * 400, "phone-old1").status_code == 201  # 800 bytes
        server.state.store.db.writer.run_sync(
            lambda conn, _: conn.execute("ALTER TABLE outbox DROP COLUMN size")
        )
    finally:
        server.stop()
    server = PortRelay(data, port, outbox_max_bytes_per_session=1000, **store).start()
    try:
        with relay_client(server, account) as c:
            [old] = c.get(f"/api/sessions/{sid}/outbox").json()["queued"]
            assert (old["id"], old["length"]) == ("phone-old1", 400)
            refused_naming(queue(c, sid, "x" * 201), "outbox_max_bytes_per_session")
            assert queue(c, sid, "x" * 200).status_code == 201
    finally:
        server.stop()
