"""What a logged-in phone's index.html carries: its account's snapshot (every Mac and session, as
the account stream's first event gives it), so a cold open draws the session rows without an API
round trip — on a phone network each one costs more than half a second (bench/page_load.py).

relay/static.py puts it in the page as a JSON data block; web/app.js draws from it and then opens
the account stream as before. Only the login cookie counts (a page is opened by a navigation,
which carries no other credential); without a valid phone login, or when the snapshot cannot be
read, the page goes as it is and asks the relay itself.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import HTTPConnection

from relay.auth import credential
from relay.errors import RelayError
from relay.sse import account_snapshot
from relay.state import RelayState
from relay.store import hash_secret

_log = logging.getLogger("relay")


async def account_page_data(conn: HTTPConnection) -> dict[str, Any] | None:
    """The snapshot of the account whose phone cookie ``conn`` carries, or None."""
    login = credential(conn)
    if login is None or not login.from_cookie:
        return None
    state: RelayState = conn.app.state.relay
    try:
        principal = await state.store.authenticate_async(hash_secret(login.token))
        if principal.kind != "phone":
            return None
        return await account_snapshot(state, principal)
    except RelayError:
        return None  # logged out, revoked or expired, or the database away: the page will say
    except Exception:
        # The data only saves a round trip: the page must still open, and ask for it itself.
        _log.exception("index.html goes without the account's snapshot")
        return None
