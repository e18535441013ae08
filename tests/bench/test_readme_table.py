"""README.md's figures table written from one run (bench/readme_table.py, bench/run_all.py
--readme): the section between the markers is replaced whole, with the date and machine line;
the rest of the README is kept byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import run_all
from bench._common import Row
from bench.readme_table import BEGIN, END, NoSection, replace_section, section

ROOT = Path(__file__).resolve().parents[2]
MACHINE = "machine: Test CPU, 2 cores, 8.0 GiB RAM · Debian 12, Linux 6.1 · Python 3.11.7 · 2026-12-05 07:40 UTC"
ROWS = [Row("ingest: events/s", "9,752", "≥ 5,000", True), Row("catch-up", "0.08 s")]


def test_the_section_carries_the_machine_command_and_table() -> None:
    text = section(ROWS, MACHINE, ".venv/bin/python -m bench --readme", 312.4, ["Note: busy."])
    lines = text.splitlines()
    assert lines[0] == BEGIN and lines[-1] == END
    assert "`.venv/bin/python -m bench --readme`" in lines[1] and "312 s" in lines[1]
    assert "Test CPU, 2 cores, 8.0 GiB RAM" in lines[1] and "2026-12-05 07:40 UTC" in lines[1]
    assert "Note: busy." in lines
    assert "| ingest: events/s | 9,752 | ≥ 5,000 ✅ |" in lines
    assert "| catch-up | 0.08 s | — |" in lines


@settings(max_examples=50, derandomize=True, database=None, deadline=None)
@given(before=st.text(), old=st.text(), after=st.text())
def test_only_the_section_is_replaced(before: str, old: str, after: str) -> None:
    for marker in (BEGIN, END):
        before, old, after = (t.replace(marker, "") for t in (before, old, after))
    readme = f"{before}{BEGIN}{old}{END}{after}"
    new = section(ROWS, MACHINE, "python -m bench --readme", 1.0)
    out = replace_section(readme, new)
    assert out == before + new + after
    assert replace_section(out, new) == out  # written again: the same


def test_a_readme_without_one_section_is_refused() -> None:
    with pytest.raises(NoSection, match="no figures section"):
        replace_section("# readme\n", "x")
    with pytest.raises(NoSection, match="two figures sections"):
        replace_section(f"{BEGIN}{END}{BEGIN}{END}", "x")


def test_the_readme_has_its_figures_section() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1
    assert readme.index(BEGIN) < readme.index(END)


def test_a_run_with_readme_writes_the_table_from_its_own_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{BEGIN}\nold figures\n{END}\n\nafter\n", encoding="utf-8")
    ran: list[str] = []

    def fake(name: str) -> run_all.Part:
        def rows(args: object) -> list[Row]:
            ran.append(name)
            return [Row(f"{name} figure", "1")]

        return run_all.Part(rows, lambda args: f"python -m bench.{name}")

    monkeypatch.setattr(run_all, "PARTS", {name: fake(name) for name in run_all.PARTS})
    monkeypatch.setattr(run_all, "machine_line", lambda: MACHINE)
    out = tmp_path / "results.md"
    assert run_all.main(["--readme", str(readme), "--out", str(out)]) == 0
    assert ran == [*run_all.ALL, *run_all.EXTRA]  # every part, in one run
    text = readme.read_text(encoding="utf-8")
    assert "old figures" not in text and text.startswith("# x\n\n") and text.endswith("\nafter\n")
    assert "Test CPU" in text and "`.venv/bin/python -m bench --readme`" in text
    assert all(f"| {name} figure | 1 | — |" in text for name in run_all.PARTS)
    assert "Test CPU" in out.read_text(encoding="utf-8")


def test_a_quick_run_cannot_write_the_readme() -> None:
    with pytest.raises(SystemExit):
        run_all.parse(["--readme", "--quick"])


def test_the_parts_run_by_default_by_name_or_all() -> None:
    assert run_all.chosen_parts(None, False) == list(run_all.ALL)
    assert run_all.chosen_parts(None, True) == [*run_all.ALL, *run_all.EXTRA]
    assert run_all.chosen_parts(["card_latency", "ingest"], False) == ["ingest", "card_latency"]
    assert set(run_all.PARTS) == {*run_all.ALL, *run_all.EXTRA}


def test_a_busy_machine_is_noted() -> None:
    assert run_all.busy_warning(0.4, cpus=2) == ""
    assert "busy" in run_all.busy_warning(1.5, cpus=2)


def test_the_page_loads_become_rows_with_the_cold_goal() -> None:
    def load(paint: float, rows: float) -> dict[str, float]:
        return {"paint": paint, "rows": rows, "wire": 40 * 1024, "requests": 3}

    results: dict[str, tuple[dict[str, list[dict[str, float]]], object]] = {
        "direct": ({"cold": [load(800, 1500)] * 3, "warm": [load(300, 500)] * 3}, {}),
        "caddy": ({"cold": [load(1200, 2500)] * 3, "warm": []}, {}),
    }
    rows = run_all.page_load_rows(results)
    assert [r.met for r in rows] == [True, None, False]
    assert rows[0].result == "800 / 1,500 ms (3 files, 40.0 KiB on the wire)"
    assert "cold open, direct" in rows[0].metric and rows[0].goal == "≤ 1,000 / 2,000 ms"
    assert "caddy" in rows[2].metric
