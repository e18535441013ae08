"""The documents that name tests keep naming tests that exist.

docs/security.md proves each promise with a test (``tests/…py::test_name``, or a whole file):
a test renamed, moved or removed must take the page with it, or the page says something no test
checks any more."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECURITY = ROOT / "docs" / "security.md"
_NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")


def named_tests(text: str) -> list[tuple[str, str | None]]:
    """Every ``tests/x.py`` or ``tests/x.py::test_y`` the text names, in order."""
    return [(m.group(1), m.group(2)) for m in _NAMED.finditer(text)]


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_test_the_security_page_names_exists() -> None:
    named = named_tests(SECURITY.read_text(encoding="utf-8"))
    missing = []
    for file, name in named:
        path = ROOT / file
        if not path.is_file():
            missing.append(f"{file} (no such file)")
        elif name is not None and name not in defined_tests(path):
            missing.append(f"{file}::{name}")
    assert not missing, "docs/security.md names tests that do not exist:\n" + "\n".join(missing)


def test_the_name_finder_finds_names() -> None:
    # The check above passes by finding nothing missing: check it finds names, and the page has many.
    assert named_tests("see `tests/a.py::test_b` and `tests/x/y.py`, not `relay/a.py`") == [
        ("tests/a.py", "test_b"),
        ("tests/x/y.py", None),
    ]
    assert len(named_tests(SECURITY.read_text(encoding="utf-8"))) >= 60
