"""Reading a conversation begun at the desk (relay/features/desk.py): the events a session's view
draws, from a captured Claude Code 2.1.332 transcript, numbered 1..n and paged like a session's;
what the Mac sends is bounded and checked."""

from __future__ import annotations

import shutil

from hypothesis import given
from hypothesis import strategies as st

from agent.transcript import project_slug
from relay.features.desk import (
    DESK_EPOCH,
    DESK_PAGE,
    MAX_DESK_LINE_CHARS,
    MAX_DESK_LINES,
    checked_lines,
    events_of,
    page_of,
)
from tests.support.api import error_of
from tests.support.bridge import Bridge
from tests.support.transcripts import CLAUDE_332, lines_of, stored_events

DESK = CLAUDE_332 / "desk" / "life1"
CONVERSATION = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
TRANSCRIPT = DESK / f"{CONVERSATION}.jsonl"
CAPTURED_CWD = "/tmp/cap332/work/desk_repo.v2"
SHOWN = [
    ("user", "hello from the desk"),
    ("assistant", "Hello! This is the mock API. How can I help?"),
    ("marker", "<command-name>/rename</command-name>"),
    ("marker", "Session renamed to: Desk work on feature"),
    ("user", "SLOW please"),
    ("assistant", "This is a deliberately slow streamed answer"),
    ("marker", "Interrupted by user"),
]


def test_the_captured_conversation_reads_as_the_events_a_session_shows() -> None:
    events = events_of(CONVERSATION, lines_of(TRANSCRIPT))
    assert [e.seq for e in events] == list(range(1, len(SHOWN) + 1))
    assert [(e.kind, e.text[: len(t)]) for e, (_, t) in zip(events, SHOWN, strict=True)] == SHOWN
    assert {e.epoch for e in events} == {DESK_EPOCH}
    assert {e.session_id for e in events} == {CONVERSATION}
    session = stored_events(TRANSCRIPT)
    assert [e.model_dump(exclude={"session_id", "epoch"}) for e in events] == [
        e.model_dump(exclude={"session_id", "epoch"}) for e in session
    ]


def test_pages_go_back_from_the_newest() -> None:
    events = events_of(CONVERSATION, lines_of(TRANSCRIPT))
    newest = page_of(events, None, 3)
    assert [e.seq for e in newest.events] == [5, 6, 7]
    assert newest.has_more and newest.last_seq == 7
    middle = page_of(events, 5, 3)
    assert [e.seq for e in middle.events] == [2, 3, 4] and middle.has_more
    first = page_of(events, 2, 3)
    assert [e.seq for e in first.events] == [1] and not first.has_more
    assert page_of([], None, 3) == page_of([], 9, 3)
    assert page_of([], None, 3).last_seq == 0


@given(st.lists(st.one_of(st.text(max_size=40), st.integers(), st.none(), st.binary(max_size=8))))
def test_only_strings_come_through_and_what_is_left_out_is_said(raw: list[object]) -> None:
    lines, cut = checked_lines(raw)
    assert all(isinstance(line, str) for line in lines)
    assert lines == [line for line in raw if isinstance(line, str)]
    assert cut == (len(lines) < len(raw))


def test_what_the_mac_sends_is_bounded() -> None:
    assert checked_lines(None) == ([], False)
    assert checked_lines({"lines": "x"}) == ([], True)
    assert checked_lines("line") == ([], True)
    many = [str(n) for n in range(MAX_DESK_LINES + 5)]
    lines, cut = checked_lines(many)
    assert len(lines) == MAX_DESK_LINES and lines[-1] == many[-1] and cut
    lines, cut = checked_lines(["a" * (MAX_DESK_LINE_CHARS + 1), "b"])
    assert lines == ["b"] and cut


def test_the_route_pages_a_desk_conversation_from_the_mac(fake: Bridge) -> None:
    cwd = fake.folder("desk")
    folder = fake.home / ".claude" / "projects" / project_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    text = TRANSCRIPT.read_text(encoding="utf-8").replace(CAPTURED_CWD, cwd)
    (folder / f"{CONVERSATION}.jsonl").write_text(text)
    shutil.rmtree(fake.home / ".claude" / "sessions", ignore_errors=True)
    fake.start_agent()
    base = f"/api/devices/{fake.account.device_id}/conversations/{CONVERSATION}"
    with fake.phone() as phone:
        whole = phone.get(base).json()
        assert [(e["kind"], e["text"][: len(t)]) for e, (_, t) in zip(
            whole["events"], SHOWN, strict=True)] == SHOWN  # fmt: skip
        assert whole["last_seq"] == len(SHOWN) and whole["oldest_seq"] == 1
        assert not whole["has_more"] and not whole["cut"] and not whole["live"]
        assert whole["epoch"] == DESK_EPOCH and len(whole["events"]) <= DESK_PAGE

        newest = phone.get(base, params={"limit": 3}).json()
        assert [e["seq"] for e in newest["events"]] == [5, 6, 7] and newest["has_more"]
        older = phone.get(base, params={"limit": 3, "before": 5}).json()
        assert [e["seq"] for e in older["events"]] == [2, 3, 4] and older["has_more"]
        first = phone.get(base, params={"limit": 3, "before": 2}).json()
        assert [e["seq"] for e in first["events"]] == [1] and not first["has_more"]

        error_of(phone.get(base, params={"limit": 0}), 400, "bad_limit")
        error_of(phone.get(base, params={"limit": 10**6}), 400, "bad_limit")
        error_of(phone.get(base, params={"before": 0}), 400, "bad_after")
        error_of(phone.get(base[:-1] + "x"), 404, "unknown_conversation")
