"""What ``claude-bridge doctor`` decides: each check's outcome from what its probe saw.

Each check is two parts: a probe that looks at the machine (cli/checkup.py: a file's mode, a
program's ``--version``, one HTTP request to the relay) and returns plain values, and a
``decide_*`` function here that turns those values into a :class:`Result` — ok, warn, fail or
skipped, with the fix in one line when it is not ok. Nothing here does I/O, so the decisions are
tested with plain inputs; :func:`render` writes the results for a person.

A library, not a command (cli/doctor.py is the command; ``up`` runs the quick checks too).
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import re
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from wire import claude_versions

Status = Literal["ok", "warn", "fail", "skipped"]

MIN_PYTHON = (3, 11)


CLOCK_SKEW_WARN_S = 30.0
"""Clock difference with the relay above which doctor warns: a wrong clock on either side breaks
HTTPS certificates and Web Push's signed tokens, and shows wrong times on the phone."""


REACH_FIX = (
    "reach it from the phone: claude-bridge up --tailscale, or --public-url https://… "
    "behind a TLS proxy (Caddy: `caddy reverse-proxy --from your.host --to 127.0.0.1:8765`)"
)


@dataclass(frozen=True)
class Result:
    """One check's outcome: ``name`` is stable (the JSON key); ``fix`` is empty when ok."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


LABELS = {
    "python": "Python",
    "tmux": "tmux",
    "claude": "Claude Code",
    "login": "Claude Code login",
    "hook": "hook command",
    "relay": "relay",
    "push": "Web Push",
    "service": "login service",
    "link": "agent link",
    "permissions": "permissions",
    "clock": "clock",
}


QUICK = ("python", "tmux", "claude", "login", "hook", "permissions")
"""The checks that never leave this machine: ``up`` runs these before it starts."""


# -- the decisions -----------------------------------------------------------------------------


def decide_python(version: Sequence[int]) -> Result:
    shown = ".".join(str(part) for part in version[:3])
    if tuple(version[:2]) >= MIN_PYTHON:
        return Result("python", "ok", f"Python {shown}")
    wanted = ".".join(map(str, MIN_PYTHON))
    return Result(
        "python",
        "fail",
        f"Python {shown} is too old; claude-bridge needs {wanted} or newer",
        f"install Python {wanted}+ and reinstall: pipx install --python python{wanted} claude-bridge",
    )


_TMUX_VERSION = re.compile(r"(\d+(?:\.\d+)+)([a-z]?)")


def _version_key(text: str) -> tuple[int, ...] | None:
    """``"3.3a"`` → ``(3, 3, 1)``, ``"next-3.4"`` → ``(3, 4, 0)``: tmux's letters are patch
    releases; None when there is no version in the text."""
    match = _TMUX_VERSION.search(text)
    if match is None:
        return None
    letter = match.group(2)
    numbers = tuple(int(p) for p in match.group(1).split("."))
    return (*numbers, ord(letter) - ord("a") + 1 if letter else 0)


def decide_mux(path: str | None, missing: str, version_output: str | None, minimum: str) -> Result:
    """tmux (or zeropty, which takes tmux's command line) found, and new enough for libtmux."""
    if path is None:
        return Result(
            "tmux", "fail", missing, "install tmux: brew install tmux (macOS) / apt install tmux"
        )
    name = Path(path).name
    found = _TMUX_VERSION.search(version_output or "")
    version = found.group(0) if found else ""
    if not version:
        return Result(
            "tmux",
            "warn",
            f"{path} -V printed no version ({(version_output or '').strip()[:60]!r})",
            f"reinstall {name}; the agent needs tmux {minimum} or newer",
        )
    have, need = _version_key(version), _version_key(minimum)
    if name == "tmux" and have is not None and need is not None and have < need:
        return Result(
            "tmux",
            "fail",
            f"{name} {version} at {path} is older than {minimum}, the oldest the agent's tmux "
            "library (libtmux) accepts",
            "upgrade tmux: brew upgrade tmux (macOS) / apt install tmux from a newer release",
        )
    return Result("tmux", "ok", f"{name} {version} at {path}")


def decide_claude(path: str | None, problem: str, version: str | None) -> Result:
    """``claude`` found the way the agent finds it, and its version against the tested list."""
    install = "npm i -g @anthropic-ai/claude-code, or pass --claude PATH (or set CB_CLAUDE)"
    if path is None:
        return Result("claude", "fail", problem, install)
    if version is None:
        return Result("claude", "fail", problem, f"check {path} runs; reinstall: {install}")
    warning = claude_versions.version_warning(version)
    if warning is None:
        return Result("claude", "ok", f"Claude Code {version} at {path} (a tested version)")
    return Result(
        "claude",
        "warn",
        warning,
        "for a tested version: npm i -g @anthropic-ai/claude-code@"
        + claude_versions.newest_tested(),
    )


# -- Claude Code's login (``claude auth status``) ---------------------------------------------

LOGIN_FIX = "run `claude` once in a terminal and log in (/login)"
KEY_TAIL_CHARS = 20  # ~/.claude.json remembers an API key by its last 20 characters
MAX_AUTH_OUTPUT = 64 * 1024  # `claude auth status` prints well under 1 KB
ENV_KEY_SOURCE = "ANTHROPIC_API_KEY"


@dataclass(frozen=True)
class ClaudeAuth:
    """What ``claude auth status`` printed (2.1.332: JSON, exit 0 logged in, 1 not;
    tests/fixtures/claude/2.1.332/auth_status/). It sends no request: ``logged_in`` means a
    credential is there, not that the API takes it."""

    logged_in: bool
    method: str  # authMethod: none | api_key | oauth_token | claude.ai | …
    key_source: str | None  # apiKeySource: ANTHROPIC_API_KEY | /login managed key | …
    subscription: str | None  # subscriptionType of a claude.ai login
    exit_code: int | None


def parse_claude_auth(output: str, exit_code: int | None) -> ClaudeAuth | None:
    """``claude auth status`` (``--json``, the default) read; None when it is not that JSON
    (an older Claude Code, an error message)."""
    if len(output) > MAX_AUTH_OUTPUT:
        return None
    try:
        data = json.loads(output)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("loggedIn"), bool):
        return None

    def text(key: str) -> str | None:
        value = data.get(key)
        return value[:100] if isinstance(value, str) and value else None

    return ClaudeAuth(
        logged_in=data["loggedIn"],
        method=text("authMethod") or "none",
        key_source=text("apiKeySource"),
        subscription=text("subscriptionType"),
        exit_code=exit_code,
    )


@dataclass(frozen=True)
class KeyAnswers:
    """What ``~/.claude.json`` remembers: the person's answers to "Do you want to use this API
    key?" (``customApiKeyResponses``, by the key's last 20 characters) and whether Claude Code's
    first-start setup was done."""

    approved: frozenset[str] = frozenset()
    rejected: frozenset[str] = frozenset()
    onboarded: bool = False


def parse_key_answers(claude_json: str) -> KeyAnswers | None:
    """``~/.claude.json`` read; None when it is not a JSON object (missing or damaged)."""
    try:
        data = json.loads(claude_json)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    answers = data.get("customApiKeyResponses")
    answers = answers if isinstance(answers, dict) else {}

    def tails(key: str) -> frozenset[str]:
        values = answers.get(key)
        if not isinstance(values, list):
            return frozenset()
        return frozenset(v for v in values if isinstance(v, str))

    return KeyAnswers(
        approved=tails("approved"),
        rejected=tails("rejected"),
        onboarded=data.get("hasCompletedOnboarding") is True,
    )


def key_tail(key: str) -> str:
    """How ``~/.claude.json`` names an API key."""
    return key.strip()[-KEY_TAIL_CHARS:]


@dataclass(frozen=True)
class ClaudeLoginProbe:
    """``claude auth status`` run with the agent's environment, and what its files say.

    ``output`` / ``exit_code``: what the command printed and returned (``ran`` false: it could
    not run, ``problem`` says why); ``env_key``: the ANTHROPIC_API_KEY the agent passes to
    claude, if any (only its last 20 characters are compared); ``answers``: ``~/.claude.json``
    (None: missing or not JSON)."""

    ran: bool
    output: str = ""
    exit_code: int | None = None
    problem: str = ""
    env_key: str | None = None
    answers: KeyAnswers | None = None


def decide_claude_login(probe: ClaudeLoginProbe) -> Result:
    """Can Claude Code start and work with this login? ``auth status`` says whether a credential
    is there; ``~/.claude.json`` says what it cannot: an ANTHROPIC_API_KEY the person once
    declined is reported logged in, yet claude answers every message "Not logged in"
    (FINDINGS §1); a key never answered makes the first start ask; a HOME where Claude Code was
    never set up asks for a theme and a login (and exits with no internet). A key the API
    refuses, or an expired claude.ai login, cannot be seen without a request."""
    if not probe.ran:
        return Result(
            "login",
            "warn",
            f"`claude auth status` did not run: {probe.problem or 'no answer'}",
            "run `claude auth status` in a terminal to see why; " + LOGIN_FIX,
        )
    auth = parse_claude_auth(probe.output, probe.exit_code)
    if auth is None:
        shown = " ".join(probe.output.split())[:60]
        return Result(
            "login",
            "warn",
            f"`claude auth status` printed no login status (exit {probe.exit_code}: {shown!r})",
            "update Claude Code (claude update), then " + LOGIN_FIX,
        )
    if not auth.logged_in:
        return Result(
            "login",
            "fail",
            "Claude Code is not logged in here: every session would answer 'Not logged in'",
            LOGIN_FIX + ", or give the agent an ANTHROPIC_API_KEY",
        )
    env_key = auth.method == "api_key" and auth.key_source == ENV_KEY_SOURCE
    tail = key_tail(probe.env_key) if env_key and probe.env_key else None
    answers = probe.answers
    if tail is not None and answers is not None and tail in answers.rejected:
        return Result(
            "login",
            "fail",
            "Claude Code was once told not to use this ANTHROPIC_API_KEY (~/.claude.json): "
            "every message would be answered 'Not logged in'",
            'run `claude` in a terminal, open /config and turn on "Use custom API key"',
        )
    if answers is None or not answers.onboarded:
        return Result(
            "login",
            "warn",
            "Claude Code was never set up here: its first start asks for a theme, a login and "
            "folder trust (and exits with no internet)",
            LOGIN_FIX,
        )
    if tail is not None and tail not in answers.approved:
        return Result(
            "login",
            "warn",
            "Claude Code will ask at its first start whether to use this ANTHROPIC_API_KEY",
            "run `claude` once in a terminal and answer Yes to using the key",
        )
    how = {
        "api_key": f"an API key ({auth.key_source or 'source not given'})",
        "oauth_token": "an auth token (ANTHROPIC_AUTH_TOKEN)",
        "claude.ai": f"a Claude account ({auth.subscription or 'plan not given'})",
    }.get(auth.method, auth.method)
    if auth.exit_code not in (0, None):
        return Result(
            "login",
            "warn",
            f"logged in with {how}, but `claude auth status` exited {auth.exit_code}",
            "run `claude auth status` in a terminal to see why",
        )
    return Result("login", "ok", f"logged in with {how} (not checked against the API)")


@dataclass(frozen=True)
class HookProbe:
    path: str | None  # None: hook_command_path() failed, ``problem`` says why
    problem: str = ""
    executable: bool = False
    curl: str | None = None
    exit_code: int | None = None
    output: str = ""
    delivered: bool = False  # the dry run's payload reached the stand-in endpoint


def decide_hook(probe: HookProbe) -> Result:
    if probe.path is None:
        return Result(
            "hook",
            "fail",
            probe.problem,
            "reinstall claude-bridge (pipx reinstall claude-bridge) or run it from a full checkout",
        )
    if not probe.executable:
        return Result(
            "hook", "fail", f"{probe.path} is not executable", f"chmod +x {_quote(probe.path)}"
        )
    if probe.curl is None:
        return Result(
            "hook",
            "fail",
            "curl is not on PATH: the hook command uses it to report to the agent",
            "install curl: apt install curl (macOS has it in /usr/bin)",
        )
    if probe.exit_code != 0 or probe.output:
        said = f" and printed {probe.output[:80]!r}" if probe.output else ""
        return Result(
            "hook",
            "fail",
            f"a dry run of {probe.path} exited {probe.exit_code}{said} (it must exit 0 silently)",
            f"run `sh {_quote(probe.path)} Stop </dev/null` to see why; reinstall claude-bridge",
        )
    if not probe.delivered:
        return Result(
            "hook",
            "fail",
            f"a dry run of {probe.path} did not reach a local endpoint on 127.0.0.1",
            "check curl works for 127.0.0.1 (a proxy setting or firewall may refuse it)",
        )
    return Result("hook", "ok", f"{probe.path} runs and reports to 127.0.0.1 (dry run)")


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class RelayProbe:
    """One ``GET /api/health``: what came back, or the error; local times around it."""

    url: str
    status_code: int | None = None
    body: Any = None
    error: str = ""
    date_header: str | None = None
    sent_at: float = 0.0
    received_at: float = 0.0

    @property
    def healthy(self) -> bool:
        return self.status_code == 200 and self.body == {"status": "ok"}


def decide_relay(probe: RelayProbe) -> Result:
    url = probe.url
    if probe.status_code is None:
        if "CERTIFICATE_VERIFY_FAILED" in probe.error:
            fix = (
                "give it a certificate phones trust (tailscale serve has one), or trust the "
                "proxy's own CA here and on the phone (caddy trust)"
            )
        elif is_loopback(url):
            fix = "start it: claude-bridge up"
        else:
            fix = "check the relay and its TLS proxy run, and the address (--relay URL)"
        return Result("relay", "fail", f"no relay answers at {url}: {probe.error}", fix)
    if not probe.healthy:
        return Result(
            "relay",
            "fail",
            f"{url}/api/health answered HTTP {probe.status_code}, not a claude-bridge relay's answer",
            "check the address (--relay URL) and that the proxy forwards to the relay",
        )
    ms = max(0.0, probe.received_at - probe.sent_at) * 1000
    scheme = urlsplit(url).scheme
    if scheme == "https":
        return Result("relay", "ok", f"{url} answers over HTTPS ({ms:.0f} ms)")
    if is_loopback(url):
        return Result(
            "relay",
            "warn",
            f"loopback only: {url} works on this computer only, a phone cannot open it",
            REACH_FIX,
        )
    return Result(
        "relay",
        "warn",
        f"plain http at {url}: phones need HTTPS for the page's app mode and Web Push, "
        "and tokens would travel unencrypted",
        REACH_FIX,
    )


def decide_push(url: str, reachable: bool, vapid: bool | None, vapid_source: str) -> Result:
    """Web Push needs an https page (browsers refuse push elsewhere) and the relay's VAPID key.

    ``vapid``: True/False when the key was looked for (``vapid_source`` says where), None when
    it could not be (a remote relay and no phone token)."""
    if urlsplit(url).scheme != "https":
        return Result(
            "push",
            "warn",
            "not possible: phones allow Web Push only for a page opened over https",
            REACH_FIX,
        )
    if not reachable:
        return Result("push", "skipped", f"the relay at {url} did not answer")
    if vapid is False:
        return Result(
            "push",
            "fail",
            f"the relay's VAPID key was not found ({vapid_source})",
            "restart the relay (it makes vapid.pem in its data folder), or pass --data DIR",
        )
    if vapid is None:
        return Result(
            "push",
            "ok",
            f"https page at {url}; the relay's VAPID key was not checked ({vapid_source})",
        )
    return Result("push", "ok", f"https page at {url} and the relay's VAPID key ({vapid_source})")


@dataclass(frozen=True)
class ServiceProbe:
    system: str  # platform.system()
    path: str = ""  # the plist or unit file the install writes
    exists: bool = False
    state: str | None = None  # "enabled"/"loaded", another word from the manager, or None
    manager_error: str = ""  # why the manager could not be asked
    kind: str = "up"  # whose service: "up" (relay + agent here) or "agent" (a remote relay)


def decide_service(probe: ServiceProbe) -> Result:
    if probe.system not in {"Darwin", "Linux"}:
        return Result(
            "service", "skipped", f"no login service is written on {probe.system or 'this system'}"
        )
    if not probe.exists:
        if probe.kind == "agent":  # this Mac links to a relay elsewhere
            return Result(
                "service",
                "warn",
                f"the agent is not a login service ({probe.path} is missing): after a reboot "
                "sessions come back only when you start it",
                "claude-bridge agent install",
            )
        return Result(
            "service",
            "warn",
            f"claude-bridge up is not a login service ({probe.path} is missing): after a "
            "reboot the relay and sessions come back only when you run it",
            "claude-bridge up install (with the flags you give `up`)",
        )
    if probe.state in {"enabled", "loaded"}:
        return Result("service", "ok", f"{probe.path} ({probe.state})")
    if probe.state is None:
        return Result(
            "service",
            "ok",
            f"{probe.path} is installed; whether it is enabled could not be asked "
            f"({probe.manager_error})",
        )
    if probe.system == "Darwin":
        fix = f"launchctl load -w {_quote(probe.path)}"
    else:
        fix = f"systemctl --user enable --now {Path(probe.path).name}"
    return Result("service", "warn", f"{probe.path} is installed but {probe.state}", fix)


@dataclass(frozen=True)
class LinkProbe:
    agent_dir: str
    relay_url: str  # where the agent links: its relay-url file, or the local relay for `up`
    has_token: bool
    token_problem: str | None = None  # the relay's refusal when its own data was read
    token_checked: bool = False  # the token was looked up in the relay's data
    device_name: str = ""
    online: bool | None = None  # from GET /api/devices with a phone token
    online_note: str = ""  # why online is None


def decide_link(probe: LinkProbe) -> Result:
    if not probe.has_token:
        return Result(
            "link",
            "fail",
            f"this machine has no device token in {probe.agent_dir}",
            "run claude-bridge up, or claude-bridge agent --relay URL --pair CODE",
        )
    if probe.token_problem:
        return Result(
            "link",
            "fail",
            f"the relay refuses this machine's token: {probe.token_problem}",
            f"pair again: claude-bridge agent --relay {probe.relay_url} --pair CODE "
            f"(or remove {probe.agent_dir}/device-token and run claude-bridge up)",
        )
    name = f" as {probe.device_name!r}" if probe.device_name else ""
    if probe.online is True:
        return Result("link", "ok", f"linked to {probe.relay_url}{name}, online now")
    if probe.online is False:
        return Result(
            "link",
            "warn",
            f"the relay knows this machine{name} but its agent is not linked now",
            "start it: claude-bridge up or claude-bridge up install (relay here), "
            "claude-bridge agent or claude-bridge agent install (relay elsewhere)",
        )
    if probe.token_checked:
        return Result(
            "link",
            "ok",
            f"a device token for {probe.relay_url}{name}, known to the relay "
            f"(online not checked: {probe.online_note})",
        )
    return Result(
        "link",
        "skipped",
        f"a device token for {probe.relay_url} is kept, but nothing could confirm the relay "
        f"takes it: {probe.online_note}",
    )


@dataclass(frozen=True)
class Entry:
    """A data folder or one of its files, with its permission bits."""

    path: str
    mode: int
    is_dir: bool


@dataclass(frozen=True)
class Folder:
    """A data folder and the files in it; ``behind`` names the private folder it sits in, if
    any (then nobody else can reach it, however loose it is)."""

    entry: Entry
    files: Sequence[Entry] = ()
    behind: str = ""


def decide_permissions(folders: Sequence[Folder]) -> Result:
    """Folders 0700, their files 0600. A file others can read through folders others can
    enter fails; a loose folder or file behind a private one is a warning."""
    loose_dirs: list[str] = []
    loose_files: list[str] = []
    exposed = False
    for folder in folders:
        if folder.entry.mode & 0o077:
            loose_dirs.append(folder.entry.path)
        enterable = not folder.behind and bool(folder.entry.mode & 0o011)
        for entry in folder.files:
            if entry.mode & 0o077:
                loose_files.append(entry.path)
                exposed = exposed or (enterable and bool(entry.mode & 0o044))
    if not folders:
        return Result("permissions", "skipped", "no data folder exists yet")
    if not loose_dirs and not loose_files:
        checked = sum(1 + len(f.files) for f in folders)
        shown = ", ".join(f.entry.path for f in folders if not f.behind)
        return Result("permissions", "ok", f"{shown}: folders 0700, files 0600 ({checked} checked)")
    parts = []
    if loose_dirs:
        parts.append("chmod 700 " + " ".join(map(_quote, loose_dirs)))
    if loose_files:
        parts.append("chmod 600 " + " ".join(map(_quote, loose_files)))
    named = ", ".join([f"{p} ({_mode(folders, p)})" for p in loose_dirs + loose_files][:4]) + (
        " …" if len(loose_dirs) + len(loose_files) > 4 else ""
    )
    if exposed:
        return Result(
            "permissions", "fail", f"others on this machine can read {named}", " && ".join(parts)
        )
    return Result("permissions", "warn", f"looser than the user only: {named}", " && ".join(parts))


def decide_clock(probe: RelayProbe, system: str, threshold: float = CLOCK_SKEW_WARN_S) -> Result:
    if not probe.healthy:
        return Result("clock", "skipped", "the relay did not answer")
    when = _parse_http_date(probe.date_header)
    if when is None:
        return Result("clock", "skipped", "the relay's answer carried no Date header")
    # Date has whole seconds: the relay's clock was somewhere in [when, when + 1) while answering.
    middle = (probe.sent_at + probe.received_at) / 2
    skew = when + 0.5 - middle
    slack = 0.5 + (probe.received_at - probe.sent_at) / 2
    if abs(skew) <= max(threshold, slack):
        return Result("clock", "ok", f"within {max(1, round(abs(skew)))} s of the relay's")
    side = "behind" if skew > 0 else "ahead of"
    fix = (
        "turn on Set time automatically (System Settings → General → Date & Time)"
        if system == "Darwin"
        else "turn on time sync: sudo timedatectl set-ntp true"
    )
    return Result(
        "clock",
        "warn",
        f"this clock is {_duration(abs(skew))} {side} the relay's: a wrong clock breaks HTTPS "
        "certificates and Web Push, and shows wrong times on the phone",
        fix + " (on whichever machine is wrong)",
    )


def _parse_http_date(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None


def _duration(seconds: float) -> str:
    whole = round(seconds)
    if whole < 120:
        return f"{whole} s"
    if whole < 7200:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole / 3600:.1f} h"


def _mode(folders: Sequence[Folder], path: str) -> str:
    for folder in folders:
        for entry in (folder.entry, *folder.files):
            if entry.path == path:
                return f"{stat.S_IMODE(entry.mode):04o}"
    return "?"


def _quote(path: str) -> str:
    return shlex.quote(path)


# -- the report --------------------------------------------------------------------------------


def summary(results: Sequence[Result]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "warn", "fail", "skipped")}
    words = [
        f"{counts['ok']} ok",
        f"{counts['warn']} warning{'s' if counts['warn'] != 1 else ''}",
        f"{counts['fail']} failed",
    ]
    if counts["skipped"]:
        words.append(f"{counts['skipped']} skipped")
    verdict = "something needs fixing" if counts["fail"] else "nothing fails"
    return f"{', '.join(words)}: {verdict}."


MARKS = {"ok": "✓", "warn": "!", "fail": "✗", "skipped": "-"}


def render(results: Sequence[Result], *, with_summary: bool = True) -> str:
    """One line per check, aligned; the fix indented below it; a summary line at the end."""
    width = max((len(LABELS.get(r.name, r.name)) for r in results), default=0)
    lines = []
    for r in results:
        lines.append(f"  {MARKS[r.status]} {LABELS.get(r.name, r.name):<{width}}  {r.detail}")
        if r.fix:
            lines.append(f"  {'':<{width + 2}}  → {r.fix}")
    if with_summary:
        lines.append(summary(results))
    return "\n".join(lines) + "\n"


def exit_code(results: Sequence[Result]) -> int:
    return 1 if any(r.status == "fail" for r in results) else 0
