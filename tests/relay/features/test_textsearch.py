"""Search in conversations (relay/features/textsearch.py): the messages' own words, what the page
offers when the session search finds nothing (issue 22, item 14)."""

from __future__ import annotations

import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from relay.features.textsearch import HITS_PER_SESSION, hits_of, like_pattern, snippet
from tests.support.relay import Account, RelayServer
from tests.support.web import (
    LoopThread,
    ScriptedMac,
    assistant_line,
    new_sid,
    relay_client,
    user_line,
)


@given(st.text(min_size=1, max_size=40))
def test_a_pattern_takes_the_query_literally(query: str) -> None:
    pattern = like_pattern(query)
    body = pattern[len('%"text":"%') : -1]
    # every % and _ of the query is escaped; the pattern's own are only at its ends
    unescaped = body.replace("\\\\", "").replace("\\%", "").replace("\\_", "")
    assert "%" not in unescaped and "_" not in unescaped


@given(st.text(max_size=300), st.text(min_size=1, max_size=20), st.text(max_size=300))
def test_a_snippet_holds_the_match_and_is_bounded(before: str, query: str, after: str) -> None:
    found = snippet(before + query + after, query)
    assert found is not None
    assert len(found) <= len(query) + 2 * 60 + 2 + len(query)
    assert snippet(before + after, query) is None or query.lower() in (before + after).lower()


def test_hits_group_by_session_and_skip_events_without_the_words() -> None:
    rows = [
        ("s1", 9, json.dumps({"kind": "assistant", "text": "the Parser is fixed now"})),
        ("s1", 8, json.dumps({"kind": "tool_use", "text": "parser", "tool": "Edit"})),
        ("s1", 7, json.dumps({"kind": "user", "text": "please look at the parser"})),
        ("s2", 3, json.dumps({"kind": "user", "text": "no match here", "title": "parser"})),
        ("s3", 2, "not json"),
    ] + [("s4", n, json.dumps({"kind": "user", "text": f"parser {n}"})) for n in range(6)]
    found = hits_of(rows, "parser")
    assert [s["session_id"] for s in found] == ["s1", "s4"]
    assert [h["seq"] for h in found[0]["hits"]] == [9, 7]
    assert found[0]["hits"][0]["snippet"] == "the Parser is fixed now"
    assert len(found[1]["hits"]) == HITS_PER_SESSION


def test_the_route_finds_words_in_this_accounts_messages_only(
    relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    other = relay.account()
    other_mac = ScriptedMac(relay, other.device_token, loop).connect()
    try:
        sid = new_sid()
        mac.send_json_lines(
            sid,
            [
                user_line("why does the flux capacitor overheat?", str(uuid.uuid4())),
                assistant_line(
                    "The FLUX capacitor needs a 100% duty cycle_limit.", str(uuid.uuid4())
                ),
            ],
        )
        other_mac.send_json_lines(new_sid(), [user_line("flux capacitor too", str(uuid.uuid4()))])
        with relay_client(relay, account) as client:
            body = client.get("/api/search/text", params={"q": "Flux  Capacitor"}).json()
            assert body["query"] == "Flux Capacitor" and not body["more"]
            [found] = body["sessions"]
            assert found["session_id"] == sid
            assert [h["kind"] for h in found["hits"]] == ["assistant", "user"]
            # % and _ are letters here, not wildcards
            assert client.get("/api/search/text", params={"q": "100%"}).json()["sessions"]
            assert not client.get("/api/search/text", params={"q": "1%0"}).json()["sessions"]
            assert client.get("/api/search/text", params={"q": "e_l"}).json()["sessions"]
            assert not client.get("/api/search/text", params={"q": "e_x"}).json()["sessions"]
            short = client.get("/api/search/text", params={"q": " f "})
            assert short.status_code == 400 and short.json()["error"]["code"] == "query_too_short"
            long = client.get("/api/search/text", params={"q": "x" * 201})
            assert long.json()["error"]["code"] == "query_too_long"
    finally:
        mac.close()
        other_mac.close()
