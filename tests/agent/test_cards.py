"""agent.cards: what each captured screen of each tested Claude Code version says (labels.tsv), and
keys_for."""

from __future__ import annotations

import json
import textwrap

import pytest

from agent.cards import (
    DetectedCard,
    ScreenFacts,
    classify_text,
    describe,
    keys_for,
    read_screen,
)
from agent.screen import Screen, from_plain, render
from tests.support.paths import SCREENS
from tests.support.screens import captures, labels, screen_name, screen_sets
from wire.protocol import Card

LABELS = labels()  # every tested version's (tests/support/screens.py)
CASES = [(name, kinds, busy, twin) for name, kinds, busy in LABELS for twin in ("plain", "ansi")]


def _text(name: str, twin: str = "plain") -> str:
    return (SCREENS / f"{name}.screen_{twin}.txt").read_text(encoding="utf-8")


def facts(name: str, twin: str = "plain") -> ScreenFacts:
    return classify_text(_text(name, twin))


def card(name: str, twin: str = "plain") -> DetectedCard:
    got = facts(name, twin).card
    assert got is not None, name
    return got


def test_labels_cover_every_capture() -> None:
    names = {n for n, _, _ in LABELS}
    on_disk = {screen_name(p) for folder in screen_sets().values() for p in captures(folder)}
    assert names == on_disk
    for version, folder in screen_sets().items():
        assert len(captures(folder)) >= 60, version


@pytest.mark.parametrize(
    ("name", "kinds", "busy", "twin"), CASES, ids=[f"{c[0]}[{c[3]}]" for c in CASES]
)
def test_label(name: str, kinds: list[str], busy: str, twin: str) -> None:
    got = facts(name, twin)
    kind = got.card.kind if got.card else "none"
    assert kind in kinds, f"{name}: {kind} not in {kinds}"
    if busy != "either":
        assert got.busy is (busy == "yes"), f"{name}: busy={got.busy}"
    if got.card and got.card.kind != "stuck":
        assert not got.busy  # no spinner is drawn while a dialog waits


@pytest.mark.parametrize(("name", "kinds", "busy"), LABELS, ids=[n for n, _, _ in LABELS])
def test_plain_and_ansi_twins_agree(name: str, kinds: list[str], busy: str) -> None:
    plain, ansi = facts(name, "plain"), facts(name, "ansi")
    assert describe(plain) == describe(ansi)
    assert (plain.draft, plain.mode, plain.queued, plain.exited, plain.tool_running) == (
        ansi.draft,
        ansi.mode,
        ansi.queued,
        ansi.exited,
        ansi.tool_running,
    )
    if plain.card:
        assert ansi.card is not None
        assert plain.card.fingerprint == ansi.card.fingerprint
        assert plain.card.selected == ansi.card.selected


# ---------------------------------------------------------------------------
# size independence: the same screen on a larger terminal reads the same
# ---------------------------------------------------------------------------

SIZES = [(100, 30, 0), (120, 40, 16), (160, 50, 26), (160, 50, 0)]


@pytest.mark.parametrize(("name", "kinds", "busy"), LABELS, ids=[n for n, _, _ in LABELS])
def test_wider_and_taller_screen_reads_the_same(name: str, kinds: list[str], busy: str) -> None:
    base = read_screen(from_plain(_text(name)))
    lines = from_plain(_text(name)).lines
    for width, height, pad_top in SIZES:
        rows = [""] * pad_top + list(lines)
        rows += [""] * (height - len(rows))
        got = read_screen(Screen(tuple(rows), width, height))
        assert got == base, (name, width, height, pad_top)


@pytest.mark.parametrize(
    "name",
    [
        "d_bash_permission/01_bash_dialog_80x24",
        "f_ask_question/07_ask2_q2_toggled_1_3_80x24",
        "c_busy/04_done_80x24",
        "a_startup_trust/01_trust_dialog_80x24",
    ],
)
def test_ansi_capture_rendered_on_a_bigger_terminal(name: str) -> None:
    base = facts(name, "ansi")
    got = read_screen(render(_text(name, "ansi"), 120, 40))
    assert describe(got) == describe(base)


# ---------------------------------------------------------------------------
# permission cards
# ---------------------------------------------------------------------------

BASH = "d_bash_permission/01_bash_dialog_80x24"


def test_bash_permission_card() -> None:
    c = card(BASH)
    assert c.kind == "permission"
    assert c.title == "Bash command"
    assert c.tool == "Bash"
    assert c.tool_input == {
        "command": "touch bash_made.txt && echo hi",
        "description": "Create a file and print hi",
    }
    assert (
        c.text
        == "Create a file and print hi\ntouch bash_made.txt && echo hi\nDo you want to proceed?"
    )
    assert "Tip:" not in c.text and "below" not in c.text
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "Yes"),
        (
            "2",
            "Yes, and always allow access to /tmp/realclaude/work-d_bash_permission_80x24"
            " from this project",
        ),
        ("3", "Yes, and switch to auto mode · auto mode handles these prompts for you"),
        ("4", "No"),
    ]
    assert c.selected == 1
    assert c.amendable


def test_bash_permission_after_down_is_the_same_card() -> None:
    first, moved = card(BASH), card("d_bash_permission/02_bash_dialog_after_Down_80x24")
    assert moved.selected == 2
    assert moved.fingerprint == first.fingerprint
    assert not moved.amendable  # 'Tab to amend' is only shown on option 1


def test_amended_bash_permission() -> None:
    c = card("d_bash_permission/07_after_Tab_amend_80x24")
    assert c.kind == "permission"
    assert c.options[0].label == "Yes, and tell Claude what to do next"
    assert c.fingerprint != card(BASH).fingerprint


def test_write_permission_card() -> None:
    c = card("e_write_edit_permission/01_write_dialog_80x24")
    assert (c.kind, c.title, c.tool) == ("permission", "Create file", "Write")
    assert c.tool_input == {"file_path": "hello.txt"}
    assert "Do you want to create hello.txt?" in c.text
    assert "hello from mock" in c.text
    assert [o.label for o in c.options] == [
        "Yes",
        "Yes, and switch to accept edits (auto-approve file edits and common file commands)"
        " for this session (shift+tab)",
        "No",
    ]


def test_edit_permission_card() -> None:
    c = card("e_write_edit_permission/03_edit_dialog_80x24")
    assert (c.kind, c.title, c.tool) == ("permission", "Edit file", "Edit")
    assert c.tool_input == {"file_path": "hello.txt"}
    assert "1 -hello from mock\n1 +hello EDITED by mock" in c.text
    assert c.text.endswith("Do you want to make this edit to hello.txt?")
    assert len(c.options) == 3


FETCH = """\
● Fetch(http://127.0.0.1:8123/page)

────────────────────────────────────────────────────────────────────────────────
 Fetch

 Claude wants to fetch content from 127.0.0.1

 url: http://127.0.0.1:8123/page
 prompt: Summarise the page

 Do you want to allow Claude to fetch this content?
 ❯ 1. Yes
   2. Yes, and don't ask again for 127.0.0.1
   3. No, and tell Claude what to do differently (esc)

 Esc to cancel
"""


def test_fetch_permission_card_synthetic() -> None:
    # composed from the real program's text (no capture of it is shared)
    c = classify_text(FETCH, 80, 24).card
    assert c is not None
    assert (c.kind, c.title, c.tool) == ("permission", "Fetch", "WebFetch")
    assert c.tool_input is not None
    assert c.tool_input["url"] == "http://127.0.0.1:8123/page"
    assert c.text.endswith("Do you want to allow Claude to fetch this content?")
    assert [o.key for o in c.options] == ["1", "2", "3"]


# ---------------------------------------------------------------------------
# question cards
# ---------------------------------------------------------------------------

ASK = "f_ask_question/01_ask_dialog_80x24"
ASK2_Q1 = "f_ask_question/05_ask2_dialog_q1_80x24"
ASK2_Q2 = "f_ask_question/07_ask2_q2_toggled_1_3_80x24"


def test_question_card() -> None:
    c = card(ASK)
    assert (c.kind, c.title, c.text) == ("question", "Colour", "Which colour should the widget be?")
    assert not c.multi_select
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "Red — A warm colour"),
        ("2", "Blue — A cool colour"),
        ("3", "Green — A natural colour"),
        ("4", "Type something."),
        ("5", "Chat about this"),
    ]
    assert c.free_text_key == "4"
    assert c.selected == 1
    assert card("f_ask_question/02_ask_after_Down_80x24").selected == 2
    assert c.questions == ()


def test_question_card_with_allow_hook_is_the_same() -> None:
    assert card("n_permissionrequest_allow_hook/04_ask_with_allow_hook_80x24").fingerprint == (
        card(ASK).fingerprint
    )


@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_two_questions_first_tab(twin: str) -> None:
    c = card(ASK2_Q1, twin)
    assert (c.title, c.text, c.multi_select) == (
        "Colour",
        "Which colour should the widget be?",
        False,
    )
    assert [(t.name, t.current, t.submit) for t in c.questions] == [
        ("Colour", True, False),
        ("Toppings", False, False),
        ("Submit", False, True),
    ]
    assert c.free_text_key == "3"


@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_two_questions_multi_select_tab(twin: str) -> None:
    c = card(ASK2_Q2, twin)
    assert (c.kind, c.title, c.text) == ("question", "Toppings", "Which toppings do you want?")
    assert c.multi_select
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "Cheese — Cheesy"),
        ("2", "Olives — Salty"),
        ("3", "Basil — Fresh"),
        ("4", "Type something"),
        ("5", "Chat about this"),
    ]
    assert c.checked == ("3",)
    assert c.free_text_key == "4"
    assert c.submit_row == 5
    assert [t.name for t in c.questions if t.current] == ["Toppings"]
    assert [t.answered for t in c.questions] == [True, True, False]
    assert c.fingerprint != card(ASK2_Q1, twin).fingerprint


def test_ticks_do_not_change_the_fingerprint() -> None:
    toggled = card("f_ask_question/08_ask2_after_Enter_80x24")
    assert toggled.checked == ("1", "3")
    assert toggled.fingerprint == card(ASK2_Q2).fingerprint


def test_current_tab_comes_from_the_highlight_in_ansi() -> None:
    # move the highlight of the 07 capture from 'Toppings' to 'Colour': the ANSI reading follows it
    ansi = _text(ASK2_Q2, "ansi")
    tab_bar = next(r for r in ansi.split("\n") if "Toppings" in r and "Submit" in r)
    moved = (
        tab_bar.replace("\x1b[38;5;16m\x1b[48;5;153m", "")
        .replace("\x1b[39m\x1b[49m", "")
        .replace(" ☒ Colour ", "\x1b[48;5;153m ☒ Colour \x1b[49m")
    )
    assert moved != tab_bar
    c = classify_text(ansi.replace(tab_bar, moved)).card
    assert c is not None
    assert [t.name for t in c.questions if t.current] == ["Colour"]
    assert c.title == "Colour"


REVIEW = """\
❯ ASK_TWO things
────────────────────────────────────────────────────────────────────────────────
←  ☒ Colour  ☒ Toppings  ✔ Submit  →

Review your answers

 ● Which colour should the widget be?
   → Red
 ● Which toppings do you want?
   → Cheese, Basil

❯ 1. Submit answers
  2. Cancel

Enter to select · Tab/Arrow keys to navigate · Esc to cancel
"""


def test_review_step_synthetic() -> None:
    # composed from the real program's text (the review screen is not among the captures)
    c = classify_text(REVIEW, 80, 24).card
    assert c is not None
    assert c.kind == "question"
    assert c.review
    assert c.title == "Review your answers"
    assert c.text == (
        "Which colour should the widget be? → Red\nWhich toppings do you want? → Cheese, Basil"
    )
    assert [(o.key, o.label) for o in c.options] == [("1", "Submit answers"), ("2", "Cancel")]
    assert [t.name for t in c.questions if t.current] == ["Submit"]
    assert keys_for(c, "1") == [["1"]]
    assert keys_for(c, "2") == [["2"]]


def test_declined_question_is_not_a_card() -> None:
    got = facts("f_ask_question/11_ask_after_Esc_80x24")
    assert got.card is None or got.card.kind == "stuck"
    assert not got.busy


# ---------------------------------------------------------------------------
# plan, keyed, dialog, stuck
# ---------------------------------------------------------------------------


def test_plan_card() -> None:
    c = card("g_plan_approval/02_plan_dialog_80x24")
    assert (c.kind, c.title, c.text) == (
        "plan",
        "Exit plan mode?",
        "Claude wants to exit plan mode",
    )
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "Yes, and switch to default (ask each time) for this session"),
        ("2", "No"),
    ]
    assert c.selected == 1
    moved = card("g_plan_approval/03_plan_after_Down_80x24")
    assert moved.selected == 2
    assert moved.fingerprint == c.fingerprint


def test_trust_dialog_is_keyed() -> None:
    c = card("a_startup_trust/01_trust_dialog_80x24")
    assert c.kind == "keyed"
    assert c.title == "Accessing workspace:"
    assert "/tmp/realclaude/work-a_startup_trust_80x24" in c.text
    assert "Quick safety check: Is this a project you created or one you trust? (Like your own" in (
        c.text
    )
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "No, exit"),
        ("2", "Yes, I trust this folder"),
    ]
    assert c.selected == 1
    assert keys_for(c, "2") == [["Down"], ["Enter"]]
    assert keys_for(c, "1") == [["Enter"]]
    after = card("a_startup_trust/02_trust_dialog_after_Down_80x24")
    assert after.selected == 2
    assert keys_for(after, "1") == [["Up"], ["Enter"]]
    assert after.fingerprint == c.fingerprint


def test_resume_picker_is_keyed() -> None:
    c = card("k_resume/07_resume_picker_80x24")
    assert (c.kind, c.title) == ("keyed", "Resume session")
    assert [o.label for o in c.options] == ["hello second life — 2 seconds ago · HEAD · 162.9KB"]
    assert keys_for(c, "1") == [["Enter"]]


def test_model_picker_is_a_dialog() -> None:
    c = card("l_model/02_model_picker_80x24")
    assert (c.kind, c.title) == ("dialog", "Select model")
    assert "Your pick is the default for new sessions" in c.text
    assert [o.key for o in c.options] == ["1", "2", "3"]
    assert (
        c.options[1].label == "Opus — Opus 5.5 · Best for everyday, complex tasks · $4/$20 per Mtok"
    )
    assert c.selected == 1
    assert card("l_model/03_model_picker_Down_80x24").selected == 2
    assert keys_for(c, "2") == [["2"], ["Enter"]]  # 'Enter to save'


@pytest.mark.parametrize(
    "name",
    [
        "d_bash_permission/04_after_Esc_on_dialog_80x24",
        "d_bash_permission/05_after_4_no_80x24",
        "d_bash_permission/08_after_Tab_then_Esc_80x24",
        "h_interrupt/02_after_esc_80x24",
        "h_interrupt/05_after_esc_during_tool_80x24",
        "k_resume/02_after_ctrl_c_once_80x24",
        "k_resume/04_resumed_80x24",
    ],
)
def test_stuck_screens(name: str) -> None:
    got = facts(name)
    c = got.card
    assert c is not None and c.kind == "stuck"
    assert c.title == "Interrupted · What should Claude do instead?"
    assert c.options == ()
    assert not got.busy and got.draft == ""
    assert keys_for(c) == []
    assert keys_for(c, None, text="ignored") == []


def test_stuck_card_says_what_was_interrupted() -> None:
    c = card("d_bash_permission/04_after_Esc_on_dialog_80x24")
    assert "RUN_BASH two" in c.text
    assert "touch bash_made.txt && echo hi" in c.text


def test_interrupted_line_with_a_draft_is_not_stuck() -> None:
    text = _text("h_interrupt/02_after_esc_80x24")
    assert "\n❯\xa0\n" in text  # Claude Code writes a no-break space after the prompt sign
    text = text.replace("\n❯\xa0\n", "\n❯\xa0do this instead\n")
    got = classify_text(text)
    assert got.draft == "do this instead"
    assert got.card is None
    assert got.interrupted  # the notice is still the last thing shown
    assert facts("h_interrupt/02_after_esc_80x24").interrupted
    assert not facts("b_idle/03_idle_with_draft_80x24").interrupted
    assert not facts("h_interrupt/01_busy_before_esc_80x24").interrupted


def test_interrupted_line_followed_by_a_new_turn_is_not_stuck() -> None:
    for name in ("k_resume/05_resumed_after_prompt_80x24", "k_resume/06_continued_80x24"):
        assert facts(name).card is None


# ---------------------------------------------------------------------------
# busy, preview, tool running, draft, mode, queued, exited
# ---------------------------------------------------------------------------

CHROME = ("Flibbertigibbeting", "esc to interrupt", "Tip:", "◐", "─", "❯", "manual mode", "Queued")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("c_busy/03_busy_streaming_5.0s_80x24", ["This is a deliberately slow streamed answer"]),
        (
            "c_busy/04_done_80x24",
            [
                "This is a deliberately slow streamed answer so that the busy screen can be captured.",
                "Sentence number 8 of the slow answer",
                "Sentence number 17 of the slow",
            ],
        ),
        (
            "c_busy/05_busy_thinking_80x24",
            ["Sentence number 18 of the slow answer keeps streaming."],
        ),
        (
            "c_busy/06_done_thinking_80x24",
            ["Sentence number 34 of the slow answer keeps streaming."],
        ),
    ],
)
@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_preview_of_streaming_text(name: str, words: list[str], twin: str) -> None:
    got = facts(name, twin)
    assert got.busy and not got.tool_running
    assert got.preview is not None
    for w in words:
        assert w in got.preview
    for chrome in CHROME:
        assert chrome not in got.preview
    assert "\n" not in got.preview  # wrapped rows are joined back into one paragraph


def test_no_preview_before_the_first_words() -> None:
    for name in ("c_busy/01_busy_streaming_0.8s_80x24", "h_interrupt/01_busy_before_esc_80x24"):
        got = facts(name)
        assert got.busy and got.preview is None


def test_preview_while_a_hook_runs() -> None:
    got = facts("k_resume/05_resumed_after_prompt_80x24")
    assert got.busy
    assert got.preview == "Hello! This is the mock API. How can I help?"


@pytest.mark.parametrize(("name", "kinds", "busy"), LABELS, ids=[n for n, _, _ in LABELS])
def test_idle_screens_have_no_preview(name: str, kinds: list[str], busy: str) -> None:
    got = facts(name)
    if not got.busy:
        assert got.preview is None
        assert not got.tool_running


def test_tool_running_means_no_preview() -> None:
    got = facts("h_interrupt/04_busy_tool_running_80x24")
    assert got.busy and got.tool_running
    assert got.preview is None


def test_draft() -> None:
    assert facts("b_idle/03_idle_with_draft_80x24").draft == "some draft text not submitted"
    assert facts("b_idle/01_idle_fresh_80x24").draft == ""
    assert facts("ij_clear_compact/01_typed_slash_compact_menu_80x24").draft == "/compact"
    assert facts("g_plan_approval/05_plan_after_1_80x24").draft == "1"


def test_queued_message() -> None:
    got = facts("c_busy/05_busy_thinking_80x24")
    assert got.queued
    assert got.draft == ""  # 'Press up to edit queued messages' is a placeholder
    assert not facts("c_busy/04_done_80x24").queued


AUTO_FOOTER = "  ⏵⏵ auto mode on (shift+tab to cycle) · ← for agents"


def test_modes_from_footer() -> None:
    assert facts("b_idle/01_idle_fresh_80x24").mode == "manual"
    assert facts("g_plan_approval/01_idle_plan_mode_80x24").mode == "plan"
    assert facts("e_write_edit_permission/04_after_edit_2_80x24").mode == "acceptEdits"
    auto = _text("b_idle/01_idle_fresh_80x24").replace(
        "  ⏸ manual mode on · ? for shortcuts · ← for agents", AUTO_FOOTER
    )
    assert AUTO_FOOTER in auto
    assert classify_text(auto).mode == "auto"
    bypass = auto.replace(AUTO_FOOTER, "  ⏵⏵ bypass permissions on (shift+tab to cycle)")
    assert classify_text(bypass).mode == "bypassPermissions"
    assert facts("a_startup_trust/04_after_ctrl_d_once_80x24").mode is None
    assert facts(BASH).mode is None


def test_exited() -> None:
    for name in (
        "a_startup_trust/05_after_ctrl_d_twice_80x24",
        "k_resume/08_resume_picker_after_Esc_80x24",
        "n_permissionrequest_allow_hook/05_after_exit_80x24",
    ):
        got = facts(name)
        assert got.exited and got.card is None and not got.busy
    assert not facts("b_idle/01_idle_fresh_80x24").exited
    assert not facts("m_subagent/03_ctrl_o_transcript_view_80x24").exited


def test_slash_menus_and_help_are_not_cards() -> None:
    for name in (
        "ij_clear_compact/01_typed_slash_compact_menu_80x24",
        "l_model/01_typed_slash_model_80x24",
        "b_idle/04_shortcuts_help_80x24",
        "m_subagent/03_ctrl_o_transcript_view_80x24",
    ):
        assert facts(name).card is None, name


def test_numbered_user_message_is_not_a_dialog() -> None:
    text = _text("b_idle/03_idle_with_draft_80x24").replace("❯ hello there", "❯ 1. hello there")
    assert classify_text(text).card is None
    # even with the prompt box gone (transcript view), a numbered message needs dialog markers
    lines = [r for r in text.split("\n") if "─" not in r]
    assert read_screen(Screen(tuple(lines), 80, len(lines))).card is None


# ---------------------------------------------------------------------------
# keys_for
# ---------------------------------------------------------------------------


def test_keys_for_permission() -> None:
    c = card(BASH)
    assert keys_for(c, "1") == [["1"]]
    assert keys_for(c, "4") == [["4"]]
    assert keys_for(c, ["2"]) == [["2"]]
    with pytest.raises(ValueError):
        keys_for(c, "5")
    with pytest.raises(ValueError):
        keys_for(c, None)
    with pytest.raises(ValueError):
        keys_for(c, ["1", "2"])
    # 'Tab to amend': Tab, the text, Enter
    assert keys_for(c, "1", text="and then stop") == [["Tab"], ["-l", "and then stop"], ["Enter"]]
    with pytest.raises(ValueError):
        keys_for(card("d_bash_permission/02_bash_dialog_after_Down_80x24"), "1", text="x")


def test_keys_for_plan() -> None:
    c = card("g_plan_approval/02_plan_dialog_80x24")
    assert keys_for(c, "1") == [["1"]]
    assert keys_for(c, "2") == [["2"]]
    with pytest.raises(ValueError):
        keys_for(c, "3")


def test_keys_for_single_select_question() -> None:
    c = card(ASK)
    assert keys_for(c, "2") == [["2"]]
    assert keys_for(c, "4", text="Purple please") == [["4"], ["-l", "Purple please"], ["Enter"]]
    assert keys_for(c, None, text="Purple please") == [["4"], ["-l", "Purple please"], ["Enter"]]
    with pytest.raises(ValueError):
        keys_for(c, "4")  # 'Type something.' needs the text
    with pytest.raises(ValueError):
        keys_for(c, "2", text="no text for a picked option")
    with pytest.raises(ValueError):
        keys_for(c, "9")
    with pytest.raises(ValueError):
        keys_for(c, ["1", "2"])


def test_keys_for_multi_select_last_question() -> None:
    fresh = _text(ASK2_Q2).replace("[✔]", "[ ]")
    c = classify_text(fresh).card
    assert c is not None and c.multi_select and c.checked == ()
    # each wanted digit toggles, Tab to the Submit tab, '1' on the review step (§15.2)
    assert keys_for(c, ["1", "3"]) == [["1"], ["3"], ["Tab"], ["1"]]
    assert keys_for(c, "2") == [["2"], ["Tab"], ["1"]]
    # a box already ticked on screen is not toggled again; an unwanted tick is removed
    on_screen = card(ASK2_Q2)
    assert on_screen.checked == ("3",)
    assert keys_for(on_screen, ["1", "3"]) == [["1"], ["Tab"], ["1"]]
    assert keys_for(on_screen, ["2"]) == [["2"], ["3"], ["Tab"], ["1"]]
    # free text in a multi-select question: the paste takes the cursor into its field, where Tab
    # moves to the Submit row (f_ask_question/18), and Enter there goes on to the review step
    assert keys_for(c, ["1", "4"], text="Ham") == [
        ["1"], ["4"], ["-l", "Ham"], ["Tab"], ["Enter"], ["1"]
    ]  # fmt: skip
    # 'Chat about this' is an action, alone
    assert keys_for(c, "5") == [["5"]]
    with pytest.raises(ValueError):
        keys_for(c, ["1", "5"])
    with pytest.raises(ValueError):
        keys_for(c, ["1", "7"])


def test_keys_for_multi_select_question_before_another() -> None:
    # the multi-select question is the first of two: Tab moves on to the next question
    text = _text(ASK2_Q2).replace("☒ Colour  ☒ Toppings", "☐ Toppings  ☐ Colour")
    c = classify_text(text).card
    assert c is not None
    assert [t.name for t in c.questions if t.current] == ["Toppings"]
    assert keys_for(c, ["1"]) == [["1"], ["3"], ["Tab"]]


def test_keys_for_multi_select_without_tabs() -> None:
    lines = [r for r in _text(ASK2_Q2).split("\n") if "Submit  →" not in r]
    c = classify_text("\n".join(lines)).card
    assert c is not None and c.questions == () and c.multi_select
    assert c.submit_row == 5 and c.selected == 1
    assert keys_for(c, ["1", "3"]) == [["1"], ["Down"], ["Down"], ["Down"], ["Down"], ["Enter"]]


# ---------------------------------------------------------------------------
# a question whose cursor is on its Submit row or in its 'Type something' field (2.1.332)
# ---------------------------------------------------------------------------

V332 = "2.1.332/f_ask_question"
ON_SUBMIT = [
    f"{V332}/15_ask2_q2_cursor_on_submit_{size}" for size in ("80x24", "120x40", "60x20")
] + [f"{V332}/19_ask_one_multi_cursor_on_submit_{size}" for size in ("80x24", "60x20")]


@pytest.mark.parametrize("name", ON_SUBMIT)
@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_multi_select_with_the_cursor_on_submit_is_the_question_card(name: str, twin: str) -> None:
    c = card(name, twin)
    assert (c.kind, c.title, c.text) == ("question", "Toppings", "Which toppings do you want?")
    assert c.multi_select and c.on_submit and c.selected is None
    assert c.submit_row == 5 and c.free_text_key == "4"
    assert [o.key for o in c.options] == ["1", "2", "3", "4", "5"]
    assert c.checked == (("2",) if "/15_" in name else ("4",))
    # the same card as with the cursor on an option: the cursor and the ticks are not its text
    assert c.fingerprint == card(ASK2_Q2).fingerprint


def test_digits_never_go_to_the_submit_row_or_the_text_field() -> None:
    """On 2.1.332 a digit on the Submit row does nothing, and one on the 'Type something' row is
    typed into its text (seen: '❯ 4. 2'): the keys leave those rows first."""
    on_submit = card(f"{V332}/15_ask2_q2_cursor_on_submit_80x24")
    up4 = [["Up"]] * 4
    assert keys_for(on_submit, ["1", "3"]) == [*up4, ["1"], ["2"], ["3"], ["Tab"], ["1"]]
    assert keys_for(on_submit, "5") == [*up4, ["5"]]  # 'Chat about this'
    in_field = card(f"{V332}/20_ask_cursor_in_free_text_80x24")
    assert (in_field.kind, in_field.selected, in_field.free_text_key) == ("question", 4, "4")
    assert keys_for(in_field, "2") == [["Up"], ["Up"], ["Up"], ["2"]]
    # the cursor is in the field already: the text, and Enter (its digit would be typed)
    assert keys_for(in_field, "4", text="Purple") == [["-l", "Purple"], ["Enter"]]
    # from option 1 nothing moves
    assert keys_for(card(ASK), "2") == [["2"]]


def test_keys_from_the_cursor_as_checked_on_the_real_claude() -> None:
    """Each run of keys_checked.json: the real 2.1.332 at its size, the cursor where the screen
    shows it, the keys computed then; its transcript's tool_result holds the answer."""
    runs = json.loads((SCREENS / V332 / "keys_checked.json").read_text(encoding="utf-8"))
    checked = 0
    for run in runs:
        labels = {"1": "Cheese", "2": "Olives", "3": "Basil"}
        if run["question"].startswith("ASK_ME"):
            labels = {"2": "Blue"}
        words = [labels[k] for k in run["answer"] if k in labels]
        words += [run["text"]] if run["text"] else []
        (result,) = run["tool_result"]
        assert ", ".join(words) in result, run["run"]
        if run["screen"] is None:
            continue
        c = card(f"{V332}/{run['screen']}")
        assert keys_for(c, run["answer"], run["text"]) == run["keys"], run["run"]
        checked += 1
    assert checked >= len(ON_SUBMIT)


def test_review_step_captured() -> None:
    c = card(f"{V332}/16_ask2_review_80x24")
    assert c.kind == "question" and c.review and c.title == "Review your answers"
    assert c.text == (
        "Which colour should the widget be? → Red\nWhich toppings do you want? → Cheese, Basil"
    )
    assert keys_for(c, "1") == [["1"]]


def test_free_text_field_then_tab_lands_on_submit() -> None:
    typed = card(f"{V332}/17_ask2_free_text_pasted_80x24")
    assert typed.kind == "question" and typed.selected == 4 and not typed.on_submit
    after_tab = card(f"{V332}/18_ask2_free_text_after_Tab_80x24")
    assert after_tab.kind == "question" and after_tab.on_submit
    assert [t.name for t in after_tab.questions if t.current] == ["Toppings"]


# ---------------------------------------------------------------------------
# Claude Code's own resume chooser
# ---------------------------------------------------------------------------

CHOOSER = "2.1.332/o_resume_chooser"
CHOOSERS = [
    f"{CHOOSER}/{n}"
    for n in (
        "01_chooser_80x24",
        "03_chooser_120x40",
        "05_chooser_after_Down_120x40",
        "06_chooser_60x20",
        "07_chooser_after_Down_60x20",
        "08_chooser_40x20",
    )
]


@pytest.mark.parametrize("name", CHOOSERS)
@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_resume_chooser_is_its_own_card(name: str, twin: str) -> None:
    c = card(name, twin)
    assert c.kind == "resume"
    assert [(o.key, o.label) for o in c.options] == [
        ("1", "Resume from summary (instant, recommended)"),
        ("2", "Resume full session as-is"),
        ("3", "Don't ask again"),
    ]
    assert c.text == (
        "Resuming the full session uses a lot of your usage limits. Resuming from a summary uses "
        "less."
    )
    assert c.selected == (2 if "after_Down" in name else 1)
    assert c.resume is not None
    assert c.resume.tokens == "121.5k" and c.resume.estimated_tokens == 121_500
    later = "_60x20" in name or "_40x20" in name  # drawn again an hour later
    assert (c.resume.age, c.resume.age_minutes) == (("3d 1h", 4380) if later else ("3d", 4320))
    assert c.title == f"This session is {c.resume.age} old and 121.5k tokens."
    wire = c.to_card("r")
    assert wire.kind == "resume" and Card.model_validate(wire.model_dump()) == wire


def test_resume_chooser_reads_the_same_at_every_width() -> None:
    prints = {card(n).fingerprint for n in CHOOSERS if "_120x40" in n or "_80x24" in n}
    assert len(prints) == 1
    assert len({card(n).fingerprint for n in CHOOSERS if "x20" in n}) == 1


def test_resume_chooser_is_answered_by_its_digit_alone() -> None:
    # a digit answers at once; an Enter after it would land in the prompt of the resumed session
    c = card(CHOOSERS[0])
    assert keys_for(c, "2") == [["2"]]
    assert keys_for(c, "1") == [["1"]]
    with pytest.raises(ValueError):
        keys_for(c, "2", text="no text")
    with pytest.raises(ValueError):
        keys_for(c, "Enter")


def test_nothing_answers_the_resume_chooser_blindly() -> None:
    """Enter picks the summary and Esc the full conversation: a held message neither presses
    Esc to close it nor types into it (it waits for the person, or the session's scope)."""
    from agent import held

    assert not held.may_escape("resume")
    assert not held.may_type("resume")
    waiting = held.Situation(state="waiting", card_kind="resume")
    assert held.decide(waiting, now_requested=False) == held.Delivery.HOLD
    assert held.decide(waiting, now_requested=True) == held.Delivery.HOLD
    assert held.decide(waiting, now_requested=False, when="after_turn") == held.Delivery.HOLD


# ---------------------------------------------------------------------------
# fingerprint, to_card, describe
# ---------------------------------------------------------------------------


def test_fingerprints() -> None:
    prints = {
        name: card(name).fingerprint
        for name in (
            BASH,
            "e_write_edit_permission/01_write_dialog_80x24",
            "e_write_edit_permission/03_edit_dialog_80x24",
            ASK,
            ASK2_Q1,
            ASK2_Q2,
            "g_plan_approval/02_plan_dialog_80x24",
            "a_startup_trust/01_trust_dialog_80x24",
            "l_model/02_model_picker_80x24",
            "h_interrupt/02_after_esc_80x24",
        )
    }
    assert len(set(prints.values())) == len(prints)
    for name, fp in prints.items():
        assert card(name, "ansi").fingerprint == fp
        assert len(fp) == 16
    # the same stuck notice on the next reads
    assert (
        card("h_interrupt/02_after_esc_80x24").fingerprint
        == card("h_interrupt/03_after_esc_3s_80x24").fingerprint
    )


def test_to_card() -> None:
    c = card(BASH)
    wire = c.to_card("card-1")
    assert isinstance(wire, Card)
    assert wire.id == "card-1" and wire.kind == "permission" and wire.title == "Bash command"
    assert [(o.key, o.label) for o in wire.options] == [(o.key, o.label) for o in c.options]
    assert wire.tool == "Bash"
    assert wire.tool_input == c.tool_input
    assert wire.tool_input is not c.tool_input
    assert Card.model_validate(wire.model_dump()) == wire
    multi = card(ASK2_Q2).to_card("q")
    assert multi.multi_select and multi.kind == "question"


def test_describe() -> None:
    d = describe(facts(BASH))
    assert set(d) == {"card", "busy", "preview"}
    assert d["busy"] is False and d["preview"] is None
    assert d["card"]["kind"] == "permission"
    assert d["card"]["options"][0] == {"key": "1", "label": "Yes"}
    assert set(d["card"]) == {
        "kind",
        "title",
        "text",
        "options",
        "multi_select",
        "tool",
        "tool_input",
    }
    json.dumps(d)
    busy = describe(facts("c_busy/03_busy_streaming_5.0s_80x24"))
    assert busy["card"] is None and busy["busy"] is True
    assert busy["preview"].startswith("This is a deliberately slow")


def test_classify_text_sizes() -> None:
    ansi = _text(BASH, "ansi")
    assert classify_text(ansi, 80, 24) == classify_text(ansi)
    assert classify_text(_text(BASH), 120, 40).card is not None


# ---------------------------------------------------------------------------
# the same content wrapped at another width reads the same
# ---------------------------------------------------------------------------


def _bash_dialog(width: int) -> str:
    """The Bash dialog of d_bash_permission/01 laid out the way Claude Code does at ``width``."""
    inner = width - 2

    def para(text: str, indent: str = " ", sub: str = " ") -> list[str]:
        return textwrap.wrap(
            text, inner, initial_indent=indent, subsequent_indent=sub, break_on_hyphens=False
        )

    option2 = (
        "Yes, and always allow access to /tmp/realclaude/work-d_bash_permission_80x24"
        " from this project"
    )
    rows = [
        "❯ RUN_BASH one",
        "",
        "● I'll run a command.",
        "",
        "● Creating a file and printing hi",
        "  ⎿  $ touch bash_made.txt && echo hi",
        "",
        "─" * width,
        " Bash command",
        *para('Tip: auto mode handles these prompts for you — choose "switch to auto mode" below'),
        " Create a file and print hi",
        "╌" * width,
        " touch bash_made.txt && echo hi",
        "╌" * width,
        " Do you want to proceed?",
        " ❯ 1. Yes",
        *para(option2, "   2. ", "      "),
        *para(
            "Yes, and switch to auto mode · auto mode handles these prompts for you",
            "   3. ",
            "      ",
        ),
        "   4. No",
        "",
        " Esc to cancel · Tab to amend",
    ]
    return "\n".join(rows)


@pytest.mark.parametrize("width", [100, 120, 160])
def test_bash_dialog_wrapped_at_other_widths(width: int) -> None:
    base = card(BASH)
    got = classify_text(_bash_dialog(width), width, 40).card
    assert got is not None
    assert (got.title, got.text, got.tool_input) == (base.title, base.text, base.tool_input)
    assert got.options == base.options
    assert got.fingerprint == base.fingerprint
    assert classify_text(_bash_dialog(80), 80, 24).card == base


def _streaming(width: int) -> str:
    """c_busy/04's streamed text wrapped at ``width``, under the same chrome."""
    text = facts("c_busy/04_done_80x24").preview
    assert text is not None
    body = textwrap.wrap(
        text, width - 2, initial_indent="● ", subsequent_indent="  ", break_on_hyphens=False
    )
    rows = [
        "❯ SLOW please",
        "",
        *body,
        "",
        "✽ Flibbertigibbeting… (35s · ↓ 262 tokens)",
        "",
        "─" * width,
        "❯ ",
        "─" * width,
        "  ⏸ manual mode on · esc to interrupt",
    ]
    return "\n".join(rows)


@pytest.mark.parametrize("width", [80, 100, 120, 160])
def test_preview_wrapped_at_other_widths(width: int) -> None:
    want = facts("c_busy/04_done_80x24").preview
    got = classify_text(_streaming(width), width, 50)
    assert got.busy and got.preview == want


API_KEY = """\
────────────────────────────────────────────────────────────────────────────────
 Detected a custom API key in your environment

 ANTHROPIC_API_KEY: sk-ant-...abcd

 Do you want to use this API key?

 ❯ 1. Yes
   2. No (recommended)

 Enter to confirm · Esc to cancel
"""


def test_other_numbered_dialog_is_a_dialog_not_a_permission() -> None:
    c = classify_text(API_KEY, 80, 24).card
    assert c is not None
    assert (c.kind, c.title, c.tool) == (
        "dialog",
        "Detected a custom API key in your environment",
        None,
    )
    assert "Do you want to use this API key?" in c.text
    assert [(o.key, o.label) for o in c.options] == [("1", "Yes"), ("2", "No (recommended)")]
    assert keys_for(c, "2") == [["2"], ["Enter"]]


@pytest.mark.parametrize(
    "spinner",
    [
        "✻ Contemplating… (14s · ↓ 108 tokens)",  # same glyph as the finished line (§15.5)
        "✢ Accomplishing… (1s · ↓ 11 tokens · thinking)",
        "· Caramelizing… (running Stop hook · 0s · ↓ 8 tokens)",
        "* Discombobulating… (1m 8s · ↓ 510 tokens)",
    ],
)
def test_spinner_alone_means_busy(spinner: str) -> None:
    # the footer's 'esc to interrupt' removed: the spinner line is enough
    text = _text("c_busy/03_busy_streaming_5.0s_80x24")
    text = text.replace("* Flibbertigibbeting… (4s · ↓ 31 tokens)", spinner)
    text = text.replace(" · esc to interrupt", "")
    assert spinner in text and "esc to interrupt" not in text
    got = classify_text(text)
    assert got.busy
    assert (
        got.preview == "This is a deliberately slow streamed answer so that the busy screen can be"
    )


def test_finished_line_is_not_a_spinner() -> None:
    text = _text("c_busy/03_busy_streaming_5.0s_80x24")
    text = text.replace(
        "* Flibbertigibbeting… (4s · ↓ 31 tokens)", "✻ Cooked for 4s · done 9:34 PM"
    )
    text = text.replace(" · esc to interrupt", "")
    got = classify_text(text)
    assert not got.busy and got.preview is None


def test_footer_alone_means_busy() -> None:
    text = _text("c_busy/03_busy_streaming_5.0s_80x24")
    text = text.replace("* Flibbertigibbeting… (4s · ↓ 31 tokens)", "")
    assert "esc to interrupt" in text
    assert classify_text(text).busy


def test_prompt_visible() -> None:
    assert facts("b_idle/01_idle_fresh_80x24").prompt_visible
    assert facts("c_busy/03_busy_streaming_5.0s_80x24").prompt_visible
    for name in (
        BASH,
        "a_startup_trust/01_trust_dialog_80x24",
        "a_startup_trust/05_after_ctrl_d_twice_80x24",
        "m_subagent/03_ctrl_o_transcript_view_80x24",
    ):
        assert not facts(name).prompt_visible, name


def test_an_unknown_dialog_becomes_a_card_from_its_footer_keys() -> None:
    """Captured from the real 2.1.328 in auto mode behind the test API: no rule knows this
    dialog, but its footer says which keys do what, so the phone still gets a card."""
    from agent.cards import classify_text

    for suffix in ("screen_ansi", "screen_plain"):
        text = (SCREENS / f"auto_mode_check_unreachable_120x40.{suffix}.txt").read_text()
        card = classify_text(text, 120, 40).card
        assert card is not None and card.kind == "dialog" and card.footer_keys
        assert card.title == "Auto mode can't check actions in this session"
        assert [o.key for o in card.options] == ["Enter", "BTab", "Escape"]
        assert keys_for(card, "BTab") == [["BTab"]]
        with pytest.raises(ValueError):
            keys_for(card, "1")


# The same dialog at more terminal sizes (real 2.1.332): always the question card, whose Submit
# row is the one after option 4 even when the dialog scrolled options off its top (70x14).
MORE_SIZES = [
    *(
        f"{V332}/21_ask_one_multi_cursor_on_submit_{size}"
        for size in ("120x40", "40x24", "220x60", "70x14")
    ),
    *(f"{V332}/22_ask2_q2_toggled_cursor_on_submit_{size}" for size in ("100x16", "160x50")),
]


@pytest.mark.parametrize("name", MORE_SIZES)
@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_the_cursor_on_submit_is_the_question_card_at_any_size(name: str, twin: str) -> None:
    c = card(name, twin)
    assert (c.kind, c.multi_select, c.on_submit, c.selected) == ("question", True, True, None)
    assert c.submit_row == 5 and c.free_text_key == "4"
    keys = [o.key for o in c.options]
    scrolled = name.endswith("70x14")  # '↑ 2. [ ] Olives': option 1 is above the screen
    assert keys == (["2", "3", "4", "5"] if scrolled else ["1", "2", "3", "4", "5"])
    # the keys leave the Submit row before any digit (digits do nothing there)
    first_digit = next(i for i, group in enumerate(keys_for(c, ["3"])) if group[0].isdigit())
    assert keys_for(c, ["3"])[:first_digit] == [["Up"]] * 4
