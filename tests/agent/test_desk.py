"""agent.desk: the Mac's Claude Code conversations from their transcripts and session files, with
the conversation captured at the desk from the real 2.1.332 and synthetic ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.desk import (
    MAX_CONVERSATIONS,
    MAX_FILES,
    MAX_TITLE_CHARS,
    TranscriptFile,
    list_conversations,
    prompt_gist,
)
from tests.support.paths import FIXTURES

DESK = FIXTURES / "claude" / "2.1.332" / "desk" / "life1"
CID = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
SLUG = "-tmp-cap332-work-desk-repo-v2"
CWD = "/tmp/cap332/work/desk_repo.v2"
LINES = (DESK / f"{CID}.jsonl").read_text(encoding="utf-8").splitlines()
FILES: dict[str, Any] = json.loads((DESK / "files.json").read_text(encoding="utf-8"))
PROPS = settings(max_examples=100, derandomize=True, database=None, deadline=None)


def _sessions(moment: str) -> list[str]:
    return [json.dumps(v) for k, v in FILES[moment].items() if k.endswith(".json")]


def _captured(head: int = 200, tail: int = 200, mtime: float = 1796405175.0) -> TranscriptFile:
    return TranscriptFile(
        SLUG, f"{CID}.jsonl", 31_337, mtime, LINES[:head], LINES[len(LINES) - tail :]
    )


def _line(**fields: Any) -> str:
    return json.dumps(fields)


def _prompt(text: str, at: str, cwd: str = "/work/app", **more: Any) -> str:
    return _line(
        type="user",
        message={"role": "user", "content": text},
        timestamp=at,
        cwd=cwd,
        gitBranch="main",
        version="2.1.332",
        **more,
    )


def _file(
    cid: str, lines: list[str], mtime: float = 1.0, slug: str = "-work-app"
) -> TranscriptFile:
    return TranscriptFile(slug, f"{cid}.jsonl", 100, mtime, lines, lines)


def _id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def test_the_conversation_started_at_the_desk() -> None:
    listing = list_conversations([_captured()], _sessions("sessions_dir_busy"), {6564})
    (folder,) = listing.folders
    assert folder.cwd == CWD
    (c,) = folder.conversations
    assert (c.id, c.slug, c.cwd) == (CID, SLUG, CWD)
    # /rename's custom-title beats the ai-title written before it
    assert (c.title, c.title_source) == ("Desk work on feature", "custom")
    assert (c.git_branch, c.version, c.size) == ("feature/desk-work", "2.1.332", 31_337)
    # the newest line's time, not the file's mtime: 'SLOW please' interrupted at 17:26:13.909Z
    assert c.last_activity == 1796405173.909
    assert (c.live, c.live_pid, c.live_status, c.by_bridge) == (True, 6564, "busy", False)
    assert (listing.found, listing.truncated) == (1, False)


def test_live_only_while_its_claude_runs() -> None:
    # the session file names it but that pid is gone (a crash leaves the file)
    dead = list_conversations([_captured()], _sessions("sessions_dir_busy"), {999})
    assert not dead.folders[0].conversations[0].live
    # after /exit Claude Code removed the file
    gone = list_conversations([_captured()], _sessions("sessions_dir_after_exit"), {6564})
    assert not gone.folders[0].conversations[0].live
    # the resumed life: a new pid names the same conversation
    again = list_conversations([_captured()], _sessions("sessions_dir_after_compact"), {7879})
    assert again.folders[0].conversations[0].live_pid == 7879


def test_the_bridge_s_own_conversations_are_marked() -> None:
    got = list_conversations([_captured()], bridge_ids={CID})
    assert got.folders[0].conversations[0].by_bridge


def test_titles_from_the_head_alone_and_from_the_tail() -> None:
    # before the /rename only the ai-title is there
    early = list_conversations([_captured(head=20, tail=0)]).folders[0].conversations[0]
    assert (early.title, early.title_source) == ("Mock session title", "ai")
    # a long conversation: the head has the first prompt, the tail the latest title
    far = TranscriptFile(
        SLUG, f"{CID}.jsonl", 10**9, 1.0, LINES[:6], LINES[-14:]
    )  # from /rename on
    late = list_conversations([far]).folders[0].conversations[0]
    assert late.title_source == "custom" and late.cwd == CWD


def test_a_conversation_without_a_title_is_named_by_its_first_typed_prompt() -> None:
    lines = [
        _line(type="mode", mode="normal", sessionId=_id(1)),
        _prompt("<local-command-caveat>Caveat</local-command-caveat>", "2026-01-01T10:00:00Z"),
        _prompt("/model opus", "2026-01-01T10:00:01Z"),
        _prompt("a reminder", "2026-01-01T10:00:02Z", isMeta=True),
        _prompt("Fix the flaky upload test\nIt fails on CI since Monday", "2026-01-01T10:00:03Z"),
        _prompt("and then the docs", "2026-01-01T10:05:00Z"),
    ]
    c = list_conversations([_file(_id(1), lines)]).folders[0].conversations[0]
    assert (c.title, c.title_source) == ("Fix the flaky upload test", "prompt")
    summary = [*lines, _line(type="summary", summary="Upload test fixed", leafUuid="x")]
    s = list_conversations([_file(_id(1), summary)]).folders[0].conversations[0]
    assert (s.title, s.title_source) == ("Upload test fixed", "summary")
    bare = list_conversations([_file(_id(1), lines[:4])]).folders[0].conversations[0]
    assert (bare.title, bare.title_source) == ("", "none")


def test_prompt_gist_is_cut_at_a_word() -> None:
    long = "Refactor " + "the payment module " * 10
    gist = prompt_gist(long)
    assert len(gist) <= MAX_TITLE_CHARS and gist.endswith("…") and gist.startswith("Refactor the")
    assert not gist[:-1].endswith(" ")
    assert prompt_gist("\n\n  two   spaces\tand a tab \n next") == "two spaces and a tab"


def test_newest_first_per_folder_with_the_folder_from_the_lines() -> None:
    long_cwd = "/Users/me/" + "deep/" * 60 + "project"
    long_slug = long_cwd.replace("/", "-")[:200] + "-1a2b3c"  # Claude Code cuts and hashes it
    files = [
        _file(_id(1), [_prompt("old app work", "2026-01-01T10:00:00Z")], mtime=50),
        _file(_id(2), [_prompt("newest", "2026-01-03T10:00:00Z", cwd="/work/site")], mtime=40),
        _file(_id(3), [_prompt("newer app work", "2026-01-02T10:00:00Z")], mtime=30),
        _file(_id(4), [_prompt("deep", "2026-01-01T09:00:00Z", cwd=long_cwd)], 20, long_slug),
    ]
    listing = list_conversations(files)
    assert [f.cwd for f in listing.folders] == ["/work/site", "/work/app", long_cwd]
    assert [c.id for c in listing.folders[1].conversations] == [_id(3), _id(1)]
    assert listing.folders[2].conversations[0].slug == long_slug
    # no line says the folder: grouped apart, the mtime as its time
    nameless = list_conversations([_file(_id(5), [_line(type="mode", mode="normal")], 7.0)])
    assert nameless.folders[0].cwd is None
    assert nameless.folders[0].conversations[0].last_activity == 7.0


def test_what_is_not_a_conversation_is_skipped() -> None:
    ok = [_prompt("hello there friend", "2026-01-01T10:00:00Z")]
    files = [
        _file(_id(1), ok),
        TranscriptFile("-work-app", "notes.jsonl", 10, 1.0, ok, ok),
        TranscriptFile("-work-app", f"{_id(2)}.json", 10, 1.0, ok, ok),
        TranscriptFile("-work-app", f"{_id(3)}.jsonl", 0, 1.0, (), ()),
        TranscriptFile("-work-app", f"../{_id(4)}.jsonl", 10, 1.0, ok, ok),
        _file(_id(1), ok, slug="-elsewhere"),  # the same id twice: listed once
        _file(_id(6), ["not json", "[1, 2]", '{"type": "user", "message": 5}', "{" * 5000]),
    ]
    listing = list_conversations(files)
    ids = [c.id for f in listing.folders for c in f.conversations]
    assert sorted(ids) == [_id(1), _id(6)]


def test_bounds() -> None:
    many = [_file(_id(n), [_prompt(f"task {n}", "2026-01-01T10:00:00Z")], n) for n in range(300)]
    listing = list_conversations(many, limit=10)
    got = [c for f in listing.folders for c in f.conversations]
    assert len(got) == 10 and listing.found == 300 and listing.truncated
    big = list_conversations(many, limit=10**6)
    assert sum(len(f.conversations) for f in big.folders) == min(300, MAX_CONVERSATIONS)
    # only the newest MAX_FILES files are read
    lots = [_file(_id(n), [], float(n)) for n in range(MAX_FILES + 5)]
    bounded = list_conversations(lots, limit=MAX_CONVERSATIONS)
    assert bounded.truncated and bounded.found == MAX_FILES
    assert list_conversations(many, limit=-3).folders == ()


NAMES = st.one_of(
    st.text(max_size=60),
    st.builds(lambda n: f"{_id(n)}.jsonl", st.integers(0, 5)),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=20,
)
LINE = st.one_of(
    st.text(max_size=80),
    JSONISH.map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["user", "custom-title", "ai-title", "summary"])},
        optional={
            "customTitle": st.text(max_size=300),
            "aiTitle": JSONISH,
            "cwd": st.text(max_size=50),
            "timestamp": st.text(max_size=40),
            "message": JSONISH,
            "gitBranch": st.text(max_size=20),
        },
    ).map(json.dumps),
)


@PROPS
@given(
    st.lists(
        st.builds(
            TranscriptFile,
            st.text(max_size=30),
            NAMES,
            st.integers(-5, 10**12),
            st.floats(allow_nan=True),
            st.lists(LINE, max_size=8),
            st.lists(LINE, max_size=8),
        ),
        max_size=8,
    ),
    st.lists(st.one_of(LINE, JSONISH.map(json.dumps)), max_size=5),
    st.sets(st.integers(-3, 10)),
    st.integers(-2, 10),
)
def test_hostile_files_never_raise_and_stay_bounded(
    files: list[TranscriptFile], sessions: list[str], pids: set[int], limit: int
) -> None:
    listing = list_conversations(files, sessions, pids, {_id(1)}, limit=limit)
    got = [c for f in listing.folders for c in f.conversations]
    assert len(got) <= max(limit, 0)
    assert len({c.id for c in got}) == len(got)
    for folder in listing.folders:
        times = [c.last_activity for c in folder.conversations]
        assert times == sorted(times, reverse=True)
    firsts = [f.conversations[0].last_activity for f in listing.folders]
    assert firsts == sorted(firsts, reverse=True)
    for c in got:
        assert len(c.title) <= MAX_TITLE_CHARS
        assert not any(ord(ch) < 0x20 for ch in c.title)
        assert c.live is (c.live_pid is not None)
