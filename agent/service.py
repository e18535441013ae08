"""Login services: a launchd agent on macOS, a systemd user unit on Linux.

Both the agent (``claude-bridge agent install``) and the one-machine setup (``claude-bridge up
install``) are installed this way; only the name, the command line and the log file differ. The
text of the plist and the unit is pure (tested as is); ``install`` / ``uninstall`` write it and ask
the manager (``launchctl`` / ``systemctl --user``).
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

RESTART_SECONDS = 3  # a service that fails (port taken, relay down) tries again this soon


@dataclass(frozen=True)
class Service:
    label: str  # launchd label, e.g. com.claude-bridge.agent
    unit: str  # systemd unit file name, e.g. claude-bridge-agent.service
    description: str
    command: tuple[str, ...]
    path_env: str
    log_name: str  # the file in ~/Library/Logs/claude-bridge (macOS; systemd has the journal)
    environment: tuple[tuple[str, str], ...] = ()  # besides PATH: the CB_* settings set now


def plist_path(home: Path, label: str) -> Path:
    return home / "Library" / "LaunchAgents" / f"{label}.plist"


def unit_path(home: Path, unit: str) -> Path:
    return home / ".config" / "systemd" / "user" / unit


def logs_dir(home: Path) -> Path:
    return home / "Library" / "Logs" / "claude-bridge"


def service_path(programs: Iterable[str | None], current: str) -> str:
    """PATH for the service: the folders of the programs found now first (a login service does
    not get the shell's PATH), then the current PATH; each folder once."""
    folders = [os.path.dirname(os.path.abspath(p)) for p in programs if p]
    folders += [f for f in current.split(os.pathsep) if f]
    return os.pathsep.join(dict.fromkeys(folders))


def plist_text(service: Service, logs: Path) -> str:
    log = str(logs / service.log_name)
    data = {
        "Label": service.label,
        "ProgramArguments": list(service.command),
        "EnvironmentVariables": {"PATH": service.path_env, **dict(service.environment)},
        "RunAtLoad": True,
        "KeepAlive": True,  # launchd starts it again when it stops
        "ThrottleInterval": RESTART_SECONDS,
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    return plistlib.dumps(data).decode()


def unit_text(service: Service) -> str:
    variables = [("PATH", service.path_env), *service.environment]
    environment = "\n".join(f"Environment={_unit_quote(f'{k}={v}')}" for k, v in variables)
    return f"""[Unit]
Description={service.description}
After=network-online.target

[Service]
ExecStart={shlex.join(service.command).replace("%", "%%").replace("$", "$$")}
{environment}
Restart=on-failure
RestartSec={RESTART_SECONDS}

[Install]
WantedBy=default.target
"""


def _unit_quote(assignment: str) -> str:
    assignment = assignment.replace("%", "%%")  # systemd's specifiers start with %
    if not any(c in assignment for c in ' "\\'):
        return assignment
    return '"' + assignment.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _private_write(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older, looser file keeps its mode through O_TRUNC
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def install(service: Service, system: str, home: Path) -> str:
    """Write the service and start it now and at every login; returns what to tell the person."""
    if system == "Darwin":
        logs = logs_dir(home)
        logs.mkdir(mode=0o700, parents=True, exist_ok=True)
        plist = plist_path(home, service.label)
        _private_write(plist, plist_text(service, logs))
        subprocess.run(["launchctl", "unload", str(plist)], capture_output=True, check=False)
        subprocess.run(["launchctl", "load", "-w", str(plist)], check=False)
        return f"Installed {plist}; it starts at login. Logs: {logs / service.log_name}"
    unit = unit_path(home, service.unit)
    _private_write(unit, unit_text(service))
    if not shutil.which("systemctl"):
        return f"Wrote {unit}, but systemctl is not here to enable it: start it yourself."
    subprocess.run(["systemctl", "--user", "daemon-reload"], check=False)
    enabled = subprocess.run(["systemctl", "--user", "enable", "--now", service.unit], check=False)
    if enabled.returncode != 0:
        return f"Wrote {unit}, but systemd did not enable it (see above)."
    return f"Installed {unit}; it starts at login (journalctl --user -u {service.unit})."


def uninstall(label: str, unit_name: str, system: str, home: Path) -> str:
    if system == "Darwin":
        plist = plist_path(home, label)
        if not plist.exists():
            return ""
        subprocess.run(["launchctl", "unload", "-w", str(plist)], check=False)
        plist.unlink()
        return f"Removed {plist}."
    unit = unit_path(home, unit_name)
    if not unit.exists():
        return ""
    if shutil.which("systemctl"):
        subprocess.run(["systemctl", "--user", "disable", "--now", unit_name], check=False)
    unit.unlink()
    if shutil.which("systemctl"):
        subprocess.run(["systemctl", "--user", "daemon-reload"], check=False)
    return f"Removed {unit}."
