"""The agent's commands: ``claude-bridge agent``, ``agent install|uninstall`` and ``screen``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

import httpx

DEFAULT_DATA = Path("~/.claude-bridge")
TOKEN_FILE = "device-token"
RELAY_FILE = "relay-url"
NAME_FILE = "device-name"  # the name given at pairing (`pair --kind device --name`)
CLAUDE_ARGS_FILE = "claude-args.json"
LAUNCHD_LABEL = "com.claude-bridge.agent"
SYSTEMD_UNIT = "claude-bridge-agent.service"


def _fail(message: str, hint: str = "") -> NoReturn:
    print(f"claude-bridge agent: {message}", file=sys.stderr)
    if hint:
        print(f"  → {hint}", file=sys.stderr)
    raise SystemExit(2)


def data_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("CB_AGENT_DIR") or DEFAULT_DATA).expanduser()


def _secret_file(path: Path, value: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")


def pair_device(relay_url: str, code: str, name: str) -> tuple[str, str]:
    """Trade a one-time code from `claude-bridge pair --kind device` for this Mac's token."""
    try:
        response = httpx.post(
            relay_url.rstrip("/") + "/api/pair", json={"code": code, "name": name}, timeout=15
        )
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the relay at {relay_url}: {exc}", "check --relay")
    if response.status_code != 200:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:200]
        _fail(
            f"pairing failed: {message}", "make a new code with `claude-bridge pair --kind device`"
        )
    body = response.json()
    if body.get("kind") != "device":
        _fail("that code was made for a phone", "use `claude-bridge pair --kind device`")
    given = body.get("name")
    return str(body["token"]), given if isinstance(given, str) and given else name


def resolve_link(args: argparse.Namespace, folder: Path) -> tuple[str, str]:
    relay = args.relay or _read(folder / RELAY_FILE)
    if not relay:
        _fail("which relay? pass --relay URL (it is remembered afterwards)")
    if args.pair:
        token, name = pair_device(relay, args.pair, platform.node() or "mac")
        _secret_file(folder / TOKEN_FILE, token)
        _secret_file(folder / NAME_FILE, name)
        print(f"Paired with {relay} as '{name}'; the token is kept in {folder / TOKEN_FILE}.")
    else:
        token = args.token or _read(
            Path(args.token_file).expanduser() if args.token_file else folder / TOKEN_FILE
        )
    if not token:
        _fail(
            "this Mac has no token for the relay",
            "run `claude-bridge pair --kind device` on the relay and pass --pair CODE",
        )
    if args.relay:
        _secret_file(folder / RELAY_FILE, relay)
    if args.token:
        _secret_file(folder / TOKEN_FILE, token)
    return relay, token


def resolve_claude_args(args: argparse.Namespace, folder: Path) -> list[str]:
    """The extra claude arguments: given now (then remembered), forgotten, or remembered."""
    from agent.files import write_text
    from agent.launch import BadClaudeArgs, check_claude_args

    path = folder / CLAUDE_ARGS_FILE
    if args.no_claude_args:
        path.unlink(missing_ok=True)
        return []
    if args.claude_arg:
        try:
            extra = check_claude_args(list(args.claude_arg))
        except BadClaudeArgs as exc:
            _fail(str(exc))
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # a first run: nothing there yet
        write_text(path, json.dumps(extra))  # 0600, as everything the agent keeps
        return extra
    try:
        saved = json.loads(path.read_text())
        if not isinstance(saved, list) or not all(isinstance(a, str) for a in saved):
            raise ValueError("not a list of arguments")
        return check_claude_args(saved)
    except FileNotFoundError:
        return []
    except (ValueError, TypeError, BadClaudeArgs) as exc:
        _fail(
            f"{path} cannot be used ({exc})",
            "pass the extra arguments again with --claude-arg, or --no-claude-args",
        )


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def cmd_agent(args: argparse.Namespace) -> int:
    if args.action == "install":
        return install(args)
    if args.action == "uninstall":
        return uninstall()
    from agent.daemon import AgentOptions
    from agent.launch import ClaudeMissing, find_claude, wanted_claude
    from agent.mux import MuxError, find_program
    from wire import config as configmod

    folder = data_dir(args.data)
    relay, token = resolve_link(args, folder)
    try:
        claude = find_claude(args.claude)
    except ClaudeMissing as exc:
        # The Mac links anyway and says so (the phone shows how to install it); each new
        # session looks for it again.
        print(f"claude-bridge agent: {exc}; sessions start once it is installed", flush=True)
        claude = wanted_claude(args.claude)
    try:
        program = find_program(args.mux)
    except MuxError as exc:
        _fail(str(exc))
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    extra = resolve_claude_args(args, folder)
    options = AgentOptions(
        data_dir=folder,
        relay_url=relay,
        token=token,
        claude=claude,
        mux_program=program,
        mux_socket=args.socket,
        revive=not args.no_revive,
        claude_args=tuple(extra),
        device_name=_read(folder / NAME_FILE) or platform.node() or "mac",
    )
    print(f"claude-bridge agent: data in {folder}, relay {relay}, claude {claude}, mux {program}")
    if extra:
        print(f"  every session starts with: {shlex.join(extra)} (--no-claude-args forgets them)")
    return asyncio.run(_run(options, configmod.load()))


async def _run(options: Any, config: Any) -> int:
    from agent.daemon import Agent
    from agent.launch import ClaudeMissing

    agent = Agent(options, config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await agent.start()
    except ClaudeMissing as exc:
        _fail(str(exc))
    print(
        f"  hooks on 127.0.0.1:{agent.hook_server.port}; {len(agent.runtimes)} session(s) running"
    )
    print("  Press Ctrl-C to stop (the sessions keep running in the multiplexer).", flush=True)
    try:
        await stop.wait()
    finally:
        await agent.stop()
    return 0


def _agent_command(args: argparse.Namespace) -> list[str]:
    exe = shutil.which("claude-bridge") or sys.argv[0]
    command = [os.path.abspath(exe), "agent"]
    if args.data:
        command += ["--data", str(data_dir(args.data))]
    return command


def _found(program: str | None) -> str | None:
    return shutil.which(program) if program else None


def install(args: argparse.Namespace) -> int:
    """Start the agent at login (revive depends on it): launchd on macOS, systemd --user on Linux."""
    from agent import service

    folder = data_dir(args.data)
    if not _read(folder / RELAY_FILE) or not _read(folder / TOKEN_FILE):
        _fail("run `claude-bridge agent --relay URL --pair CODE` once first, so it knows its relay")
    command = _agent_command(args)
    programs = [command[0], _found(args.claude or "claude"), _found("tmux")]
    unit = service.Service(
        label=LAUNCHD_LABEL,
        unit=SYSTEMD_UNIT,
        description="claude-bridge agent (runs Claude Code sessions for your phone)",
        command=tuple(command),
        path_env=service.service_path(programs, os.environ.get("PATH", "/usr/bin:/bin")),
        log_name="agent.log",
    )
    print(service.install(unit, platform.system(), Path.home()))
    return 0


def uninstall() -> int:
    from agent import service

    done = service.uninstall(LAUNCHD_LABEL, SYSTEMD_UNIT, platform.system(), Path.home())
    print(done or "The agent was not installed.")
    return 0


def cmd_screen(args: argparse.Namespace) -> int:
    from agent.cards import classify_text, describe

    try:
        text = Path(args.file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        _fail(f"cannot read {args.file}: {exc.strerror}")
    facts = classify_text(text, args.width, args.height)
    print(json.dumps(describe(facts), ensure_ascii=False))
    return 0


def add_commands(sub: Any) -> None:
    agent = sub.add_parser(
        "agent",
        help="run the Mac agent (runs Claude Code for your phone)",
        description="Run this Mac's agent: it links to the relay and runs claude in tmux for "
        "your phone. Pair once with --relay URL --pair CODE (both are remembered); `agent "
        "install` starts it at every login (launchd / systemd user unit), `uninstall` stops that.",
    )
    agent.add_argument(
        "action",
        nargs="?",
        choices=["run", "install", "uninstall"],
        default="run",
        help="run it here (default), or install / uninstall it as a login service",
    )
    agent.add_argument("--relay", metavar="URL", help="the relay's address (remembered)")
    agent.add_argument("--token", help="this Mac's device token (remembered)")
    agent.add_argument("--token-file", help="read the device token from this file")
    agent.add_argument(
        "--pair", metavar="CODE", help="pair with a code from `claude-bridge pair --kind device`"
    )
    agent.add_argument("--data", metavar="DIR", help=f"agent data folder (default {DEFAULT_DATA})")
    agent.add_argument(
        "--claude", metavar="PATH", help="the claude command (default: claude on PATH)"
    )
    agent.add_argument(
        "--claude-arg",
        metavar="ARG",
        action="append",
        help="an extra argument for every claude it starts, e.g. --claude-arg=--chrome or "
        "--claude-arg=--add-dir --claude-arg=~/shared (repeat it; remembered)",
    )
    agent.add_argument(
        "--no-claude-args", action="store_true", help="forget the remembered extra arguments"
    )
    agent.add_argument(
        "--mux",
        choices=["auto", "tmux", "zeropty"],
        default="auto",
        help="the terminal multiplexer sessions run in "
        "(default auto: zeropty when installed, else tmux)",
    )
    agent.add_argument("--socket", default="claude-bridge", help="the multiplexer socket name")
    agent.add_argument("--no-revive", action="store_true", help="do not reopen sessions at start")
    agent.add_argument(
        "--log-level",
        default="info",
        choices=["error", "warning", "info", "debug"],
        help="how much the agent logs (default info)",
    )
    agent.set_defaults(func=cmd_agent)

    screen = sub.add_parser(
        "screen",
        help="classify one captured Claude Code screen (JSON)",
        description="Classify one captured Claude Code screen (plain text or ANSI) as the agent "
        "does: the card and its keys, busy, the in-progress text, as JSON.",
    )
    screen.add_argument("file", metavar="FILE", help="the captured screen")
    screen.add_argument(
        "--width", type=int, default=0, help="the terminal's columns (default: its widest line)"
    )
    screen.add_argument(
        "--height", type=int, default=0, help="the terminal's rows (default: its line count)"
    )
    screen.set_defaults(func=cmd_screen)
