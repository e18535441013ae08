"""agent.startfail: why the real Claude Code 2.1.332 stopped before its session was live, read
from every start-up capture (tests/fixtures/claude/2.1.332/startup/), and the sign-in refusals it
draws without ending."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.startfail import (
    CODES,
    MAX_LINE_CHARS,
    MAX_LINES,
    StartFailure,
    explain_exit,
    refusal_on_screen,
)
from tests.support.paths import FIXTURES

STARTUP = FIXTURES / "claude" / "2.1.332" / "startup"
WIDTH = 120
PROPS = settings(max_examples=150, derandomize=True, database=None, deadline=None)

# folder → (the screen its claude exited on, the code, the message's first line); None: it never
# exits (its screens are read for refusals below)
EXITS: dict[str, tuple[str, str, str] | None] = {
    "bypass_as_root": (
        "01_exited",
        "claude_root_bypass",
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for security "
        "reasons",
    ),
    "claude_json_corrupt": (
        "02_after_enter_exit_and_fix",
        "claude_config_error",
        "Claude configuration file at /tmp/cap332/homes/claude_json_corrupt/.claude.json is "
        "corrupted: JSON Parse error: Unable to parse JSON string",
    ),
    "fresh_home_env_key_offline": (
        "01_exited",
        "claude_offline",
        "Unable to connect to Anthropic services",
    ),
    "fresh_home_no_key_offline": (
        "01_exited",
        "claude_offline",
        "Unable to connect to Anthropic services",
    ),
    "resume_missing": (
        "01_exited",
        "claude_no_conversation",
        "No conversation found with session ID: 0b0e0a55-0000-4000-8000-00000000dead",
    ),
    "session_id_in_use": (
        "01_exited",
        "claude_session_in_use",
        "Error: Session ID 79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e is already in use.",
    ),
    "session_id_not_uuid": (
        "01_exited",
        "claude_bad_flag",
        "Error: Invalid session ID. Must be a valid UUID.",
    ),
    "settings_missing": (
        "01_exited",
        "claude_settings_missing",
        "Error: Settings file not found: /tmp/cap332/no-such-hooks.json",
    ),
    "unknown_flag": ("01_exited", "claude_bad_flag", "error: unknown option '--bogus-flag'"),
    "untrusted_folder_esc": (
        "01_after_esc",
        "claude_folder_untrusted",
        "Claude Code didn't start because this folder isn't trusted.",
    ),
    "untrusted_folder_no": (
        "02_after_enter_on_no_exit",
        "claude_folder_untrusted",
        "Claude Code didn't start because this folder isn't trusted.",
    ),
    "expired_claude_ai_login": None,
    "fresh_home_env_key_online": None,
    "fresh_home_no_key_online": None,
    "invalid_key": None,
    "invalid_key_no_should_retry": None,
    "no_key_onboarded": None,
    "rejected_key": None,
}

# screen → the refusal it shows (None: none)
REFUSALS: dict[str, tuple[str, str] | None] = {
    "invalid_key/01_first_screen": None,
    "invalid_key/02_3s_after_first_prompt": (
        "claude_invalid_key",
        "Invalid API key · Fix external API key",
    ),
    "invalid_key/04_10s_later": ("claude_invalid_key", "Invalid API key · Fix external API key"),
    # still retrying: '✻ 401 invalid x-api-key · retrying in 1s · attempt 3/10' is no answer yet
    "invalid_key_no_should_retry/02_3s_after_first_prompt": None,
    "invalid_key_no_should_retry/03_after_retries": (
        "claude_invalid_key",
        "Invalid API key · Fix external API key",
    ),
    "no_key_onboarded/01_first_screen": None,
    "no_key_onboarded/02_3s_after_first_prompt": (
        "claude_not_logged_in",
        "Not logged in · Please run /login",
    ),
    "no_key_onboarded/04_10s_later": ("claude_not_logged_in", "Not logged in · Please run /login"),
    "rejected_key/01_first_screen": None,
    "rejected_key/02_3s_after_first_prompt": (
        "claude_key_declined",
        "Not logged in · Please run /login",
    ),
    "rejected_key/04_10s_later": ("claude_key_declined", "Not logged in · Please run /login"),
    "expired_claude_ai_login/01_first_screen": None,
    "expired_claude_ai_login/02_after_first_prompt": (
        "claude_not_logged_in",
        "Not logged in · Please run /login",
    ),
    "fresh_home_no_key_online/01_theme": None,
    "fresh_home_no_key_online/02_after_theme_enter": None,
    "fresh_home_env_key_online/04_api_key_question_after_Up": None,
    "fresh_home_env_key_online/07_after_security_enter": None,
    "claude_json_corrupt/01_dialog": None,
}


def _read(folder: str, moment: str, kind: str, twin: str = "plain") -> str:
    path = STARTUP / folder / f"{moment}_{WIDTH}x40.{kind}_{twin}.txt"
    return path.read_text(encoding="utf-8")


def _run(folder: str) -> dict[str, Any]:
    run: dict[str, Any] = json.loads((STARTUP / folder / "run.json").read_text(encoding="utf-8"))
    return run


def test_every_capture_is_in_the_tables() -> None:
    folders = {p.name for p in STARTUP.iterdir() if p.is_dir()}
    assert folders == set(EXITS)
    for folder, expected in EXITS.items():
        exited = _run(folder).get("alive_at_end") is False or folder == "session_id_in_use"
        assert exited is (expected is not None), folder


@pytest.mark.parametrize("folder", [f for f, e in EXITS.items() if e is not None])
def test_why_it_exited(folder: str) -> None:
    expected = EXITS[folder]
    assert expected is not None
    moment, code, first = expected
    status = _run(folder)["exit_status"]
    got = explain_exit(
        _read(folder, moment, "screen"),
        _read(folder, moment, "with_history"),
        status,
        mac="Studio",
        width=WIDTH,
    )
    assert got.code == code
    assert got.lines[0] == first
    assert got.status == int(status)
    assert "Studio" in got.action and got.action.endswith(".")
    assert not any(line.startswith("Pane is dead") for line in got.lines)
    assert not any("█" in line or "─" in line for line in got.lines)
    assert not any(line.startswith(("1.", "❯ 1.", "2.")) for line in got.lines)


@pytest.mark.parametrize("folder", [f for f, e in EXITS.items() if e is not None])
def test_a_missing_exit_status_is_read_from_tmux_line(folder: str) -> None:
    """tmux 3.3a may leave #{pane_dead_status} empty: 'Pane is dead (status N, …)' says it."""
    expected = EXITS[folder]
    assert expected is not None
    moment, code, _ = expected
    history = _read(folder, moment, "with_history")
    for missing in (None, ""):
        got = explain_exit(_read(folder, moment, "screen"), history, missing, width=WIDTH)
        assert got.code == code
        assert got.status == int(_run(folder)["exit_status"])
    bare = history.replace("Pane is dead", "")
    assert explain_exit("", bare, None, width=WIDTH).status is None


def test_the_one_line_error_is_only_in_the_history() -> None:
    """The visible screen of unknown_flag is empty but for 'Pane is dead' (FINDINGS §0.3)."""
    screen = _read("unknown_flag", "01_exited", "screen")
    alone = explain_exit(screen, "", "1")
    assert alone.code == "claude_exited" and alone.lines == ()
    assert "terminal" in alone.action
    full = explain_exit(screen, _read("unknown_flag", "01_exited", "with_history"), "1")
    assert full.code == "claude_bad_flag"


def test_the_offline_message_is_kept_whole() -> None:
    got = explain_exit("", _read("fresh_home_no_key_offline", "01_exited", "with_history"), "1")
    assert got.lines == (
        "Unable to connect to Anthropic services",
        "Failed to connect to api.anthropic.com: ENOTFOUND",
        "Check your internet connection and network settings.",
        "Claude Code might not be available in your country. Check supported countries at",
        "https://anthropic.com/supported-countries",
    )
    assert got.action.startswith("Claude Code on this Mac could not reach Anthropic")


def test_the_damaged_configuration_names_its_file_and_backup() -> None:
    folder, moment = "claude_json_corrupt", "02_after_enter_exit_and_fix"
    got = explain_exit("", _read(folder, moment, "with_history"), "1", width=WIDTH)
    assert got.lines[1] == (
        "The corrupted file has been backed up to: /tmp/cap332/homes/claude_json_corrupt/.claude/"
        "backups/.claude.json.corrupted.1796404928861"
    )
    assert "Configuration error" in got.lines
    assert not any(
        "Exit and fix manually" in line or "Enter to confirm" in line for line in got.lines
    )


@pytest.mark.parametrize("name", sorted(REFUSALS))
@pytest.mark.parametrize("twin", ["plain", "ansi"])
def test_refusals_on_a_live_screen(name: str, twin: str) -> None:
    folder, moment = name.split("/")
    got = refusal_on_screen(_read(folder, moment, "screen", twin), mac="Studio", width=WIDTH)
    expected = REFUSALS[name]
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert (got.code, got.lines[0]) == expected
    assert "Studio" in got.action
    if got.code == "claude_key_declined":
        assert got.lines[1].startswith("ANTHROPIC_API_KEY not used here")
        assert "Use custom API key" in got.action
    if got.code == "claude_not_logged_in":
        assert got.action == "Run `claude` once in a terminal on Studio and log in (/login)."


def test_an_old_refusal_followed_by_an_answer_is_not_reported() -> None:
    screen = _read("invalid_key", "04_10s_later", "screen").replace("\xa0", " ")
    assert "  ⎿  Invalid API key · Fix external API key" in screen
    assert refusal_on_screen(screen) is not None
    answered = screen.replace(
        "  ⎿  Invalid API key · Fix external API key",
        "  ⎿  Invalid API key · Fix external API key\n\n❯ again\n\n● Hello! How can I help?",
    )
    assert refusal_on_screen(answered) is None
    # nor a refusal's words in Claude's own answer
    quoted = screen.replace("  ⎿  Invalid API key", "● Invalid API key")
    assert refusal_on_screen(quoted) is None


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("OAuth token revoked · Please run /login", "claude_not_logged_in"),
        ("Login expired · Please run /login", "claude_not_logged_in"),
        ("Invalid auth token · Fix external auth token", "claude_invalid_key"),
        ("Credit balance is too low", "claude_no_credit"),
        ("Your organization has disabled API key authentication · x", "claude_invalid_key"),
    ],
)
def test_the_other_sign_in_refusals_of_the_program(line: str, code: str) -> None:
    screen = f"❯ hello\n  ⎿  {line}\n\n{'─' * 40}\n❯ Once fixed, resend your message\n{'─' * 40}\n"
    got = refusal_on_screen(screen)
    assert got is not None and got.code == code and got.lines == (line,)


def test_version_refused_from_the_program_text() -> None:
    text = (
        "Claude Code 2.1.332 is older than the minimum version required by your organization "
        "(2.2.0).\nUpdate Claude Code using your organization's approved method, then try again."
        "\n\nPane is dead (status 1, Fri Dec  4 17:13:00 2026)\n"
    )
    got = explain_exit("", text, "")
    assert got.code == "claude_version_refused" and got.status == 1 and len(got.lines) == 2


def test_an_unknown_exit_keeps_its_last_lines() -> None:
    text = "\n".join(f"line {n}" for n in range(30)) + "\nPane is dead (signal 9, Fri)\n"
    got = explain_exit("", text, "")
    assert got.code == "claude_exited"
    assert got.lines == tuple(f"line {n}" for n in range(30 - MAX_LINES, 30))
    assert (got.status, got.signal) == (None, 9)
    clean = explain_exit("", "", 0)
    assert clean.code == "claude_exited" and clean.lines == () and "by itself" in clean.action


def _well_formed(got: StartFailure) -> None:
    assert got.code in CODES
    assert len(got.lines) <= MAX_LINES
    for line in got.lines:
        assert line and len(line) <= MAX_LINE_CHARS
        assert line == line.strip() and "\n" not in line
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line)
    assert got.action and "{mac}" not in got.action


@PROPS
@given(
    st.text(max_size=400),
    st.text(max_size=2000),
    st.one_of(st.none(), st.integers(-5, 300), st.text(max_size=5)),
    st.text(max_size=200),
    st.integers(0, 300),
)
def test_any_text_gives_a_bounded_well_formed_reason(
    screen: str, history: str, status: int | str | None, mac: str, width: int
) -> None:
    _well_formed(explain_exit(screen, history, status, mac=mac, width=width))
    got = refusal_on_screen(history, mac=mac, width=width)
    if got is not None:
        _well_formed(got)


@PROPS
@given(
    st.lists(
        st.sampled_from(["x" * 50, "⎿  Not logged in · Please run /login", "", "─" * 20]),
        max_size=3000,
    )
)
def test_long_histories_are_bounded(rows: list[str]) -> None:
    _well_formed(explain_exit("", "\n".join(rows), None, width=50))
