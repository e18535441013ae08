"""wire/moved.py: what a moved session's record and files may say (both the relay and the target
check it). Hypothesis: any record from another Mac is refused with a code, or what is believed of
it names only UUIDs that arrived, a plain model and no rule that allows."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.moved import (
    MAX_RECORD_BYTES,
    RecordProblem,
    files_problem,
    is_uuid,
    read_record,
    restricting,
)
from wire.protocol import MODEL_NAME

SID, CONV, FORK = (str(uuid.uuid4()) for _ in range(3))
ATTACHMENT = "a" + "0" * 24
BASE_FILES = {"folder.bin": 10, "session.json": 1, f"transcripts/{CONV}.jsonl": 5}


def raw(**fields: Any) -> bytes:
    data: dict[str, Any] = {"id": SID, "conversation_id": CONV, "conversation_ids": [CONV]}
    data.update(fields)
    return json.dumps(data).encode()


def held(state: str = "held", size: int = 67, attachment: str = ATTACHMENT) -> dict[str, Any]:
    return {
        "id": "m-0001",
        "text": "see this",
        "state": state,
        "attachments": [
            {"id": attachment, "name": "p.png", "media_type": "image/png", "size": size}
        ],
    }


def test_the_files_of_a_move_are_only_what_a_move_carries() -> None:
    good = [
        "folder.bin",
        "session.json",
        "events.jsonl",
        f"transcripts/{CONV}.jsonl",
        f"transcripts/{CONV}/subagents/agent-a1.jsonl",
        "transcripts/memory/notes.md",
        f"attachments/{ATTACHMENT}.png",
    ]
    assert files_problem(good) is None
    for bad in (
        "notes.txt",
        "transcripts/x.jsonl",
        f"transcripts/{CONV.upper()}.jsonl",
        "transcripts/other/file",
        f"transcripts/{CONV}",
        f"attachments/{ATTACHMENT}.exe",
        "attachments/a1.png",
        f"attachments/{ATTACHMENT}.png/x",
    ):
        assert files_problem([*good, bad]), bad
    assert files_problem(["session.json"])  # no folder


@pytest.mark.parametrize(
    ("fields", "files", "code"),
    [
        ({"id": str(uuid.uuid4())}, {}, "bad_record"),
        ({"conversation_id": "../../.ssh/id"}, {}, "bad_record"),
        ({"conversation_id": CONV.upper()}, {}, "bad_record"),
        ({"conversation_ids": [CONV, "x/../y"]}, {}, "bad_record"),
        ({"conversation_ids": "all"}, {}, "bad_record"),
        ({"fork_conversation": "/etc/passwd"}, {}, "bad_record"),
        ({"parent_id": 7}, {}, "bad_record"),
        ({"conversation_id": FORK, "conversation_ids": [FORK]}, {}, "bad_record"),  # unnamed
        ({"conversation_id": SID, "fork_conversation": FORK}, {}, "bad_record"),
        ({"policy": {"tools": {"Bash x": "deny"}}}, {}, "bad_record"),
        ({"policy": "allow everything"}, {}, "bad_record"),
        ({"held": [{"id": "../x", "text": "hi"}]}, {}, "bad_record"),
        ({"held": [{"id": "m-1", "text": "hi", "state": "sent"}]}, {}, "bad_record"),
        ({"held": [held(attachment="../../sessions")]}, {}, "bad_record"),
        ({"held": [held()]}, {}, "attachment_missing"),
        ({"held": [held()]}, {f"attachments/{ATTACHMENT}.png": 68}, "bad_attachment"),
        ({}, {f"attachments/{ATTACHMENT}.png": 67}, "bad_attachment"),
        ({}, {"../session.json": 1}, "bad_record"),
    ],
)
def test_a_record_that_cannot_be_believed_is_refused_with_its_code(
    fields: dict[str, Any], files: dict[str, int], code: str
) -> None:
    with pytest.raises(RecordProblem) as refused:
        read_record(raw(**fields), SID, {**BASE_FILES, **files})
    assert refused.value.code == code
    assert str(refused.value)


def test_what_is_believed_of_an_honest_record() -> None:
    files = {
        **BASE_FILES,
        f"transcripts/{FORK}.jsonl": 3,
        f"attachments/{ATTACHMENT}.png": 67,
    }
    gone = str(uuid.uuid4())  # its transcript was deleted on the other Mac: not named on
    checked = read_record(
        raw(
            conversation_ids=[gone, CONV],
            fork_conversation=FORK,
            parent_id=str(uuid.uuid4()),
            permission_mode="bypassPermissions",
            model="opus[1m]",
            held=[held(state="typing"), {**held(state="typed"), "id": "m-0002"}],
            alive=True,
            created_at=float("nan"),
            branch="feature/x",
            secret="theirs",
        ),
        SID,
        files,
    )
    assert checked.conversation_ids == (CONV,)
    assert checked.permission_mode == "bypassPermissions"  # said; agent/moving.py decides
    assert (checked.model, checked.branch, checked.created_at) == ("opus[1m]", "feature/x", 0.0)
    assert [m.state for m in checked.held] == ["held", "typed"]
    assert list(checked.attachment_files()) == [f"attachments/{ATTACHMENT}.png"]
    # a session never prompted: no transcript, it starts afresh under its own id
    fresh = read_record(
        raw(conversation_id=SID, conversation_ids=[SID]), SID, {"folder.bin": 1, "session.json": 1}
    )
    assert fresh.conversation_ids == (SID,)


def test_the_resume_scope_and_handoff_move_with_the_session_when_believable() -> None:
    files = {**BASE_FILES}
    kept = read_record(
        raw(resume_scope="fresh", handoff="## Decisions\n- use sqlite", handoff_decisions=1),
        SID,
        files,
    )
    assert (kept.resume_scope, kept.handoff, kept.handoff_decisions) == (
        "fresh",
        "## Decisions\n- use sqlite",
        1,
    )
    odd = read_record(
        raw(resume_scope="everything", handoff=["x"], handoff_decisions=True), SID, files
    )
    assert (odd.resume_scope, odd.handoff, odd.handoff_decisions) == (None, None, 0)
    huge = read_record(raw(handoff="x" * 100_001, handoff_decisions=-1), SID, files)
    assert (huge.handoff, huge.handoff_decisions) == (None, 0)


def test_a_record_too_big_or_not_an_object_is_refused() -> None:
    for body in (b"x" * (MAX_RECORD_BYTES + 1), b"[1]", b"\xff", b""):
        with pytest.raises(RecordProblem):
            read_record(body, SID, BASE_FILES)


def test_a_policy_from_a_move_keeps_only_what_restricts() -> None:
    assert restricting(
        {
            "allow_all": True,
            "allow_all_until": 9e9,
            "categories": {"read": "allow", "execute": "ask", "web": "deny"},
            "tools": {"Bash": "allow", "mcp__x__y": "deny"},
        }
    ) == {
        "allow_all": False,
        "categories": {"execute": "ask", "web": "deny"},
        "tools": {"mcp__x__y": "deny"},
    }
    assert (
        restricting(None)
        == restricting({})
        == {
            "allow_all": False,
            "categories": {},
            "tools": {},
        }
    )


hostile_text = st.one_of(
    st.sampled_from(
        [SID, CONV, FORK, "../../x", "/etc/passwd", "--yolo", "opus", "bypassPermissions", ""]
    ),
    st.text(max_size=20),
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=True),
    hostile_text,
    st.lists(hostile_text, max_size=4),
    st.dictionaries(hostile_text, st.sampled_from(["allow", "ask", "deny", 1]), max_size=3),
)
FIELDS = [
    "id",
    "conversation_id",
    "conversation_ids",
    "fork_conversation",
    "parent_id",
    "permission_mode",
    "model",
    "policy",
    "alive",
    "created_at",
    "branch",
    "held",
]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    record=st.fixed_dictionaries({}, optional={f: values for f in FIELDS}),
    arrived=st.lists(st.sampled_from([CONV, FORK, SID, "memory/m.md"]), max_size=3),
)
def test_any_record_is_refused_or_believed_only_for_what_arrived(
    record: dict[str, Any], arrived: list[str]
) -> None:
    files = {"folder.bin": 1, "session.json": 1}
    for name in arrived:
        files[f"transcripts/{name}" if "/" in name else f"transcripts/{name}.jsonl"] = 1
    record.setdefault("id", SID)
    try:
        checked = read_record(json.dumps(record).encode(), SID, files)
    except RecordProblem as exc:
        assert exc.code == "bad_record"
        return
    came = {c for c in arrived if "/" not in c}
    assert checked.id == SID
    for conversation in (checked.conversation_id, checked.fork_conversation, checked.parent_id):
        assert conversation is None or is_uuid(conversation)
    assert checked.conversation_id in {None, SID, *came}
    assert set(checked.conversation_ids) <= {*came, checked.conversation_id}
    assert checked.model is None or re.match(MODEL_NAME, checked.model)
    policy = checked.policy
    assert policy["allow_all"] is False
    assert "allow" not in {*policy["categories"].values(), *policy["tools"].values()}
