"""``claude-bridge doctor``'s probes and runner: what it looks at on this machine, and the checks
run in order (:func:`run_checks`; :func:`quick_report` for ``up``).

A probe looks (a file's mode, a program's ``--version``, one HTTP request to the relay) and returns
plain values; cli/checks.py decides what they mean. ``up`` runs the quick checks
(:data:`~cli.checks.QUICK`: nothing leaves this machine) before it starts and prints only what
fails or warns.

A library, not a command: cli/doctor.py is the command.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.server
import os
import platform
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
from typing import Any

from cli.checks import (
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
    is_loopback,
    parse_key_answers,
    render,
)
from cli.common import LOCAL_TOKEN_FILE
from cli.publish import PublishError, load_choice, read_running
from cli.service import UP_LABEL, UP_UNIT
from cli.tailscale import Tailscale, TailscaleError
from wire import config as configmod

PROBE_TIMEOUT_S = 5.0
"""How long one request to the relay may take before it counts as unreachable."""
HOOK_DRY_RUN_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 10.0  # how long `tmux -V`, launchctl or systemctl may take to answer


# Names from the agent and the relay, repeated: importing their modules (FastAPI, the daemon)
# would cost doctor and `up` seconds. tests/cli/test_doctor.py checks they still agree.
DEVICE_ID_FILE = "device-id"  # agent.daemon.DEVICE_ID_FILE


KEY_FILE = "vapid.pem"  # relay.features.push.KEY_FILE


# -- probes ------------------------------------------------------------------------------------


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
        done = subprocess.run(
            [path, "-V"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        )
        output = done.stdout or done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        output = str(exc)
    return decide_mux(path, "", output, minimum)


def _libtmux_minimum() -> str:
    from libtmux.common import TMUX_MIN_VERSION  # what the agent's tmux library refuses below

    return str(TMUX_MIN_VERSION)


def probe_claude_login(claude: str, environ: dict[str, str]) -> ClaudeLoginProbe:
    """``claude auth status`` run with the environment the agent gives claude (2.1.332 prints
    JSON and, with non-essential traffic off, sends no request), and ``~/.claude.json``."""
    env = {**environ, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    home = Path(environ.get("HOME") or Path.home())
    config = Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home
    answers = parse_key_answers(_read(config / ".claude.json"))
    key = environ.get("ANTHROPIC_API_KEY") or None
    try:
        done = subprocess.run(
            [claude, "auth", "status", "--json"], capture_output=True, text=True,
            timeout=COMMAND_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return ClaudeLoginProbe(ran=False, problem=f"no answer in {COMMAND_TIMEOUT_S:.0f} s")
    except OSError as exc:
        return ClaudeLoginProbe(ran=False, problem=str(exc))
    return ClaudeLoginProbe(
        ran=True, output=done.stdout, exit_code=done.returncode, env_key=key, answers=answers
    )


def check_claude_login(explicit: str | None, environ: dict[str, str]) -> Result:
    """Can Claude Code start and work with the login it has here? (Skipped without claude.)"""
    from agent.launch import ClaudeMissing, find_claude

    try:
        path = find_claude(explicit)
    except ClaudeMissing:
        return Result("login", "skipped", "no Claude Code to ask (see above)")
    return decide_claude_login(probe_claude_login(path, environ))


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


def probe_vapid(
    relay_dir: Path, public: RelayProbe, phone_token: str, whose: str = "the phone token"
) -> tuple[bool | None, str]:
    """``whose`` names the token in the answer: the one given, or the relay's own on its machine."""
    if phone_token and public.healthy:
        answer = _phone_get(public.url, phone_token, "/api/push/key")
        if not isinstance(answer, str):
            return bool(answer.get("key")), f"asked the relay with {whose}"
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


def run_manager(argv: list[str]) -> tuple[int, str]:
    """A manager's answer: (exit code, output); -1 when it cannot be run at all."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, f"{argv[0]}: {exc}"
    return done.returncode, (done.stdout or done.stderr)


# -- the runner --------------------------------------------------------------------------------


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
        check_claude_login(claude, options.environ),
        decide_hook(probe_hook(options.environ)),
    ]
    if not quick:
        token = options.token or options.environ.get("CB_TOKEN", "")
        whose = "the phone token"
        if not token and not where.remote:
            # This machine's relay keeps a phone token for its own command line (0600).
            token, whose = _read(where.relay_dir / LOCAL_TOKEN_FILE), "its own command-line token"
        public = probe_relay(where.public_url)
        vapid, source = probe_vapid(where.relay_dir, public, token, whose)
        home = Path(options.environ.get("HOME") or Path.home())
        results += [
            decide_relay(public),
            decide_push(where.public_url, public.healthy, vapid, source),
            decide_service(probe_service(platform.system(), home, run_manager, where.remote)),
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
