"""relay.recent_work: the files a session touched and its last exchange, from stored events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.recent_work import (
    HANDOFF_OPENING,
    Exchange,
    files_touched,
    is_handoff,
    last_exchange,
)
from tests.support.transcripts import (
    assistant_line,
    prompt_line,
    stored_events,
    tool_use_line,
    transcript,
)

WORK = "/tmp/realclaude/work-e_write_edit_permission_80x24"


def test_files_touched_by_the_captured_write_and_edit() -> None:
    events = stored_events(transcript("e_write_edit_permission"))
    assert files_touched(events) == (f"{WORK}/hello.txt",)


def test_files_are_ordered_by_their_latest_use_and_the_newest_kept() -> None:
    events = stored_events(
        tool_use_line("Read", {"file_path": "/w/a.py"}, "t1"),
        tool_use_line("Edit", {"file_path": "/w/b.py"}, "t2"),
        tool_use_line("Grep", {"pattern": "x", "path": "/w"}, "t3"),  # a folder searched
        tool_use_line("NotebookEdit", {"notebook_path": "/w/n.ipynb"}, "t4"),
        tool_use_line("Write", {"file_path": "/w/a.py"}, "t5"),
    )
    assert files_touched(events) == ("/w/b.py", "/w/n.ipynb", "/w/a.py")
    assert files_touched(events, keep=2) == ("/w/n.ipynb", "/w/a.py")
    assert files_touched(events, keep=0) == ()


def test_the_last_exchange_of_a_captured_session() -> None:
    events = stored_events(transcript("e_write_edit_permission"))
    exchange = last_exchange(events)
    assert [(p.role, p.text[:40]) for p in exchange.pieces] == [
        ("person", "WRITE_FILE again"),
        ("claude", "I'll create the file."),
        ("claude", "Done. Tool result was: The file /tmp/rea"),
    ]
    assert all(p.source.seq is not None for p in exchange.pieces)
    assert Exchange.from_json(exchange.to_json()) == exchange


def test_a_subagents_texts_are_not_the_exchange() -> None:
    main = stored_events(transcript("m_subagent"))
    exchange = last_exchange(main)
    assert exchange.pieces and exchange.pieces[0].role == "person"
    assert all(
        next(e for e in main if e.seq == p.source.seq).agent_id is None for p in exchange.pieces
    )


def test_a_handoff_prompt_is_left_out_of_the_exchange() -> None:
    events = stored_events(
        prompt_line("fix the parser"),
        assistant_line("Fixed."),
        prompt_line(f"{HANDOFF_OPENING}\n## Decisions\n- answered: Blue"),
        assistant_line("Read the handoff; ready."),
    )
    assert [(p.role, p.text) for p in last_exchange(events).pieces] == [
        ("claude", "Read the handoff; ready.")
    ]


def test_a_handoff_claude_code_wrapped_as_pasted_content_is_left_out_too() -> None:
    # As the real 2.1.332 writes a long paste (seen in tests/e2e/test_resume_scope.py).
    wrapped = (
        f'\n\n<pasted_content id="3dd1">\n{HANDOFF_OPENING}\n## Decisions\n- answered: Blue'
        '\n</pasted_content id="3dd1">\n'
    )
    events = stored_events(prompt_line(wrapped), assistant_line("Ready."))
    assert [(p.role, p.text) for p in last_exchange(events).pieces] == [("claude", "Ready.")]
    assert is_handoff(wrapped) and is_handoff(HANDOFF_OPENING)
    assert not is_handoff('<pasted_content id="1">\nplease review this') and not is_handoff("")


@pytest.mark.parametrize(
    "data",
    [None, {}, [1], [{"role": "robot", "text": "x", "source": {}}], [{"role": "person"}]],
)
def test_a_stored_exchange_that_is_not_one_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        Exchange.from_json(data)


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(st.text(max_size=200), st.text(alphabet="0123456789abcdef", min_size=1, max_size=8))
def test_a_handoff_is_known_with_or_without_the_wrapper_and_nothing_else_is(
    rest: str, paste_id: str
) -> None:
    typed = HANDOFF_OPENING + rest
    wrapped = f'\n\n<pasted_content id="{paste_id}">\n{typed}\n</pasted_content id="{paste_id}">\n'
    assert is_handoff(typed) and is_handoff(wrapped)
    assert (
        is_handoff(rest) == rest.lstrip().startswith(HANDOFF_OPENING) or "<pasted_content" in rest
    )
