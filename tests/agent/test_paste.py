"""Text from a phone reaches Claude Code's terminal as text only (wire/pastetext.py, agent/mux.py
``paste``): a program in a real tmux pane, its terminal raw with bracketed paste on, reads the text
less its control characters, between the paste's own start and end, and not one key besides; a
gone pane is ``pane_gone``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import unicodedata
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent.cards import ScreenFacts, classify_text, keys_for
from agent.errors import PaneGone
from agent.launch import BadClaudeArgs, claude_argv
from agent.mux import LITERAL, Mux, check_key, parse_size
from tests.support import keyrecorder
from tests.support.agent_fakes import Parts, with_agent
from tests.support.paths import SCREENS
from tests.support.waits import wait_until
from tests.support.web import LoopThread
from wire import pastetext

QUESTION = SCREENS / "2.1.332" / "f_ask_question" / "01_ask_dialog_80x24.screen_plain.txt"
IDLE = SCREENS / "2.1.332" / "b_idle" / "01_idle_fresh_80x24.screen_ansi.txt"
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
ENTER = b"\r"  # tmux's Enter (a paste's line breaks stay LF: paste-buffer -r)
PROPS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# What a hostile or careless text may hold: the paste's own end and start, Shift+Tab, Ctrl-C/D/Z,
# ESC alone, C1 CSI, NEL, DEL, NUL, line breaks of every kind, and text that is no control.
PIECES = st.sampled_from(
    [
        "\x1b[201~", "\x1b[200~", "\x1b[Z", "\x1b", "\x03", "\x04", "\x1a", "\x1b[A", "\x1bOP",
        "\x9b", "\x9b201~", "\x85", "\x7f", "\x00", "\x08", "\r", "\r\n", "\n", "\t", "\u2028",
        "é", "👍🏽", "\u200d", "\u202e", "\ufeff", " ",
    ]
)  # fmt: skip
TEXTS = st.lists(st.one_of(st.text(st.characters(codec="utf-8")), PIECES), max_size=12).map("".join)
LONG = ("A long message, line after line.\n" * 200 + "\x1b[201~\x1b[Z\x03\x03") * 3


def kept(text: str) -> str:
    """What may reach the terminal of ``text``, by Unicode's own categories (an oracle apart
    from pastetext's): line breaks as LF, no control (category Cc) but LF and TAB."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc")


# -- the sanitiser -------------------------------------------------------------------------------


def test_the_paste_end_and_the_keys_after_it_are_left_as_their_visible_characters() -> None:
    assert pastetext.clean("hi\x1b[201~\x1b[Z\x03\x03 there") == "hi[201~[Z there"
    assert pastetext.clean("a\x9b201~b\x85c\x7fd\x00e\x08f") == "a201~bcdef"  # C1, DEL, NUL, BS


def test_line_breaks_and_tabs_stay_and_every_line_break_is_lf() -> None:
    assert pastetext.clean("one\r\ntwo\rthree\n\tfour") == "one\ntwo\nthree\n\tfour"


def test_text_that_is_no_control_is_kept_as_it_is() -> None:
    text = "Grüße 👍🏽 a\u200db \u202eRTL\u202c \u2028 \ufeff 한국어 [201~ ^C"
    assert pastetext.clean(text) == text


def test_text_of_controls_only_is_no_text() -> None:
    assert not pastetext.has_text("\x1b\x03\x1b \r\n\t\x9b")
    assert pastetext.has_text("\x1b[A")  # "[A" is left: text


@PROPS
@given(TEXTS)
def test_clean_keeps_exactly_what_is_not_a_control(text: str) -> None:
    cleaned = pastetext.clean(text)
    assert cleaned == kept(text)
    assert not any(unicodedata.category(c) == "Cc" and c not in "\n\t" for c in cleaned)
    assert pastetext.clean(cleaned) == cleaned


# -- the paste in a real terminal ----------------------------------------------------------------


@dataclass
class Recorder:
    """A pane of a throw-away tmux server running tests/support/keyrecorder.py."""

    loop: LoopThread
    mux: Mux
    name: str
    record: Path

    def run(self, coro: Coroutine[Any, Any, None]) -> None:
        self.loop.run(coro, timeout=30)

    def typed(self, send: Coroutine[Any, Any, None], expected: bytes) -> bytes:
        """What the program read while ``send`` ran (as much as ``expected`` holds, at least,
        ending with an Enter: a longer read is a failure too)."""
        start = self.record.stat().st_size
        self.run(send)

        def read() -> bytes | None:
            got = self.record.read_bytes()[start:]
            return got if len(got) >= len(expected) and got.endswith(ENTER) else None

        return wait_until(read, 10, "the pane to read the paste")


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorder]:
    folder = tmp_path_factory.mktemp("paste")
    record = folder / "typed.bin"
    record.touch()
    socket = f"cbpaste-{uuid.uuid4().hex[:8]}"
    loop = LoopThread()
    mux = Mux("tmux", socket)
    name = "cb-recorder"
    program = [sys.executable, keyrecorder.__file__, str(record)]
    try:
        loop.run(mux.new_session(name, folder, program, {}, 80, 24))

        def ready() -> bool:
            shown = subprocess.run(
                ["tmux", "-L", socket, "capture-pane", "-p", "-t", name],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            return keyrecorder.READY in shown.stdout

        wait_until(ready, 10, "the recorder to listen")
        yield Recorder(loop, mux, name, record)
    finally:
        loop.run(mux.kill_server())
        loop.stop()


def pasted(text: str) -> bytes:
    """The bytes of a bracketed paste of ``text`` (what ``kept`` leaves of it): none if empty."""
    body = kept(text).encode()
    return PASTE_START + body + PASTE_END if body else b""


@PROPS
@given(TEXTS)
@example("before\x1b[201~\x1b[Z\x03\x03after")
@example("\x1b\x03\r\n")  # nothing left to paste: only the Enter
@example(LONG)
def test_a_message_reaches_the_program_as_its_text_and_no_key(
    recorder: Recorder, text: str
) -> None:
    expected = pasted(text) + ENTER
    got = recorder.typed(recorder.mux.paste(recorder.name, text), expected)
    assert got == expected


@PROPS
@given(TEXTS.filter(pastetext.has_text))
@example("Purple\x1b\x03 please\x1b[201~\x1b[Z")
def test_a_typed_answer_to_a_question_is_pasted_not_pressed(recorder: Recorder, text: str) -> None:
    card = classify_text(QUESTION.read_text(encoding="utf-8")).card
    assert card is not None and card.free_text_key == "4"
    groups = keys_for(card, None, text)
    assert groups == [["4"], [LITERAL, pastetext.clean(text)], ["Enter"]]
    expected = b"4" + pasted(text) + ENTER
    got = recorder.typed(recorder.mux.send_keys(recorder.name, groups), expected)
    assert got == expected


def test_answer_text_that_is_only_controls_is_no_answer() -> None:
    card = classify_text(QUESTION.read_text(encoding="utf-8")).card
    assert card is not None
    with pytest.raises(ValueError, match="needs text"):
        keys_for(card, "4", "\x1b\x03")


def test_claude_takes_a_paste_in_the_question_s_field_and_in_the_plan_s_feedback() -> None:
    """The real 2.1.332, captured: '4' opens 'Type something.', a bracketed paste of two lines
    fills it, Enter answers with them; a plan declined with Esc takes its feedback, pasted, in
    the prompt box."""
    folder = SCREENS / "2.1.332"

    def read(name: str) -> ScreenFacts:
        return classify_text((folder / f"{name}.screen_ansi.txt").read_text(encoding="utf-8"))

    field = read("f_ask_question/12_ask_after_4_80x24").card
    assert field is not None and (field.free_text_key, field.selected) == ("4", 4)
    filled = read("f_ask_question/13_ask_pasted_answer_80x24").card
    assert filled is not None and filled.options[3].label == "Purple please — with dots"
    answered = read("f_ask_question/14_ask_pasted_done_80x24")
    assert answered.card is None and not answered.busy
    feedback = read("g_plan_approval/07_plan_feedback_pasted_80x24")
    assert (
        feedback.card is None and feedback.draft == "Keep planning: add tests\nand a rollback step"
    )


@pytest.mark.parametrize("word", ["C-c", "Escape\x1b", "hello", "\x1b[Z", "M-x", "F1", "123"])
def test_only_named_keys_and_option_numbers_are_pressed(word: str) -> None:
    with pytest.raises(ValueError, match="not a key"):
        check_key(word)
    for key in ("Enter", "Escape", "BTab", "Down", "1", "12"):
        assert check_key(key) == key


def test_a_word_that_is_not_a_key_reaches_nothing(recorder: Recorder) -> None:
    before = recorder.record.read_bytes()
    with pytest.raises(ValueError):
        recorder.run(recorder.mux.send_keys(recorder.name, [["1"], ["hello\x1b[Z"]]))
    assert recorder.record.read_bytes() == before  # refused before any key was pressed


def test_a_model_name_with_controls_never_reaches_claudes_command_line() -> None:
    assert claude_argv("claude", "s.json", model="opus[1m]")[-2:] == ["--model", "opus[1m]"]
    for bad in ("opus\x1b[Z", "sonnet\n", "-p", "a b"):
        with pytest.raises(BadClaudeArgs):
            claude_argv("claude", "s.json", model=bad)


# -- a gone pane ---------------------------------------------------------------------------------


def test_tmux_s_answer_for_a_gone_pane_is_pane_gone() -> None:
    assert parse_size(["80\t24\t2\t23"], "cb-x") == (80, 24, (23, 2))
    for answer in (["\t\t\t"], [], [""], ["80\t24"]):
        with pytest.raises(PaneGone, match="cb-x is gone"):
            parse_size(answer, "cb-x")


def test_reading_typing_and_pasting_into_a_gone_pane_is_pane_gone(tmp_path: Path) -> None:
    socket = f"cbgone-{uuid.uuid4().hex[:8]}"

    async def body() -> None:
        mux = Mux("tmux", socket)
        try:
            await mux.new_session("cb-here", tmp_path, ["sleep", "600"], {}, 80, 24)
            await mux.new_session("cb-gone", tmp_path, ["sleep", "600"], {}, 80, 24)
            await mux.kill("cb-gone")
            attempts: list[Callable[[], Awaitable[object]]] = [
                lambda: mux.capture("cb-gone"),
                lambda: mux.send_keys("cb-gone", [["Enter"]]),
                lambda: mux.paste("cb-gone", "hello"),
                lambda: mux.send_keys("cb-gone", [[LITERAL, "hello"]]),
            ]
            for attempt in attempts:
                with pytest.raises(PaneGone):
                    await attempt()
            assert await mux.control.run("list-buffers") == []  # no paste left behind
        finally:
            await mux.kill_server()

    asyncio.run(asyncio.wait_for(body(), 30))


def test_a_command_for_a_session_whose_pane_is_gone_answers_pane_gone(tmp_path: Path) -> None:
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        assert (await p.link.command("create_session", sid, cwd=str(tmp_path))).ok
        rt = p.agent.runtimes[sid]
        p.mux.screens[rt.name] = IDLE.read_text(encoding="utf-8")
        await rt.read(True, time.time(), p.mux.panes_by_name[rt.name])
        rt.first_frame_at = time.time() - 5
        assert rt.state == "idle"
        p.mux.panes_by_name.pop(rt.name)  # claude and its pane are gone; not seen yet
        result = await p.link.command("set_mode", sid, mode="plan")
        assert (result.ok, result.code) == (False, "pane_gone")
        assert result.error is not None and "reopen" in result.error

    with_agent(tmp_path, body)


def test_a_message_of_controls_only_is_empty(tmp_path: Path) -> None:
    sid = str(uuid.uuid4())

    async def body(p: Parts) -> None:
        assert (await p.link.command("create_session", sid, cwd=str(tmp_path))).ok
        result = await p.link.command("send", sid, text="\x1b\x03\r\n\x00")
        assert (result.ok, result.code) == (False, "empty_message")
        assert p.mux.pasted == []

    with_agent(tmp_path, body)
