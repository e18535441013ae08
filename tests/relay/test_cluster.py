"""Several relay nodes on one PostgreSQL database: real relay processes, the real PostgreSQL
cluster of the tests (tests/support/postgres.py), the real Caddy in front with the shipped
deploy/Caddyfile.cluster.

- events stored through one node reach phones on the others, in order;
- the account stream and snapshots of any node show a Mac linked to another (online, states,
  cards); a card answered on one node reaches the Mac on another; older history comes from a Mac
  wherever it is linked; the newest link of a Mac wins across nodes;
- a node killed with SIGKILL releases its Macs (its lease runs out) and they link again elsewhere;
- the 10,000-event replay: the Mac on node 1 (killed twice) reconnects through Caddy, phones on
  nodes 2 and 3 and one on node 1 (reconnecting through Caddy with Last-Event-ID) each end with
  seq 1..10,000 exactly once, in order;
- PostgreSQL itself restarted mid-replay: the nodes answer 503 with a clear body, recover by
  themselves, and nothing acknowledged is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.nodes import RelayNode, caddy_in_front, seed_account
from tests.support.postgres import PostgresCluster
from wire.client import MacLink, MemoryArchive
from wire.errors import LinkFailure
from wire.protocol import (
    CLOSE_REPLACED,
    Card,
    CardOption,
    Command,
    CommandResult,
    DeviceInfo,
    LineRecord,
    SessionInfo,
)

pytestmark = pytest.mark.skipif(
    shutil.which("caddy") is None, reason="caddy: run scripts/test-deps"
)


S1 = "5e5510e1-0000-4000-8000-000000000001"  # each test's session: a UUID, as the relay takes


def user_line(offset: int, text: str | None = None) -> LineRecord:
    """A transcript line of the captured format that makes exactly one event."""
    uuid = f"00000000-0000-4000-8000-{offset:012d}"
    body = {
        "type": "user",
        "uuid": uuid,
        "sessionId": "conv",
        "timestamp": "2026-12-02T07:00:00.000Z",
        "message": {"role": "user", "content": text or f"line {offset}"},
    }
    return LineRecord(offset=offset, text=json.dumps(body), uuid=uuid)


@dataclass
class Nodes:
    database_url: str
    account_id: str
    phone: str
    device: str
    nodes: list[RelayNode]

    def __getitem__(self, index: int) -> RelayNode:
        return self.nodes[index]

    def client(self, node: RelayNode | str, **kwargs: Any) -> httpx.AsyncClient:
        base = node if isinstance(node, str) else node.url
        return httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {self.phone}"}, timeout=30, **kwargs
        )


@pytest.fixture
def nodes(postgres: PostgresCluster, tmp_path: Path) -> Iterator[Nodes]:
    url = postgres.new_database("cluster")
    account_id, phone, device = seed_account(url)
    started: list[RelayNode] = []
    # The relay keeps every event here: a phone that reconnects while the Mac is itself between
    # nodes must catch up from the store, not from the Mac (which is offline at that moment).
    kept = {"CB_EVENTS_KEPT": str(REPLAY_LINES * 2)}
    try:
        for i in range(3):
            started.append(RelayNode(f"relay{i + 1}", url, tmp_path, kept).start())
        yield Nodes(url, account_id, phone, device, started)
    finally:
        for node in started:
            node.stop()


TwoNodes = tuple[str, str, RelayNode, RelayNode]  # phone token, device token, the two nodes


@pytest.fixture
def two_nodes(postgres: PostgresCluster, tmp_path: Path) -> Iterator[Any]:
    """``two_nodes(name, settings)``: two relay processes on a fresh database of their own, with
    these settings; stopped after the test."""
    started: list[RelayNode] = []

    def make(name: str, settings: dict[str, str]) -> TwoNodes:
        url = postgres.new_database(name)
        _, phone, device = seed_account(url)
        for i in (1, 2):
            started.append(RelayNode(f"relay{i}", url, tmp_path / name, settings).start())
        return phone, device, started[-2], started[-1]

    yield make
    for node in started:
        node.stop()


async def until(predicate: Any, what: str, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


@dataclass
class Follower:
    """A phone following one session's stream, reconnecting with Last-Event-ID to the next URL
    of its list when its node goes away; records every seq it was sent."""

    urls: list[str]
    token: str
    session_id: str
    seqs: list[int] = field(default_factory=list)
    reconnects: int = 0
    task: asyncio.Task[None] | None = None

    def start(self) -> Follower:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _run(self) -> None:
        attempt = 0
        while True:
            url = self.urls[min(attempt, len(self.urls) - 1)]
            headers = {"Authorization": f"Bearer {self.token}"}
            if self.seqs:
                headers["Last-Event-ID"] = str(self.seqs[-1])
            try:
                async with (
                    httpx.AsyncClient(timeout=httpx.Timeout(30, read=60)) as client,
                    client.stream(
                        "GET", f"{url}/api/sessions/{self.session_id}/stream", headers=headers
                    ) as response,
                ):
                    if response.status_code != 200:
                        raise httpx.TransportError(f"HTTP {response.status_code}")
                    async for line in response.aiter_lines():
                        if line.startswith("id: "):
                            self.seqs.append(int(line[4:]))
            except (httpx.HTTPError, OSError):
                pass
            attempt += 1
            self.reconnects += 1
            await asyncio.sleep(0.2)

    async def wait_for(self, last: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.seqs or self.seqs[-1] < last:
            assert time.monotonic() < deadline, (
                f"{self.urls[0]}: got up to {self.seqs[-1] if self.seqs else 0} of {last}"
            )
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


def assert_exactly_once_in_order(seqs: list[int], last: int, who: str) -> None:
    wanted = list(range(1, last + 1))
    wrong = next((i for i, (a, b) in enumerate(zip(seqs, wanted, strict=False)) if a != b), None)
    assert seqs == wanted, f"{who}: {len(seqs)} seqs, the first wrong at index {wrong}"


@contextlib.asynccontextmanager
async def mac_on(url: str, token: str, **kwargs: Any) -> AsyncIterator[MacLink]:
    link = MacLink(url, token, DeviceInfo(name=kwargs.pop("name", "mac")), **kwargs)
    await link.connect()
    try:
        yield link
    finally:
        await link.close()


# -- events and the account stream across nodes ------------------------------------------------


def test_events_from_a_mac_on_one_node_reach_phones_on_the_others(nodes: Nodes) -> None:
    async def go() -> None:
        async with mac_on(nodes[0].url, nodes.device) as mac:
            await mac.send_lines(S1, "conv", [user_line(i) for i in range(3)], cwd="/work")
            phones = [
                Follower([nodes[i].url], nodes.phone, S1).start() for i in (1, 2)
            ]  # fmt: skip
            for phone in phones:
                await phone.wait_for(3)  # the catch-up from the store
            for start in range(3, 60, 5):  # then live, batch by batch
                await mac.send_lines(S1, "conv", [user_line(i) for i in range(start, start + 5)])
            for i, phone in enumerate(phones):
                await phone.wait_for(63)
                await phone.stop()
                assert_exactly_once_in_order(phone.seqs, 63, f"phone on node {i + 2}")

    asyncio.run(go())


def test_any_node_shows_a_mac_linked_to_another_and_its_cards(nodes: Nodes) -> None:
    card = Card(
        id="c1", kind="permission", title="Bash command", text="make test",
        options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
    )  # fmt: skip

    async def go() -> None:
        async with nodes.client(nodes[2]) as phone, phone.stream("GET", "/api/stream") as stream:
            lines = stream.aiter_lines()
            events: list[tuple[str, dict[str, Any]]] = []

            async def read_until(kind: str, check: Any) -> dict[str, Any]:
                event = ""
                while True:
                    line = await asyncio.wait_for(anext(lines), 15)
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        data: dict[str, Any] = json.loads(line[6:])
                        events.append((event, data))
                        if event == kind and check(data):
                            return data

            await read_until("snapshot", lambda d: True)
            async with mac_on(nodes[0].url, nodes.device, name="studio") as mac:
                online = await read_until("device", lambda d: d["online"])
                assert online["info"]["name"] == "studio"
                await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
                await mac.update(SessionInfo(session_id=S1, state="waiting", card=card))
                shown = await read_until("session", lambda d: d.get("card") is not None)
                assert shown["card"]["id"] == "c1" and shown["needs_you"] is True
                # A snapshot read on a third node knows it too.
                async with nodes.client(nodes[1]) as other:
                    listed = (await other.get("/api/sessions")).json()["sessions"]
                    assert [(s["id"], s["state"], s["needs_you"]) for s in listed] == [
                        (S1, "waiting", True)
                    ]
                    devices = (await other.get("/api/devices")).json()["devices"]
                    assert [(d["name"], d["online"]) for d in devices] == [("studio", True)]
            offline = await read_until("device", lambda d: not d["online"])
            assert offline["id"] == devices_id(nodes)

    asyncio.run(go())


def devices_id(nodes: Nodes) -> str:
    response = httpx.get(
        nodes[0].url + "/api/devices", headers={"Authorization": f"Bearer {nodes.phone}"}
    )
    return str(response.json()["devices"][0]["id"])


def test_a_card_answered_on_one_node_reaches_the_mac_on_another(nodes: Nodes) -> None:
    received: list[Command] = []

    async def on_command(command: Command) -> CommandResult:
        received.append(command)
        return CommandResult(command_id=command.command_id, ok=True, data={"pressed": "1"})

    card = Card(
        id="c7", kind="permission", title="Edit file", text="src/app.py",
        options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
    )  # fmt: skip

    async def go() -> None:
        async with (
            mac_on(nodes[1].url, nodes.device, on_command=on_command) as mac,
            nodes.client(nodes[2]) as phone,
        ):
            await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            await mac.update(SessionInfo(session_id=S1, state="waiting", card=card))

            async def card_here() -> bool:
                return bool((await phone.get(f"/api/sessions/{S1}")).json().get("card"))

            await until(card_here, "the card on node 3")
            answered = await phone.post(f"/api/sessions/{S1}/cards/c7", json={"key": "1"})
            assert answered.status_code == 200, answered.text
            assert [(c.name, c.session_id, c.args["card_id"], c.args["key"]) for c in received] == [
                ("answer_card", S1, "c7", "1")
            ]
            # An error the Mac answers crosses back as itself.
            received.clear()
            missing = await phone.post(f"/api/sessions/{S1}/cards/other", json={"key": "1"})
            assert missing.status_code == 409 and missing.json()["error"]["code"] == "card_closed"
            assert received == []

    asyncio.run(go())


def test_a_mac_that_does_not_answer_times_out_the_same_across_nodes(two_nodes: Any) -> None:
    phone, device, first, second = two_nodes("timeout", {"CB_COMMAND_TIMEOUT": "1.5"})

    async def silent(command: Command) -> CommandResult:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    async def go() -> None:
        async with (
            mac_on(first.url, device, on_command=silent) as mac,
            httpx.AsyncClient(
                base_url=second.url, headers={"Authorization": f"Bearer {phone}"}, timeout=30
            ) as client,
        ):
            await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            await mac.update(SessionInfo(session_id=S1, state="busy"))
            started = time.monotonic()
            answer = await client.post(f"/api/sessions/{S1}/interrupt")
            took = time.monotonic() - started
            assert answer.status_code == 504, answer.text
            body = answer.json()["error"]
            assert (
                body["code"] == "device_timeout"
                and "did not answer within 1.5 s" in body["message"]
            )
            assert 1.4 < took < 6, took

    asyncio.run(go())


def test_older_history_comes_from_the_mac_wherever_it_is_linked(two_nodes: Any) -> None:
    phone, device, first, second = two_nodes("history", {"CB_EVENTS_KEPT": "5"})

    async def go() -> None:
        archive = MemoryArchive()
        async with (
            mac_on(first.url, device, archive=archive) as mac,
            httpx.AsyncClient(
                base_url=second.url, headers={"Authorization": f"Bearer {phone}"}, timeout=30
            ) as client,
        ):
            await mac.send_lines(S1, "conv", [user_line(i) for i in range(20)], cwd="/work")
            await mac.wait_for_seq(S1, 20)
            page = (await client.get(f"/api/sessions/{S1}/events", params={"after": 0})).json()
            # The relay keeps the newest 5; the 15 before them come from the Mac on node 1.
            assert page["oldest_seq"] == 16
            assert [e["seq"] for e in page["events"]] == list(range(1, 21))

    asyncio.run(go())


def test_the_newest_link_of_a_mac_wins_across_nodes(nodes: Nodes) -> None:
    async def go() -> None:
        async with mac_on(nodes[0].url, nodes.device, name="old") as old:
            await old.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            async with mac_on(nodes[1].url, nodes.device, name="new") as new:

                async def old_closed() -> bool:
                    return not old.connected

                await until(old_closed, "node 1 to close the older link")
                assert old._ws is not None and old._ws.close_code == CLOSE_REPLACED
                with pytest.raises(LinkFailure):
                    await old.send_lines(S1, "conv", [user_line(1)], timeout=2)
                ack = await new.send_lines(S1, "conv", [user_line(2)])
                assert ack.last_seq == 2

    asyncio.run(go())


def test_pairing_attempts_are_counted_by_every_node_together(two_nodes: Any) -> None:
    _, _, first, second = two_nodes("pairing", {"CB_PAIR_ATTEMPTS_PER_MINUTE": "4"})
    statuses = []
    for i in range(6):
        node = (first, second)[i % 2]
        answer = httpx.post(node.url + "/api/pair", json={"code": "ABCD-EFGH-JKLM-NPQR"})
        statuses.append(answer.status_code)
    assert statuses == [401, 401, 401, 401, 429, 429], statuses
    refused = httpx.post(first.url + "/api/pair", json={"code": "ABCD-EFGH-JKLM-NPQR"})
    assert refused.json()["error"]["code"] == "pair_rate_limited"
    assert int(refused.headers["retry-after"]) >= 1


# -- a node killed: its Macs and phones go on elsewhere ------------------------------------------


def test_a_killed_node_releases_its_macs_and_they_link_again_elsewhere(nodes: Nodes) -> None:
    async def online_on(node: RelayNode) -> bool:
        async with nodes.client(node) as phone:
            devices = (await phone.get("/api/devices")).json()["devices"]
            return bool(devices and devices[0]["online"])

    async def offline_on(node: RelayNode) -> bool:
        return not await online_on(node)

    async def go() -> None:
        mac = MacLink(nodes[0].url, nodes.device, DeviceInfo(name="mac"))
        await mac.connect()
        await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
        await until(lambda: online_on(nodes[1]), "the Mac online on node 2")
        nodes[0].kill()
        started = time.monotonic()
        await until(lambda: offline_on(nodes[1]), "node 1's lease to run out", timeout=20)
        released = time.monotonic() - started
        await mac.abort()
        again = MacLink(nodes[2].url, nodes.device, DeviceInfo(name="mac"))
        await again.connect()
        await until(lambda: online_on(nodes[1]), "the Mac online again through node 3")
        ack = await again.send_lines(S1, "conv", [user_line(1)])
        assert ack.last_seq == 2
        await again.close()
        assert released < 3 * 4, released  # the lease (3 s) and a few heartbeats

    asyncio.run(go())


# -- the 10,000-event replay --------------------------------------------------------------------

REPLAY_LINES = 10_000
REPLAY_BATCH = 200


@dataclass
class Replayer:
    """A Mac replaying a transcript as the agent does: each batch is sent until acknowledged,
    the link opened again (to the first URL that answers) whenever it is lost; the lines of an
    unacknowledged batch are sent again, and the relay stores each once."""

    urls: list[str]
    token: str
    session_id: str
    total: int
    batch: int = REPLAY_BATCH
    acked: int = 0  # lines acknowledged
    links: int = 0
    refused: int = 0  # batches the relay answered with an error (e.g. its database away)
    seen_urls: list[str] = field(default_factory=list)
    link: MacLink | None = None
    prefer_first: asyncio.Event = field(default_factory=asyncio.Event)
    archive: MemoryArchive = field(default_factory=MemoryArchive)  # kept across links
    # Acknowledged this far, it waits for ``released``: a test's next step is never outrun.
    hold_at: int | None = None
    released: asyncio.Event = field(default_factory=asyncio.Event)

    async def _connect(self) -> MacLink:
        while True:
            for url in self.urls:
                link = MacLink(url, self.token, DeviceInfo(name="replay"), archive=self.archive)
                try:
                    await link.connect(open_timeout=3)
                except (LinkFailure, OSError, TimeoutError):
                    continue
                self.links += 1
                self.seen_urls.append(url)
                return link
            await asyncio.sleep(0.2)

    async def run(self) -> None:
        while self.acked < self.total:
            if self.hold_at is not None and self.acked >= self.hold_at:
                await self.released.wait()
            if self.link is None or not self.link.connected or self.prefer_first.is_set():
                self.prefer_first.clear()
                if self.link is not None:
                    await self.link.abort()
                self.link = await self._connect()
            lines = [
                user_line(i) for i in range(self.acked, min(self.total, self.acked + self.batch))
            ]
            try:
                ack = await self.link.send_lines(
                    self.session_id, "conv", lines, cwd="/work", timeout=20
                )
            except (LinkFailure, OSError, TimeoutError):
                if self.link.connected:
                    self.refused += 1
                    await asyncio.sleep(0.3)
                continue
            assert ack.through_offset == lines[-1].offset, ack
            self.acked += len(lines)
        if self.link is not None:
            await self.link.close()


def test_a_10000_event_replay_survives_its_node_killed_twice(nodes: Nodes, tmp_path: Path) -> None:
    with caddy_in_front(tmp_path / "caddy", nodes.nodes) as balancer:

        async def go() -> None:
            async with mac_on(nodes[0].url, nodes.device) as first:
                await first.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            phones = [
                Follower([nodes[1].url], nodes.phone, S1).start(),
                Follower([nodes[2].url], nodes.phone, S1).start(),
                # On node 1, which is killed: it goes on through Caddy with Last-Event-ID.
                Follower([nodes[0].url, balancer.url], nodes.phone, S1).start(),
            ]
            thresholds = (REPLAY_LINES // 4, REPLAY_LINES * 5 // 8)
            replay = Replayer([nodes[0].url, balancer.url], nodes.device, S1, REPLAY_LINES)
            replay.acked = 1
            # Through Caddy it may go on faster than node 1 restarts: it waits at the second
            # kill's mark, so that kill still finds a replay under way.
            replay.hold_at = thresholds[1]
            task = asyncio.get_running_loop().create_task(replay.run())
            kills = 0
            for threshold in thresholds:
                while replay.acked < threshold:
                    assert not task.done(), task.exception()
                    await asyncio.sleep(0.01)
                nodes[0].kill()  # mid-replay: some batch is in flight or being stored
                kills += 1
                await asyncio.sleep(0.5)
                await asyncio.to_thread(nodes[0].start)  # back, for the next kill
                # The Mac links to node 1 again, so the next kill cuts its link (a relink that
                # was under way as node 1 came back may have gone through Caddy elsewhere).
                replay.prefer_first.set()
                replay.released.set()
                while replay.seen_urls[-1] != nodes[0].url and not task.done():
                    replay.prefer_first.set()
                    await asyncio.sleep(0.2)
            await asyncio.wait_for(task, 180)
            assert kills == 2 and replay.links >= 3, (replay.links, replay.seen_urls, nodes[0].url)
            assert balancer.url in replay.seen_urls, replay.seen_urls
            for i, phone in enumerate(phones):
                await phone.wait_for(REPLAY_LINES, timeout=120)
                await phone.stop()
                assert_exactly_once_in_order(phone.seqs, REPLAY_LINES, f"phone {i + 1}")
            assert phones[2].reconnects >= 1  # it lost node 1 and went on elsewhere
            async with nodes.client(balancer.url) as client:
                session = (await client.get(f"/api/sessions/{S1}")).json()
                assert session["last_seq"] == REPLAY_LINES

        asyncio.run(go())


def test_postgresql_restarted_mid_replay_answers_503_then_recovers(tmp_path: Path) -> None:
    own = PostgresCluster().start()  # its own: a restart must not reach the other tests' relays
    try:
        url = own.new_database("restart")
        _, phone, device = seed_account(url)
        kept = {"CB_EVENTS_KEPT": str(REPLAY_LINES * 2)}  # as above: caught up from the store
        first = RelayNode("relay1", url, tmp_path, kept).start()
        second = RelayNode("relay2", url, tmp_path, kept).start()
        total = 3000

        async def go() -> None:
            follower = Follower([second.url], phone, S1)
            replay = Replayer([first.url], device, S1, total, batch=100)
            async with mac_on(first.url, device) as mac:
                await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            replay.acked = 1
            follower.start()
            await follower.wait_for(1)
            task = asyncio.get_running_loop().create_task(replay.run())
            while replay.acked < total // 3:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(own.stop, "fast")
            try:
                async with httpx.AsyncClient(
                    base_url=second.url, headers={"Authorization": f"Bearer {phone}"}, timeout=30
                ) as client:
                    answer = await client.get("/api/sessions")
                    assert answer.status_code == 503, answer.text
                    error = answer.json()["error"]
                    assert error["code"] == "store_unavailable"
                    assert "database" in error["message"] and "try again" in error["message"]
                stalled = replay.acked
                await asyncio.sleep(2)
                assert replay.acked <= stalled + 100  # at most the batch in flight at the stop
            finally:
                await asyncio.to_thread(own.start)
            await asyncio.wait_for(task, 120)
            await follower.wait_for(total, timeout=60)
            await follower.stop()
            assert_exactly_once_in_order(follower.seqs, total, "phone on node 2")
            assert replay.refused >= 1 or replay.links >= 2, replay
            async with httpx.AsyncClient(
                base_url=first.url, headers={"Authorization": f"Bearer {phone}"}, timeout=30
            ) as client:
                session = (await client.get(f"/api/sessions/{S1}")).json()
                assert session["last_seq"] == total

        try:
            asyncio.run(go())
        finally:
            first.stop()
            second.stop()
    finally:
        own.destroy()


def test_an_agent_whose_node_dies_links_again_elsewhere_at_once(
    nodes: Nodes, tmp_path: Path
) -> None:
    """The agent's own link (agent/link.py) notices its node's death when the socket closes,
    not at its next ping (20 s later): it is online again through another node in seconds."""
    from tests.support.relay import agent_link

    with caddy_in_front(tmp_path / "caddy", nodes.nodes) as balancer:

        def read_holder() -> list[Any]:
            import psycopg

            with psycopg.connect(nodes.database_url, autocommit=True) as conn:
                return conn.execute("SELECT node_id FROM device_links").fetchall()

        async def holder() -> str | None:
            rows = await asyncio.to_thread(read_holder)
            return str(rows[0][0]) if rows else None

        async def go() -> None:
            link = agent_link(balancer.url, nodes.device)
            link.start()
            try:
                await asyncio.wait_for(link.linked.wait(), 15)
                before = await until(holder, "the Mac's lease")
                port = await asyncio.to_thread(_port_of_node, nodes, before)
                victim = next(n for n in nodes.nodes if n.port == port)
                started = time.monotonic()
                victim.kill()

                async def elsewhere() -> str | None:
                    now = await holder()
                    return now if now not in (None, before) and link.linked.is_set() else None

                await until(elsewhere, "the Mac linked to another node", timeout=15)
                took = time.monotonic() - started
                assert took < 8, took  # its back-off, not the 20 s ping
            finally:
                await link.stop()

        asyncio.run(go())


def _port_of_node(nodes: Nodes, node_id: str) -> int:
    """The port of the node whose id is ``node_id`` (a node's id names its process id)."""
    for node in nodes.nodes:
        if node.process is not None and f"-{node.process.pid}-" in node_id:
            return node.port
    raise AssertionError(f"no node has the id {node_id}")


def test_a_message_a_node_cannot_read_is_skipped_and_the_nodes_hear_each_other_on(
    nodes: Nodes,
) -> None:
    """Another version's message, or a damaged one, on any channel of the cluster is logged and
    skipped by every node: none stops listening, events and account updates still travel."""
    import psycopg

    unreadable = [
        ("cb_bus", '{"t": "acct", "a": "acct_x", "e": "session", "b": {}}'),  # an older node's
        ("cb_bus", '{"kind": "resync", "session_id": 7}'),
        ("cb_bus", "not json"),
        ("cb_bus", "@not-a-row"),
        ("cb_events", '{"n": "relay-x", "s": "s1", "f": 1, "l": 2}'),
        ("cb_events", "[]"),
    ]
    with psycopg.connect(nodes.database_url, autocommit=True) as conn:
        for channel, payload in unreadable:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def go() -> None:
        async with mac_on(nodes[0].url, nodes.device, name="studio") as mac:
            await mac.send_lines(S1, "conv", [user_line(0)], cwd="/work")
            phone = Follower([nodes[1].url], nodes.phone, S1).start()
            await phone.wait_for(1)
            await mac.send_lines(S1, "conv", [user_line(1), user_line(2)])
            await phone.wait_for(3)  # live, through the other node's notification
            await phone.stop()
            assert_exactly_once_in_order(phone.seqs, 3, "phone on node 2")
            async with nodes.client(nodes[2]) as other:
                devices = (await other.get("/api/devices")).json()["devices"]
                assert [(d["name"], d["online"]) for d in devices] == [("studio", True)]

    asyncio.run(go())
    for node in nodes.nodes:
        assert node.process is not None and node.process.poll() is None, node.tail()
        skipped = node.log.read_text(errors="replace").count("skipped, unreadable")
        assert skipped == len(unreadable), node.tail()
