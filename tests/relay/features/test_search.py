"""Titles, search and browse, and summary snapshots — through the API of a real relay, with
transcripts pushed by a scripted Mac (wire.client.MacLink) as the agent would."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.errors import BadRequest, NotFound
from relay.features.search import (
    Filters,
    SearchIndex,
    Term,
    day_text,
    match_expression,
    parse_query,
    pg_tsquery,
    pg_words,
)
from relay.features.search import search as search_sessions
from relay.features.titles import TitleObserver, prompt_gist, rename
from relay.hub import Hub
from relay.state import RelayState
from relay.store import Store
from tests.support.postgres import PostgresCluster
from tests.support.relay import Account, RelayServer, SSEReader, mac, phone_client, transcript
from wire import config as configmod
from wire.protocol import LineRecord, SessionInfo
from wire.transcript import read_lines

# -- transcripts -------------------------------------------------------------------------------


_OFFSETS = itertools.count(1000, 1000)  # growing in the order lines are made, across pushes


class Transcript:
    """Lines shaped as Claude Code writes them, with growing offsets, for one conversation."""

    def __init__(self, conversation: str | None = None) -> None:
        self.conversation = conversation or str(uuid.uuid4())

    def line(self, body: dict[str, Any]) -> LineRecord:
        body.setdefault("sessionId", self.conversation)
        if body["type"] in ("user", "assistant", "system"):
            body.setdefault("uuid", str(uuid.uuid4()))
            body.setdefault("timestamp", "2026-11-29T21:33:53.764Z")
        return LineRecord(offset=next(_OFFSETS), text=json.dumps(body), uuid=body.get("uuid"))

    def user(self, text: str) -> LineRecord:
        return self.line({"type": "user", "message": {"role": "user", "content": text}})

    def assistant(self, *blocks: dict[str, Any]) -> LineRecord:
        message = {
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": list(blocks),
        }
        return self.line({"type": "assistant", "message": message})

    def say(self, text: str) -> LineRecord:
        return self.assistant({"type": "text", "text": text})

    def tool(self, name: str, **tool_input: Any) -> LineRecord:
        block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex}", "name": name}
        return self.assistant({**block, "input": tool_input})

    def turn_end(self) -> LineRecord:
        return self.line({"type": "system", "subtype": "turn_duration", "durationMs": 1200})

    def title(self, kind: str, text: str) -> LineRecord:
        key = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}[kind]
        return self.line({"type": kind, key: text})

    def compact(self, summary: str) -> LineRecord:
        text = (
            "This session is being continued from a previous conversation that ran out of "
            f"context. The summary below covers the earlier portion of the conversation.\n\n"
            f"Summary:\n{summary}\n\nIf you need specific details from before compaction, read "
            "the full transcript."
        )
        body = {"type": "user", "isCompactSummary": True, "message": {"role": "user"}}
        body["message"]["content"] = text  # type: ignore[index]
        return self.line(body)

    def turn(self, prompt: str, answer: str, *tools: LineRecord) -> list[LineRecord]:
        """A whole turn; the tool lines (made first, as arguments) are put in their place."""
        lines = [self.user(prompt), *tools, self.say(answer), self.turn_end()]
        return [LineRecord(offset=next(_OFFSETS), text=x.text, uuid=x.uuid) for x in lines]


def fixture_lines(prefix: str) -> list[LineRecord]:
    return list(read_lines(transcript(prefix).read_bytes()))


def push(
    relay: RelayServer,
    token: str,
    session_id: str,
    lines: list[LineRecord],
    *,
    cwd: str = "/work/app",
    conversation: str = "conv",
    mac_name: str = "test mac",
) -> None:
    async def run() -> None:
        async with mac(relay, token, name=mac_name) as link:
            await link.send_lines(session_id, conversation, lines, cwd=cwd)

    asyncio.run(run())


def new_id() -> str:
    return str(uuid.uuid4())


def search(client: httpx.Client, q: str = "", **params: Any) -> dict[str, Any]:
    response = client.get("/api/search", params={"q": q, **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def found(client: httpx.Client, q: str, **params: Any) -> list[str]:
    body = search(client, q, **params)
    return ids(body["here"]) + ids(body["elsewhere"])


def title_of(client: httpx.Client, session_id: str) -> str:
    response = client.get(f"/api/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return str(response.json()["title"])


def summary_of(client: httpx.Client, session_id: str) -> dict[str, Any]:
    response = client.get(f"/api/sessions/{session_id}/summary")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- titles ------------------------------------------------------------------------------------


def test_title_is_derived_from_the_first_substantive_prompt(
    relay: RelayServer, account: Account
) -> None:
    t = Transcript()
    session_id = new_id()
    lines = [
        t.user("hi"),
        t.user("<command-name>/model</command-name>\n<command-args>sonnet</command-args>"),
        t.user("Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'x'"),
        t.user("hey claude, could you fix the flaky login test in auth.py? It fails on CI."),
        t.tool("Edit", file_path="/work/app/tests/test_auth.py", old_string="a", new_string="b"),
        t.say("Fixed."),
        t.turn_end(),
        t.user("Now rewrite the whole billing module in Rust"),  # later prompts do not retitle
    ]
    push(relay, account.device_token, session_id, lines)
    with phone_client(relay, account.phone_token) as client:
        assert title_of(client, session_id) == "Fix the flaky login test in auth.py?"


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("e_write_edit_permission__17b3", "WRITE_FILE · hello.txt"),  # weak gist + first file
        ("d_bash_permission", "RUN_BASH one"),
        ("b_idle", ""),  # only a greeting: no title, lists show the folder
    ],
)
def test_titles_of_the_captured_transcripts(
    relay: RelayServer, account: Account, prefix: str, expected: str
) -> None:
    session_id = new_id()
    push(relay, account.device_token, session_id, fixture_lines(prefix))
    with phone_client(relay, account.phone_token) as client:
        assert title_of(client, session_id) == expected


def test_a_pasted_log_after_a_question_keeps_only_the_question() -> None:
    gist, substantive = prompt_gist(
        "why does the deploy fail?\n2026-11-29 10:00:01 ERROR boom\n2026-11-29 10:00:02 INFO x"
    )
    assert (gist, substantive) == ("Why does the deploy fail?", True)
    assert prompt_gist("2026-11-29 10:00:01 ERROR boom\n2026-11-29 10:00:02 INFO x")[1] is False
    assert prompt_gist("ok thanks, continue")[1] is False
    long_gist, _ = prompt_gist("please " + "refactor the session store and its callers " * 5)
    assert len(long_gist) <= 60 and long_gist.endswith("…") and long_gist.startswith("Refactor")


def test_claude_codes_own_title_wins_and_custom_beats_ai(
    relay: RelayServer, account: Account
) -> None:
    t = Transcript()
    session_id = new_id()
    with phone_client(relay, account.phone_token) as client:
        push(relay, account.device_token, session_id, t.turn("fix the login page", "Done."))
        assert title_of(client, session_id) == "Fix the login page"
        push(relay, account.device_token, session_id, [t.title("ai-title", "Login page fix")])
        assert title_of(client, session_id) == "Login page fix"
        push(relay, account.device_token, session_id, [t.title("custom-title", "auth-sprint")])
        assert title_of(client, session_id) == "auth-sprint"
        # Claude Code appends its title lines again on resume, in any order: the kind decides.
        later = [t.title("ai-title", "Something else"), *t.turn("more", "ok")]
        push(relay, account.device_token, session_id, later)
        assert title_of(client, session_id) == "auth-sprint"
        push(relay, account.device_token, session_id, [t.title("custom-title", "auth-sprint-2")])
        assert title_of(client, session_id) == "auth-sprint-2"


def test_a_persons_title_is_never_overwritten_and_can_be_given_back(
    relay: RelayServer, account: Account
) -> None:
    t = Transcript()
    session_id = new_id()
    with phone_client(relay, account.phone_token) as client:
        push(relay, account.device_token, session_id, t.turn("set up the CI pipeline", "Done."))
        renamed = client.patch(f"/api/sessions/{session_id}", json={"title": "My CI work"})
        assert renamed.status_code == 200 and renamed.json()["id"] == session_id
        more = [t.title("custom-title", "claude-name"), t.title("ai-title", "AI name")]
        push(relay, account.device_token, session_id, [*more, *t.turn("next step", "ok")])
        assert title_of(client, session_id) == "My CI work"
        assert found(client, "My CI work") == [session_id]  # the index follows a rename
        assert found(client, "pipeline") == []  # the old derived title is gone from the index
        # Forget the person's title: Claude Code's own comes back; the id never changes.
        back = client.delete(f"/api/sessions/{session_id}/title")
        assert back.status_code == 200, back.text
        assert (back.json()["id"], back.json()["title"]) == (session_id, "claude-name")
        other = client.delete(f"/api/sessions/{new_id()}/title")
        assert other.status_code == 404 and other.json()["error"]["code"] == "unknown_session"


def test_rename_function_for_the_cli(relay: RelayServer, account: Account) -> None:
    store = relay.state.store
    session_id = new_id()
    push(relay, account.device_token, session_id, Transcript().turn("tune the kiln", "Done."))
    session = asyncio.run(rename(store, account.account_id, session_id, "  Kiln   work "))
    assert (session.id, session.title) == (session_id, "Kiln work")
    with pytest.raises(BadRequest) as too_long:
        asyncio.run(rename(store, account.account_id, session_id, "k" * 501))
    assert too_long.value.code == "title_too_long"
    with pytest.raises(NotFound):
        asyncio.run(rename(store, relay.account().account_id, session_id, "theirs"))
    assert asyncio.run(rename(store, account.account_id, session_id, None)).title == "Tune the kiln"


# -- search ------------------------------------------------------------------------------------


def test_search_finds_sessions_by_each_named_field(relay: RelayServer, account: Account) -> None:
    by_title, by_summary, by_file, by_tool, by_folder = (new_id() for _ in range(5))
    t = Transcript()
    token = account.device_token
    push(relay, token, by_title, [t.title("custom-title", "Marmoset release notes")])
    push(relay, token, by_summary, [t.title("custom-title", "chat")])
    push(relay, token, by_summary, t.turn("explain the wombat allocator", "It pools pages."))
    read = t.tool("Read", file_path="/work/app/src/capybara_io.py")
    push(relay, token, by_file, t.turn("look at this", "Read it.", read))
    push(relay, token, by_tool, t.turn("fetch the docs", "Fetched.", t.tool("WebFetch", url="x")))
    push(relay, token, by_folder, [t.user("hello")], cwd="/Users/me/code/okapi-service")
    with phone_client(relay, account.phone_token) as client:
        assert found(client, "marmoset") == [by_title]
        assert found(client, "wombat allocator") == [by_summary]
        assert found(client, "capybara_io.py") == [by_file]
        assert found(client, "file:capybara") == [by_file]
        assert found(client, "capy") == [by_file]  # a word prefix is enough
        assert found(client, "tool:WebFetch") == [by_tool]
        assert found(client, "okapi") == [by_folder]
        assert found(client, "folder:okapi-service") == [by_folder]
        assert found(client, "title:wombat") == []  # a field limits where a term may match
        everything = {by_title, by_summary, by_file, by_tool, by_folder}
        today = day_text(time.time()).split(" ")[0]
        assert set(found(client, f"date:{today}", limit=50)) == everything
        assert set(found(client, f'"{today}"', limit=50)) == everything
        # The same words in a phrase only match in that order.
        assert found(client, '"allocator wombat"') == []
        item = search(client, "wombat")["elsewhere"][0]
        assert item["summary"] == "Explain the wombat allocator → It pools pages."
        assert item["summary_kind"] == "turn" and item["mac"] == "test mac"
        assert {"id", "title", "state", "cwd", "device_id", "created_at"} <= set(item)


def test_search_by_mac_follows_the_macs_name(relay: RelayServer, account: Account) -> None:
    session_id = new_id()
    push(relay, account.device_token, session_id, [Transcript().user("hi")], mac_name="Orchard")
    with phone_client(relay, account.phone_token) as client:
        assert found(client, "orchard") == [session_id]
        assert found(client, "mac:orchard") == [session_id]
        # The Mac is renamed (its next hello): the index follows.
        push(relay, account.device_token, session_id, [], mac_name="Birchwood")
        assert found(client, "orchard") == []
        assert found(client, "birchwood") == [session_id]


def test_ranking_puts_a_title_match_first(relay: RelayServer, account: Account) -> None:
    in_title, in_file, in_summary = new_id(), new_id(), new_id()
    t = Transcript()
    token = account.device_token
    write = t.tool("Write", file_path="/work/app/docs/quokka.md", content="…")
    push(relay, token, in_file, [t.title("custom-title", "Docs pass")])
    push(relay, token, in_file, t.turn("tidy the docs", "Tidied.", write))
    push(relay, token, in_summary, [t.title("custom-title", "Research")])
    push(relay, token, in_summary, t.turn("what does a quokka eat?", "Leaves."))
    push(relay, token, in_title, [t.title("custom-title", "Quokka migration plan")])
    with phone_client(relay, account.phone_token) as client:
        ranked = ids(search(client, "quokka")["elsewhere"])
        assert ranked[0] == in_title and set(ranked) == {in_title, in_file, in_summary}
        assert [i["rank"] for i in search(client, "quokka")["elsewhere"]] == [1, 2, 3]


def test_here_and_elsewhere(relay: RelayServer, account: Account) -> None:
    store = relay.state.store
    other_token, _, other_mac = store.create_token(account.account_id, "device", "second mac")
    here_a, here_sub, same_mac_other_folder, other_mac_same_folder = (new_id() for _ in range(4))
    t = Transcript()
    lines = t.turn("work on the gazelle parser", "Done.")
    push(relay, account.device_token, here_a, lines, cwd="/work/a")
    push(relay, account.device_token, here_sub, lines, cwd="/work/a/sub")
    push(relay, account.device_token, same_mac_other_folder, lines, cwd="/work/ab")
    push(relay, other_token, other_mac_same_folder, lines, cwd="/work/a")
    mine = account.device_id
    with phone_client(relay, account.phone_token) as client:
        both = search(client, "gazelle", device_id=mine, cwd="/work/a/")
        assert set(ids(both["here"])) == {here_a, here_sub}
        assert set(ids(both["elsewhere"])) == {same_mac_other_folder, other_mac_same_folder}
        on_mac = search(client, "gazelle", device_id=mine)
        assert set(ids(on_mac["here"])) == {here_a, here_sub, same_mac_other_folder}
        assert ids(on_mac["elsewhere"]) == [other_mac_same_folder]
        in_folder = search(client, "gazelle", cwd="/work/a")
        assert set(ids(in_folder["here"])) == {here_a, here_sub, other_mac_same_folder}
        nowhere = search(client, "gazelle")
        assert nowhere["here"] == [] and len(nowhere["elsewhere"]) == 4
        # Browsing splits the same way, newest activity first.
        browse = search(client, "", device_id=mine, cwd="/work/a")
        assert browse["mode"] == "browse"
        assert ids(browse["here"]) == [here_sub, here_a]
        assert ids(browse["elsewhere"]) == [other_mac_same_folder, same_mac_other_folder]
        limited = search(client, "", limit=1)
        assert len(limited["elsewhere"]) == 1 and limited["has_more"]["elsewhere"] is True
    assert other_mac


def test_filters_for_group_state_dates_and_stage(relay: RelayServer, account: Account) -> None:
    grouped, busy, plain = new_id(), new_id(), new_id()
    t = Transcript()
    lines = t.turn("tune the heron cache", "Tuned.")
    for session_id in (grouped, busy, plain):
        push(relay, account.device_token, session_id, lines)
    with phone_client(relay, account.phone_token) as client:
        assert client.patch(f"/api/sessions/{grouped}", json={"group": "infra"}).status_code == 200
        assert found(client, "heron", group="infra") == [grouped]
        assert set(found(client, "", group="")) == {busy, plain}

        async def with_live_mac() -> None:
            async with mac(relay, account.device_token) as link:
                await link.update(SessionInfo(session_id=busy, state="busy"))
                await asyncio.to_thread(
                    wait_for, lambda: found(client, "heron", state="busy") == [busy]
                )
                assert set(found(client, "heron", state="ended")) == {grouped, plain}
                assert set(found(client, "heron", state="busy,ended")) == {grouped, busy, plain}
                assert found(client, "heron", state="waiting") == []

        asyncio.run(with_live_mac())
        # Once the Mac is gone, its sessions show (and filter) as ended.
        assert set(found(client, "heron", state="ended")) == {grouped, busy, plain}
        today = day_text(time.time()).split(" ")[0]
        tomorrow = day_text(time.time() + 86400).split(" ")[0]
        yesterday = day_text(time.time() - 86400).split(" ")[0]
        assert len(found(client, "heron", since=today, until=today)) == 3
        assert found(client, "heron", since=tomorrow) == []
        assert found(client, "heron", until=yesterday) == []
        assert len(found(client, "heron", since=str(time.time() - 600))) == 3
        refused: list[tuple[dict[str, str | int], str]] = [
            ({"state": "sleeping"}, "bad_state"),
            ({"since": "last tuesday"}, "bad_date"),
            ({"stage": "gone"}, "bad_stage"),
            ({"limit": 0}, "bad_limit"),
            ({"limit": 1000}, "bad_limit"),
        ]
        for params, code in refused:
            response = client.get("/api/search", params={"q": "heron", **params})
            assert response.status_code == 400, (params, response.text)
            assert response.json()["error"]["code"] == code

        # An archived session (features/retention.py's stage) stays searchable and can be filtered.
        def archive(conn: Any) -> None:
            conn.execute(
                "INSERT INTO session_retention (session_id, stage, since, archived_at)"
                " VALUES (?, 'archived', ?, ?)",
                (plain, time.time(), time.time()),
            )

        asyncio.run(_write(relay, archive))
        assert plain in found(client, "heron")
        assert found(client, "heron", stage="archived") == [plain]
        assert set(found(client, "heron", stage="active")) == {grouped, busy}
        assert search(client, "heron", stage="archived")["elsewhere"][0]["stage"] == "archived"


async def _write(relay: RelayServer, job: Callable[[Any], None]) -> None:
    await relay.state.store.write(job)


def test_a_deleted_session_leaves_the_index(relay: RelayServer, account: Account) -> None:
    session_id = new_id()
    push(relay, account.device_token, session_id, Transcript().turn("index the ibis", "Ok."))
    with phone_client(relay, account.phone_token) as client:
        assert found(client, "ibis") == [session_id]

        def delete(conn: Any) -> None:
            for table in ("events", "line_uuids", "conversations"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

        asyncio.run(_write(relay, delete))
        assert found(client, "ibis") == []
    rows = asyncio.run(
        relay.state.store.read(
            "SELECT COUNT(*) FROM session_fts WHERE session_id = ?"
            " UNION ALL SELECT COUNT(*) FROM session_digest WHERE session_id = ?",
            (session_id, session_id),
        )
    )
    assert [r[0] for r in rows] == [0, 0]


def test_accounts_are_isolated(relay: RelayServer) -> None:
    mine, theirs = relay.account(), relay.account()
    my_session, their_session = new_id(), new_id()
    lines = Transcript().turn("migrate the pangolin database", "Migrated.")
    push(relay, mine.device_token, my_session, lines)
    push(relay, theirs.device_token, their_session, lines)
    with phone_client(relay, mine.phone_token) as client:
        assert found(client, "pangolin") == [my_session]
        assert their_session not in found(client, "", limit=100)
        assert found(client, "pangolin", device_id=theirs.device_id) == [my_session]
        other = client.get(f"/api/sessions/{their_session}/summary")
        assert other.status_code == 404
    with phone_client(relay, theirs.phone_token) as client:
        assert found(client, "pangolin") == [their_session]
    with phone_client(relay, None) as anonymous:
        assert anonymous.get("/api/search", params={"q": "pangolin"}).status_code == 401


# Queries a person (or a fuzzer) may type; the second value: the session must be found.
NASTY: list[tuple[str, bool]] = [
    ('"', False),
    ('""', False),
    ('"unbalanced phrase', False),
    ('"pangolin database', True),  # an unclosed quote runs to the end
    ("*", False),
    ("**", False),
    ("pan*", True),
    ("NEAR", False),
    ("NEAR(pangolin database)", False),  # NEAR is a plain word here
    ("pangolin NEAR/2 database", False),
    ("(((", False),
    (")", False),
    ("pangolin) OR (x", False),
    ("AND", False),
    ("pangolin OR", False),
    ("NOT pangolin", False),
    ("-pangolin", True),
    ("^pangolin", True),
    ("title:", False),
    ("title:pangolin", True),
    ("nosuchcolumn:pangolin", False),
    ("{title summary}: pangolin", False),
    ("'; DROP TABLE sessions; --", False),
    ("\x00pangolin", True),
    ("üñíçødé", False),
    ("🙂 pangolin", True),
    ("%_", False),
    ("세션을 검색", False),
    ("p" * 900, False),
    ("pangolin " * 100, True),  # only the first 16 terms count
]


@pytest.mark.parametrize(("query", "must_find"), NASTY)
def test_nasty_queries_are_answered_cleanly(
    relay: RelayServer, account: Account, query: str, must_find: bool
) -> None:
    session_id = new_id()
    push(relay, account.device_token, session_id, Transcript().turn("pangolin database", "Ok."))
    with phone_client(relay, account.phone_token) as client:
        response = client.get("/api/search", params={"q": query})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["mode"] == "search" and isinstance(body["elsewhere"], list)
        if must_find:
            assert ids(body["elsewhere"]) == [session_id], query


def test_a_very_long_query_is_refused_with_a_clear_error(
    relay: RelayServer, account: Account
) -> None:
    with phone_client(relay, account.phone_token) as client:
        response = client.get("/api/search", params={"q": "x" * 10_240})
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "query_too_long" and "1,000" in error["message"]


def test_match_expressions_never_carry_fts_syntax() -> None:
    for query, _ in NASTY:
        expression, terms = match_expression(query)
        assert expression.count('"') % 2 == 0
        assert "(" not in expression and "{" not in expression
        assert len(terms) <= 16
    assert match_expression("***") == ("", [])


# -- summary snapshots -------------------------------------------------------------------------


def test_summary_is_taken_at_turn_end_and_compaction(relay: RelayServer, account: Account) -> None:
    lines = fixture_lines("ij_clear_compact__5d53")
    turn_ends = [
        i for i, x in enumerate(lines) if "stop_hook_summary" in x.text
    ]  # then turn_duration
    compacted = next(i for i, x in enumerate(lines) if '"isCompactSummary":true' in x.text)
    third_prompt = next(i for i, x in enumerate(lines) if '"content":"hello three"' in x.text)
    session_id = new_id()
    conv = "5d5356b2-0124-47ba-a14f-3db705579c69"

    def send(start: int, end: int) -> None:
        push(relay, account.device_token, session_id, lines[start:end], conversation=conv)

    with phone_client(relay, account.phone_token) as client:
        send(0, turn_ends[0])  # the first turn, not ended yet: no snapshot
        assert summary_of(client, session_id)["summary"] == ""
        send(turn_ends[0], turn_ends[0] + 1)
        first = summary_of(client, session_id)
        assert first["summary"] == "Hello one → Hello! This is the mock API. How can I help?"
        assert first["summary_kind"] == "turn" and first["summary_at"]
        send(turn_ends[0] + 1, compacted + 1)
        after = summary_of(client, session_id)
        assert after["summary_kind"] == "compaction"
        assert after["summary"] == "The user exercised the mock API. Current work: Nothing pending."
        assert found(client, "exercised") == [session_id]  # the summary is searched
        send(compacted + 1, third_prompt + 1)  # a new prompt, its turn still open
        assert summary_of(client, session_id)["summary_kind"] == "compaction"
        send(third_prompt + 1, len(lines))
        last = summary_of(client, session_id)
        assert last["summary_kind"] == "turn"
        assert last["summary"] == (
            "The user exercised the mock API. Current work: Nothing pending. · Latest: "
            "Hello three → Hello! This is the mock API. How can I help?"
        )
        # Reading it again changes nothing: never regenerated on open.
        assert summary_of(client, session_id) == last
        assert search(client, "exercised")["elsewhere"][0]["summary"] == last["summary"]


def test_session_events_carry_a_new_summary(relay: RelayServer, account: Account) -> None:
    # A phone showing lists keeps them current from the account stream alone.
    session_id = new_id()
    t = Transcript()
    headers = {"Authorization": f"Bearer {account.phone_token}"}

    async def run() -> tuple[list[Any], list[Any]]:
        async with (
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as c,
            c.stream("GET", "/api/stream") as r,
        ):
            reader = SSEReader(r)
            assert (await reader.next()).event == "snapshot"
            async with mac(relay, account.device_token) as link:

                async def summaries_seen(count: int) -> list[Any]:
                    seen: list[Any] = []
                    while len(seen) < count:
                        msg = await reader.next(10)
                        body = json.loads(msg.data)
                        if msg.event == "session" and body["id"] == session_id:
                            seen.append(body.get("summary"))
                    return seen

                await link.send_lines(session_id, "conv", [t.user("map the heron nests")], cwd="/w")
                first = await summaries_seen(1)
                await link.send_lines(session_id, "conv", [t.say("Mapped."), t.turn_end()])
                second = await summaries_seen(1)
                # Ended mid-turn: the end-of-session snapshot is published too.
                await link.send_lines(session_id, "conv", [t.user("count the eggs")])
                await summaries_seen(1)
                await link.update(SessionInfo(session_id=session_id, state="ended"))
                after_end = await summaries_seen(1)
                while after_end[-1] == second[0]:  # the state change, then the snapshot
                    after_end += await summaries_seen(1)
                return [first, second], after_end

    (first, second), after_end = asyncio.run(run())
    assert first == [None]  # no snapshot yet: the key is left out, the phone keeps its own
    assert second == ["Map the heron nests → Mapped."]
    assert after_end[-1] == "Count the eggs"
    with phone_client(relay, account.phone_token) as client:
        assert summary_of(client, session_id)["summary"] == "Count the eggs"


def test_summary_names_the_files_of_the_turn(relay: RelayServer, account: Account) -> None:
    session_id = new_id()
    cwd = "/tmp/realclaude/work-e_write_edit_permission_80x24"  # where it was captured
    lines = fixture_lines("e_write_edit_permission__17b3")
    push(relay, account.device_token, session_id, lines, cwd=cwd)
    with phone_client(relay, account.phone_token) as client:
        body = summary_of(client, session_id)
        assert body["summary"].startswith("WRITE_FILE again → Done.") and body["summary"].endswith(
            " · hello.txt"
        )
        assert body["files"] == ["hello.txt"] and set(body["tools"]) == {"Write", "Read", "Edit"}


def test_summary_is_taken_when_a_session_ends_mid_turn(
    relay: RelayServer, account: Account
) -> None:
    session_id = new_id()
    t = Transcript()
    lines = [*t.turn("plan the osprey rollout", "Planned."), t.user("now ship it to staging")]
    lines.append(t.say("Shipping to staging now."))

    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "conv", lines, cwd="/w")
            await link.update(SessionInfo(session_id=session_id, state="busy"))
            await link.update(SessionInfo(session_id=session_id, state="ended"))
            with phone_client(relay, account.phone_token) as client:
                await asyncio.to_thread(
                    wait_for, lambda: summary_of(client, session_id)["summary_kind"] == "end"
                )

    asyncio.run(run())
    with phone_client(relay, account.phone_token) as client:
        body = summary_of(client, session_id)
        assert body["summary"] == "Now ship it to staging → Shipping to staging now."


# -- PostgreSQL --------------------------------------------------------------------------------


def test_postgres_query_words_are_made_as_fts5_makes_them() -> None:
    # Typed terms, parsed once for both databases, as PostgreSQL tsquery text.
    terms = parse_query('file:capybara_io.py "turn end" Crème title:"Plan B"')
    assert terms == [
        Term("capybara_io py", "files"),
        Term("turn end", None, phrase=True),
        Term("Crème"),
        Term("Plan B", "title", phrase=True),
    ]
    assert [pg_tsquery(t) for t in terms] == [
        "'capybara':B <-> 'io':B <-> 'py':*B",  # a word prefix, in the class of files
        "'turn' <-> 'end'",  # a phrase: exact
        "'Creme':*",  # diacritics dropped (the database folds case)
        "'Plan':A <-> 'B':A",
    ]
    assert pg_tsquery(Term("capybara_io py", "files"), labelled=False) == (
        "'capybara' <-> 'io' <-> 'py':*"
    )
    assert pg_tsquery(Term("_")) is None  # no word in it: it matches nothing, as in FTS5
    assert pg_words("/Users/me/okapi-service/docs/quokka.md → Über") == [
        "Users", "me", "okapi", "service", "docs", "quokka", "md", "→", "Uber"
    ]  # fmt: skip


class Index:
    """A store on one database with the titles and search observers, as the relay runs them, and
    the relay state ``search`` answers from (what GET /api/search answers)."""

    def __init__(self, data_dir: Path, **settings: Any) -> None:
        config = configmod.load({"data_dir": str(data_dir), **settings}, environ={})
        self.store = Store(config)
        self.store.add_observer(TitleObserver())
        self.store.add_observer(SearchIndex(self.store))
        self.state = RelayState(config=config, store=self.store, hub=Hub(16))
        self.account_id = self.store.ensure_account()
        self.device_id = self.store.create_token(self.account_id, "device", "test mac")[2]

    async def push(self, session_id: str, lines: list[LineRecord], cwd: str) -> None:
        await self.store.ingest(self.account_id, self.device_id, session_id, "conv", lines, cwd)

    async def search(self, query: str, **filters: Any) -> dict[str, Any]:
        return await search_sessions(self.state, self.account_id, query, Filters(**filters))


def test_postgres_answers_as_sqlite_does(tmp_path: Path, postgres: PostgresCluster) -> None:
    # The same sessions on both databases: every query answers the same sessions in the same
    # order (a title match above a body match, word prefixes, phrases, fields, places, limits).
    t = Transcript()
    write = t.tool("Write", file_path="/work/app/docs/quokka.md", content="…")
    pushes: list[tuple[str, list[LineRecord], str]] = [
        ("file", [t.title("custom-title", "Docs pass")], "/work/app"),
        ("file", t.turn("tidy the docs", "Tidied.", write), "/work/app"),
        ("summary", [t.title("custom-title", "Research")], "/work/zoo"),
        ("summary", t.turn("what does a quokka eat?", "Leaves."), "/work/zoo"),
        ("title", [t.title("custom-title", "Quokka migration plan")], "/work/app"),
        ("nest", [t.title("custom-title", "Heron nest")], "/work/birds"),
        ("nest", t.turn("count the eggs", "Four."), "/work/birds"),
        ("oven", t.turn("tune the crème brûlée oven", "Tuned.", t.tool("Bash")), "/srv/x"),
    ]
    queries: list[tuple[str, dict[str, Any]]] = [
        ("quokka", {}),
        ("quo", {}),  # a word prefix
        ("q", {}),
        ("title:quokka", {}),
        ("file:quokka", {}),
        ("summary:quokka", {}),
        ("folder:app", {}),
        ("tool:bash", {}),
        ('"migration plan"', {}),
        ('"plan migration"', {}),
        ('"nest count"', {}),  # the title's last word, the summary's first: not a phrase
        ("heron eggs", {}),  # every term, each in a field of its own
        ("creme brulee", {}),
        ("CRÈME", {}),
        ("docs", {"cwd": "/work/app"}),
        ("", {}),
        ("", {"cwd": "/work/birds", "limit": 1}),
        *((query, {}) for query, _ in NASTY),
    ]

    async def answers(index: Index) -> list[Any]:
        sessions = {name: new_id() for name, _, _ in pushes}
        for name, lines, cwd in pushes:
            await index.push(sessions[name], lines, cwd)
        named = {session_id: name for name, session_id in sessions.items()}
        bodies = [await index.search(query, **filters) for query, filters in queries]
        return [
            (
                [named[i] for i in ids(b["here"])],
                [named[i] for i in ids(b["elsewhere"])],
                b["has_more"],
                b["terms"],
            )
            for b in bodies
        ]

    found: dict[str, list[Any]] = {}
    for settings in ({"database_url": postgres.new_database("search")}, {}):
        index = Index(tmp_path / f"relay{len(found)}", **settings)
        try:
            found[index.store.dialect.name] = asyncio.run(answers(index))
        finally:
            index.store.close()
    for (query, filters), pg, lite in zip(queries, found["postgres"], found["sqlite"], strict=True):
        assert pg == lite, (query, filters)
    elsewhere = {q: a[1] for (q, _), a in zip(queries, found["postgres"], strict=True)}
    assert elsewhere["quokka"] == elsewhere["quo"] == ["title", "file", "summary"]
    assert elsewhere["title:quokka"] == ["title"] and elsewhere["file:quokka"] == ["file"]
    assert elsewhere['"nest count"'] == [] and elsewhere["heron eggs"] == ["nest"]
    assert elsewhere["CRÈME"] == elsewhere["creme brulee"] == ["oven"]
