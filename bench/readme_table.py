"""The README's figures, written from one run of ``python -m bench --readme`` (bench/run_all.py).

The table sits in README.md between two marker comments; :func:`replace_section` puts a new one
there (pure: text in, text out), with the date, the machine line (bench/machine.py) and the
command of the run, so no figure in it comes from another machine or another run. A quick run or
a run on a busy machine says so in the section itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench._common import Row, markdown_table

BEGIN = "<!-- figures: written by `python -m bench --readme` from one run; do not edit by hand -->"
END = "<!-- /figures -->"


class NoSection(ValueError):
    """The README has no figures section (or a broken one) to replace."""


def section(
    rows: Sequence[Row],
    machine: str,
    command: str,
    took_s: float,
    notes: Sequence[str] = (),
) -> str:
    """The figures section: markers, where and how it was measured, any notes, the table."""
    head = [
        BEGIN,
        f"Measured with `{command}` in one run of {took_s:.0f} s on this {machine.removeprefix('machine: ')}.",
        *notes,
        "",
        markdown_table(rows),
        END,
    ]
    return "\n".join(head)


def replace_section(readme: str, new_section: str) -> str:
    """``readme`` with its figures section (from BEGIN to END, both included) replaced."""
    start = readme.find(BEGIN)
    end = readme.find(END, start + len(BEGIN)) if start >= 0 else -1
    if start < 0 or end < 0:
        raise NoSection(
            "README.md has no figures section: put the two lines "
            f"{BEGIN!r} and {END!r} where the table goes"
        )
    if readme.find(BEGIN, start + len(BEGIN)) >= 0:
        raise NoSection("README.md has two figures sections: keep one")
    return readme[:start] + new_section + readme[end + len(END) :]
