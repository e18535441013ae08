"""Where the control page's files are: the installed ``web`` package, or the ``web_dir`` setting.

The page ships as package data of the ``web`` package (``pyproject.toml``), so a wheel, ``pipx``
or an editable install from a clone all find it the same way. The package is located, not
imported: importing it would write ``__pycache__`` into the folder the relay serves.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

PAGE_FILES = ("index.html", "pair.html")
"""Files without which the page cannot work: their absence stops the relay at start."""


class WebFilesMissing(RuntimeError):
    """The control page's files are not where they should be: ``str()`` says where, ``hint`` what
    to do."""

    hint = (
        "reinstall claude-bridge (`pipx reinstall claude-bridge`, or `scripts/setup` in a clone), "
        "or set CB_WEB_DIR to a folder holding index.html and pair.html"
    )


def installed_web_dir() -> Path | None:
    """The folder of the installed ``web`` package, or None when there is none."""
    try:
        spec = importlib.util.find_spec("web")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def web_root(configured: str = "") -> Path:
    """The folder to serve at ``/``: ``configured`` (the ``web_dir`` setting) when given, else the
    installed page. Raises ``WebFilesMissing`` when the page's files are not there, so a broken
    install stops at start instead of answering 404 to the phone."""
    if configured:
        root: Path | None = Path(configured).expanduser()
        where = f"the control page's folder {root} (setting web_dir, CB_WEB_DIR)"
    else:
        root = installed_web_dir()
        where = f"the installed control page at {root}"
    if root is None:
        problem = "the control page is not installed (no package 'web' beside the relay)"
    else:
        missing = [name for name in PAGE_FILES if not (root / name).is_file()]
        if not missing:
            return root
        problem = f"{where} has no {' and no '.join(missing)}"
    raise WebFilesMissing(problem)
