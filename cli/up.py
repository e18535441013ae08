"""``claude-bridge up``: the one command for a person — the relay on loopback, this machine's
agent, and a link to pair a phone.

claude-bridge up                 run the relay on this machine and print how to pair a phone
claude-bridge up install         the same at every login (launchd / systemd user unit, cli/service.py)
claude-bridge up uninstall       stop that

Before it starts it runs doctor's quick checks (cli/checkup.py) and prints what fails or warns;
how the phone reaches the relay (loopback, a ``--public-url`` proxy, Tailscale) is chosen and held
by cli/publish.py. The relay's server and the agent run in one event loop until Ctrl-C or SIGTERM;
the sessions keep running in tmux and are picked up next time.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import shlex
from pathlib import Path

from cli.arguments import Subcommands, add_listen_args
from cli.checkup import quick_report
from cli.common import (
    check_port_free,
    data_location,
    fail,
    load_config,
    local_agent_dir,
    open_store,
    pair_link,
    print_qr,
    server_settings,
    warn_old_proxy_setting,
)
from cli.publish import Link, PublishError, choose, prepare, running
from cli.service import install_up, installed, uninstall_up
from relay.datadir import FILE_MODE, make_private_folder
from wire import config as configmod
from wire.tasks import TaskSet

_log = logging.getLogger("cli.up")
SERVER_START_POLL_SECONDS = 0.05  # how often `up` looks whether the relay's server listens yet


def cmd_up(args: argparse.Namespace) -> int:
    """The one command for a person: the relay on loopback, this machine's agent, a pairing link."""
    if args.action in {"install", "uninstall"}:  # the same, at every login (cli/service.py)
        return install_up(args) if args.action == "install" else uninstall_up()
    from agent.cli import resolve_claude_args

    agent_dir = local_agent_dir(args)
    # The agent's folder first (the relay's is inside it by default): 0700 from the first run.
    make_private_folder(agent_dir)
    extra = resolve_claude_args(args, agent_dir)  # a refused argument stops here, before anything
    print(quick_report(args), end="", flush=True)  # only the quick checks that fail or warn
    link = _link(args)  # so does Tailscale not ready, or a choice that cannot be used
    cfg = link.config
    store = open_store(cfg)
    account = store.ensure_account()
    # A login service starts it at every boot: no new code each time (nor in its log).
    code = None if args.no_pair else store.create_pair_code(account, "phone", "phone")
    token_file = agent_dir / "device-token"
    if not token_file.exists():
        token, _, _ = store.create_token(account, "device", platform.node() or "this Mac")
        agent_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
    store.close()
    check_port_free(cfg)
    warn_old_proxy_setting(cfg)
    token = token_file.read_text().strip()
    local = f"http://{cfg.str('host')}:{cfg.int('port')}"
    try:
        # Tailscale serves the relay until it stops; doctor finds where it listens.
        with link.serving(), running(cfg.data_path, local, cfg.base_url):
            _print_up(cfg, agent_dir, code, link.note, args.access_log)
            return asyncio.run(_serve_with_agent(cfg, args, agent_dir, token, extra))
    except PublishError as exc:
        fail(exc.message, exc.hint)


ACCESS_LOG = "access.log"  # in the relay's data folder: one line per request


def access_log_to_file(folder: Path) -> Path:
    """The relay's access log (a line per request, every few seconds while a page is open) goes
    to ``<folder>/access.log`` (0600), not the terminal, where it would push the pairing link
    and QR code away; ``up --access-log`` shows it there instead."""
    make_private_folder(folder)
    path = folder / ACCESS_LOG
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))
    os.chmod(path, FILE_MODE)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    access = logging.getLogger("uvicorn.access")
    for old in access.handlers:
        access.removeHandler(old)
    access.addHandler(handler)
    access.propagate = False
    # uvicorn says each WebSocket's arrival and end on its error logger: a line per link and
    # per stream, access lines in all but name — they go to the same file.
    logging.getLogger("uvicorn.error").addFilter(_ConnectionLinesTo(handler))
    return path


class _ConnectionLinesTo(logging.Filter):
    """Sends uvicorn's per-connection lines ("WebSocket … [accepted]", "connection open",
    "connection closed") to the access log's handler instead of the terminal."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text in CONNECTION_LINES or ' - "WebSocket ' in text:
            self.handler.handle(record)
            return False
        return True


CONNECTION_LINES = frozenset({"connection open", "connection closed"})


def _print_up(
    cfg: configmod.Config, agent_dir: Path, code: str | None, note: str, access_log: bool = False
) -> None:
    print("claude-bridge is starting on this machine.")
    print(f"  relay data:   {data_location(cfg)}")
    print(f"  agent data:   {agent_dir}")
    if not access_log:
        print(f"  access log:   {cfg.data_path / ACCESS_LOG} (--access-log shows it here)")
    print(f"  control page: {cfg.base_url}/")
    if code is None:
        print(f"  pair a phone: claude-bridge pair --data {cfg.data_path}")
        if note:
            print(f"                {note}")
        return
    link = pair_link(cfg, code)
    print(f"  pair a phone: open {link}")
    print(
        f"                (or type the code {code} on the page; it works once, for "
        f"{int(cfg.float('pair_code_ttl') // 60)} minutes)"
    )
    if note:
        print(f"                {note}")  # how far the link reaches (cli/publish.py)
    print_qr(link)
    if not installed(Path.home(), platform.system()):
        print(
            "  at login:     `claude-bridge up install` (with these flags) starts it at every login"
        )


def _link(args: argparse.Namespace) -> Link:
    """How a phone reaches this relay (cli/publish.py): chosen now, or remembered."""
    cfg = load_config(args)
    try:
        return prepare(choose(args, cfg.data_path), cfg)
    except PublishError as exc:
        fail(exc.message, exc.hint)


async def _serve_with_agent(
    cfg: configmod.Config, args: argparse.Namespace, agent_dir: Path, token: str, extra: list[str]
) -> int:
    """The relay's server and this machine's agent in one event loop, until a signal stops the
    server; the agent then stops (its sessions run on in tmux)."""
    tasks = TaskSet("up", _log)
    try:
        return await _run_with_agent(cfg, args, agent_dir, token, extra, tasks)
    finally:
        await tasks.close()


async def _run_with_agent(
    cfg: configmod.Config,
    args: argparse.Namespace,
    agent_dir: Path,
    token: str,
    extra: list[str],
    tasks: TaskSet,
) -> int:
    import signal

    import uvicorn

    from agent.daemon import Agent, AgentOptions
    from agent.launch import INSTALL_LINE, ClaudeMissing, find_claude, wanted_claude
    from agent.mux import MuxError, find_program
    from relay.app import create_app
    from relay.sse import end_streams

    config = uvicorn.Config(create_app(cfg), **server_settings(cfg, args.log_level))
    if not args.access_log:
        access_log_to_file(cfg.data_path)  # after uvicorn set its loggers up (in Config)
    server = uvicorn.Server(config)
    serving = tasks.start(server.serve(), name="the relay's server")
    while not server.started and not serving.done():
        await asyncio.sleep(SERVER_START_POLL_SECONDS)
    if serving.done():
        return 1
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    agent: Agent | None = None
    try:
        claude, missing = find_claude(getattr(args, "claude", None)), False
    except ClaudeMissing:
        # The agent runs anyway: the page says Claude Code is missing here and how to install it
        # (as the quick checks above said).
        claude, missing = wanted_claude(getattr(args, "claude", None)), True
    try:
        program = find_program("auto")
    except MuxError as exc:
        print(f"  no local agent: {exc}", flush=True)
        print("  The relay runs; sessions can start once this is fixed (then run this again).")
    else:
        options = AgentOptions(
            data_dir=agent_dir,
            relay_url=f"http://127.0.0.1:{cfg.int('port')}",
            token=token,
            claude=claude,
            mux_program=program,
            mux_socket=args.socket,
            claude_args=tuple(extra),
            claude_missing_said=missing,
        )
        agent = Agent(options, cfg)
        try:
            await agent.start()
            if agent.binary.found:
                running = f"running claude {agent.claude_version} in {program}"
            else:
                running = (
                    f"linked, without Claude Code: sessions start once it is installed "
                    f"({INSTALL_LINE})"
                )
            print(f"  local agent:  {running}", flush=True)
            if extra:
                print(f"  claude args:  {shlex.join(extra)}", flush=True)
        except ClaudeMissing as exc:
            print(f"  no local agent: {exc}", flush=True)
            agent = None
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []  # the one stop under way, once a signal came

    async def agent_then_server() -> None:
        # The agent first: stopped after the relay, it would see its link drop and say "lost;
        # reconnecting" on the way out.
        if agent is not None:
            await agent.stop()
        server.should_exit = True

    def stop() -> None:
        # The open event streams end at once too (else each waits for the graceful timeout and
        # is cancelled with a traceback); a second Ctrl-C stops without waiting at all.
        end_streams()
        if server.should_exit or stopping:
            server.force_exit = server.should_exit = True
            return
        stopping.append(tasks.start(agent_then_server(), name="stopping"))

    for sig in (signal.SIGINT, signal.SIGTERM):  # before saying so: a Ctrl-C then stops cleanly
        loop.add_signal_handler(sig, stop)
    print("  Press Ctrl-C to stop (sessions keep running and are picked up next time).", flush=True)
    try:
        await serving
    finally:
        if stopping:
            await asyncio.wait(stopping)
        elif agent is not None:  # the server ended by itself
            await agent.stop()
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``up`` (and ``up install``, ``up uninstall``)."""
    up = sub.add_parser(
        "up",
        help="run the relay and this machine's agent, and pair your phone",
        description="Run the relay here (127.0.0.1:8765, its data in ~/.claude-bridge/relay) and "
        "this machine's agent, which runs your claude in tmux, and print a one-time link and QR "
        "code to pair your phone. Ctrl-C stops both; sessions keep running in tmux and are "
        "picked up next time. `up install` starts it at every login instead.",
    )
    up.add_argument(
        "action",
        nargs="?",
        choices=["run", "install", "uninstall"],
        default="run",
        help="run it here (default); install: start it at every login with these folders, port "
        "and choices (launchd / systemd user unit); uninstall: stop that",
    )
    add_listen_args(up)
    up.add_argument(
        "--access-log",
        action="store_true",
        help="show a line per request here (default: in access.log in the relay's data folder)",
    )
    up.add_argument(
        "--no-pair",
        action="store_true",
        help="make no pairing code at start (the login service runs so; pair with "
        "`claude-bridge pair`)",
    )
    up.add_argument(
        "--agent-data", metavar="DIR", help="the local agent's folder (~/.claude-bridge)"
    )
    up.add_argument("--claude", metavar="PATH", help="the claude command (default: claude on PATH)")
    up.add_argument(
        "--claude-arg",
        metavar="ARG",
        action="append",
        help="an extra argument for every claude it starts, as for `claude-bridge agent`",
    )
    up.add_argument(
        "--no-claude-args", action="store_true", help="forget the remembered extra arguments"
    )
    up.add_argument(
        "--socket",
        default="claude-bridge",
        help="the agent's tmux socket name (-L), never your own tmux server (default claude-bridge)",
    )
    reach = up.add_argument_group(
        "how your phone reaches it (remembered for the next `up`; the default is this computer "
        "only)"
    )
    reach.add_argument(
        "--tailscale",
        action="store_true",
        help="serve it over HTTPS inside your tailnet with `tailscale serve`, at this machine's "
        "*.ts.net name (undone when up stops)",
    )
    reach.add_argument(
        "--funnel",
        action="store_true",
        help="like --tailscale, but public on the internet through Tailscale Funnel",
    )
    reach.add_argument(
        "--local",
        action="store_true",
        help="forget a remembered --tailscale, --funnel or --public-url: loopback only",
    )
    up.set_defaults(func=cmd_up)
