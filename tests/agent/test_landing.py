"""What a move laid down, and the hold of one move on its folder (agent/landing.py): which
folders overlap (as macOS compares names), and a ledger read back whatever is in its file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import landing


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("/u/p", "/u/p", True),
        ("/u/p", "/u/p/sub", True),
        ("/u/p/sub", "/u/p", True),
        ("/u/p", "/u/P", True),  # macOS: the same folder
        ("/u/p", "/u/p2", False),
        ("/u/p/a", "/u/p/b", False),
        ("/u/proj", "/u/pro", False),
    ],
)
def test_folders_overlap_as_macos_names_them(a: str, b: str, overlap: bool) -> None:
    assert landing.overlaps(a, b) is overlap


def test_a_folder_is_held_by_the_move_that_overlaps_it(tmp_path: Path) -> None:
    held = [("m1", str(tmp_path / "one")), ("m2", ""), ("m3", str(tmp_path / "two" / "deep"))]
    assert landing.held_by(str(tmp_path / "one" / "sub"), held) == "m1"
    assert landing.held_by(str(tmp_path / "two"), held) == "m3"
    assert landing.held_by(str(tmp_path / "three"), held) is None
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert landing.held_by(str(tmp_path / "alias"), [("m4", str(tmp_path / "real"))]) == "m4"


def test_a_ledger_is_saved_private_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / landing.LEDGER
    ledger = landing.book(path, tmp_path / "root")
    ledger.created = ["a.txt"]
    ledger.save()
    assert path.stat().st_mode & 0o777 == 0o600
    again = landing.Ledger.load(path)
    assert again is not None and again.created == ["a.txt"] and again.path == str(path)
    assert landing.book(path, tmp_path / "root").created == ["a.txt"]  # a restart goes on
    assert landing.book(path, tmp_path / "elsewhere").created == []
    path.write_text(json.dumps({"root": "/x", "kind": "new", "bogus": 1}))
    assert (landing.Ledger.load(path) or landing.Ledger("")).root == "/x"
    for broken in ("{", "[]", json.dumps({"root": "/x", "parents": 3}), json.dumps({"root": 1})):
        path.write_text(broken)
        assert landing.Ledger.load(path) is None
    ledger.forget()
    assert not path.exists() and landing.Ledger.load(path) is None
