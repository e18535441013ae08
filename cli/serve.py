"""``claude-bridge relay``: only the relay, with no agent — for a server that Macs link to
(``claude-bridge agent --relay URL --pair CODE`` on each Mac)."""

from __future__ import annotations

import argparse

from cli.arguments import Subcommands, add_listen_args
from cli.common import (
    check_port_free,
    data_location,
    load_config,
    open_store,
    server_settings,
    warn_old_proxy_setting,
)
from wire import config as configmod


def cmd_relay(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    store = open_store(cfg)
    store.ensure_account()
    store.close()
    where = data_location(cfg)
    store_arg = "--database-url URL" if cfg.str("database_url").strip() else f"--data {where}"
    print(f"claude-bridge relay: data in {where}", flush=True)
    print(f"  control page:  {cfg.base_url}/", flush=True)
    print(f"  pair a phone:  claude-bridge pair {store_arg}", flush=True)
    print(
        f"  connect a Mac: claude-bridge pair {store_arg} --kind device --name MAC",
        flush=True,
    )
    return _serve(cfg, args.log_level)


def _serve(cfg: configmod.Config, log_level: str) -> int:
    import uvicorn

    from relay.app import create_app

    check_port_free(cfg)
    warn_old_proxy_setting(cfg)
    uvicorn.run(create_app(cfg), **server_settings(cfg, log_level))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``relay``."""
    relay = sub.add_parser(
        "relay",
        help="run the relay (FastAPI under uvicorn)",
        description="Run only the relay, with no agent: for a server that Macs link to "
        "(`claude-bridge agent --relay URL --pair CODE` on each Mac).",
    )
    add_listen_args(relay)
    relay.set_defaults(func=cmd_relay)
