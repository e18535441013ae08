"""Titles by convention through a real relay: ``title_format`` applied to every automatic title
(lists, search), a person's title shown as typed and never replaced, "Regenerate" taking the
newest ai-title, a changed format applied to the sessions already stored, a bad one refused."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features import title_convention
from tests.support.relay import Account, RelayServer, mac, phone_client
from wire.errors import ConfigError
from wire.protocol import LineRecord

CONVENTION = "{project} · {title}"
_OFFSETS = itertools.count(1000, 1000)  # growing across pushes, as a transcript does


def line(offset: int, body: dict[str, Any]) -> LineRecord:
    body.setdefault("sessionId", "c-1")
    return LineRecord(offset=offset, text=json.dumps(body))


def push(relay: RelayServer, account: Account, session_id: str, *bodies: dict[str, Any]) -> None:
    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            lines = [line(next(_OFFSETS), b) for b in bodies]
            await link.send_lines(session_id, "c-1", lines, cwd="/Users/ada/src/shop")

    asyncio.run(run())


def prompt(text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-12-05T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    }


def title(client: httpx.Client, session_id: str) -> str:
    return str(client.get(f"/api/sessions/{session_id}").json()["title"])


def test_the_convention_applies_everywhere_and_a_person_wins(
    make_relay: Callable[..., RelayServer],
) -> None:
    relay = make_relay(title_format=CONVENTION)
    account = relay.account()
    sid = str(uuid.uuid4())
    push(relay, account, sid, prompt("Fix the flaky login test in auth.py please"))
    with phone_client(relay, account.phone_token) as client:
        assert title(client, sid) == "shop · Fix the flaky login test in auth.py"
        listed = client.get("/api/sessions").json()["sessions"]
        assert [s["title"] for s in listed if s["id"] == sid] == [title(client, sid)]
        found = client.get("/api/search", params={"q": "title:shop"}).json()
        assert sid in [s["id"] for s in found["here"] + found["elsewhere"]]

        # Claude Code's ai-title, in the convention; "Regenerate" takes the newest.
        push(relay, account, sid, {"type": "ai-title", "aiTitle": "Login test flake"})
        assert title(client, sid) == "shop · Login test flake"
        regenerated = client.post(f"/api/sessions/{sid}/title/regenerate")
        assert regenerated.status_code == 200, regenerated.text
        assert regenerated.json()["source"] == "ai-title"
        assert regenerated.json()["title"] == "shop · Login test flake"

        # A person's title is shown as typed and stays: regenerate refuses, new lines leave it.
        renamed = client.patch(f"/api/sessions/{sid}", json={"title": "My login fix"})
        assert renamed.status_code == 200 and renamed.json()["title"] == "My login fix"
        refused = client.post(f"/api/sessions/{sid}/title/regenerate")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "title_set_by_person"
        push(relay, account, sid, {"type": "ai-title", "aiTitle": "Something else"})
        assert title(client, sid) == "My login fix"
        # Reset: the automatic title again, in the convention.
        assert client.delete(f"/api/sessions/{sid}/title").status_code == 200
        assert title(client, sid) == "shop · Something else"


def test_rename_at_the_desk_counts_as_a_persons_title(relay: RelayServer, account: Account) -> None:
    sid = str(uuid.uuid4())
    push(
        relay,
        account,
        sid,
        {"type": "ai-title", "aiTitle": "Generated"},
        {"type": "custom-title", "customTitle": "Named at the desk"},
    )
    with phone_client(relay, account.phone_token) as client:
        assert title(client, sid) == "Named at the desk"  # the default format: as it is
        refused = client.post(f"/api/sessions/{sid}/title/regenerate")
        assert refused.status_code == 409
        other = phone_client(relay, relay.account().phone_token)
        with other:
            assert other.post(f"/api/sessions/{sid}/title/regenerate").status_code == 404


def test_a_changed_format_applies_to_stored_sessions_and_a_bad_one_is_refused(
    make_relay: Callable[..., RelayServer],
) -> None:
    first = make_relay()
    account = first.account("titles")
    sid = str(uuid.uuid4())
    push(first, account, sid, prompt("Refactor the session store and its callers"))
    data_dir = Path(first.config.str("data_dir"))
    first.stop()
    store = first.config.str("database_url")  # the same store again, on either backend
    again = RelayServer(data_dir, database_url=store, title_format="[{folder}] {title}").start()
    try:
        with phone_client(again, account.phone_token) as client:
            assert title(client, sid) == "[shop] Refactor the session store and its callers"
    finally:
        again.stop()
    # A format without {title} stops the relay's start with what is wrong and how to write it.
    bad = dataclasses.replace(again.state, config=again.config.replace(title_format="{project}"))
    with pytest.raises(ConfigError, match=r"title_format: the format has no \{title\}"):
        asyncio.run(title_convention.start(bad))
