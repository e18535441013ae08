"""The machine line of the benchmarks (bench/machine.py): read from captured texts of
/proc/cpuinfo, /proc/meminfo and /etc/os-release, and from this machine."""

from __future__ import annotations

import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.machine import GIB, Machine, cpu_model, machine_line, os_name, total_ram

X86_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
cpu MHz\t\t: 2899.970

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd

Hardware\t: BCM2835
Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""
MEMINFO = "MemTotal:       24522260 kB\nMemFree:        21000000 kB\n"
DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
PROPERTIES = settings(max_examples=100, derandomize=True, database=None, deadline=None)


def test_the_cpu_model_of_x86_and_arm() -> None:
    assert cpu_model(X86_CPUINFO) == "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"
    assert cpu_model(ARM_CPUINFO) == "Raspberry Pi 4 Model B Rev 1.4"
    assert cpu_model("") is None


def test_ram_and_os_from_their_files() -> None:
    assert total_ram(MEMINFO) == 24522260 * 1024
    assert total_ram("MemFree: 1 kB\n") is None
    assert os_name(DEBIAN) == "Debian GNU/Linux 12 (bookworm)"
    assert os_name('NAME=Fedora\nVERSION="40 (Forty)"\n') == "Fedora 40 (Forty)"
    assert os_name("") is None


@PROPERTIES
@given(st.text())
def test_the_parsers_take_any_text(text: str) -> None:
    cpu_model(text)
    ram = total_ram(text)
    assert ram is None or ram >= 0
    os_name(text)


def test_the_line_names_cpu_cores_ram_os_python_and_date() -> None:
    machine = Machine(
        cpu="Intel(R) Xeon(R)", cores=2, ram_bytes=24 * GIB, os="Debian 12, Linux 6.1",
        python="3.11.7", when=datetime.datetime(2026, 12, 5, 7, 40, tzinfo=datetime.UTC),
        load=(0.5, 0.25, 0.0),
    )  # fmt: skip
    assert machine.line() == (
        "machine: Intel(R) Xeon(R), 2 cores, 24.0 GiB RAM · Debian 12, Linux 6.1 · "
        "Python 3.11.7 · 2026-12-05 07:40 UTC · load average 0.50 0.25 0.00"
    )


def test_this_machine_has_a_line() -> None:
    line = machine_line()
    assert line.startswith("machine: ") and " cores" in line and "Python " in line
