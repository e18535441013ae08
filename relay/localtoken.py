"""The command line on the relay's own machine needs no phone token: a phone login of its own.

At every start the relay keeps a phone token for the default account in its data folder,
``<data>/cli-token``, readable by its user only (0600, as every file it keeps there): the
``sessions``, ``search``, ``open``, ``attach`` and drop-in ``claude`` commands of that user on that
machine read it when they are given no token (cli/common.py ``phone_token``). A token that no
longer works (revoked from the page, expired) is replaced by a new one; one that works is kept.
The login shows among the account's phones as :data:`LOCAL_NAME`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from relay.datadir import FILE_MODE
from relay.errors import Unauthorized
from relay.store import Store

_log = logging.getLogger("relay")

LOCAL_TOKEN_FILE = "cli-token"
LOCAL_NAME = "this computer's command line"


def read_local_token(folder: Path) -> str:
    try:
        return (folder / LOCAL_TOKEN_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def keep_local_token(store: Store, folder: Path) -> None:
    """A working phone token in ``<folder>/cli-token`` (0600): the one there, or a new one."""
    token = read_local_token(folder)
    if token:
        try:
            store.authenticate(token)
            return
        except Unauthorized:
            pass
    account = store.ensure_account()
    token, _, _ = store.create_token(account, "phone", LOCAL_NAME)
    path = folder / LOCAL_TOKEN_FILE
    temporary = path.with_name(LOCAL_TOKEN_FILE + ".tmp")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(token + "\n")
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except OSError as exc:  # a read-only folder: the command line asks for a token instead
        _log.warning("cannot keep the command line's token in %s: %s", path, exc)
