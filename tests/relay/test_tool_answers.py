"""relay.tool_answers: the person's answers read from Claude Code 2.1.332's tool-result texts."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from relay.tool_answers import (
    ANSWERED_PREFIX,
    ANSWERED_SUFFIX,
    TYPED_PREFIX,
    TYPED_SUFFIX,
    Question,
    approved_plan,
    is_plan_approval,
    question_answers,
    rejection_feedback,
)
from tests.support.transcripts import FIXTURES, lines_of, transcript

PROPERTIES = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
COLOUR = Question("Which colour should the widget be?", ("Red", "Blue", "Green"))
TOPPINGS = Question("Which toppings do you want?", ("Cheese", "Olives", "Basil"), True)
# Claude Code's rejection texts (2.1.332 binary; the first is captured, without feedback).
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). "
)
STOP = "STOP what you are doing and wait for the user to tell you how to proceed."
SAID = "To tell you how to proceed, the user said:\n"
DENIED_SAID = (
    "Permission for this tool use was denied. The tool use was rejected (eg. if it was a file "
    "edit, the new_string was NOT written to the file). The user said:\n"
)


def values(questions: list[Question], result: str) -> list[tuple[str, str, bool]]:
    return [(a.question, a.value.of(result), a.typed) for a in question_answers(questions, result)]


def captured_answer() -> str:
    for line in lines_of(transcript("f_ask_question")):
        data = json.loads(line)
        if isinstance(data.get("toolUseResult"), dict) and "answers" in data["toolUseResult"]:
            return str(data["message"]["content"][0]["content"])
    raise AssertionError("the capture has no answered question")


def test_a_captured_answer_is_the_chosen_option_verbatim() -> None:
    result = captured_answer()
    assert result.startswith(ANSWERED_PREFIX) and result.endswith(ANSWERED_SUFFIX)
    assert values([COLOUR], result) == [(COLOUR.text, "Blue", False)]


def test_a_typed_answer_keeps_its_line_breaks_and_is_marked_typed() -> None:
    # As 2.1.332 drew it for a pasted two-line answer (screens/2.1.332/f_ask_question/14).
    screen = FIXTURES / "screens" / "2.1.332" / "f_ask_question" / "14_ask_pasted_done_80x24"
    drawn = screen.with_name(screen.name + ".screen_plain.txt").read_text(encoding="utf-8")
    assert 'The user answered: "Which colour should the widget' in drawn
    result = f'{TYPED_PREFIX}"{COLOUR.text}"="Purple please\nwith dots"{TYPED_SUFFIX}'
    assert values([COLOUR], result) == [(COLOUR.text, "Purple please\nwith dots", True)]


def test_two_questions_one_multi_select_are_split_by_question() -> None:
    result = (
        f'{ANSWERED_PREFIX}"{COLOUR.text}"="Red", "{TOPPINGS.text}"="Cheese, Basil"'
        f"{ANSWERED_SUFFIX}"
    )
    assert values([COLOUR, TOPPINGS], result) == [
        (COLOUR.text, "Red", False),
        (TOPPINGS.text, "Cheese, Basil", False),
    ]


def test_in_a_typed_result_a_listed_option_is_not_typed() -> None:
    result = f'{TYPED_PREFIX}"{COLOUR.text}"="Red", "{TOPPINGS.text}"="anchovies"{TYPED_SUFFIX}'
    assert values([COLOUR, TOPPINGS], result) == [
        (COLOUR.text, "Red", False),
        (TOPPINGS.text, "anchovies", True),
    ]


def test_notes_stay_with_their_answer_and_an_unanswered_question_is_left_out() -> None:
    result = (
        f'{TYPED_PREFIX}"{COLOUR.text}"=(no option selected) notes: the brand blue{TYPED_SUFFIX}'
    )
    assert values([TOPPINGS, COLOUR], result) == [
        (COLOUR.text, "(no option selected) notes: the brand blue", True)
    ]


def test_a_free_reply_is_one_typed_answer() -> None:
    result = "The user responded: let's talk about the layout first"
    assert values([COLOUR], result) == [("", "let's talk about the layout first", True)]


def test_results_without_an_answer_give_nothing() -> None:
    for result in ("The user did not answer the questions.", REJECTED + STOP, "", "hi"):
        assert question_answers([COLOUR], result) == []


def test_an_answer_whose_question_is_unknown_is_the_whole_answers_part() -> None:
    result = f'{ANSWERED_PREFIX}"Something else?"="Yes"{ANSWERED_SUFFIX}'
    assert values([COLOUR], result) == [("", '"Something else?"="Yes"', False)]


def test_a_result_cut_by_the_relay_still_gives_its_start() -> None:
    result = f'{ANSWERED_PREFIX}"{COLOUR.text}"="Blue'
    assert values([COLOUR], result) == [(COLOUR.text, '"Blue', False)]


def test_plan_approvals() -> None:
    # 2.1.332, the plan not in the result (screens/2.1.332/g_plan_approval/05): the text drawn.
    drawn = (
        FIXTURES / "screens" / "2.1.332" / "g_plan_approval" / "06_plan_done_80x24.screen_plain.txt"
    ).read_text(encoding="utf-8")
    assert "User has approved exiting plan mode. You can now" in drawn
    exiting = "User has approved exiting plan mode. You can now proceed."
    assert is_plan_approval(exiting) and approved_plan(exiting) is None
    with_plan = (
        "User has approved your plan. You can now start coding. Start with updating your todo "
        "list if applicable\n\n## Approved Plan:\n# Plan\n\n1. Create hello.txt"
    )
    span = approved_plan(with_plan)
    assert span is not None and span.of(with_plan) == "# Plan\n\n1. Create hello.txt"
    edited = with_plan.replace("## Approved Plan:", "## Approved Plan (edited by user):")
    span = approved_plan(edited)
    assert span is not None and span.of(edited) == "# Plan\n\n1. Create hello.txt"
    assert not is_plan_approval(REJECTED + STOP)


def test_rejection_feedback_is_the_persons_words_only() -> None:
    assert rejection_feedback(REJECTED + STOP) is None  # captured: no words
    for prefix in (REJECTED + SAID, DENIED_SAID):
        text = prefix + "use pnpm, not npm\nand keep the lock file"
        span = rejection_feedback(text)
        assert span is not None and span.of(text) == "use pnpm, not npm\nand keep the lock file"
    assert rejection_feedback(REJECTED + SAID + "   ") is None
    assert rejection_feedback("To tell you how to proceed, the user said:\nx") is None


@PROPERTIES
@given(
    st.lists(st.builds(Question, st.text(), st.tuples(st.text()), st.booleans()), max_size=4),
    st.text(),
    st.sampled_from(["", ANSWERED_PREFIX, TYPED_PREFIX, "The user responded: "]),
    st.sampled_from(["", ANSWERED_SUFFIX, TYPED_SUFFIX]),
)
def test_any_text_gives_slices_of_itself(
    questions: list[Question], middle: str, prefix: str, suffix: str
) -> None:
    result = prefix + middle + suffix
    for answer in question_answers(questions, result):
        assert 0 <= answer.value.start <= answer.value.end <= len(result)
    for span in (approved_plan(result), rejection_feedback(result)):
        assert span is None or 0 <= span.start <= span.end <= len(result)


_plain = st.text(st.characters(blacklist_characters='"'), min_size=1, max_size=30)


@PROPERTIES
@given(st.lists(st.tuples(_plain, _plain), min_size=1, max_size=4, unique_by=lambda p: p[0]))
def test_a_well_formed_result_gives_back_every_answer(pairs: list[tuple[str, str]]) -> None:
    questions = [Question(q, (a,)) for q, a in pairs]
    keys = [f'"{q}"=' for q, _ in pairs]
    # A question whose key shows up inside another pair cannot be told apart: not Claude Code's.
    assume(all(sum(f'"{q}"="{a}"'.count(k) for q, a in pairs) == 1 for k in keys))
    body = ", ".join(f'"{q}"="{a}"' for q, a in pairs)
    result = f"{ANSWERED_PREFIX}{body}{ANSWERED_SUFFIX}"
    assert values(questions, result) == [(q, a, False) for q, a in pairs]
