"""The usage report through the real relay, the real link and the real agent (the fake claude):
a new start and a reopen are counted per Mac and per project, the reopen's first answer is what
it re-read (against the full estimate before it), a search followed by opening a result is a
search that worked, retention's expiries are counted against those due; and the report's
window is checked."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.db import Connection
from relay.features.report import buckets, parse_window, record_retention, scope_of, start_kind
from relay.report import Window
from relay.store import Session, Store
from tests.support.api import error_of
from tests.support.bridge import Bridge
from tests.support.journeys import snapshot, start_session, wait_state
from tests.support.transcripts import assistant_line
from tests.support.waits import wait_for
from wire.protocol import SessionInfo


def answer(bridge: Bridge, phone: httpx.Client, session_id: str, usage: dict[str, int]) -> None:
    """Claude Code writes an answer with its usage into the session's transcript."""
    conversation = wait_for(
        lambda: snapshot(phone, session_id)["conversation_id"], 30, "a conversation"
    )
    found = wait_for(
        lambda: list((bridge.home / ".claude" / "projects").glob(f"*/{conversation}.jsonl")),
        30,
        "the transcript",
    )
    line = json.loads(assistant_line("done"))
    line["message"]["usage"] = usage
    with found[0].open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


async def wrote(store: Store, job: Callable[[Connection], None]) -> None:
    await store.write(job)


def report(phone: httpx.Client, **params: str) -> dict[str, Any]:
    response = phone.get("/api/report", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


BEFORE = {"input_tokens": 1200, "cache_read_input_tokens": 9000,
          "cache_creation_input_tokens": 300, "output_tokens": 31}  # fmt: skip
AFTER = {"input_tokens": 500, "cache_read_input_tokens": 2000,
         "cache_creation_input_tokens": 100, "output_tokens": 20}  # fmt: skip


def test_starts_resumes_tokens_and_searches_are_reported(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("shop")
    device = fake.account.device_id
    with fake.phone() as phone:
        sid = start_session(phone, fake, cwd, prompt="hello report", permission_mode="manual")
        wait_state(phone, sid, "idle")
        answer(fake, phone, sid, BEFORE)
        wait_for(lambda: report(phone)["totals"]["sessions"]["started"] == 1, 15, "the start")

        assert phone.post(f"/api/sessions/{sid}/end").status_code == 200
        wait_state(phone, sid, "ended")
        assert phone.post(f"/api/sessions/{sid}/reopen").status_code == 200
        wait_state(phone, sid, "idle")
        answer(fake, phone, sid, AFTER)
        body = wait_for(
            lambda: (r := report(phone))["totals"]["tokens"]["full"]["resumes"] == 1 and r,
            15,
            "the resume's first answer",
        )
        totals = body["totals"]
        assert totals["sessions"] == {
            "started": 1, "resumed": {"full": 1, "summary": 0, "fresh": 0}, "resume_rate": 0.5
        }  # fmt: skip
        assert totals["tokens"]["full"]["reread"] == 2600
        assert totals["tokens"]["full"]["avoided"] == 10531 - 2600
        assert body["by_mac"][device]["sessions"]["started"] == 1
        assert body["by_project"][cwd]["sessions"]["resumed"]["full"] == 1
        assert body["macs"][device] == "e2e mac"
        assert body["starts_by_how"] == {"new": 1, "reopen": 1, "revive": 0, "move": 0}
        assert sum(p["started"] for p in body["series"]) == 1

        # Searches: one with words and a result opened, one browse (not a search).
        found = phone.get("/api/search", params={"q": "hello"}).json()
        assert isinstance(found["search_id"], str)
        assert phone.get("/api/search").json()["search_id"] is None
        opened = phone.post(
            "/api/search/opened", json={"search_id": found["search_id"], "session_id": sid}
        )
        assert opened.json() == {"ok": True, "first": True}
        again = phone.post(
            "/api/search/opened", json={"search_id": found["search_id"], "session_id": sid}
        )
        assert again.json()["first"] is False
        error_of(phone.post("/api/search/opened", json={"search_id": "abcd", "session_id": sid}),
                 404, "unknown_search")  # fmt: skip
        search = report(phone)["totals"]["search"]
        assert search == {"searches": 1, "followed": 1, "success_rate": 1.0}

        # Retention's run records its expiries (due against done) in its transaction.
        relay = fake.relay.state
        now = time.time()
        reports = {fake.account.account_id: {"deleted": [{"mac": "deleted"}, {"mac": "waiting"}],
                                             "failed": [{"error": "x"}]}}  # fmt: skip
        asyncio.run(wrote(relay.store, lambda conn: record_retention(conn, now, reports)))
        assert report(phone)["totals"]["retention"] == {"due": 3, "done": 1, "done_rate": 1 / 3}

        # The window: nothing before the first start, a bad date or order is refused.
        assert (
            report(phone, until="2000-01-01", since="1999-12-01")["totals"]["sessions"]["started"]
            == 0
        )
        error_of(phone.get("/api/report", params={"since": "soon"}), 400, "bad_date")
        error_of(phone.get("/api/report", params={"since": "2026-12-05", "until": "2026-12-01"}),
                 400, "bad_window")  # fmt: skip

        stranger = fake.relay.account()
        with httpx.Client(
            base_url=fake.relay.url, headers={"Authorization": f"Bearer {stranger.phone_token}"}
        ) as other:
            assert other.get("/api/report").json()["totals"]["sessions"]["started"] == 0
            error_of(
                other.post(
                    "/api/search/opened", json={"search_id": found["search_id"], "session_id": sid}
                ),
                404,
                "unknown_search",
            )
    assert Path(cwd).is_dir()


def session(last_seq: int, mark: str | None = None) -> Session:
    return Session(
        id="s", account_id="a", device_id="d", cwd="/w", title="", group="", position=0.0,
        locked=False, mark=mark, created_at=0.0, updated_at=0.0, conversation_id=None,
        conversation_ids=[], permission_mode=None, epoch="e", last_seq=last_seq, oldest_seq=0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("seq", "mark", "before", "after", "kind"),
    [
        (0, None, None, "starting", "new"),
        (5, None, "ended", "starting", "reopen"),
        (5, None, None, "starting", "revive"),
        (5, "moving", "ended", "starting", "move"),
        (5, None, "starting", "starting", None),
        (5, None, "ended", "idle", None),
    ],
)
def test_how_a_start_is_told(
    seq: int, mark: str | None, before: str | None, after: str, kind: str | None
) -> None:
    was = None if before is None else SessionInfo(session_id="s", state=before)  # type: ignore[arg-type]
    now = SessionInfo(session_id="s", state=after)  # type: ignore[arg-type]
    assert start_kind(session(seq, mark), was, now) == kind


def test_windows_and_the_charts_periods() -> None:
    window = parse_window("2026-11-01", "2026-11-30", now=0)
    parts = buckets(window)
    assert len(parts) == 30 and parts[0].since == window.since and parts[-1].until == window.until
    long = buckets(Window(0, 86400 * 365))
    assert len(long) <= 93 and long[-1].until == 86400 * 365
    default = parse_window(None, None, now=86400 * 100)
    assert default.until - default.since == 86400 * 30


def test_the_scope_is_the_one_the_mac_reports_else_full() -> None:
    told = SessionInfo(session_id="s", state="starting", resume_scope="fresh")
    assert scope_of(told) == "fresh"
    assert scope_of(SessionInfo(session_id="s", state="starting")) == "full"


def test_a_reopen_is_counted_by_the_scope_the_mac_used(fake: Bridge) -> None:
    """The Mac tells the scope of each start (SessionInfo.resume_scope): a ``summary`` reopen
    counts as a summary resume, not a full one."""
    fake.start_agent()
    cwd = fake.folder("scoped")
    with fake.phone() as phone:
        sid = start_session(phone, fake, cwd, prompt="hello scope", permission_mode="manual")
        wait_state(phone, sid, "idle")
        assert phone.post(f"/api/sessions/{sid}/end").status_code == 200
        wait_state(phone, sid, "ended")
        reopened = phone.post(f"/api/sessions/{sid}/reopen", json={"scope": "summary"})
        assert reopened.status_code == 200, reopened.text
        resumed = wait_for(
            lambda: (
                (r := report(phone)["by_project"].get(cwd))
                and sum(r["sessions"]["resumed"].values())
                and r["sessions"]["resumed"]
            ),
            15,
            "the resume recorded",
        )
        assert resumed == {"full": 0, "summary": 1, "fresh": 0}
