"""``claude-bridge token create|list|revoke``: the tokens phones and Macs log in with, straight in
the relay's database."""

from __future__ import annotations

import argparse
import sys
import time

from cli.arguments import Subcommands, add_data_args
from cli.common import fail, load_config, open_store


def cmd_token_create(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    store = open_store(cfg)
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
    cfg = load_config(args)
    store = open_store(cfg)
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
    cfg = load_config(args)
    store = open_store(cfg)
    done = store.revoke_token_sync(args.token_id)
    store.close()
    if not done:
        fail(f"no active token {args.token_id}", "see `claude-bridge token list`")
    print(
        f"Revoked {args.token_id}; open streams using it close within "
        f"{cfg.float('auth_recheck_interval'):g} s."
    )
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``token`` and its actions: ``create``, ``list``, ``revoke``."""
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
    add_data_args(create)
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
    add_data_args(listing)
    listing.set_defaults(func=cmd_token_list)
    revoke = token_sub.add_parser(
        "revoke",
        help="revoke a token by its id",
        description="Revoke a token by its id (see `token list`); streams open with it close "
        "within auth_recheck_interval.",
    )
    add_data_args(revoke)
    revoke.add_argument("token_id", metavar="ID", help="the token's id, as `token list` shows it")
    revoke.set_defaults(func=cmd_token_revoke)
