"""``claude-bridge up install|uninstall``: the one-machine setup (relay + agent) at every login.

The service runs ``claude-bridge up --no-pair`` with the same relay and agent folders, port and
tmux socket. What ``up`` remembers by itself is not repeated on its command line: how the phone
reaches it (``link.json`` in the relay folder, cli/publish.py) and the extra claude arguments
(``claude-args.json`` in the agent folder); flags for either given to ``up install`` are
remembered now, as ``up`` would. The ``CB_*`` settings set in the shell go into the service's
environment (its file is private). ``--no-pair``: a service that starts at every login must not mint
a pairing code each time (nor write one into its log); phones pair with ``claude-bridge pair``.

A library, not a command: cli/up.py runs :func:`install_up` and :func:`uninstall_up`, and
doctor (cli/checkup.py) looks for the service by its label and unit.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from agent import service
from cli import publish
from cli.common import fail, load_config, local_agent_dir

UP_LABEL = "com.claude-bridge.up"
UP_UNIT = "claude-bridge-up.service"


def up_command(
    exe: str,
    relay_dir: Path,
    agent_dir: Path,
    port: int,
    socket: str,
    host: str | None = None,
    claude: str | None = None,
) -> list[str]:
    """The service's command line (pure)."""
    command = [exe, "up", "--no-pair", "--data", str(relay_dir), "--agent-data", str(agent_dir)]
    command += ["--port", str(port), "--socket", socket]
    if host:
        command += ["--host", host]
    if claude:
        command += ["--claude", claude]
    return command


def up_service(
    command: list[str], path_env: str, environment: tuple[tuple[str, str], ...] = ()
) -> service.Service:
    return service.Service(
        label=UP_LABEL,
        unit=UP_UNIT,
        description="claude-bridge (the relay and this machine's agent, for your phone)",
        command=tuple(command),
        path_env=path_env,
        log_name="up.log",
        environment=environment,
    )


def settings_now(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The CB_* settings set in this shell: a login service does not get them otherwise."""
    from wire.config import SETTINGS

    return tuple((s.env_var, environ[s.env_var]) for s in SETTINGS if s.env_var in environ)


def installed(home: Path, system: str) -> bool:
    if system == "Darwin":
        return service.plist_path(home, UP_LABEL).exists()
    return service.unit_path(home, UP_UNIT).exists()


def _executable() -> str:
    """This command as a path the service can run without a shell: the one the person ran
    (another install earlier on PATH must not be the one that starts at login)."""
    ran = os.path.abspath(sys.argv[0])
    if os.path.basename(ran) == "claude-bridge" and os.access(ran, os.X_OK):
        return ran
    found = shutil.which("claude-bridge")
    return os.path.abspath(found) if found else ran


def install_up(args: argparse.Namespace) -> int:
    from agent.cli import LAUNCHD_LABEL, SYSTEMD_UNIT, resolve_claude_args
    from agent.launch import ClaudeMissing, find_claude
    from agent.mux import MuxError, find_program

    system = platform.system()
    if system not in {"Darwin", "Linux"}:
        fail(f"no login service can be written on {system or 'this system'}")
    agent_dir = local_agent_dir(args)
    resolve_claude_args(args, agent_dir)  # remembered now, read by every start of the service
    cfg = load_config(args)
    try:
        publish.choose(args, cfg.data_path)  # how the phone reaches it: remembered likewise
    except publish.PublishError as exc:
        fail(exc.message, exc.hint)
    explicit = getattr(args, "claude", None) or os.environ.get("CB_CLAUDE")
    try:
        claude = find_claude(explicit)
        mux = find_program("auto")
    except (ClaudeMissing, MuxError) as exc:
        fail(str(exc), "the service finds them where they are now: install them first")
    exe = _executable()
    command = up_command(
        exe,
        cfg.data_path,
        agent_dir,
        cfg.int("port"),
        args.socket,
        getattr(args, "host", None),
        claude if explicit else None,
    )
    path_env = service.service_path([exe, claude, mux], os.environ.get("PATH", "/usr/bin:/bin"))
    home = Path.home()
    agent_service = (
        service.plist_path(home, LAUNCHD_LABEL)
        if system == "Darwin"
        else service.unit_path(home, SYSTEMD_UNIT)
    )
    if agent_service.exists():
        print(
            f"Note: the agent alone is a login service too ({agent_service}); if it links to this "
            "relay, remove it with `claude-bridge agent uninstall`."
        )
    if _taken(cfg.str("host"), cfg.int("port")):
        print(
            f"Note: something listens on port {cfg.int('port')} now (a running `up`?): stop it, "
            f"and the service takes its place within {service.RESTART_SECONDS} s."
        )
    settings = settings_now(os.environ)
    print(service.install(up_service(command, path_env, settings), system, home))
    print(f"  it runs: {shlex.join(command)}")
    if settings:
        print(f"  with the settings set now: {', '.join(name for name, _ in settings)}")
    print(f"  pair a phone with: claude-bridge pair --data {cfg.data_path}")
    return 0


def _taken(host: str, port: int) -> bool:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def uninstall_up() -> int:
    done = service.uninstall(UP_LABEL, UP_UNIT, platform.system(), Path.home())
    print(done or "claude-bridge up was not installed as a login service.")
    return 0
