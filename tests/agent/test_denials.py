"""Auto mode's classifier refusing a call, read from Claude Code 2.1.332's own output
(tests/fixtures/auto_mode/2.1.332): the transcript's refusal as a ``denial`` event
(relay/convert.py), the PermissionDenied hook's refusal and the "allow once" answers
(agent/denials.py), the fake API's verdicts (tests/e2e/mockapi.py)."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import expect

from agent import denials
from relay.convert import convert_line
from tests.e2e import mockapi
from tests.support.paths import FIXTURES
from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, commands, new_sid
from wire.protocol import EventKind

CAPTURES = FIXTURES / "auto_mode" / "2.1.332"
REASON = "Deleting build_output removes files the user did not ask to delete."
COMMAND = {
    "command": "rm -rf build_output && echo cleaned",
    "description": "Remove the build folder",
}


def hooks(name: str) -> list[tuple[str, dict[str, Any]]]:
    lines = (CAPTURES / name / "hooks.log").read_text().splitlines()
    return [(e, json.loads(p)) for e, p in (line.split("\t", 1) for line in lines)]


def converted(name: str) -> list[Any]:
    lines = (CAPTURES / name / "transcript.jsonl").read_text().splitlines()
    return [e for line in lines for e in convert_line(line).events]


def test_a_refusal_in_the_transcript_is_its_own_event_after_the_tools_result() -> None:
    events = converted("denied")
    (denial,) = [e for e in events if e.kind == EventKind.DENIAL]
    assert denial.text == f"⛔ Blocked by auto mode: {REASON}"
    result = events[events.index(denial) - 1]
    assert result.kind == EventKind.TOOL_RESULT and result.is_error
    assert result.tool_use_id == denial.tool_use_id
    (use,) = [e for e in events if e.kind == EventKind.TOOL_USE]
    assert use.tool_use_id == denial.tool_use_id and use.input == COMMAND


def test_a_retried_call_shows_one_refusal_then_its_result() -> None:
    events = converted("retried")
    assert len([e for e in events if e.kind == EventKind.DENIAL]) == 1
    results = [e for e in events if e.kind == EventKind.TOOL_RESULT]
    assert [r.is_error for r in results] == [True, False] and results[1].text == "cleaned"
    # the "may retry" note is a meta line: Claude Code does not show it either
    assert not [e for e in events if "may retry" in e.text]
    # a refusal repeated is one event each
    assert len([e for e in converted("repeated") if e.kind == EventKind.DENIAL]) == 2


def test_other_errors_are_no_refusal() -> None:
    line = {
        "type": "user",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
             "content": "Permission for this action was denied by the Claude Code auto mode classifier. Reason: x."},
        ]},
    }  # fmt: skip
    assert not [e for e in convert_line(json.dumps(line)).events if e.kind == EventKind.DENIAL]


def test_the_hook_reports_the_refusal_and_the_card_offers_allow_once() -> None:
    (payload,) = [p for e, p in hooks("denied") if e == "PermissionDenied"]
    denial = denials.from_hook(payload, 100.0)
    assert denial is not None
    assert (denial.tool, denial.tool_input, denial.reason) == ("Bash", COMMAND, REASON)
    assert denial.tool_use_id == payload["tool_use_id"]
    card = denial.card("denied-1")
    assert card.kind == "denied" and card.text == REASON and card.tool == "Bash"
    assert [o.key for o in card.options] == [denials.ALLOW_ONCE, denials.KEEP_BLOCKED]
    assert denials.from_hook({"reason": "x"}, 1.0) is None


def test_allow_once_answers_the_retry_of_that_very_call_only() -> None:
    events = hooks("retried")
    (refused,) = [p for e, p in events if e == "PermissionDenied"]
    retry = [p for e, p in events if e == "PreToolUse"][-1]  # the call made again
    denial = denials.from_hook(refused, 100.0)
    assert denials.allowed_once(denial, retry, 101.0)
    assert not denials.allowed_once(denial, retry, 100.0 + denials.ALLOW_ONCE_FOR + 1)
    other = {**retry, "tool_input": {**COMMAND, "command": "rm -rf /"}}
    assert not denials.allowed_once(denial, other, 101.0)
    assert not denials.allowed_once(None, retry, 101.0)
    # the answers as 2.1.332 took them (retried/notes.md)
    assert json.loads(denials.retry_output()) == {
        "hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}
    }
    allow = json.loads(denials.allow_output())["hookSpecificOutput"]
    assert (allow["hookEventName"], allow["permissionDecision"]) == ("PreToolUse", "allow")


def test_the_fake_api_flags_as_the_server_does() -> None:
    request = json.loads((CAPTURES / "request_safeguards.json").read_text())
    scenario = {"flag": {"explanation": REASON, "times": 1}}
    blocks = [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": COMMAND}]
    (result,) = mockapi.verdicts(request, scenario, blocks)
    assert result["status"]["tool_uses"]["toolu_1"] == {
        "type": "evaluated", "outcome": "flagged", "explanation": REASON,
    }  # fmt: skip
    # after one refusal in the conversation (the captured tool_result), the next attempt passes
    refusal = next(
        json.loads(line)["message"]
        for line in (CAPTURES / "denied" / "transcript.jsonl").read_text().splitlines()
        if '"automode-blocked"' in line
    )
    later = {**request, "messages": [refusal]}
    assert len(mockapi.denied_calls(later)) == 1
    (again,) = mockapi.verdicts(later, scenario, blocks)
    assert again["status"]["tool_uses"]["toolu_1"] == {
        "type": "evaluated",
        "outcome": "not_flagged",
    }
    assert mockapi.verdicts({}, scenario, blocks) is None  # no safeguards asked: no verdict
    assert mockapi.verdicts(request, {}, blocks) is None  # a scenario that does not flag


def test_the_denied_card_on_the_page_offers_allow_once(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    (payload,) = [p for e, p in hooks("denied") if e == "PermissionDenied"]
    denial = denials.from_hook(payload, 100.0)
    assert denial is not None
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="waiting", card=denial.card("denied-1"))
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card-denied[data-card-id='denied-1']")
    expect(card).to_contain_text(REASON)
    expect(card.locator("pre.cmd")).to_have_text(COMMAND["command"])
    phone.shot("41-denied-card", full=True)
    card.get_by_role("button", name="Allow once").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args == {"key": "allow_once", "always": False, "card_id": "denied-1"}
