"""The messages relay nodes send each other (relay/nodebus.py): each one read back as it was
sent, and any text a node cannot read answered None and logged, never raised."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.nodebus import (
    AccountUpdate,
    BusMessage,
    LiveSession,
    MacClose,
    MacCommand,
    MacHistory,
    MacLinked,
    MacUnlinked,
    Nudge,
    RequestAnswer,
    Resync,
    Revoke,
    address,
    addressed,
    bus_text,
    events_notice,
    read_answer,
    read_bus,
    read_events,
    read_request,
)
from wire.protocol import SessionInfo

PROPERTIES = settings(max_examples=200, derandomize=True, database=None, deadline=None)

MESSAGES: list[BusMessage] = [
    AccountUpdate(account_id="acct_1", event="session", data={"id": "s1", "title": "Fix it"}),
    LiveSession(
        account_id="acct_1", device_id="mac_1", info=SessionInfo(session_id="s1", state="busy")
    ),
    MacLinked(device_id="mac_1", account_id="acct_1", name="studio", node_id="node-b"),
    MacUnlinked(device_id="mac_1", node_id="node-b"),
    Resync(session_id="s1", reason="history_restarted"),
    Revoke(token_hashes=["h1", "h2"]),
    Nudge(topic="outbox", session_id="s1"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.kind)
def test_every_bus_message_reads_back_as_sent_with_its_sender(message: BusMessage) -> None:
    text = bus_text(message, "node-a")
    assert json.loads(text)["kind"] == message.kind  # a readable name, not a letter
    read = read_bus(text)
    assert read == message.model_copy(update={"sender": "node-a"})


def test_requests_and_answers_read_back_as_sent() -> None:
    requests = [
        MacCommand(message={"type": "command", "command_id": "c1"}, timeout=5.0),
        MacHistory(session_id="s1", before=10, limit=5, timeout=2.0),
        MacClose(code=4001, reason="revoked"),
    ]
    for request in requests:
        assert read_request(request.model_dump_json()) == request
    answer = RequestAnswer(ok={"ok": True})
    assert read_answer(answer.model_dump_json(exclude_none=True)) == answer
    assert addressed(address("node-b", "r1")) == ("node-b", "r1")


def test_events_travel_inline_when_they_fit_and_as_seqs_alone_when_not() -> None:
    small = [(1, '{"seq":1,"text":"é"}'), (2, '{"seq":2}')]
    notice = read_events(events_notice("node-a", "s1", small, 7900))
    assert notice is not None and notice.sender == "node-a"
    assert (notice.session_id, notice.first, notice.last) == ("s1", 1, 2)
    assert notice.events == [{"seq": 1, "text": "é"}, {"seq": 2}]
    large = [(seq, json.dumps({"seq": seq, "text": "x" * 500})) for seq in range(3, 40)]
    text = events_notice("node-a", "s1", large, 7900)
    assert len(text.encode()) <= 7900
    notice = read_events(text)
    assert notice is not None and notice.events is None and (notice.first, notice.last) == (3, 39)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "{}",
        '{"kind": "revoke"}',  # a field missing
        '{"kind": "no such kind", "session_id": "s1"}',
        '{"t": "acct", "a": "acct_1", "e": "session", "b": {}}',  # an older node's message
        '{"kind": "resync", "session_id": 7, "reason": "r"}',
        "[1, 2, 3]",
    ],
)
def test_a_message_a_node_cannot_read_is_logged_and_skipped(
    text: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="relay.cluster"):
        assert read_bus(text) is None
        assert read_events(text) is None
        assert read_request(text) is None
        assert read_answer(text).error is not None
    assert sum("unreadable" in r.getMessage() for r in caplog.records) == 4


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@PROPERTIES
@given(
    text=st.one_of(
        st.text(max_size=200),
        json_values.map(json.dumps),
        st.dictionaries(
            st.sampled_from(["kind", "sender", "session_id", "reason", "token_hashes", "topic"]),
            json_values,
            max_size=5,
        ).map(json.dumps),
    )
)
def test_no_text_raises_from_a_reader(text: str) -> None:
    read_bus(text)
    read_events(text)
    read_request(text)
    assert isinstance(read_answer(text), RequestAnswer)
