"""What the ``claude-bridge`` commands share: the settings, the way out on an error, this
machine's relay and agent, and the relay client of the session commands.

A library, not a command: it registers nothing and imports no command module (cli/main.py lists
those). Every command module takes what it shares with another from here (or from the other
libraries: cli/arguments.py, cli/client.py, cli/references.py, cli/display.py, cli/publish.py,
cli/tailscale.py, cli/service.py, cli/checks.py, cli/checkup.py), never from another command.

- **Settings**: :func:`load_config` reads them with the command's flags on top (a mistake stops the
  command here, with what to do).
- **Failing**: :func:`fail` prints ``claude-bridge: MESSAGE`` and ``  → HINT`` on stderr and exits
  2, the status every command exits with on an error; :func:`guarded` does so for a command's
  :class:`~cli.client.CommandError`.
- **This machine's relay**: where its data is (:func:`data_location`, :func:`open_store`), the
  address the session commands use by default (:func:`local_relay_url`), its port and server
  (:func:`check_port_free`, :func:`warn_old_proxy_setting`, :func:`server_settings`), and the link
  that pairs a phone with it (:func:`pair_link`, :func:`print_qr`).
- **This machine's agent**: its data folder (:func:`local_agent_dir`).
- **The relay over HTTP**: :func:`connect` makes the :class:`~cli.client.RelayClient` a session
  command talks through, as the phone page does, with a phone token::

    --relay URL     or CB_RELAY   default: this machine's relay (CB_PUBLIC_URL, else CB_HOST:CB_PORT,
                                  else http://127.0.0.1:8765)
    --token TOKEN   or CB_TOKEN   a phone token: `claude-bridge token create --kind phone --name cli`
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from cli.client import CommandError, RelayClient
from wire import config as configmod

if TYPE_CHECKING:
    from relay.store import Store

DEFAULT_RELAY_URL = "http://127.0.0.1:8765"  # this machine's relay when the settings cannot say
GRACEFUL_SHUTDOWN_SECONDS = 3  # how long uvicorn lets open requests finish when it stops
CONFIG_FLAGS = ("data_dir", "database_url", "host", "port", "public_url")  # flags over settings


# -- settings and failing ----------------------------------------------------------------------


def load_config(args: argparse.Namespace) -> configmod.Config:
    """The settings with the command's ``--data``, ``--database-url``, ``--host``, ``--port`` and
    ``--public-url`` on top; a wrong one (a typo in ``trusted_proxies`` too) fails here, not
    halfway through a start."""
    overrides: dict[str, Any] = {}
    for name in CONFIG_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    try:
        cfg = configmod.load(overrides)
        configmod.trusted_networks(cfg.str("trusted_proxies"))
        return cfg
    except configmod.ConfigError as exc:
        fail(str(exc))


def fail(message: str, hint: str = "") -> NoReturn:
    """End the command with exit status 2: what happened, and (``hint``) what to do about it."""
    print(f"claude-bridge: {message}", file=sys.stderr)
    if hint:
        print(f"  → {hint}", file=sys.stderr)
    raise SystemExit(2)


def guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` with its :class:`CommandError` said as :func:`fail` says it."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except CommandError as exc:
            fail(exc.message, exc.hint)

    return run


def print_json(body: object) -> None:
    """``--json``: the body on one line, as the relay sent it."""
    json.dump(body, sys.stdout, ensure_ascii=False)
    print()


# -- this machine's relay ----------------------------------------------------------------------


def _say_step(message: str) -> None:
    print(f"claude-bridge: {message}", file=sys.stderr, flush=True)


def data_location(cfg: configmod.Config) -> str:
    """Where the relay's data is, for a person: the folder, or the database URL (no password)."""
    url = cfg.str("database_url").strip()
    if not url:
        return str(cfg.data_path)
    from relay.db.postgres import safe_url

    return safe_url(url)


def open_store(cfg: configmod.Config) -> Store:
    """The relay's store, opened in this process (its migrations, if any, say what they do);
    a database that cannot be opened ends the command with why and what to check."""
    from relay.store import Store

    try:
        return Store(cfg, log=_say_step)
    except Exception as exc:  # a person should see why, not a traceback
        if cfg.str("database_url").strip():
            fail(
                f"cannot open the relay's database at {data_location(cfg)}: {exc}",
                "check that PostgreSQL is running and the URL (--database-url or "
                "CB_DATABASE_URL) names its host, user, password and database",
            )
        fail(
            f"cannot open the relay's database in {cfg.data_path}: {exc}",
            "check the folder exists and is writable, or pass --data DIR",
        )


def local_relay_url() -> str:
    """The address of this machine's relay as its settings give it (CB_PUBLIC_URL, else
    CB_HOST:CB_PORT), or the default one when the settings cannot be read."""
    try:
        return configmod.load().base_url
    except configmod.ConfigError:
        return DEFAULT_RELAY_URL


def check_port_free(cfg: configmod.Config) -> None:
    """Fail, saying what to do, when the relay's address is taken (another claude-bridge?)."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((cfg.str("host"), cfg.int("port")))
        except OSError as exc:
            fail(
                f"cannot listen on {cfg.str('host')}:{cfg.int('port')}: {exc.strerror}",
                f"is claude-bridge already running? Open {cfg.base_url}/ or pass --port",
            )


def warn_old_proxy_setting(cfg: configmod.Config) -> None:
    """uvicorn's FORWARDED_ALLOW_IPS no longer applies: say what replaced it."""
    if os.environ.get("FORWARDED_ALLOW_IPS") and not cfg.str("trusted_proxies"):
        print(
            "claude-bridge: FORWARDED_ALLOW_IPS is ignored; name the proxy in CB_TRUSTED_PROXIES "
            "(forwarded headers are believed only from there)",
            file=sys.stderr,
            flush=True,
        )


def server_settings(cfg: configmod.Config, log_level: str) -> dict[str, Any]:
    """uvicorn's settings for the relay on this machine (``relay`` and ``up`` alike)."""
    from relay.app import server_options

    return {
        "host": cfg.str("host"),
        "port": cfg.int("port"),
        "log_level": log_level,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        **server_options(cfg),  # forwarded headers only from trusted_proxies
    }


def pair_link(cfg: configmod.Config, code: str) -> str:
    """The page a phone opens to pair with a one-time ``code``."""
    return f"{cfg.base_url}/pair.html#{code}"


def print_qr(text: str) -> None:
    """``text`` as a QR code in the terminal, when segno is installed (else nothing)."""
    try:
        import segno
    except ImportError:
        return
    segno.make(text, error="m").terminal(compact=True)


# -- this machine's agent and the relay over HTTP ----------------------------------------------


def local_agent_dir(args: argparse.Namespace) -> Path:
    """This machine's agent folder: ``--agent-data``, else CB_AGENT_DIR, else ~/.claude-bridge."""
    from agent.cli import data_dir

    return data_dir(getattr(args, "agent_data", None))


LOCAL_TOKEN_FILE = "cli-token"  # relay.localtoken.LOCAL_TOKEN_FILE (not imported: FastAPI's cost)
NO_TOKEN_HINT = (
    "on the relay's own machine the relay keeps one for you (start it: `claude-bridge up`); "
    "elsewhere make one with `claude-bridge token create --kind phone --name cli`"
)


def is_this_machines_relay(url: str) -> bool:
    """Whether ``url`` is the relay of this machine (its address, or loopback)."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost"):
        return True
    return url.rstrip("/") == local_relay_url().rstrip("/")


def phone_token(given: str | None, url: str) -> str:
    """The phone token a command uses: ``--token``/CB_TOKEN, else (for this machine's relay
    only: it is never sent elsewhere) the one the relay keeps in its data folder (0600,
    relay/localtoken.py); "" when there is none."""
    token = (given or os.environ.get("CB_TOKEN", "")).strip()
    if token or not is_this_machines_relay(url):
        return token
    try:
        folder = configmod.load().data_path
        return (folder / LOCAL_TOKEN_FILE).read_text(encoding="utf-8").strip()
    except (configmod.ConfigError, OSError, UnicodeDecodeError):
        return ""


def connect(args: argparse.Namespace, *, read_only: bool) -> RelayClient:
    """The relay client of a session command: ``--relay``/CB_RELAY (default
    :func:`local_relay_url`) with the phone token of ``--token``/CB_TOKEN, else this machine's
    own (:func:`phone_token`); ``read_only`` marks every request so the relay refuses any
    change made with it."""
    url = args.relay or os.environ.get("CB_RELAY") or local_relay_url()
    token = phone_token(args.token, url)
    if not token:
        raise CommandError("no phone token: pass --token or set CB_TOKEN", NO_TOKEN_HINT)
    return RelayClient(url, token, read_only=read_only)
