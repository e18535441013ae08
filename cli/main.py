"""The ``claude-bridge`` command.

claude-bridge up                 run the relay on this machine and print how to pair a phone
claude-bridge up install         the same at every login (launchd / systemd user unit)
claude-bridge relay              run only the relay
claude-bridge pair               make a one-time pairing code and link
claude-bridge token create|list|revoke
claude-bridge events FILE…       show how transcript lines become events (no relay needed)
claude-bridge replay FILE…       push transcripts to a relay as a Mac would
claude-bridge cost FILE…         tokens and USD of transcript files taken as one session (JSON)
claude-bridge open --session ID|-N  resume, start (with that id) or read a session
claude-bridge sessions           list sessions, newest created first
claude-bridge audit              every decision on a card: who or which rule, which card, answer
claude-bridge doctor             check everything the bridge needs, each with its fix
claude-bridge attach SESSION     join this terminal to a session running on this Mac
claude-bridge claude [ARGS…]     a drop-in for claude: started through the agent, seen on the phone
(the session commands' modules, in SESSION_COMMANDS, say the rest)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from cli import (
    attach,
    audit,
    delete,
    fork,
    listing,
    move,
    opening,
    policy,
    rename,
    retention,
    session_cost,
    subagents,
)
from relay.webfiles import WebFilesMissing
from wire import config as configmod

if TYPE_CHECKING:
    from cli.arguments import Subcommands
    from cli.publish import Link

DEFAULT_DATA = "~/.claude-bridge/relay"


class CommandModule(Protocol):
    """A module of ``claude-bridge`` commands: ``register`` adds them, with their handlers."""

    def register(self, sub: Subcommands) -> None: ...


SESSION_COMMANDS: tuple[CommandModule, ...] = (
    opening,  # open
    listing,  # sessions, search
    rename,
    session_cost,  # session-cost
    policy,
    retention,  # pin, unpin, retention
    audit,
    fork,
    move,
    delete,
    subagents,
    attach,  # attach, claude
)
"""The session commands' modules, in the order ``claude-bridge --help`` lists them."""


def _config(args: argparse.Namespace) -> configmod.Config:
    overrides: dict[str, Any] = {}
    for name in ("data_dir", "database_url", "host", "port", "public_url"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    try:
        cfg = configmod.load(overrides)
        configmod.trusted_networks(cfg.str("trusted_proxies"))  # a typo stops here, not mid-start
        return cfg
    except configmod.ConfigError as exc:
        _fail(str(exc))


def _fail(message: str, hint: str = "") -> NoReturn:
    print(f"claude-bridge: {message}", file=sys.stderr)
    if hint:
        print(f"  → {hint}", file=sys.stderr)
    raise SystemExit(2)


def _say_step(message: str) -> None:
    print(f"claude-bridge: {message}", file=sys.stderr, flush=True)


def _where(cfg: configmod.Config) -> str:
    """Where the relay's data is, for a person: the folder, or the database URL (no password)."""
    url = cfg.str("database_url").strip()
    if not url:
        return str(cfg.data_path)
    from relay.db.postgres import safe_url

    return safe_url(url)


def _store(cfg: configmod.Config) -> Any:
    from relay.store import Store

    try:
        return Store(cfg, log=_say_step)  # migrations, if any, say what they do
    except Exception as exc:  # a person should see why, not a traceback
        if cfg.str("database_url").strip():
            _fail(
                f"cannot open the relay's database at {_where(cfg)}: {exc}",
                "check that PostgreSQL is running and the URL (--database-url or "
                "CB_DATABASE_URL) names its host, user, password and database",
            )
        _fail(
            f"cannot open the relay's database in {cfg.data_path}: {exc}",
            "check the folder exists and is writable, or pass --data DIR",
        )


def _pair_link(cfg: configmod.Config, code: str) -> str:
    return f"{cfg.base_url}/pair.html#{code}"


def _print_qr(text: str) -> None:
    try:
        import segno  # optional: a QR code in the terminal when installed
    except ImportError:
        return
    segno.make(text, error="m").terminal(compact=True)


# -- commands -----------------------------------------------------------------------


def _check_port_free(cfg: configmod.Config) -> None:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((cfg.str("host"), cfg.int("port")))
        except OSError as exc:
            _fail(
                f"cannot listen on {cfg.str('host')}:{cfg.int('port')}: {exc.strerror}",
                f"is claude-bridge already running? Open {cfg.base_url}/ or pass --port",
            )


def _warn_old_proxy_setting(cfg: configmod.Config) -> None:
    """uvicorn's FORWARDED_ALLOW_IPS no longer applies: say what replaced it."""
    if os.environ.get("FORWARDED_ALLOW_IPS") and not cfg.str("trusted_proxies"):
        print(
            "claude-bridge: FORWARDED_ALLOW_IPS is ignored; name the proxy in CB_TRUSTED_PROXIES "
            "(forwarded headers are believed only from there)",
            file=sys.stderr,
            flush=True,
        )


def _serve(cfg: configmod.Config, log_level: str) -> int:
    import uvicorn

    from relay.app import create_app, server_options

    _check_port_free(cfg)
    _warn_old_proxy_setting(cfg)
    uvicorn.run(
        create_app(cfg),
        host=cfg.str("host"),
        port=cfg.int("port"),
        log_level=log_level,
        timeout_graceful_shutdown=3,
        **server_options(cfg),  # forwarded headers only from trusted_proxies
    )
    return 0


def cmd_relay(args: argparse.Namespace) -> int:
    cfg = _config(args)
    store = _store(cfg)
    store.ensure_account()
    store.close()
    where = _where(cfg)
    store_arg = "--database-url URL" if cfg.str("database_url").strip() else f"--data {where}"
    print(f"claude-bridge relay: data in {where}", flush=True)
    print(f"  control page:  {cfg.base_url}/", flush=True)
    print(f"  pair a phone:  claude-bridge pair {store_arg}", flush=True)
    print(
        f"  connect a Mac: claude-bridge pair {store_arg} --kind device --name MAC",
        flush=True,
    )
    return _serve(cfg, args.log_level)


def cmd_up(args: argparse.Namespace) -> int:
    """The one command for a person: the relay on loopback, this machine's agent, a pairing link."""
    if args.action in {"install", "uninstall"}:  # the same, at every login (cli/service.py)
        from cli.service import install_up, uninstall_up

        return install_up(args) if args.action == "install" else uninstall_up()
    from agent.cli import resolve_claude_args

    agent_dir = _local_agent_dir(args)
    extra = resolve_claude_args(args, agent_dir)  # a refused argument stops here, before anything
    from cli.doctor import quick_report

    print(quick_report(args), end="", flush=True)  # only the quick checks that fail or warn
    link = _link(args)  # so does Tailscale not ready, or a choice that cannot be used
    cfg = link.config
    store = _store(cfg)
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
    _check_port_free(cfg)
    _warn_old_proxy_setting(cfg)
    token = token_file.read_text().strip()
    from cli.publish import PublishError, running

    local = f"http://{cfg.str('host')}:{cfg.int('port')}"
    try:
        # Tailscale serves the relay until it stops; doctor finds where it listens.
        with link.serving(), running(cfg.data_path, local, cfg.base_url):
            _print_up(cfg, agent_dir, code, link.note)
            return asyncio.run(_serve_with_agent(cfg, args, agent_dir, token, extra))
    except PublishError as exc:
        _fail(exc.message, exc.hint)


def _print_up(cfg: configmod.Config, agent_dir: Path, code: str | None, note: str) -> None:
    print("claude-bridge is starting on this machine.")
    print(f"  relay data:   {_where(cfg)}")
    print(f"  agent data:   {agent_dir}")
    print(f"  control page: {cfg.base_url}/")
    if code is None:
        print(f"  pair a phone: claude-bridge pair --data {cfg.data_path}")
        if note:
            print(f"                {note}")
        return
    pair_link = _pair_link(cfg, code)
    print(f"  pair a phone: open {pair_link}")
    print(
        f"                (or type the code {code} on the page; it works once, for "
        f"{int(cfg.float('pair_code_ttl') // 60)} minutes)"
    )
    if note:
        print(f"                {note}")  # how far the link reaches (cli/publish.py)
    _print_qr(pair_link)
    from cli.service import installed

    if not installed(Path.home(), platform.system()):
        print(
            "  at login:     `claude-bridge up install` (with these flags) starts it at every login"
        )


def _link(args: argparse.Namespace) -> Link:
    """How a phone reaches this relay (cli/publish.py): chosen now, or remembered."""
    from cli import publish

    cfg = _config(args)
    try:
        return publish.prepare(publish.choose(args, cfg.data_path), cfg)
    except publish.PublishError as exc:
        _fail(exc.message, exc.hint)


def _local_agent_dir(args: argparse.Namespace) -> Path:
    from agent.cli import data_dir

    return data_dir(getattr(args, "agent_data", None))


async def _serve_with_agent(
    cfg: configmod.Config, args: argparse.Namespace, agent_dir: Path, token: str, extra: list[str]
) -> int:
    import logging
    import signal

    import uvicorn

    from agent.daemon import Agent, AgentOptions
    from agent.launch import ClaudeMissing, find_claude
    from agent.mux import MuxError, find_program
    from relay.app import create_app, server_options

    server = uvicorn.Server(
        uvicorn.Config(
            create_app(cfg),
            host=cfg.str("host"),
            port=cfg.int("port"),
            log_level=args.log_level,
            timeout_graceful_shutdown=3,
            **server_options(cfg),  # forwarded headers only from trusted_proxies
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.05)
    if serving.done():
        return 1
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    agent: Agent | None = None
    try:
        claude = find_claude(getattr(args, "claude", None))
        program = find_program("auto")
    except (ClaudeMissing, MuxError) as exc:
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
        )
        agent = Agent(options, cfg)
        try:
            await agent.start()
            print(f"  local agent:  running claude {agent.claude_version} in {program}", flush=True)
            if extra:
                print(f"  claude args:  {shlex.join(extra)}", flush=True)
        except ClaudeMissing as exc:
            print(f"  no local agent: {exc}", flush=True)
            agent = None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # before saying so: a Ctrl-C then stops cleanly
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
    print("  Press Ctrl-C to stop (sessions keep running and are picked up next time).", flush=True)
    try:
        await serving
    finally:
        if agent is not None:
            await agent.stop()
    return 0


def cmd_pair(args: argparse.Namespace) -> int:
    cfg = _config(args)
    store = _store(cfg)
    account = store.ensure_account(args.account)
    code = store.create_pair_code(account, args.kind, args.name)
    store.close()
    minutes = int(cfg.float("pair_code_ttl") // 60)
    if args.kind == "phone":
        link = _pair_link(cfg, code)
        print(f"Open this on your phone within {minutes} minutes (it works once):")
        print(f"  {link}")
        _print_qr(link)
    else:
        print(f"On the Mac, trade this code for its device token within {minutes} minutes:")
        print(f'  POST {cfg.base_url}/api/pair  {{"code": "{code}"}}')
    print(code)
    return 0


def cmd_token_create(args: argparse.Namespace) -> int:
    cfg = _config(args)
    store = _store(cfg)
    account = store.ensure_account(args.account)
    token, token_id, subject_id = store.create_token(account, args.kind, args.name, args.ttl_days)
    store.close()
    print(
        f"Created a {args.kind} token {token_id} for '{args.name}' ({subject_id}) in account "
        f"'{args.account}'. Keep it secret; revoke with: claude-bridge token revoke {token_id}",
        file=sys.stderr,
    )
    print(token)
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    cfg = _config(args)
    store = _store(cfg)
    rows = store.list_tokens_sync()
    store.close()
    if not rows:
        print("No tokens yet. Pair a phone with `claude-bridge pair`.")
    for row in rows:
        status = "revoked" if row["revoked_at"] else "active"
        if row["expires_at"] and row["expires_at"] < time.time():
            status = "expired"
        print(
            f"{row['id']}  {row['kind']:6}  {status:8} {row['account']:10} {row['name']} ({row['subject_id']})"
        )
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    cfg = _config(args)
    store = _store(cfg)
    done = store.revoke_token_sync(args.token_id)
    store.close()
    if not done:
        _fail(f"no active token {args.token_id}", "see `claude-bridge token list`")
    print(
        f"Revoked {args.token_id}; open streams using it close within "
        f"{cfg.float('auth_recheck_interval'):g} s."
    )
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    from relay.convert import ConversionLimits, convert_line

    limits = ConversionLimits.from_config(configmod.load())
    out = sys.stdout
    for name in args.files:
        path = Path(name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            _fail(f"cannot read {path}: {exc.strerror}")
        for raw in data.splitlines():
            for event in convert_line(raw, limits).events:
                out.write(event.model_dump_json(exclude_none=True))
                out.write("\n")
    return 0


def cmd_cost(args: argparse.Namespace) -> int:
    """All the files are one session (a transcript, its /clear successors, its subagents'
    agent-<id>.jsonl): read in the order given, each named by its file name for subagents."""
    from relay.features.cost import CostCounter, PriceError, load_prices

    try:
        counter = CostCounter(load_prices(_config(args).str("model_prices")))
    except PriceError as exc:
        _fail(str(exc), "fix CB_MODEL_PRICES (see the configuration table in README.md)")
    for name in args.files:
        path = Path(name)
        try:
            data = path.read_bytes()
        except OSError as exc:
            _fail(f"cannot read {path}: {exc.strerror}")
        for raw in data.splitlines():
            counter.add_text(raw, path.stem)
    print(json.dumps(counter.report().to_json(), indent=2))
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from cli.replay import replay_file
    from wire.client import MacLink
    from wire.errors import LinkRefused
    from wire.protocol import DeviceInfo

    async def run() -> int:
        link = MacLink(args.relay, args.token, DeviceInfo(name=args.name))
        try:
            await link.connect()
        except (LinkRefused, OSError) as exc:
            _fail(
                f"cannot link to {args.relay}: {exc}",
                "check the relay is running and the token is a device token",
            )
        total_started = time.perf_counter()
        try:
            for name in args.files:
                path = Path(name)
                if not path.is_file():
                    _fail(f"no such transcript: {path}")
                session_id = args.session or str(
                    uuid.uuid5(uuid.NAMESPACE_URL, str(path.resolve()))
                )

                def progress(done: int, total: int, path: Path = path) -> None:
                    if not args.quiet:
                        print(
                            f"\r  {path.name}: {done}/{total} lines",
                            end="",
                            file=sys.stderr,
                            flush=True,
                        )

                summary = await replay_file(
                    link, path, session_id, batch_size=args.batch, progress=progress
                )
                if not args.quiet:
                    print(file=sys.stderr)
                print(
                    json.dumps(
                        {
                            "session_id": summary.session_id,
                            "conversation_id": summary.conversation_id,
                            "lines": summary.lines,
                            "duplicates": summary.duplicates,
                            "last_seq": summary.last_seq,
                            "seconds": round(summary.seconds, 3),
                        }
                    )
                )
        finally:
            await link.close()
        if not args.quiet:
            print(
                f"Replayed {len(args.files)} file(s) in {time.perf_counter() - total_started:.2f} s.",
                file=sys.stderr,
            )
        return 0

    return asyncio.run(run())


# -- parser ---------------------------------------------------------------------------


def _data_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        dest="data_dir",
        metavar="DIR",
        help=f"relay data folder (default {DEFAULT_DATA}, or $CB_DATA_DIR)",
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="keep the relay's data in PostgreSQL (postgresql://user:password@host/db, or "
        "$CB_DATABASE_URL), shared by every relay node on it; default: SQLite in the data folder",
    )


def _listen_args(parser: argparse.ArgumentParser) -> None:
    _data_arg(parser)
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8765)")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the https address phones reach this relay at, e.g. behind the TLS proxy in deploy/ "
        "(pairing links and Secure cookies use it; default http://HOST:PORT)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="how much the server logs (default info)",
    )


class _Version(argparse.Action):
    """``--version``: the product's version and the Claude Code versions it was tested with."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from wire import __version__
        from wire.claude_versions import TESTED_VERSIONS

        print(f"claude-bridge {__version__}")
        print(f"tested with Claude Code {', '.join(TESTED_VERSIONS)}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="claude-bridge",
        description="Run Claude Code on your own Macs and drive it from your phone. "
        "Start with `claude-bridge up`; `claude-bridge COMMAND --help` says what each one does.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        help="print the version and the Claude Code versions it was tested with, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    _listen_args(up)
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

    relay = sub.add_parser(
        "relay",
        help="run the relay (FastAPI under uvicorn)",
        description="Run only the relay, with no agent: for a server that Macs link to "
        "(`claude-bridge agent --relay URL --pair CODE` on each Mac).",
    )
    _listen_args(relay)
    relay.set_defaults(func=cmd_relay)

    pair = sub.add_parser(
        "pair",
        help="make a one-time pairing code for a phone or a Mac",
        description="Make a one-time pairing code: for a phone, a link (and QR code) to open on "
        "it; for a Mac (--kind device), a code for `claude-bridge agent --pair CODE`. The code "
        "is printed last and works once, within pair_code_ttl.",
    )
    _data_arg(pair)
    pair.add_argument(
        "--kind",
        choices=["phone", "device"],
        default="phone",
        help="what pairs with it: a phone (default) or a Mac's agent (device)",
    )
    pair.add_argument("--name", default="phone", help="a name to tell it by")
    pair.add_argument(
        "--account", default="default", help="the account it joins (default: default)"
    )
    pair.add_argument("--public-url", help="address phones use (for the link)")
    pair.set_defaults(func=cmd_pair)

    token = sub.add_parser(
        "token",
        help="create, list or revoke tokens",
        description="Create, list or revoke the tokens phones and Macs log in with, straight in "
        "the relay's database.",
    )
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser(
        "create",
        help="create a device or phone token (printed last)",
        description="Create a token without pairing; it is printed as the last line (keep it "
        "secret), its id above it for `token revoke`.",
    )
    _data_arg(create)
    create.add_argument(
        "--kind",
        choices=["device", "phone"],
        required=True,
        help="a Mac's agent (device) or a phone",
    )
    create.add_argument("--name", required=True, help="a name to tell it by")
    create.add_argument(
        "--account", default="default", help="the account it belongs to (default: default)"
    )
    create.add_argument(
        "--ttl-days", type=float, default=None, help="days until it expires (0 = never)"
    )
    create.set_defaults(func=cmd_token_create)
    listing = token_sub.add_parser(
        "list",
        help="list tokens (never their secrets)",
        description="List every token: id, kind, active / revoked / expired, account, name.",
    )
    _data_arg(listing)
    listing.set_defaults(func=cmd_token_list)
    revoke = token_sub.add_parser(
        "revoke",
        help="revoke a token by its id",
        description="Revoke a token by its id (see `token list`); streams open with it close "
        "within auth_recheck_interval.",
    )
    _data_arg(revoke)
    revoke.add_argument("token_id", metavar="ID", help="the token's id, as `token list` shows it")
    revoke.set_defaults(func=cmd_token_revoke)

    events = sub.add_parser(
        "events",
        help="print the display events of transcript files, one JSON per line",
        description="Print how Claude Code transcript lines become the events a phone shows, one "
        "JSON object per line; no relay needed.",
    )
    events.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="Claude Code transcript files"
    )
    events.set_defaults(func=cmd_events)

    cost = sub.add_parser(
        "cost",
        help="print the tokens and USD of transcript files (together one session) as JSON",
        description="Print the tokens and USD of transcript files taken as one session (a "
        "transcript, its /clear successors, its subagents' agent-ID.jsonl), as JSON: from "
        "Claude Code's own cost lines, or estimated from the bundled prices (model_prices).",
    )
    cost.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="the session's transcript files, in order"
    )
    cost.set_defaults(func=cmd_cost)

    replay = sub.add_parser(
        "replay",
        help="push transcripts to a relay over the link, as a Mac would",
        description="Push transcript files to a relay over the agent link, as a Mac would (one "
        "session per file unless --session), and print a JSON summary per file.",
    )
    replay.add_argument("--relay", required=True, metavar="URL", help="e.g. http://127.0.0.1:8765")
    replay.add_argument("--token", required=True, help="a device token")
    replay.add_argument("--session", help="session id to use (default: one per file)")
    replay.add_argument("--name", default="replay", help="the Mac's name on the relay")
    replay.add_argument("--batch", type=int, default=200, help="lines per batch")
    replay.add_argument("--quiet", action="store_true", help="no progress on stderr")
    replay.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="Claude Code transcript files"
    )
    replay.set_defaults(func=cmd_replay)

    from cli.doctor import add_arguments as add_doctor_arguments
    from cli.doctor import cmd_doctor

    doctor = sub.add_parser(
        "doctor",
        help="check everything the bridge needs (tmux, Claude Code, relay, HTTPS, service …)",
        description="Check what the bridge needs before you trust it; each problem with its fix. "
        "Exits 1 when a check fails (warnings do not).",
    )
    add_doctor_arguments(doctor)
    doctor.set_defaults(func=cmd_doctor)

    for command in SESSION_COMMANDS:  # open, sessions, search … and attach, claude
        command.register(sub)

    from agent.cli import add_commands  # the Mac side's commands: agent, screen

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["claude"]:  # claude's arguments, whole: not claude-bridge's to parse
        return attach.main_claude(words[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except WebFilesMissing as exc:  # a broken install says so at start, not 404 on the phone
        _fail(str(exc), exc.hint)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
