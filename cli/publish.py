"""How a phone reaches the relay that ``claude-bridge up`` runs on this machine.

Three ways, chosen at ``up`` and remembered in the relay's data folder (``link.json``, 0600), so
the next ``up`` does the same until ``--local`` forgets it:

- ``--tailscale`` / ``--funnel``: the person's Tailscale serves the relay over HTTPS at this
  machine's ``*.ts.net`` name, inside the tailnet or (Funnel) on the internet (cli/tailscale.py);
  the serve handler is removed again when ``up`` stops.
- ``--public-url https://…``: a TLS proxy on this machine serves it (a clone has
  deploy/Caddyfile; messages never name it: an installed copy has no such file).
- neither: the link is the loopback address, which works on this computer only; ``up`` says so.

The relay listens on loopback in every case, so the proxy (tailscaled, Caddy) connects from
this machine: ``up`` then believes forwarded headers from loopback (``trusted_proxies``), or
the login cookie could not be Secure and the page's changes would fail the origin check.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from cli import tailscale as ts
from wire import config as configmod

CHOICE_FILE = "link.json"
RUNNING_FILE = "up.json"  # where a running `up` listens, for `doctor` (removed when it stops)
LOOPBACK_PROXIES = "127.0.0.1,::1"
WAYS = ("local", "tailscale", "funnel", "url")
LOCAL_ONLY = (
    "This link works on this computer only: for your phone, run `claude-bridge up --tailscale`, "
    "or put the relay behind a TLS proxy (Caddy: `caddy reverse-proxy --from your.host --to "
    "127.0.0.1:8765`) and pass --public-url https://your.host"
)
PLAIN_HTTP = (
    "This link is plain http: a phone cannot keep its login safe nor get notifications over "
    "it; use --tailscale, or a TLS proxy (Caddy: `caddy reverse-proxy --from your.host --to "
    "127.0.0.1:8765`) with --public-url https://your.host"
)


class PublishError(Exception):
    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class Choice:
    way: str  # one of WAYS
    url: str = ""  # for "url"
    served: str = ""  # the loopback target a Tailscale serve of ours points at, while it runs

    def to_json(self) -> dict[str, str]:
        return {"way": self.way, "url": self.url, "served": self.served}


def load_choice(folder: Path) -> Choice | None:
    path = folder / CHOICE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise PublishError(
            f"{path} cannot be read ({exc})", "choose again: --tailscale, --public-url or --local"
        ) from None
    if not isinstance(data, dict) or data.get("way") not in WAYS:
        raise PublishError(f"{path} holds no known choice", "choose again, or pass --local")
    return Choice(str(data["way"]), str(data.get("url") or ""), str(data.get("served") or ""))


def save_choice(folder: Path, choice: Choice) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / CHOICE_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older, looser file keeps its mode through O_TRUNC
    with os.fdopen(fd, "w") as handle:
        json.dump(choice.to_json(), handle)


def choose(args: argparse.Namespace, folder: Path) -> Choice:
    """The flags given now (then remembered), ``--local`` (forgets), or the remembered choice."""
    url = getattr(args, "public_url", None)
    given = [
        name
        for name, on in (
            ("--tailscale", args.tailscale),
            ("--funnel", args.funnel),
            ("--public-url", bool(url)),
            ("--local", args.local),
        )
        if on
    ]
    if len(given) > 1:
        raise PublishError(f"{' and '.join(given)} cannot be used together", "choose one")
    if args.local:
        (folder / CHOICE_FILE).unlink(missing_ok=True)
        return Choice("local")
    try:  # a Tailscale serve an earlier `up` left (killed before it could undo it) stays ours
        served = (load_choice(folder) or Choice("local")).served
    except PublishError:
        served = ""
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PublishError(
                f"--public-url {url!r} is not an http(s) address",
                "e.g. --public-url https://relay.example",
            )
        choice = Choice("url", url.rstrip("/"), served)
    elif args.tailscale or args.funnel:
        choice = Choice("funnel" if args.funnel else "tailscale", served=served)
    else:
        return load_choice(folder) or Choice("local")
    save_choice(folder, choice)
    return choice


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _trust_loopback(cfg: configmod.Config) -> configmod.Config:
    current = cfg.str("trusted_proxies")
    if current:
        return cfg.replace(trusted_proxies=f"{current},{LOOPBACK_PROXIES}")
    return cfg.replace(trusted_proxies=LOOPBACK_PROXIES)


@dataclass
class Link:
    """The chosen way, ready: ``config`` carries the public address; ``serving()`` holds it."""

    choice: Choice
    config: configmod.Config
    folder: Path
    served: ts.Served | None = None
    tailscale: ts.Tailscale | None = field(default=None, repr=False)

    @property
    def note(self) -> str:
        """One line on how far the link reaches."""
        if self.served is not None:
            if self.served.funnel:
                return f"Reached at {self.served.url} by anyone on the internet (Tailscale Funnel)."
            return f"Reached at {self.served.url} from the devices in your tailnet (Tailscale)."
        parts = urlsplit(self.config.base_url)
        if parts.scheme == "https":
            return ""
        return LOCAL_ONLY if _is_loopback(parts.hostname or "") else PLAIN_HTTP

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Tailscale serves the relay while the block runs (SIGTERM included); then it stops."""
        if self.served is None or self.tailscale is None:
            yield
            return
        previous = signal.signal(signal.SIGTERM, _interrupt)  # until asyncio takes it over
        try:
            self.tailscale.serve(self.served)
        except ts.TailscaleError as exc:
            signal.signal(signal.SIGTERM, previous)
            raise PublishError(exc.message, exc.hint) from None
        save_choice(self.folder, Choice(self.choice.way, served=self.served.target))
        try:
            yield
        finally:
            self._unserve()
            signal.signal(signal.SIGTERM, previous)

    def _unserve(self) -> None:
        assert self.served is not None and self.tailscale is not None
        try:
            self.tailscale.unserve(self.served)
        except ts.TailscaleError as exc:
            verb = "funnel" if self.served.funnel else "serve"
            print(
                f"claude-bridge: could not stop Tailscale serving the relay: {exc.message}\n"
                f"  → run `tailscale {verb} --https={ts.HTTPS_PORT} --set-path=/ off`",
                file=sys.stderr,
                flush=True,
            )
            return
        save_choice(self.folder, Choice(self.choice.way))
        print(f"  {self.served.url} is no longer served by Tailscale.", flush=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def prepare(choice: Choice, cfg: configmod.Config, program: str | None = None) -> Link:
    """Check the chosen way before anything starts, and the settings the relay runs with."""
    folder = cfg.data_path
    if choice.way == "local":
        return Link(choice, cfg, folder)
    if choice.way == "url":
        cfg = cfg.replace(public_url=choice.url)
        if choice.url.startswith("https://") and _is_loopback(cfg.str("host")):
            cfg = _trust_loopback(cfg)  # the TLS proxy is on this machine
        return Link(choice, cfg, folder)
    try:
        tailscale = ts.Tailscale(program)
        served = tailscale.prepare(cfg.int("port"), choice.way == "funnel", ours=choice.served)
    except ts.TailscaleError as exc:
        raise PublishError(exc.message, exc.hint) from None
    cfg = _trust_loopback(cfg.replace(public_url=served.url))
    return Link(choice, cfg, folder, served, tailscale)


@contextlib.contextmanager
def running(folder: Path, local: str, public: str) -> Iterator[None]:
    """While ``up`` runs: its loopback and public addresses in ``up.json`` (0600), so
    ``claude-bridge doctor`` checks the relay that is running, whatever port it was given."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / RUNNING_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"local": local, "public": public, "pid": os.getpid()}, handle)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


def read_running(folder: Path) -> tuple[str, str] | None:
    """The (loopback, public) addresses of the ``up`` running on this data folder, if any: a
    file left by an ``up`` that was killed names a process that is gone, and is not believed."""
    try:
        data = json.loads((folder / RUNNING_FILE).read_text())
        pid = int(data["pid"])
        local, public = str(data["local"]), str(data["public"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's: still the address of this folder's relay
    return local, public
