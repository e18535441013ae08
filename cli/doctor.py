"""``claude-bridge doctor``: everything a person needs before trusting the bridge, checked.

Each check is two parts: a probe that looks at the machine (a file's mode, a program's
``--version``, one HTTP request to the relay) and returns plain values, and a ``decide_*``
function that turns those values into a :class:`Result` — ok, warn, fail or skipped, with the
fix in one line when it is not ok. The decisions hold no I/O, so they are tested with plain inputs.

``claude-bridge up`` runs the quick checks (:data:`QUICK`: nothing leaves this machine) before it
starts and prints only what fails or warns.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import hashlib
import http.server
import ipaddress
import json
import os
import platform
import re
import shutil
import sqlite3
import ssl
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from wire import claude_versions
from wire import config as configmod

Status = Literal["ok", "warn", "fail", "skipped"]

MIN_PYTHON = (3, 11)
PROBE_TIMEOUT_S = 5.0
"""How long one request to the relay may take before it counts as unreachable."""
CLOCK_SKEW_WARN_S = 30.0
"""Clock difference with the relay above which doctor warns: a wrong clock on either side breaks
HTTPS certificates and Web Push's signed tokens, and shows wrong times on the phone."""
HOOK_DRY_RUN_TIMEOUT_S = 10.0
REACH_FIX = (
    "reach it from the phone: claude-bridge up --tailscale, or --public-url https://… "
    "behind a TLS proxy (deploy/Caddyfile)"
)
# Names from the agent and the relay, repeated: importing their modules (FastAPI, the daemon)
# would cost doctor and `up` seconds. tests/test_doctor.py checks they still agree.
DEVICE_ID_FILE = "device-id"  # agent.daemon.DEVICE_ID_FILE
KEY_FILE = "vapid.pem"  # relay.features.push.KEY_FILE


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
    "hook": "hook command",
    "relay": "relay",
    "push": "Web Push",
    "service": "login service",
    "link": "agent link",
    "permissions": "permissions",
    "clock": "clock",
}
QUICK = ("python", "tmux", "claude", "hook", "permissions")
"""The checks that never leave this machine: ``up`` runs these before it starts."""


# -- pure decisions -------------------------------------------------------------------------


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
            fix = "check the relay and its proxy (deploy/Caddyfile) run, and the address (--relay URL)"
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
    import shlex

    return shlex.quote(path)


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


# -- probes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    relay_url: str | None = None  # --relay / CB_RELAY
    data_dir: str | None = None  # the relay's folder (--data / CB_DATA_DIR)
    agent_dir: str | None = None  # the agent's folder (--agent-data / CB_AGENT_DIR)
    claude: str | None = None  # --claude / CB_CLAUDE
    token: str | None = None  # a phone token (--token / CB_TOKEN)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def check_python() -> Result:
    return decide_python(sys.version_info[:3])


def check_mux() -> Result:
    from agent.mux import MuxError, find_program

    minimum = _libtmux_minimum()
    try:
        path = find_program("auto")
    except MuxError as exc:
        return decide_mux(None, str(exc), None, minimum)
    try:
        done = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=10)
        output = done.stdout or done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        output = str(exc)
    return decide_mux(path, "", output, minimum)


def _libtmux_minimum() -> str:
    from libtmux.common import TMUX_MIN_VERSION  # what the agent's tmux library refuses below

    return str(TMUX_MIN_VERSION)


def check_claude(explicit: str | None) -> Result:
    from agent.launch import ClaudeMissing, claude_version, find_claude

    try:
        path = find_claude(explicit)
    except ClaudeMissing:
        wanted = explicit or os.environ.get("CB_CLAUDE") or "claude"
        return decide_claude(None, f"cannot find {wanted!r} (as the agent looks: --claude, "
                             "$CB_CLAUDE, else claude on PATH)", None)  # fmt: skip
    try:
        version = asyncio.run(claude_version(path))
    except ClaudeMissing as exc:
        return decide_claude(path, str(exc), None)
    return decide_claude(path, "", version)


class _HookCatcher(http.server.BaseHTTPRequestHandler):
    """A stand-in for the agent's hook endpoint: notes that a well-formed report arrived."""

    arrived: list[tuple[str, str, str, bytes]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = self.headers
        self.arrived.append(
            (self.path, headers.get("X-CB-Session", ""), headers.get("X-CB-Secret", ""), body)
        )
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


def probe_hook(environ: dict[str, str]) -> HookProbe:
    from agent.hooksettings import hook_command_path

    try:
        path = hook_command_path()
    except (FileNotFoundError, OSError) as exc:
        return HookProbe(None, str(exc))
    executable = os.access(path, os.X_OK)
    curl = shutil.which("curl", path=environ.get("PATH"))
    if not executable or curl is None:
        return HookProbe(str(path), executable=executable, curl=curl)
    arrived: list[tuple[str, str, str, bytes]] = []
    handler = type("Catcher", (_HookCatcher,), {"arrived": arrived})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    payload = b'{"hook_event_name":"Stop","doctor":true}'
    env = {k: v for k, v in environ.items() if not k.startswith("CB_HOOK")}
    env["CB_HOOK"] = f"doctor:dry-run:{server.server_address[1]}"
    try:
        done = subprocess.run(
            [str(path), "Stop"],
            input=payload,
            capture_output=True,
            env=env,
            timeout=HOOK_DRY_RUN_TIMEOUT_S,
        )
        code, output = done.returncode, (done.stdout + done.stderr).decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        code, output = None, str(exc)
    finally:
        server.shutdown()
        server.server_close()
    delivered = arrived == [("/hook/Stop", "doctor", "dry-run", payload)]
    return HookProbe(str(path), executable=True, curl=curl, exit_code=code, output=output,
                     delivered=delivered)  # fmt: skip


def _folder(folder: Path, names: Sequence[Path], behind: str = "") -> Folder:
    files = []
    for path in names:
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            files.append(Entry(str(path), stat.S_IMODE(info.st_mode), False))
    return Folder(Entry(str(folder), stat.S_IMODE(folder.stat().st_mode), True), files, behind)


def probe_permissions(relay_dir: Path, agent_dir: Path) -> list[Folder]:
    """The agent's folder, its files and its subfolders' (the event archive); the relay's
    folder and the files the relay keeps there (it may share a folder with others: --data ~)."""
    from relay.datadir import RELAY_FILES

    found = []
    if agent_dir.is_dir():
        top = _folder(agent_dir, sorted(agent_dir.iterdir()))
        found.append(top)
        private = "" if top.entry.mode & 0o011 else str(agent_dir)
        for sub in sorted(agent_dir.iterdir()):
            if sub.is_dir() and not sub.is_symlink() and sub.resolve() != relay_dir.resolve():
                found.append(_folder(sub, sorted(sub.iterdir()), private))
    if relay_dir.is_dir():
        found.append(_folder(relay_dir, [relay_dir / n for n in sorted(RELAY_FILES)]))
    return found


def probe_relay(url: str) -> RelayProbe:
    import httpx

    context = ssl.create_default_context()  # the system's trust, as the phone's browser has
    sent = time.time()
    try:
        response = httpx.get(
            url.rstrip("/") + "/api/health", timeout=PROBE_TIMEOUT_S, verify=context
        )
    except httpx.HTTPError as exc:
        return RelayProbe(url, error=str(exc) or type(exc).__name__, sent_at=sent)
    received = time.time()
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return RelayProbe(
        url,
        response.status_code,
        body,
        date_header=response.headers.get("date"),
        sent_at=sent,
        received_at=received,
    )


def _phone_get(url: str, token: str, route: str) -> Any:
    """``GET route`` with a phone token; the JSON, or an error string."""
    import httpx

    try:
        response = httpx.get(
            url.rstrip("/") + route,
            headers={"Authorization": f"Bearer {token}"},
            timeout=PROBE_TIMEOUT_S,
            verify=ssl.create_default_context(),
        )
    except httpx.HTTPError as exc:
        return f"{route}: {exc}"
    if response.status_code != 200:
        return f"{route} answered HTTP {response.status_code} to the phone token"
    try:
        return response.json()
    except ValueError:
        return f"{route} did not answer JSON"


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _token_in_relay_data(relay_dir: Path, token: str) -> tuple[bool, str | None, str]:
    """Look the device token up in the relay's own database, read-only: (checked, problem,
    device name)."""
    from relay.datadir import DATABASE

    database = relay_dir / DATABASE
    if not database.is_file():
        return False, None, ""
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=2)
    except sqlite3.Error:
        return False, None, ""
    try:
        row = conn.execute(
            "SELECT t.kind, t.expires_at, t.revoked_at, d.name FROM tokens t"
            " LEFT JOIN devices d ON d.id = t.subject_id WHERE t.hash = ?",
            (hashlib.sha256(token.encode()).hexdigest(),),  # relay.store.hash_secret
        ).fetchone()
    except sqlite3.Error:
        return False, None, ""
    finally:
        conn.close()
    if row is None:
        return True, "this token is not known to the relay", ""
    kind, expires_at, revoked_at, name = row
    if kind != "device":
        return True, f"this is a {kind} token, not a Mac's", ""
    if revoked_at is not None:
        return True, "this token was revoked", name or ""
    if expires_at is not None and time.time() >= expires_at:
        return True, "this token has expired", name or ""
    return True, None, name or ""


def probe_link(
    agent_dir: Path, relay_dir: Path, local_url: str, public: RelayProbe, phone_token: str
) -> LinkProbe:
    from agent.cli import RELAY_FILE, TOKEN_FILE

    token = _read(agent_dir / TOKEN_FILE)
    relay_url = _read(agent_dir / RELAY_FILE) or local_url
    if not token:
        return LinkProbe(str(agent_dir), relay_url, False)
    checked, problem, name = False, None, ""
    if is_loopback(relay_url):  # its relay is this machine's: the relay's own data can tell
        checked, problem, name = _token_in_relay_data(relay_dir, token)
    if problem:
        return LinkProbe(str(agent_dir), relay_url, True, problem, True, name)
    device_id = _read(agent_dir / DEVICE_ID_FILE)
    online: bool | None = None
    if not phone_token:
        note = "no phone token; pass --token or set CB_TOKEN"
    elif not public.healthy:
        note = "the relay did not answer"
    elif not device_id:
        note = "this machine's device id is not known yet (kept once its agent has linked)"
    else:
        answer = _phone_get(public.url, phone_token, "/api/devices")
        if isinstance(answer, str):
            note = answer
        else:
            mine = [d for d in answer.get("devices", []) if d.get("id") == device_id]
            if mine:
                online, name, note = bool(mine[0].get("online")), str(mine[0].get("name")), ""
                checked = True
            else:
                note = f"the relay lists no device {device_id} for this phone token's account"
    return LinkProbe(str(agent_dir), relay_url, True, None, checked, name, online, note)


def probe_vapid(relay_dir: Path, public: RelayProbe, phone_token: str) -> tuple[bool | None, str]:
    if phone_token and public.healthy:
        answer = _phone_get(public.url, phone_token, "/api/push/key")
        if not isinstance(answer, str):
            return bool(answer.get("key")), "asked the relay with the phone token"
    from relay.datadir import DATABASE

    if (relay_dir / DATABASE).is_file():
        return (relay_dir / KEY_FILE).is_file(), f"{relay_dir / KEY_FILE}"
    return None, "a relay elsewhere and no phone token (--token or CB_TOKEN)"


def probe_service(
    system: str, home: Path, run: Callable[[list[str]], tuple[int, str]], remote: bool = False
) -> ServiceProbe:
    """Either login service: ``up``'s (relay + agent here) or the agent's alone. When neither is
    installed, ``remote`` (the agent keeps a relay-url: it links elsewhere) says which is due."""
    from agent import service
    from agent.cli import LAUNCHD_LABEL, SYSTEMD_UNIT
    from cli.service import UP_LABEL, UP_UNIT

    kinds = [("agent", LAUNCHD_LABEL, SYSTEMD_UNIT), ("up", UP_LABEL, UP_UNIT)]
    if not remote:
        kinds.reverse()
    if system == "Darwin":
        for kind, label, _ in kinds:
            path = service.plist_path(home, label)
            if not path.exists():
                continue
            code, out = run(["launchctl", "print", f"gui/{os.getuid()}/{label}"])
            if code == 0:
                return ServiceProbe(system, str(path), True, "loaded", kind=kind)
            if code < 0:
                return ServiceProbe(system, str(path), True, None, out, kind=kind)
            return ServiceProbe(system, str(path), True, "not loaded", kind=kind)
        return ServiceProbe(system, str(service.plist_path(home, kinds[0][1])), kind=kinds[0][0])
    if system == "Linux":
        for kind, _, unit in kinds:
            path = service.unit_path(home, unit)
            if not path.exists():
                continue
            code, out = run(["systemctl", "--user", "is-enabled", unit])
            word = out.strip().splitlines()[0] if out.strip() else ""
            if code < 0 or not word or " " in word:  # no systemctl, or no user manager to ask
                note = out.strip()[:120] or "no answer"
                return ServiceProbe(system, str(path), True, None, note, kind=kind)
            return ServiceProbe(system, str(path), True, word, kind=kind)
        return ServiceProbe(system, str(service.unit_path(home, kinds[0][2])), kind=kinds[0][0])
    return ServiceProbe(system)


def _run(argv: list[str]) -> tuple[int, str]:
    """A manager's answer: (exit code, output); -1 when it cannot be run at all."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, f"{argv[0]}: {exc}"
    return done.returncode, (done.stdout or done.stderr)


# -- the runner -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    relay_dir: Path
    agent_dir: Path
    local_url: str  # where this machine's own relay listens (CB_HOST:CB_PORT)
    public_url: str  # the address the phone uses
    remote: bool = False  # the agent keeps a relay-url: it links to a relay elsewhere


def remembered_url(relay_dir: Path, *, ask_tailscale: bool = True) -> str:
    """The address ``up`` was told to use last time (``link.json``): a ``--public-url``, or the
    ``*.ts.net`` name when it serves through Tailscale (asked of the tailscale CLI, unless
    ``ask_tailscale`` is off: the quick checks run nothing but this machine's own commands)."""
    from cli.publish import PublishError, load_choice
    from cli.tailscale import Tailscale, TailscaleError

    try:
        choice = load_choice(relay_dir)
    except PublishError:
        return ""
    if choice is None or choice.way == "local":
        return ""
    if choice.way == "url":
        return choice.url
    if not ask_tailscale:
        return ""
    try:
        status = Tailscale().status()
    except (TailscaleError, OSError):
        return ""
    return status.url if status.dns_name else ""


def places(options: Options, *, quick: bool = False) -> Places:
    from agent.cli import RELAY_FILE
    from agent.cli import data_dir as agent_data_dir
    from cli.publish import read_running

    overrides = {"data_dir": options.data_dir} if options.data_dir else {}
    cfg = configmod.load(overrides, environ=options.environ)
    agent_dir = Path(
        options.agent_dir or options.environ.get("CB_AGENT_DIR") or agent_data_dir(None)
    ).expanduser()
    up = read_running(cfg.data_path)  # an `up` running on this folder, whatever its port
    local = up[0] if up else f"http://127.0.0.1:{cfg.int('port')}"
    public = (
        options.relay_url
        or options.environ.get("CB_RELAY")
        or cfg.str("public_url")
        or (up[1] if up else "")
        or remembered_url(cfg.data_path, ask_tailscale=not quick)
        or _read(agent_dir / RELAY_FILE)
        or cfg.base_url
    )
    remote = bool(_read(agent_dir / RELAY_FILE))
    return Places(cfg.data_path, agent_dir, local, public.rstrip("/"), remote)


def run_checks(options: Options, *, quick: bool = False) -> list[Result]:
    """Every check in a fixed order; ``quick``: only those that stay on this machine."""
    where = places(options, quick=quick)
    claude = options.claude or options.environ.get("CB_CLAUDE")
    results = [
        check_python(),
        check_mux(),
        check_claude(claude),
        decide_hook(probe_hook(options.environ)),
    ]
    if not quick:
        token = options.token or options.environ.get("CB_TOKEN", "")
        public = probe_relay(where.public_url)
        vapid, source = probe_vapid(where.relay_dir, public, token)
        home = Path(options.environ.get("HOME") or Path.home())
        results += [
            decide_relay(public),
            decide_push(where.public_url, public.healthy, vapid, source),
            decide_service(probe_service(platform.system(), home, _run, where.remote)),
            decide_link(
                probe_link(where.agent_dir, where.relay_dir, where.local_url, public, token)
            ),
        ]
    results.append(decide_permissions(probe_permissions(where.relay_dir, where.agent_dir)))
    if not quick:
        results.append(decide_clock(public, platform.system()))
    return results


def quick_report(args: argparse.Namespace) -> str:
    """For ``up``: the quick checks that fail or warn, rendered (empty when all is well)."""
    options = Options(
        data_dir=getattr(args, "data_dir", None),
        agent_dir=getattr(args, "agent_data", None),
        claude=getattr(args, "claude", None),
    )
    try:
        results = run_checks(options, quick=True)
    except configmod.ConfigError:
        return ""  # up says so itself, with its own hint
    problems = [r for r in results if r.status in {"warn", "fail"}]
    if not problems:
        return ""
    return "Before starting (claude-bridge doctor checks more):\n" + render(
        problems, with_summary=False
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    options = Options(
        relay_url=args.relay,
        data_dir=args.data_dir,
        agent_dir=args.agent_data,
        claude=args.claude,
        token=args.token,
    )
    try:
        results = run_checks(options)
    except configmod.ConfigError as exc:
        print(f"claude-bridge: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2, ensure_ascii=False))
    else:
        print("claude-bridge doctor")
        print(render(results), end="")
    return exit_code(results)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relay",
        metavar="URL",
        help="the relay's address as the phone uses it (default $CB_RELAY, $CB_PUBLIC_URL, "
        "the agent's remembered relay, else this machine's)",
    )
    parser.add_argument(
        "--data",
        dest="data_dir",
        metavar="DIR",
        help="the relay's data folder (default ~/.claude-bridge/relay, or $CB_DATA_DIR)",
    )
    parser.add_argument(
        "--agent-data",
        metavar="DIR",
        help="the agent's data folder (default ~/.claude-bridge, or $CB_AGENT_DIR)",
    )
    parser.add_argument(
        "--claude",
        metavar="PATH",
        help="the claude command to check (default $CB_CLAUDE, else claude on PATH)",
    )
    parser.add_argument(
        "--token",
        help="a phone token, to ask the relay whether this machine is online (default $CB_TOKEN)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {name, status, detail, fix} instead of lines for a person",
    )
