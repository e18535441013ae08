"""What a figure was measured on: the machine line every benchmark run prints with its figures.

    machine: Intel(R) Xeon(R) … @ 2.10GHz, 2 cores, 23.4 GiB RAM · Debian GNU/Linux 12 (bookworm),
    Linux 6.1.0 · Python 3.11.7 · 2026-12-05 07:40 UTC · load average 0.97 0.93 0.48

The parsers are pure (they take the text of /proc/cpuinfo, /proc/meminfo, /etc/os-release) so
they are tested with captured texts; :func:`machine_line` reads the real files, with fallbacks
where a file is missing (macOS: ``sysctl``).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3
SYSCTL_TIMEOUT = 5.0  # seconds


@dataclass(frozen=True)
class Machine:
    cpu: str
    cores: int
    ram_bytes: int | None
    os: str
    python: str
    when: datetime.datetime
    load: tuple[float, float, float] | None

    def line(self) -> str:
        ram = f", {self.ram_bytes / GIB:.1f} GiB RAM" if self.ram_bytes else ""
        load = (
            " · load average " + " ".join(f"{x:.2f}" for x in self.load)
            if self.load is not None
            else ""
        )
        return (
            f"machine: {self.cpu}, {self.cores} cores{ram} · {self.os} · Python {self.python} · "
            f"{self.when.strftime('%Y-%m-%d %H:%M %Z')}{load}"
        )


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU's model name in the text of /proc/cpuinfo (x86: ``model name``; ARM: ``Model``
    or ``Hardware``), or None."""
    found: dict[str, str] = {}
    for raw in cpuinfo.splitlines():
        key, sep, value = raw.partition(":")
        if sep and value.strip():
            found.setdefault(key.strip(), value.strip())
    for key in ("model name", "Model", "Hardware", "cpu model", "cpu"):
        if key in found:
            return found[key]
    return None


def total_ram(meminfo: str) -> int | None:
    """MemTotal in bytes from the text of /proc/meminfo, or None."""
    for raw in meminfo.splitlines():
        if raw.startswith("MemTotal:"):
            parts = raw.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "kb"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def os_name(os_release: str) -> str | None:
    """PRETTY_NAME (else NAME VERSION) from the text of /etc/os-release, or None."""
    values: dict[str, str] = {}
    for raw in os_release.splitlines():
        key, sep, value = raw.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("\"'")
    if values.get("PRETTY_NAME"):
        return values["PRETTY_NAME"]
    name = " ".join(v for v in (values.get("NAME"), values.get("VERSION")) if v)
    return name or None


def _read(path: str) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return Path(path).read_text(encoding="utf-8")
    return ""


def _sysctl(name: str) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            ["sysctl", "-n", name],
            capture_output=True,
            text=True,
            timeout=SYSCTL_TIMEOUT,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else ""
    return ""


def this_machine() -> Machine:
    """The machine this process runs on, now."""
    cpu = cpu_model(_read("/proc/cpuinfo")) or _sysctl("machdep.cpu.brand_string")
    ram = total_ram(_read("/proc/meminfo"))
    if ram is None:
        memsize = _sysctl("hw.memsize")
        ram = int(memsize) if memsize.isdigit() else None
    system = os_name(_read("/etc/os-release"))
    if system is None and platform.system() == "Darwin":
        system = f"macOS {platform.mac_ver()[0]}"
    kernel = f"{platform.system()} {platform.release()}"
    load: tuple[float, float, float] | None = None
    with contextlib.suppress(OSError):
        load = os.getloadavg()
    return Machine(
        cpu=cpu or platform.processor() or platform.machine() or "unknown CPU",
        cores=os.cpu_count() or 1,
        ram_bytes=ram,
        os=f"{system}, {kernel}" if system else kernel,
        python=platform.python_version(),
        when=datetime.datetime.now(datetime.UTC),
        load=load,
    )


def machine_line() -> str:
    return this_machine().line()
