"""The ``claude-bridge`` command.

claude-bridge up                 run the relay on this machine and print how to pair a phone
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
(the session commands, cli/sessions.py, list the rest)
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
from typing import Any, NoReturn

from wire import config as configmod

DEFAULT_DATA = "~/.claude-bridge/relay"


def _config(args: argparse.Namespace) -> configmod.Config:
    overrides: dict[str, Any] = {}
    for name in ("data_dir", "host", "port", "public_url"):
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


def _store(cfg: configmod.Config) -> Any:
    from relay.store import Store

    try:
        return Store(cfg)
    except Exception as exc:  # a person should see why, not a traceback
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
    print(f"claude-bridge relay: data in {cfg.data_path}", flush=True)
    print(f"  control page:  {cfg.base_url}/", flush=True)
    print(f"  pair a phone:  claude-bridge pair --data {cfg.data_path}", flush=True)
    print(
        f"  connect a Mac: claude-bridge pair --data {cfg.data_path} --kind device --name MAC",
        flush=True,
    )
    return _serve(cfg, args.log_level)


def cmd_up(args: argparse.Namespace) -> int:
    """The one command for a person: the relay on loopback, this machine's agent, a pairing link."""
    from agent.cli import resolve_claude_args

    agent_dir = _local_agent_dir(args)
    extra = resolve_claude_args(args, agent_dir)  # a refused argument stops here, before anything
    from cli.doctor import quick_report

    print(quick_report(args), end="", flush=True)  # only the quick checks that fail or warn
    cfg = _config(args)
    store = _store(cfg)
    account = store.ensure_account()
    code = store.create_pair_code(account, "phone", "phone")
    token_file = agent_dir / "device-token"
    if not token_file.exists():
        token, _, _ = store.create_token(account, "device", platform.node() or "this Mac")
        agent_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
    store.close()
    _check_port_free(cfg)
    _warn_old_proxy_setting(cfg)
    link = _pair_link(cfg, code)
    print("claude-bridge is starting on this machine.")
    print(f"  relay data:   {cfg.data_path}")
    print(f"  agent data:   {agent_dir}")
    print(f"  control page: {cfg.base_url}/")
    print(f"  pair a phone: open {link}")
    print(
        f"                (or type the code {code} on the page; it works once, for "
        f"{int(cfg.float('pair_code_ttl') // 60)} minutes)"
    )
    _print_qr(link)
    token = token_file.read_text().strip()
    return asyncio.run(_serve_with_agent(cfg, args, agent_dir, token, extra))


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
    print("  Press Ctrl-C to stop (sessions keep running and are picked up next time).", flush=True)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
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


def _listen_args(parser: argparse.ArgumentParser) -> None:
    _data_arg(parser)
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8765)")
    parser.add_argument("--public-url", help="address phones use, for pairing links")
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="claude-bridge",
        description="Run Claude Code on your own Macs and drive it from your phone.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    up = sub.add_parser("up", help="run the relay and this machine's agent, and pair your phone")
    _listen_args(up)
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
    up.add_argument("--socket", default="claude-bridge", help="the agent's multiplexer socket name")
    up.set_defaults(func=cmd_up)

    relay = sub.add_parser("relay", help="run the relay (FastAPI under uvicorn)")
    _listen_args(relay)
    relay.set_defaults(func=cmd_relay)

    pair = sub.add_parser("pair", help="make a one-time pairing code for a phone or a Mac")
    _data_arg(pair)
    pair.add_argument("--kind", choices=["phone", "device"], default="phone")
    pair.add_argument("--name", default="phone", help="a name to tell it by")
    pair.add_argument("--account", default="default")
    pair.add_argument("--public-url", help="address phones use (for the link)")
    pair.set_defaults(func=cmd_pair)

    token = sub.add_parser("token", help="create, list or revoke tokens")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser("create", help="create a device or phone token (printed last)")
    _data_arg(create)
    create.add_argument("--kind", choices=["device", "phone"], required=True)
    create.add_argument("--name", required=True)
    create.add_argument("--account", default="default")
    create.add_argument(
        "--ttl-days", type=float, default=None, help="days until it expires (0 = never)"
    )
    create.set_defaults(func=cmd_token_create)
    listing = token_sub.add_parser("list", help="list tokens (never their secrets)")
    _data_arg(listing)
    listing.set_defaults(func=cmd_token_list)
    revoke = token_sub.add_parser("revoke", help="revoke a token by its id")
    _data_arg(revoke)
    revoke.add_argument("token_id")
    revoke.set_defaults(func=cmd_token_revoke)

    events = sub.add_parser(
        "events", help="print the display events of transcript files, one JSON per line"
    )
    events.add_argument("files", nargs="+", metavar="FILE.jsonl")
    events.set_defaults(func=cmd_events)

    cost = sub.add_parser(
        "cost",
        help="print the tokens and USD of transcript files (together one session) as JSON",
    )
    cost.add_argument("files", nargs="+", metavar="FILE.jsonl")
    cost.set_defaults(func=cmd_cost)

    replay = sub.add_parser(
        "replay", help="push transcripts to a relay over the link, as a Mac would"
    )
    replay.add_argument("--relay", required=True, metavar="URL", help="e.g. http://127.0.0.1:8765")
    replay.add_argument("--token", required=True, help="a device token")
    replay.add_argument("--session", help="session id to use (default: one per file)")
    replay.add_argument("--name", default="replay", help="the Mac's name on the relay")
    replay.add_argument("--batch", type=int, default=200, help="lines per batch")
    replay.add_argument("--quiet", action="store_true")
    replay.add_argument("files", nargs="+", metavar="FILE.jsonl")
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

    from cli.sessions import add_commands as add_session_commands  # open, sessions

    add_session_commands(sub)

    from agent.cli import add_commands  # the Mac side's commands: agent, screen

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
