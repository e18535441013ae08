"""The relay served over HTTPS by the person's own Tailscale (``claude-bridge up --tailscale``).

``tailscale serve --bg --https=443 --set-path=/ http://127.0.0.1:PORT`` makes tailscaled
terminate TLS for ``https://<machine>.<tailnet>.ts.net`` and pass every request (WebSocket
upgrades and SSE streams included) to the relay on loopback, with X-Forwarded-Host/-Proto/-For
set; ``tailscale funnel`` does the same for the whole internet. On exit only the ``/`` handler
of port 443 is removed (``--set-path=/ … off``), so whatever else the person serves stays.

The pure part reads ``tailscale status --json`` and ``tailscale serve status --json`` (field
names as in Tailscale's ipnstate.Status and ipn.ServeConfig) and turns what is wrong into one
line and its fix; :class:`Tailscale` is the thin shell that runs the command.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HTTPS_PORT = 443
MOUNT = "/"
# serve/funnel with --bg and these flags need the CLI of Tailscale 1.52 or newer.
MIN_VERSION = (1, 52)
# A serve that waits for someone to enable HTTPS in the admin console would wait forever.
COMMAND_TIMEOUT = 30.0
# The CLI inside the Mac app, when the App Store / standalone app put none on PATH.
MAC_APP_CLI = Path("/Applications/Tailscale.app/Contents/MacOS/Tailscale")
ADMIN_DNS = "https://login.tailscale.com/admin/dns"
ADMIN_MACHINES = "https://login.tailscale.com/admin/machines"
FUNNEL_DOCS = "https://tailscale.com/kb/1223/funnel"
_CAP_HTTPS = "https"
_CAP_FUNNEL = "funnel"


class TailscaleError(Exception):
    """Something stops ``up --tailscale``: what happened, and what to do (``hint``)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


# -- pure: what the CLI printed ----------------------------------------------------------


@dataclass(frozen=True)
class Status:
    """What ``up`` needs from ``tailscale status --json``."""

    backend_state: str  # Running, Starting, Stopped, NeedsLogin, NeedsMachineAuth, NoState
    dns_name: str  # this machine's MagicDNS name, without the trailing dot
    auth_url: str
    capabilities: frozenset[str]
    cert_domains: tuple[str, ...]
    tailnet: str

    @property
    def url(self) -> str:
        return f"https://{self.dns_name}"

    @property
    def https(self) -> bool:
        return _CAP_HTTPS in self.capabilities or self.dns_name in self.cert_domains

    @property
    def funnel(self) -> bool:
        return _CAP_FUNNEL in self.capabilities


def _object(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise TailscaleError(
            f"`{what}` printed something that is not JSON", "update Tailscale, then run this again"
        ) from None
    if value is None:  # `serve status --json` with nothing served
        return {}
    if not isinstance(value, dict):
        raise TailscaleError(f"`{what}` printed no JSON object", "update Tailscale")
    return value


def parse_status(text: str) -> Status:
    data = _object(text, "tailscale status --json")
    self_node = data.get("Self") or {}
    caps: set[str] = set()
    raw_map = self_node.get("CapMap")
    if isinstance(raw_map, Mapping):
        caps.update(str(k) for k in raw_map)
    raw_caps = self_node.get("Capabilities")
    if isinstance(raw_caps, list):
        caps.update(str(c) for c in raw_caps)
    tailnet = data.get("CurrentTailnet") or {}
    return Status(
        backend_state=str(data.get("BackendState") or ""),
        dns_name=str(self_node.get("DNSName") or "").rstrip("."),
        auth_url=str(data.get("AuthURL") or ""),
        capabilities=frozenset(caps),
        cert_domains=tuple(str(d).rstrip(".") for d in data.get("CertDomains") or ()),
        tailnet=str(tailnet.get("Name") or "") if isinstance(tailnet, Mapping) else "",
    )


def parse_version(text: str) -> tuple[int, ...]:
    """``tailscale version``'s first line, e.g. ``1.96.4`` (or ``1.97.12-t1234abcd``)."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", first.strip())
    if match is None:
        return ()
    return tuple(int(part) for part in match.groups() if part is not None)


def status_problem(status: Status, funnel: bool) -> TailscaleError | None:
    """Why this machine cannot serve over Tailscale yet, or None."""
    state = status.backend_state
    if state == "Stopped":
        return TailscaleError(
            "Tailscale is stopped on this machine",
            "run `tailscale up` (or switch it on in the app)",
        )
    if state in ("NeedsLogin", "NoState"):
        where = f" at {status.auth_url}" if status.auth_url else " with `tailscale up`"
        return TailscaleError("Tailscale is logged out on this machine", f"log in{where}")
    if state == "NeedsMachineAuth":
        return TailscaleError(
            "this machine is waiting for your tailnet's admin to approve it",
            f"approve it at {ADMIN_MACHINES}",
        )
    if state not in ("Running", "Starting"):
        return TailscaleError(f"Tailscale is in an unexpected state ({state or 'none'})",
                              "check `tailscale status`")  # fmt: skip
    if not status.dns_name:
        return TailscaleError(
            "Tailscale has no DNS name for this machine (MagicDNS is off)",
            f"turn on MagicDNS and HTTPS Certificates at {ADMIN_DNS}",
        )
    if not status.https:
        return TailscaleError(
            "HTTPS certificates are not enabled on your tailnet, so `tailscale serve` cannot "
            "serve https",
            f"turn on HTTPS Certificates at {ADMIN_DNS}, then run this again",
        )
    if funnel and not status.funnel:
        return TailscaleError(
            'Funnel is not allowed for this machine (no "funnel" node attribute)',
            f"allow it in your tailnet's access controls ({FUNNEL_DOCS}), or use --tailscale "
            "to stay inside your tailnet",
        )
    return None


def _host_port(host: str) -> str:
    return f"{host}:{HTTPS_PORT}"


def served_at_root(serve: Mapping[str, Any], host: str) -> str:
    """The proxy target of ``https://host/`` in ``serve status --json`` ('' when none)."""
    web = serve.get("Web") or {}
    handlers = (web.get(_host_port(host)) or {}).get("Handlers") or {}
    handler = handlers.get(MOUNT) or {}
    if not handler:
        return ""
    return str(handler.get("Proxy") or handler.get("Path") or handler.get("Text") or "other")


def serve_conflict(
    serve: Mapping[str, Any], host: str, target: str, funnel: bool, ours: str = ""
) -> TailscaleError | None:
    """What serving ``target`` at ``https://host/`` would break of the person's own setup.

    ``ours`` is the target an earlier ``up`` served (and was killed before removing it).
    """
    current = served_at_root(serve, host)
    if current and not _same_target(current, target) and not _same_target(current, ours):
        return TailscaleError(
            f"https://{host}/ is already served by Tailscale (to {current})",
            f"remove it with `tailscale serve --https={HTTPS_PORT} --set-path=/ off`, or use "
            "--public-url behind a TLS proxy of your own (Caddy: `caddy reverse-proxy`)",
        )
    handlers = ((serve.get("Web") or {}).get(_host_port(host)) or {}).get("Handlers") or {}
    others = sorted(m for m in handlers if m != MOUNT)
    funnelled = bool((serve.get("AllowFunnel") or {}).get(_host_port(host)))
    if funnel and others and not funnelled:
        return TailscaleError(
            f"Funnel works per port: it would make {', '.join(others)} on https://{host} "
            "public too",
            "use --tailscale (inside your tailnet), or serve those on another port",
        )
    if not funnel and others and funnelled:
        return TailscaleError(
            f"port {HTTPS_PORT} of {host} is public through Funnel for {', '.join(others)}; "
            "serving the relay there would turn that off",
            "use --funnel, or serve those on another port",
        )
    return None


def _same_target(a: str, b: str) -> bool:
    return bool(a) and bool(b) and a.rstrip("/") == b.rstrip("/")


def command_problem(command: str, returncode: int, stdout: str, stderr: str) -> TailscaleError:
    """A failed ``tailscale`` command, in one line with its fix."""
    text = f"{stderr}\n{stdout}"
    if "failed to connect to local tailscale" in text.lower():
        return TailscaleError(
            "Tailscale is not running on this machine",
            "start it (the Tailscale app, or `sudo systemctl start tailscaled`), then run this "
            "again",
        )
    if "Access denied" in text:
        return TailscaleError(
            "Tailscale refuses to change its serve settings for this user",
            "run `sudo tailscale set --operator=$USER` once, then run this again",
        )
    if "not enabled on your tailnet" in text or "HTTPS must be enabled" in text:
        url = re.search(r"https://\S+", text)
        feature = "Funnel" if "Funnel" in text else "Serve"
        return TailscaleError(
            f"Tailscale {feature} is not enabled on your tailnet",
            f"enable it at {url.group(0) if url else ADMIN_DNS}, then run this again",
        )
    if '"funnel" node attribute not set' in text or "not allowed for funnel" in text:
        return TailscaleError(
            "Funnel is not allowed for this machine",
            f"allow it in your tailnet's access controls ({FUNNEL_DOCS}), or use --tailscale",
        )
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    first = lines[0] if lines else (f"exit status {returncode}" if returncode >= 0 else "no answer")
    return TailscaleError(f"`{command}` failed: {first[:300]}", "check `tailscale status`")


# -- the shell around the CLI ------------------------------------------------------------


def find_cli() -> str:
    found = shutil.which("tailscale")
    if found:
        return found
    if MAC_APP_CLI.is_file():
        return str(MAC_APP_CLI)
    raise TailscaleError(
        "Tailscale is not installed here (no `tailscale` command on PATH)",
        "install it from https://tailscale.com/download, log in, then run this again",
    )


@dataclass(frozen=True)
class Served:
    """What ``up`` serves: ``url`` is the relay's public address, ``target`` its loopback one."""

    url: str
    host: str
    target: str
    funnel: bool


class Tailscale:
    def __init__(self, program: str | None = None, timeout: float = COMMAND_TIMEOUT) -> None:
        self.program = program or find_cli()
        self.timeout = timeout

    def _run(self, *args: str) -> str:
        command = " ".join(("tailscale", *args))
        try:
            done = subprocess.run(
                [self.program, *args],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
            raise command_problem(command, -1, out, err) from None
        except OSError as exc:
            raise TailscaleError(f"cannot run {self.program}: {exc.strerror}",
                                 "check the Tailscale install") from None  # fmt: skip
        # `serve` exits 0 after printing the link to enable HTTPS when it is off.
        if done.returncode != 0 or "not enabled on your tailnet" in done.stdout:
            raise command_problem(command, done.returncode, done.stdout, done.stderr)
        return done.stdout

    def version(self) -> tuple[int, ...]:
        return parse_version(self._run("version"))

    def status(self) -> Status:
        return parse_status(self._run("status", "--json"))

    def serve_config(self) -> dict[str, Any]:
        return _object(self._run("serve", "status", "--json"), "tailscale serve status --json")

    def prepare(self, port: int, funnel: bool, ours: str = "") -> Served:
        """Check everything before the relay starts; nothing is changed yet."""
        version = self.version()
        if version and version < MIN_VERSION:
            have = ".".join(map(str, version))
            raise TailscaleError(
                f"Tailscale {have} is too old for `tailscale serve --bg` (1.52 or newer)",
                "update Tailscale, then run this again",
            )
        status = self.status()
        problem = status_problem(status, funnel)
        if problem is not None:
            raise problem
        target = f"http://127.0.0.1:{port}"
        conflict = serve_conflict(self.serve_config(), status.dns_name, target, funnel, ours)
        if conflict is not None:
            raise conflict
        return Served(url=status.url, host=status.dns_name, target=target, funnel=funnel)

    def _args(self, served: Served) -> Sequence[str]:
        return ("funnel" if served.funnel else "serve", f"--https={HTTPS_PORT}", "--set-path=/")

    def serve(self, served: Served) -> None:
        verb, *flags = self._args(served)
        self._run(verb, "--bg", "--yes", *flags, served.target)

    def unserve(self, served: Served) -> bool:
        """Remove our handler if it is still ours; True when something was removed."""
        current = served_at_root(self.serve_config(), served.host)
        if not _same_target(current, served.target):
            return False  # gone already, or someone pointed it elsewhere since: theirs now
        self._run(*self._args(served), "off")
        return True
