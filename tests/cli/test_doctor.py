"""``claude-bridge doctor``: its decisions with plain inputs, then the command itself on a healthy
machine (real tmux, the fake claude, a real relay, a throw-away HOME) and on broken ones."""

from __future__ import annotations

import argparse
import email.utils
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli import checkup
from cli.checks import (
    LABELS,
    ClaudeLoginProbe,
    Entry,
    Folder,
    HookProbe,
    LinkProbe,
    RelayProbe,
    Result,
    ServiceProbe,
    decide_claude,
    decide_claude_login,
    decide_clock,
    decide_hook,
    decide_link,
    decide_mux,
    decide_permissions,
    decide_push,
    decide_python,
    decide_relay,
    decide_service,
    exit_code,
    key_tail,
    parse_claude_auth,
    parse_key_answers,
    render,
)
from tests.fakeclaude.app import VERSION as FAKE_CLAUDE_VERSION
from tests.support.bridge import FAKE, seed_home
from tests.support.paths import REPO
from tests.support.relay import Account, RelayServer, free_port
from tests.support.web import ScriptedMac
from wire import claude_versions

NAMES = ["python", "tmux", "claude", "login", "hook", "relay", "push", "service", "link",
         "permissions", "clock"]  # fmt: skip
TESTED = claude_versions.newest_tested()


# -- the decisions, with plain inputs --------------------------------------------------------


def test_python_needs_3_11() -> None:
    assert decide_python((3, 11, 7)).status == "ok"
    assert decide_python((3, 13, 0)).status == "ok"
    old = decide_python((3, 10, 12))
    assert old.status == "fail" and "3.10.12" in old.detail and "3.11" in old.fix


@pytest.mark.parametrize(
    ("output", "status"),
    [
        ("tmux 3.3a\n", "ok"),
        ("tmux 3.2a\n", "ok"),
        ("tmux next-3.5\n", "ok"),
        ("tmux 3.2\n", "fail"),  # older than 3.2a
        ("tmux 2.9a\n", "fail"),
        ("tmux master\n", "warn"),  # no version to compare
    ],
)
def test_tmux_is_held_to_the_oldest_version_the_agent_works_with(output: str, status: str) -> None:
    result = decide_mux("/usr/bin/tmux", "", output, "3.2a")
    assert result.status == status, result
    assert (result.fix == "") == (status == "ok")


def test_no_tmux_fails_with_how_to_install_it() -> None:
    result = decide_mux(None, "tmux is not installed", None, "3.2a")
    assert result.status == "fail" and "apt install tmux" in result.fix


def test_claude_versions_against_the_tested_list() -> None:
    ok = decide_claude("/bin/claude", "", TESTED)
    assert ok.status == "ok" and TESTED in ok.detail and ok.fix == ""
    newer = decide_claude("/bin/claude", "", "2.1.999")
    assert newer.status == "warn"
    assert newer.detail == claude_versions.version_warning("2.1.999")
    assert newer.fix.endswith(f"@anthropic-ai/claude-code@{TESTED}")
    older = decide_claude("/bin/claude", "", "0.9.1")
    assert older.status == "warn" and older.detail == claude_versions.version_warning("0.9.1")
    missing = decide_claude(None, "cannot find 'claude'", None)
    assert missing.status == "fail" and "--claude PATH" in missing.fix
    broken = decide_claude("/bin/claude", "/bin/claude --version did not print a version", None)
    assert broken.status == "fail" and "/bin/claude" in broken.fix


AUTH = REPO / "tests" / "fixtures" / "claude" / "2.1.332" / "auth_status"
MOCK_KEY = "sk-ant-api03-mockmockmockmockmockmockmockmockmockmockmock-AAAAAAAA"


def _auth_capture(case: str) -> tuple[str, int]:
    """A captured ``claude auth status``: its stdout and exit status."""
    text = (AUTH / f"{case}.txt").read_text(encoding="utf-8")
    status = int(text.split("# exit status: ", 1)[1].split("\n", 1)[0])
    stdout = text.split("# --- stdout ---\n", 1)[1].split("# --- stderr ---", 1)[0]
    return stdout, status


def _claude_json(approved: list[str], rejected: list[str], onboarded: bool = True) -> str:
    return json.dumps(
        {
            "hasCompletedOnboarding": onboarded,
            "customApiKeyResponses": {"approved": approved, "rejected": rejected},
        }
    )


def _login(case: str, env_key: str | None = None, claude_json: str | None = None) -> Result:
    stdout, status = _auth_capture(case)
    answers = parse_key_answers(claude_json) if claude_json is not None else None
    return decide_claude_login(
        ClaudeLoginProbe(
            ran=True, output=stdout, exit_code=status, env_key=env_key, answers=answers
        )
    )


def test_claude_auth_status_as_captured() -> None:
    cases = {
        "loggedout": (False, "none", None),
        "loggedout_base_url_nowhere": (False, "none", None),
        "envkey_fresh_home": (True, "api_key", "ANTHROPIC_API_KEY"),
        "envkey_approved": (True, "api_key", "ANTHROPIC_API_KEY"),
        "envkey_rejected": (True, "api_key", "ANTHROPIC_API_KEY"),
        "primaryApiKey_in_claude_json": (True, "api_key", "/login managed key"),
        "auth_token_env": (True, "oauth_token", None),
        "expired_claude_ai_login": (True, "claude.ai", None),
    }
    for case, (logged_in, method, source) in cases.items():
        stdout, status = _auth_capture(case)
        auth = parse_claude_auth(stdout, status)
        assert auth is not None, case
        assert (auth.logged_in, auth.method, auth.key_source) == (logged_in, method, source), case
        assert auth.exit_code == (0 if logged_in else 1), case
    pro = parse_claude_auth(*_auth_capture("expired_claude_ai_login"))
    assert pro is not None and pro.subscription == "pro"
    # --text, an older claude, an error: not this JSON
    for case in ("loggedout__text", "envkey_approved__text"):
        assert parse_claude_auth(*_auth_capture(case)) is None
    for junk in ("", "[]", '{"loggedIn": "yes"}', "error: unknown command 'auth'", "{" * 100):
        assert parse_claude_auth(junk, 1) is None


def test_claude_login_decisions_from_the_captures() -> None:
    seeded = _claude_json([key_tail(MOCK_KEY)], [])
    out = _login("loggedout", None, _claude_json([], []))
    assert out.status == "fail" and "not logged in" in out.detail.lower()
    assert "run `claude` once in a terminal and log in" in out.fix
    ok = _login("envkey_approved", MOCK_KEY, seeded)
    assert ok.status == "ok" and "ANTHROPIC_API_KEY" in ok.detail
    # logged in, says auth status, but the person once declined this key: unusable
    declined = _login("envkey_rejected", MOCK_KEY, _claude_json([], [key_tail(MOCK_KEY)]))
    assert declined.status == "fail"
    assert "told not to use this ANTHROPIC_API_KEY" in declined.detail
    assert "Use custom API key" in declined.fix
    # a fresh HOME: logged in by the key, but the first start sets up (and asks about the key)
    fresh = _login("envkey_fresh_home", MOCK_KEY, None)
    assert fresh.status == "warn" and "never set up" in fresh.detail
    unanswered = _login("envkey_approved", MOCK_KEY, _claude_json([], []))
    assert unanswered.status == "warn" and "will ask" in unanswered.detail
    assert _login("primaryApiKey_in_claude_json", None, _claude_json([], [])).status == "ok"
    assert _login("auth_token_env", None, _claude_json([], [])).status == "ok"
    pro = _login("expired_claude_ai_login", None, _claude_json([], []))
    # an expired claude.ai login still reads logged in: nothing here can tell (FINDINGS §1)
    assert pro.status == "ok" and "Claude account (pro)" in pro.detail
    assert "not checked against the API" in pro.detail


def test_claude_login_when_the_command_does_not_answer() -> None:
    none = decide_claude_login(ClaudeLoginProbe(ran=False, problem="timed out after 10 s"))
    assert none.status == "warn" and "timed out" in none.detail and none.fix
    odd = decide_claude_login(ClaudeLoginProbe(ran=True, output="Usage: claude …", exit_code=1))
    assert odd.status == "warn" and "claude update" in odd.fix
    assert parse_key_answers("{ this is not json") is None
    assert parse_key_answers("[]") is None
    assert parse_key_answers('{"customApiKeyResponses": {"rejected": "x"}}') is not None
    assert LABELS["login"] == "Claude Code login"


def test_hook_command_decisions() -> None:
    good = HookProbe("/x/cb-hook", executable=True, curl="/usr/bin/curl", exit_code=0,
                     delivered=True)  # fmt: skip
    assert decide_hook(good).status == "ok"
    assert decide_hook(HookProbe(None, "the hook command /x is missing")).status == "fail"
    not_exec = decide_hook(HookProbe("/x/cb-hook", executable=False, curl="/usr/bin/curl"))
    assert not_exec.status == "fail" and not_exec.fix == "chmod +x /x/cb-hook"
    no_curl = decide_hook(HookProbe("/x/cb-hook", executable=True, curl=None))
    assert no_curl.status == "fail" and "curl" in no_curl.detail
    loud = HookProbe("/x/cb-hook", executable=True, curl="/usr/bin/curl", exit_code=0,
                     output="oops", delivered=True)  # fmt: skip
    assert decide_hook(loud).status == "fail"  # a hook must print nothing Claude Code would read
    lost = HookProbe("/x/cb-hook", executable=True, curl="/usr/bin/curl", exit_code=0)
    assert decide_hook(lost).status == "fail"


def _answer(url: str, **kw: Any) -> RelayProbe:
    base: dict[str, Any] = dict(status_code=200, body={"status": "ok"}, sent_at=100.0,
                                received_at=100.02)  # fmt: skip
    base.update(kw)
    return RelayProbe(url, **base)


def test_relay_reachability() -> None:
    https = decide_relay(_answer("https://mac.tail1234.ts.net"))
    assert https.status == "ok" and "HTTPS" in https.detail and "20 ms" in https.detail
    loop = decide_relay(_answer("http://127.0.0.1:8765"))
    assert loop.status == "warn" and loop.detail.startswith("loopback only")
    assert (
        "--tailscale" in loop.fix
        and "--public-url" in loop.fix
        and "caddy reverse-proxy" in loop.fix
    )
    assert decide_relay(_answer("http://localhost:8765")).detail.startswith("loopback only")
    lan = decide_relay(_answer("http://192.168.1.20:8765"))
    assert lan.status == "warn" and "plain http" in lan.detail
    down = decide_relay(RelayProbe("http://127.0.0.1:8765", error="Connection refused"))
    assert down.status == "fail" and down.fix == "start it: claude-bridge up"
    far = decide_relay(RelayProbe("https://relay.example", error="Connection refused"))
    assert far.status == "fail" and "Connection refused" in far.detail and "proxy" in far.fix
    error = "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"
    untrusted = decide_relay(RelayProbe("https://relay.example", error=error))
    assert untrusted.status == "fail" and "caddy trust" in untrusted.fix
    other = decide_relay(_answer("https://relay.example", status_code=404, body=None))
    assert other.status == "fail" and "HTTP 404" in other.detail


def test_web_push_needs_https_and_the_key() -> None:
    assert decide_push("http://127.0.0.1:8765", True, True, "here").status == "warn"
    assert decide_push("https://r.example", True, True, "vapid.pem").status == "ok"
    assert decide_push("https://r.example", False, None, "").status == "skipped"
    assert decide_push("https://r.example", True, False, "/d/vapid.pem").status == "fail"
    unchecked = decide_push("https://r.example", True, None, "no phone token")
    assert unchecked.status == "ok" and "not checked" in unchecked.detail


def test_login_service_decisions() -> None:
    unit = "/h/.config/systemd/user/claude-bridge-agent.service"
    missing = decide_service(ServiceProbe("Linux", unit, kind="agent"))
    assert missing.status == "warn" and missing.fix.startswith("claude-bridge agent install")
    assert decide_service(ServiceProbe("Linux", unit, True, "enabled")).status == "ok"
    disabled = decide_service(ServiceProbe("Linux", unit, True, "disabled"))
    assert disabled.status == "warn"
    assert disabled.fix == "systemctl --user enable --now claude-bridge-agent.service"
    unasked = decide_service(ServiceProbe("Linux", unit, True, None, "no user manager"))
    assert unasked.status == "ok" and "could not be asked" in unasked.detail
    plist = "/h/Library/LaunchAgents/com.claude-bridge.agent.plist"
    assert decide_service(ServiceProbe("Darwin", plist, True, "loaded")).status == "ok"
    unloaded = decide_service(ServiceProbe("Darwin", plist, True, "not loaded"))
    assert unloaded.fix == f"launchctl load -w {plist}"
    assert decide_service(ServiceProbe("Windows")).status == "skipped"


def test_agent_link_decisions() -> None:
    url = "http://127.0.0.1:8765"
    assert decide_link(LinkProbe("/a", url, False)).status == "fail"
    refused = decide_link(LinkProbe("/a", url, True, "this token was revoked", True))
    assert refused.status == "fail" and "revoked" in refused.detail and "--pair" in refused.fix
    online = decide_link(LinkProbe("/a", url, True, None, True, "Studio", True))
    assert online.status == "ok" and "online" in online.detail and "'Studio'" in online.detail
    offline = decide_link(LinkProbe("/a", url, True, None, True, "Studio", False))
    assert offline.status == "warn" and "claude-bridge agent install" in offline.fix
    known = decide_link(LinkProbe("/a", url, True, None, True, "", None, "no phone token"))
    assert known.status == "ok" and "no phone token" in known.detail
    unknown = decide_link(LinkProbe("/a", url, True, None, False, "", None, "no phone token"))
    assert unknown.status == "skipped" and "no phone token" in unknown.detail


def test_permissions_decisions() -> None:
    private = Folder(Entry("/a", 0o700, True), [Entry("/a/device-token", 0o600, False)])
    assert decide_permissions([private]).status == "ok"
    assert decide_permissions([]).status == "skipped"
    behind_private = Folder(Entry("/a", 0o700, True), [Entry("/a/device-token", 0o644, False)])
    warn = decide_permissions([behind_private])
    assert warn.status == "warn" and warn.fix == "chmod 600 /a/device-token"
    assert "/a/device-token (0644)" in warn.detail
    open_all = Folder(Entry("/a b", 0o755, True), [Entry("/a b/relay.db", 0o644, False)])
    fail = decide_permissions([open_all])
    assert fail.status == "fail"
    assert fail.fix == "chmod 700 '/a b' && chmod 600 '/a b/relay.db'"
    folder_only = Folder(Entry("/a", 0o755, True), [Entry("/a/relay.db", 0o600, False)])
    assert decide_permissions([folder_only]).status == "warn"
    # A loose archive inside a private agent folder: nobody else reaches it, still fix it.
    nested = Folder(Entry("/a/events", 0o755, True), [Entry("/a/events/s.jsonl", 0o644, False)],
                    behind="/a")  # fmt: skip
    inside = decide_permissions([private, nested])
    assert inside.status == "warn"
    assert inside.fix == "chmod 700 /a/events && chmod 600 /a/events/s.jsonl"


def test_clock_skew_decisions() -> None:
    def at(offset: float) -> RelayProbe:
        return _answer("http://r", date_header=email.utils.formatdate(1000 + offset, usegmt=True),
                       sent_at=1000.0, received_at=1000.05)  # fmt: skip

    assert decide_clock(at(0), "Linux").status == "ok"
    assert decide_clock(at(29), "Linux").status == "ok"
    behind = decide_clock(at(300), "Linux")
    assert behind.status == "warn" and "5 min 0 s behind" in behind.detail
    assert "timedatectl set-ntp true" in behind.fix
    ahead = decide_clock(at(-45), "Darwin")
    assert ahead.status == "warn" and "ahead of" in ahead.detail and "Date & Time" in ahead.fix
    assert decide_clock(at(45), "Linux", threshold=60).status == "ok"
    assert decide_clock(_answer("http://r", date_header=None), "Linux").status == "skipped"
    assert decide_clock(RelayProbe("http://r", error="down"), "Linux").status == "skipped"


def test_render_aligns_marks_and_fixes_and_ends_with_a_summary() -> None:
    results = [
        Result("python", "ok", "Python 3.11.7"),
        Result("relay", "warn", "loopback only", "use --tailscale"),
        Result("claude", "fail", "cannot find 'claude'", "npm i -g @anthropic-ai/claude-code"),
        Result("clock", "skipped", "the relay did not answer"),
    ]
    lines = render(results).splitlines()
    assert lines == [
        "  ✓ Python       Python 3.11.7",
        "  ! relay        loopback only",
        "                 → use --tailscale",
        "  ✗ Claude Code  cannot find 'claude'",
        "                 → npm i -g @anthropic-ai/claude-code",
        "  - clock        the relay did not answer",
        "1 ok, 1 warning, 1 failed, 1 skipped: something needs fixing.",
    ]
    assert exit_code(results) == 1
    assert exit_code(results[:2]) == 0  # a warning does not fail


def test_the_names_doctor_repeats_still_agree_with_their_sources() -> None:
    from agent.daemon import DEVICE_ID_FILE
    from relay.features.push import KEY_FILE

    assert checkup.DEVICE_ID_FILE == DEVICE_ID_FILE and checkup.KEY_FILE == KEY_FILE
    # (the token's hash: the link tests below find real tokens in a real relay's data)


# -- the command on real machines ------------------------------------------------------------


def _bin(tmp_path: Path, *, tmux: bool = True, claude: str | None = None) -> Path:
    """A PATH folder with only what the checks may use: sh and curl for the hook command, tmux
    when wanted, a ``claude`` when given."""
    folder = tmp_path / ("bin-tmux" if tmux else "bin")
    folder.mkdir(exist_ok=True)
    for name in ["sh", "bash", "curl", "env", "dirname"] + (["tmux"] if tmux else []):
        found = shutil.which(name)
        assert found, name
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(found)
    if claude is not None:
        (folder / "claude").write_text(claude)
        (folder / "claude").chmod(0o755)
    return folder


def _untested_claude(tmp_path: Path, version: str = "2.1.999") -> str:
    path = tmp_path / "claude-untested"
    path.write_text(f'#!/bin/sh\necho "{version} (Claude Code)"\n')
    path.chmod(0o755)
    return str(path)


def _agent_dir(tmp_path: Path, account: Account | None) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir(mode=0o700, exist_ok=True)
    if account is not None:
        for name, value in (("device-token", account.device_token),
                            ("device-id", account.device_id)):  # fmt: skip
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(value + "\n")
    return folder


def _claude_set_up(home: Path) -> dict[str, str]:
    """Claude Code set up in ``home`` and logged in by an API key it was told to use: the
    variables that give claude that key."""
    if not (home / ".claude.json").exists():
        seed_home(home, [])
    return {"ANTHROPIC_API_KEY": MOCK_KEY}


def _doctor(
    tmp_path: Path,
    *args: str,
    path: Path,
    env: dict[str, str] | None = None,
    code: int | None = None,
    login: bool = True,
) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("CB_", "ANTHROPIC_", "CLAUDE_"))
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    if login:
        environ.update(_claude_set_up(tmp_path / "home"))
    environ.update(HOME=str(tmp_path / "home"), PATH=str(path), **(env or {}))
    done = subprocess.run(
        [sys.executable, "-m", "cli", "doctor", *args],
        capture_output=True, text=True, env=environ, cwd=REPO, timeout=90,
    )  # fmt: skip
    if code is not None:
        assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    return done


def _by_name(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    checks = json.loads(done.stdout)
    return {c["name"]: c for c in checks}


@pytest.fixture
def linked(relay: RelayServer, account: Account) -> Iterator[ScriptedMac]:
    """This machine's Mac, linked to the relay over the real link (online on the phone)."""
    from tests.support.web import LoopThread

    loop = LoopThread()
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    yield mac
    mac.close()
    loop.stop()


def _healthy_args(tmp_path: Path, relay: RelayServer, account: Account) -> list[str]:
    agent = _agent_dir(tmp_path, account)
    return ["--relay", relay.url, "--data", str(relay.config.data_path), "--agent-data",
            str(agent), "--claude", FAKE, "--token", account.phone_token]  # fmt: skip


def test_a_healthy_machine_is_all_ok_but_the_honest_warnings(
    tmp_path: Path, relay: RelayServer, account: Account, linked: ScriptedMac
) -> None:
    done = _doctor(tmp_path, "--json", *_healthy_args(tmp_path, relay, account),
                   path=_bin(tmp_path), code=0)  # fmt: skip
    checks = json.loads(done.stdout)
    assert [c["name"] for c in checks] == NAMES
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in checks)
    assert all(isinstance(v, str) for c in checks for v in c.values())
    status = {c["name"]: c["status"] for c in checks}
    # Loopback only (so no Web Push), and not a login service: honest warnings on this setup.
    assert {n for n, s in status.items() if s != "ok"} == {"relay", "push", "service"}, checks
    assert set(status.values()) == {"ok", "warn"}
    by = {c["name"]: c for c in checks}
    assert by["relay"]["detail"].startswith("loopback only")
    assert "tmux" in by["tmux"]["detail"] and by["tmux"]["fix"] == ""
    # The fake claude draws 2.1.328's screens and says so; that version stays on the tested list.
    assert f"Claude Code {FAKE_CLAUDE_VERSION} at" in by["claude"]["detail"]
    assert "(a tested version)" in by["claude"]["detail"]
    assert "dry run" in by["hook"]["detail"]
    assert "online now" in by["link"]["detail"] and "'Studio'" in by["link"]["detail"]
    assert "within" in by["clock"]["detail"]
    assert str(tmp_path / "home" / ".config/systemd/user") in by["service"]["detail"]
    assert all(c["fix"] for c in checks if c["status"] == "warn")


def test_on_the_relay_s_machine_the_link_is_asked_with_the_relay_s_own_token(
    tmp_path: Path, relay: RelayServer, account: Account, linked: ScriptedMac
) -> None:
    """No --token, no CB_TOKEN: this machine's relay keeps one for its command line (0600),
    and doctor asks with it whether this Mac is online."""
    kept = relay.config.data_path / "cli-token"
    kept.write_text(account.phone_token + "\n")
    kept.chmod(0o600)
    args = _healthy_args(tmp_path, relay, account)[:-2]  # without --token
    done = _doctor(tmp_path, "--json", *args, path=_bin(tmp_path), code=0)
    by = {c["name"]: c for c in json.loads(done.stdout)}
    assert "online now" in by["link"]["detail"], by["link"]
    assert "no phone token" not in by["link"]["detail"]


def test_the_person_s_output_one_aligned_line_per_check_and_a_summary(
    tmp_path: Path, relay: RelayServer, account: Account, linked: ScriptedMac
) -> None:
    done = _doctor(tmp_path, *_healthy_args(tmp_path, relay, account), path=_bin(tmp_path), code=0)
    lines = done.stdout.splitlines()
    assert lines[0] == "claude-bridge doctor"
    checks = [line for line in lines[1:-1] if line[2] in "✓!✗-"]
    assert [line[2] for line in checks] == ["✓"] * 5 + ["!", "!", "!", "✓", "✓", "✓"], lines
    columns = set()
    for line, name in zip(checks, NAMES, strict=True):
        label = LABELS[name]
        assert line[4:].startswith(label + " "), line
        rest = line[4 + len(label) :]
        columns.add(4 + len(label) + len(rest) - len(rest.lstrip()))
    assert len(columns) == 1, lines  # every detail starts in one column
    fixes = [line for line in lines if line.lstrip().startswith("→ ")]
    assert len(fixes) == 3 and {line.index("→") for line in fixes} == columns, lines
    assert lines[-1] == "8 ok, 3 warnings, 0 failed: nothing fails."


def test_no_tmux_fails_and_says_how_to_install_it(
    tmp_path: Path, relay: RelayServer, account: Account
) -> None:
    done = _doctor(tmp_path, "--json", *_healthy_args(tmp_path, relay, account),
                   path=_bin(tmp_path, tmux=False), code=1)  # fmt: skip
    tmux = _by_name(done)["tmux"]
    assert tmux["status"] == "fail" and "tmux is not installed" in tmux["detail"]
    assert "apt install tmux" in tmux["fix"]


def test_no_claude_fails_and_says_how_to_get_it(tmp_path: Path) -> None:
    agent = _agent_dir(tmp_path, None)
    done = _doctor(tmp_path, "--json", "--agent-data", str(agent), "--data",
                   str(tmp_path / "relay"), "--relay", f"http://127.0.0.1:{free_port()}",
                   path=_bin(tmp_path), code=1)  # fmt: skip
    by = _by_name(done)
    assert by["claude"]["status"] == "fail" and "cannot find 'claude'" in by["claude"]["detail"]
    assert "npm i -g @anthropic-ai/claude-code" in by["claude"]["fix"]
    # Nothing answers there, and this machine never linked: both say what to do.
    assert by["relay"]["status"] == "fail" and by["relay"]["fix"] == "start it: claude-bridge up"
    assert by["link"]["status"] == "fail" and "claude-bridge up" in by["link"]["fix"]
    assert by["clock"]["status"] == "skipped"


def test_claude_found_on_path_like_the_agent_finds_it(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, claude=f'#!/bin/sh\necho "{TESTED} (Claude Code)"\n')
    done = _doctor(tmp_path, "--json", "--agent-data", str(_agent_dir(tmp_path, None)),
                   "--data", str(tmp_path / "relay"), path=bin_dir)  # fmt: skip
    claude = _by_name(done)["claude"]
    assert claude["status"] == "ok" and str(bin_dir / "claude") in claude["detail"]
    # CB_CLAUDE wins over PATH, as for the agent.
    other = _untested_claude(tmp_path)
    done = _doctor(tmp_path, "--json", "--agent-data", str(_agent_dir(tmp_path, None)),
                   "--data", str(tmp_path / "relay"), path=bin_dir,
                   env={"CB_CLAUDE": other})  # fmt: skip
    assert _by_name(done)["claude"]["status"] == "warn"


def test_an_untested_claude_version_is_a_warning_with_the_band_s_sentence(
    tmp_path: Path, relay: RelayServer, account: Account, linked: ScriptedMac
) -> None:
    args = _healthy_args(tmp_path, relay, account)
    args[args.index("--claude") + 1] = _untested_claude(tmp_path)
    done = _doctor(tmp_path, "--json", *args, path=_bin(tmp_path), code=0)  # warn: no failure
    claude = _by_name(done)["claude"]
    assert claude["status"] == "warn"
    assert claude["detail"] == claude_versions.version_warning("2.1.999")
    assert "is newer than this bridge was tested with" in claude["detail"]
    assert claude["fix"].endswith(f"@anthropic-ai/claude-code@{TESTED}")


def _link(tmp_path: Path, relay: RelayServer, token: str) -> Result:
    """The link check's probe and decision, in this process, against the real relay."""
    public = checkup.probe_relay(relay.url)
    return decide_link(
        checkup.probe_link(tmp_path / "agent", relay.config.data_path, relay.url, public, token)
    )


def test_an_offline_mac_and_no_phone_token(
    tmp_path: Path, relay: RelayServer, account: Account
) -> None:
    _agent_dir(tmp_path, account)
    offline = _link(tmp_path, relay, account.phone_token)
    assert offline.status == "warn" and "not linked now" in offline.detail
    # Known to the relay (its own data was read), but whether it is online cannot be said.
    unasked = _link(tmp_path, relay, "")
    assert unasked.status == "ok" and "known to the relay" in unasked.detail
    assert "no phone token" in unasked.detail
    (tmp_path / "agent" / "device-id").unlink()  # not linked yet: its id is not known
    unknown = _link(tmp_path, relay, account.phone_token)
    assert unknown.status == "ok" and "device id is not known yet" in unknown.detail


def test_a_revoked_mac_token_fails(tmp_path: Path, relay: RelayServer, account: Account) -> None:
    _agent_dir(tmp_path, account)
    store = relay.state.store
    store.revoke_token_sync(store.authenticate(account.device_token).token_id)
    link = _link(tmp_path, relay, account.phone_token)
    assert link.status == "fail" and "revoked" in link.detail
    (tmp_path / "agent" / "device-token").write_text("not-a-token\n")
    link = _link(tmp_path, relay, account.phone_token)
    assert link.status == "fail" and "not known to the relay" in link.detail
    # An agent linked to a relay elsewhere is not judged by this machine's relay data.
    (tmp_path / "agent" / "relay-url").write_text("https://relay.example\n")
    link = _link(tmp_path, relay, "")
    assert link.status == "skipped" and "https://relay.example" in link.detail


def test_loose_permissions_are_fixed_by_the_printed_command(
    tmp_path: Path, relay: RelayServer, account: Account
) -> None:
    agent = _agent_dir(tmp_path, account)
    relay_dir = relay.config.data_path

    def check() -> Result:
        return decide_permissions(checkup.probe_permissions(relay_dir, agent))

    assert check().status == "ok"
    token = agent / "device-token"
    token.chmod(0o644)
    perms = check()
    assert perms.status == "warn" and f"{token} (0644)" in perms.detail  # the folder is 0700
    agent.chmod(0o755)
    perms = check()
    assert perms.status == "fail" and "others on this machine can read" in perms.detail
    subprocess.run(["sh", "-c", perms.fix], check=True)
    assert token.stat().st_mode & 0o777 == 0o600 and agent.stat().st_mode & 0o777 == 0o700
    assert check().status == "ok"
    # The command says the same, and a failing check makes it exit 1.
    token.chmod(0o640)
    agent.chmod(0o750)
    done = _doctor(tmp_path, "--json", *_healthy_args(tmp_path, relay, account),
                   path=_bin(tmp_path), code=1)  # fmt: skip
    assert _by_name(done)["permissions"]["fix"] == f"chmod 700 {agent} && chmod 600 {token}"


def test_an_installed_unit_file_is_found(
    tmp_path: Path, relay: RelayServer, account: Account
) -> None:
    unit = tmp_path / "home" / ".config" / "systemd" / "user" / "claude-bridge-agent.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nExecStart=claude-bridge agent\n")
    done = _doctor(tmp_path, "--json", *_healthy_args(tmp_path, relay, account),
                   path=_bin(tmp_path))  # fmt: skip
    service = _by_name(done)["service"]
    # systemctl is not on this PATH: the file is there, whether it is enabled cannot be asked.
    assert service["status"] == "ok" and str(unit) in service["detail"]
    assert "could not be asked" in service["detail"]


class _SkewedRelay(http.server.BaseHTTPRequestHandler):
    """A stand-in relay whose clock is five minutes behind this one's: /api/health only."""

    skew = -300.0

    def do_GET(self) -> None:
        body = json.dumps({"status": "ok"}).encode()
        self.send_response_only(200 if self.path == "/api/health" else 404)
        self.send_header("Date", email.utils.formatdate(time.time() + self.skew, usegmt=True))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_clock_skew_against_the_relay_is_a_warning(tmp_path: Path) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _SkewedRelay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = _doctor(tmp_path, "--json", "--relay", url, "--claude", FAKE, "--agent-data",
                       str(_agent_dir(tmp_path, None)), "--data", str(tmp_path / "relay"),
                       path=_bin(tmp_path))  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    by = _by_name(done)
    assert by["relay"]["status"] == "warn"  # it answers, on loopback
    clock = by["clock"]
    assert clock["status"] == "warn" and "ahead of the relay's" in clock["detail"], clock
    assert "5 min" in clock["detail"] and "timedatectl" in clock["fix"]


def test_bad_options_and_help(tmp_path: Path) -> None:
    done = _doctor(tmp_path, "--help", path=_bin(tmp_path), code=0)
    for flag in ("--relay", "--data", "--agent-data", "--claude", "--token", "--json"):
        assert flag in done.stdout
    done = _doctor(tmp_path, "--json", path=_bin(tmp_path), env={"CB_PORT": "nope"}, code=2)
    assert done.stderr.startswith("claude-bridge: ") and "port" in done.stderr


# -- up runs the quick checks first ----------------------------------------------------------


def test_quick_report_is_empty_on_a_healthy_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name, value in _claude_set_up(tmp_path / "home").items():
        monkeypatch.setenv(name, value)
    agent = _agent_dir(tmp_path, None)
    args = argparse.Namespace(data_dir=str(tmp_path / "relay"), agent_data=str(agent),
                              claude=FAKE)  # fmt: skip
    assert checkup.quick_report(args) == ""


def test_up_prints_only_the_quick_checks_that_fail_or_warn(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(HOME=str(tmp_path / "home"), PATH=str(_bin(tmp_path, tmux=False)))
    port = free_port()
    up = subprocess.Popen(
        [sys.executable, "-m", "cli", "up", "--data", str(tmp_path / "relay"), "--agent-data",
         str(tmp_path / "agent"), "--port", str(port), "--claude", _untested_claude(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    out: list[str] = []
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 60
        while not any("Press Ctrl-C" in line for line in out):
            assert time.monotonic() < deadline and up.poll() is None, "".join(out)
            out.append(up.stdout.readline())
        up.send_signal(signal.SIGINT)
        assert up.wait(30) in {0, 130}  # 130: stopped before its own handler was set
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
    text = "".join(out)
    before = text[: text.index("claude-bridge is starting")]
    assert before.startswith("Before starting (claude-bridge doctor checks more):\n"), text
    assert "✗ tmux" in before and "apt install tmux" in before
    assert "! Claude Code" in before and "2.1.999 is newer" in before
    # That claude prints no login status: `up` says so before it starts (a quick check).
    assert "! Claude Code login" in before and "printed no login status" in before
    assert "✓" not in text  # what is fine is not printed
    assert "Web Push" not in before and "clock" not in before  # no network checks here


def test_a_fresh_up_prints_no_check_and_leaves_everything_private(tmp_path: Path) -> None:
    """The real `up` (relay + agent with the fake claude in real tmux): nothing to report before
    it starts, and every file it and its agent write passes the permissions check."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")
    env.update(_claude_set_up(tmp_path / "home"))
    socket_name = f"cbdoc-{os.getpid()}"
    agent, relay_dir = tmp_path / "agent", tmp_path / "relay"
    up = subprocess.Popen(
        [sys.executable, "-m", "cli", "up", "--data", str(relay_dir), "--agent-data", str(agent),
         "--port", str(free_port()), "--claude", FAKE, "--socket", socket_name,
         "--claude-arg=--chrome"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    out: list[str] = []
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 60
        while not any("Press Ctrl-C" in line for line in out):
            assert time.monotonic() < deadline and up.poll() is None, "".join(out)
            out.append(up.stdout.readline())
        while not (agent / "device-id").exists():  # written once the agent has linked
            assert time.monotonic() < deadline, "".join(out)
            time.sleep(0.1)
        result = decide_permissions(checkup.probe_permissions(relay_dir, agent))
        up.send_signal(signal.SIGINT)
        assert up.wait(30) in {0, 130}
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True, check=False)
    text = "".join(out)
    assert text.startswith("claude-bridge is starting"), text  # no check had anything to say
    assert "local agent:  running claude" in text
    assert result.status == "ok", result
    names = {Path(p).name for p in os.listdir(agent)}
    assert {"device-token", "device-id", "hook-port", "hooks.json", "claude-args.json"} <= names


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key: the trust a TLS proxy's own CA would give."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "claude-bridge test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@pytest.fixture
def https_relay(tmp_path: Path) -> Iterator[tuple[RelayServer, Path]]:
    """The real relay served over HTTPS by uvicorn itself, with a certificate this test makes."""
    import uvicorn

    from relay.app import server_options

    cert, key = _self_signed(tmp_path)
    server = RelayServer(tmp_path / "tls-relay")
    server.server = uvicorn.Server(
        uvicorn.Config(
            server.app,
            host="127.0.0.1",
            port=server.port,
            log_level="warning",
            ssl_certfile=str(cert),
            ssl_keyfile=str(key),
            **server_options(server.config),
        )
    )
    server.thread = threading.Thread(target=server.server.run, daemon=True)
    server.start()
    yield server, cert
    server.stop()


def test_a_relay_over_https_makes_the_relay_and_web_push_checks_pass(
    tmp_path: Path, https_relay: tuple[RelayServer, Path]
) -> None:
    server, cert = https_relay
    url = f"https://127.0.0.1:{server.port}"
    account = server.account()
    args = ["--json", "--relay", url, "--data", str(server.config.data_path), "--agent-data",
            str(_agent_dir(tmp_path, account)), "--claude", FAKE]  # fmt: skip
    # Not trusted here: the relay check says so (a phone would refuse it too).
    untrusted = _by_name(_doctor(tmp_path, *args, path=_bin(tmp_path), code=1))
    assert untrusted["relay"]["status"] == "fail"
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted["relay"]["detail"]
    assert "caddy trust" in untrusted["relay"]["fix"]
    assert untrusted["push"]["status"] == "skipped" and untrusted["clock"]["status"] == "skipped"
    # Trusted (as `caddy trust` or a public certificate would make it).
    env = {"SSL_CERT_FILE": str(cert)}
    by = _by_name(_doctor(tmp_path, *args, "--token", account.phone_token, path=_bin(tmp_path),
                          env=env, code=0))  # fmt: skip
    assert by["relay"]["status"] == "ok" and "over HTTPS" in by["relay"]["detail"], by["relay"]
    assert by["push"]["status"] == "ok"
    assert "VAPID key (asked the relay with the phone token)" in by["push"]["detail"]
    assert by["clock"]["status"] == "ok"
    assert by["link"]["status"] == "warn"  # known, and offline: no agent is linked to it
    # No token given: on the relay's own machine doctor asks with the relay's command-line token…
    without_token = _by_name(_doctor(tmp_path, *args, path=_bin(tmp_path), env=env, code=0))
    assert without_token["push"]["status"] == "ok"
    assert "asked the relay with its own command-line token" in without_token["push"]["detail"]
    # …and without that either, it looks for the key file in the relay's data folder.
    (server.config.data_path / "cli-token").unlink()
    no_token_at_all = _by_name(_doctor(tmp_path, *args, path=_bin(tmp_path), env=env, code=0))
    assert no_token_at_all["push"]["status"] == "ok"
    assert str(server.config.data_path / "vapid.pem") in no_token_at_all["push"]["detail"]


def test_the_address_up_remembered_is_the_one_doctor_checks(tmp_path: Path) -> None:
    from cli.checkup import remembered_url
    from cli.publish import Choice, save_choice

    assert remembered_url(tmp_path) == ""
    save_choice(tmp_path, Choice("url", "https://relay.example"))
    assert remembered_url(tmp_path) == "https://relay.example"
    save_choice(tmp_path, Choice("local"))
    assert remembered_url(tmp_path) == ""


def test_doctor_checks_the_up_that_is_running_whatever_its_port(tmp_path: Path) -> None:
    from cli.checkup import Options, places
    from cli.publish import RUNNING_FILE, read_running, running

    relay_dir = tmp_path / "relay"
    options = Options(data_dir=str(relay_dir), agent_dir=str(tmp_path / "agent"), environ={})
    assert places(options).local_url == "http://127.0.0.1:8765"  # nothing running: the default
    with running(relay_dir, "http://127.0.0.1:18977", "https://mac.tail1234.ts.net"):
        assert (relay_dir / RUNNING_FILE).stat().st_mode & 0o777 == 0o600
        where = places(options)
        assert where.local_url == "http://127.0.0.1:18977"
        assert where.public_url == "https://mac.tail1234.ts.net"
    assert not (relay_dir / RUNNING_FILE).exists() and read_running(relay_dir) is None
    # Left by an `up` that was killed: its process is gone, so it is not believed.
    left = {"local": "http://127.0.0.1:1", "public": "http://127.0.0.1:1", "pid": 2**22 + 7}
    (relay_dir / RUNNING_FILE).write_text(json.dumps(left))  # that pid is past pid_max
    assert read_running(relay_dir) is None
