"""agent.autopass: which dialogs the agent passes by itself, on captured screens of
Claude Code 2.1.328 and on screens drawn with the same dialog frame and 2.1.328's own texts for
the dialogs it only draws for a claude.ai login (development channels, Claude in Chrome)."""

from __future__ import annotations

import pytest

from agent import autopass
from agent.autopass import AutoPass, changes_model, decide
from agent.cards import DetectedCard, classify_text, keys_for
from tests.support.paths import SCREENS

WINDOW = 30.0
SWITCH = "l_model/07_switch_confirm_after_slash_model_sonnet_80x24"


def screen(name: str, twin: str = "plain") -> str:
    return (SCREENS / f"{name}.screen_{twin}.txt").read_text(encoding="utf-8")


def card_of(text: str) -> DetectedCard:
    found = classify_text(text).card
    assert found is not None, text
    return found


def redrawn(title: str, subtitle: str, body: list[str], options: list[str], footer: str) -> str:
    """The captured 'Switch model?' screen with another dialog drawn in the same frame."""
    rows = screen(SWITCH).splitlines()
    top = next(i for i, row in enumerate(rows) if row.startswith("▔"))
    dialog = [f"  {title}"] + ([f"  {subtitle}"] if subtitle else []) + [""]
    dialog += [f"  {line}" for line in body] + [""]
    dialog += [
        f"  ❯ {n}. {label}" if n == 1 else f"    {n}. {label}" for n, label in enumerate(options, 1)
    ]
    dialog += ["", f"  {footer}"]
    return "\n".join(rows[: top + 1] + dialog) + "\n"


CHANNELS = redrawn(
    "WARNING: Loading development channels",
    "",
    [
        "--dangerously-load-development-channels is for local channel development only.",
        "Do not use this option to run channels you have downloaded off the internet.",
        "Please use --channels to run a list of approved channels.",
        "Channels: server:foo",
    ],
    ["I am using this for local development", "Exit"],
    "Enter to confirm · Esc to cancel",
)
CHROME = redrawn(
    "Claude in Chrome",
    "",
    [
        "Claude can use Chrome through its extension: open sites, fill forms, take",
        "screenshots, record GIFs, and read console logs and network requests.",
    ],
    [],
    "Enter to continue · Esc to close",
)


def test_folder_trust_passes_only_while_starting() -> None:
    for twin in ("plain", "ansi"):
        trust = card_of(screen("a_startup_trust/01_trust_dialog_80x24", twin))
        got = decide(trust, starting=True, since_model_change=None, model_switch_window=WINDOW)
        assert got == AutoPass("trust", "2", autopass.TRUST_LINE)
        assert keys_for(trust, got.key) == [["Down"], ["Enter"]]  # ❯ starts on "No, exit"
        later = decide(trust, starting=False, since_model_change=None, model_switch_window=WINDOW)
        assert later is None


@pytest.mark.parametrize("version", ["", "2.1.332/"])
def test_the_trust_of_a_folder_that_arrived_from_another_mac_is_never_passed(version: str) -> None:
    """Captured 2.1.328 and 2.1.332 trust dialogs: a folder a move laid down is the person's to
    trust (a card); their answer reads as yes or no whichever way the card words it."""
    for twin in ("plain", "ansi"):
        trust = card_of(screen(f"{version}a_startup_trust/01_trust_dialog_80x24", twin))
        assert (
            decide(
                trust,
                starting=True,
                since_model_change=None,
                model_switch_window=WINDOW,
                folder_arrived=True,
            )
            is None
        )
        title, text = autopass.arrived_trust_text("Evil Mac", trust.text)
        assert "Evil Mac" in title and "Evil Mac" in text and ".claude/settings.json" in text
        assert text.endswith(trust.text)  # Claude Code's own words stay
        worded = DetectedCard(**{**trust.__dict__, "title": title, "text": text})
        assert autopass.is_trust(worded) and worded.fingerprint == trust.fingerprint
        assert [autopass.trusted(worded, k) for k in ("1", "2", "3", None)] == [
            False, True, None, None
        ]  # fmt: skip
    other = card_of(screen(SWITCH))
    assert autopass.trusted(other, "1") is None  # not a trust dialog


@pytest.mark.parametrize("name", [SWITCH, "l_model/09_switch_confirm_from_picker_80x24"])
def test_model_switch_passes_within_the_window_after_the_phone_changed_the_model(
    name: str,
) -> None:
    for twin in ("plain", "ansi"):
        switch = card_of(screen(name, twin))
        assert switch.kind == "dialog" and switch.title == "Switch model?"
        since: float | None
        for since in (0.0, 12.0, WINDOW):
            got = decide(
                switch, starting=False, since_model_change=since, model_switch_window=WINDOW
            )
            assert got == AutoPass(
                "model", "1", "🔀 Model switch confirmed: Yes, switch to Sonnet 5.5"
            )
        # Not changed from the phone, or too long ago: the person decides.
        for since in (None, WINDOW + 0.5, -1.0):
            got = decide(
                switch, starting=False, since_model_change=since, model_switch_window=WINDOW
            )
            assert got is None


def test_the_model_picker_and_other_dialogs_are_cards() -> None:
    for name in (
        "l_model/02_model_picker_80x24",
        "l_model/10_after_switch_confirm_Esc_80x24",
        "d_bash_permission/01_bash_dialog_80x24",
        "g_plan_approval/02_plan_dialog_80x24",
    ):
        card = card_of(screen(name))
        for starting in (True, False):
            assert decide(card, starting=starting, since_model_change=1.0,
                          model_switch_window=WINDOW) is None, name  # fmt: skip


def test_development_channels_warning_passes_while_starting() -> None:
    warning = card_of(CHANNELS)
    assert warning.title == "WARNING: Loading development channels"
    got = decide(warning, starting=True, since_model_change=None, model_switch_window=WINDOW)
    assert got is not None and got.kind == "channels" and got.line == autopass.CHANNELS_LINE
    chosen = next(o for o in warning.options if o.key == got.key)
    assert chosen.label == "I am using this for local development"
    later = decide(warning, starting=False, since_model_change=None, model_switch_window=WINDOW)
    assert later is None


def test_claude_in_chrome_notice_passes_with_enter_while_starting() -> None:
    notice = card_of(CHROME)
    assert notice.title == "Claude in Chrome"
    got = decide(notice, starting=True, since_model_change=None, model_switch_window=WINDOW)
    assert got == AutoPass("chrome", "Enter", autopass.CHROME_LINE)
    assert keys_for(notice, got.key) == [["Enter"]]
    later = decide(notice, starting=False, since_model_change=None, model_switch_window=WINDOW)
    assert later is None


def test_what_counts_as_changing_the_model() -> None:
    assert changes_model("/model sonnet") and changes_model("  /model\n")
    assert not changes_model("/models") and not changes_model("use /model sonnet")
    assert not changes_model("") and not changes_model("/compact")
