"""``claude-bridge pair``: a one-time code that pairs a phone (a link and QR code to open on it)
or a Mac (a code for ``claude-bridge agent --pair CODE``), made in the relay's database."""

from __future__ import annotations

import argparse

from cli.arguments import Subcommands, add_data_args
from cli.common import load_config, open_store, pair_link, print_qr


def cmd_pair(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    store = open_store(cfg)
    account = store.ensure_account(args.account)
    # A Mac without --name is called by its host name (it says it when it pairs).
    name = args.name if args.name is not None else ("phone" if args.kind == "phone" else "")
    code = store.create_pair_code(account, args.kind, name)
    store.close()
    minutes = int(cfg.float("pair_code_ttl") // 60)
    if args.kind == "phone":
        link = pair_link(cfg, code)
        print(f"Open this on your phone within {minutes} minutes (it works once):")
        print(f"  {link}")
        print_qr(link)
    else:
        print(f"On the Mac, run this within {minutes} minutes (the code works once):")
        print(f"  claude-bridge agent --relay {cfg.base_url} --pair {code}")
        print("Then `claude-bridge agent install` there starts it at every login.")
    print(code)
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``pair``."""
    pair = sub.add_parser(
        "pair",
        help="make a one-time pairing code for a phone or a Mac",
        description="Make a one-time pairing code: for a phone, a link (and QR code) to open on "
        "it; for a Mac (--kind device), a code for `claude-bridge agent --pair CODE`. The code "
        "is printed last and works once, within pair_code_ttl.",
    )
    add_data_args(pair)
    pair.add_argument(
        "--kind",
        choices=["phone", "device"],
        default="phone",
        help="what pairs with it: a phone (default) or a Mac's agent (device)",
    )
    pair.add_argument(
        "--name",
        help="a name to tell it by (a phone: 'phone'; a Mac: its host name, unless given)",
    )
    pair.add_argument(
        "--account", default="default", help="the account it joins (default: default)"
    )
    pair.add_argument("--public-url", help="address phones use (for the link)")
    pair.set_defaults(func=cmd_pair)
