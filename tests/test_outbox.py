"""Messages queued on the relay for an offline Mac (relay/features/outbox.py, issue 14): stored, kept
across a relay restart, delivered once and in order when the Mac links, sent again under the same
id after a link that broke mid-delivery, listed in the session's snapshot until the Mac took them."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.relay import RelayServer, free_port
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
            assert [(m["id"], m["text"]) for m in listed] == [
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
    import httpx

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
