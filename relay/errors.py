"""Every error the relay reports to a person, with a stable code.

The same code appears in the log, in the API body (``{"error": {"code", "message", ...}}``) and on
the page, so a person can look it up. Each error says what happened and what to do.

    RelayError
    ├── BadRequest            400  bad_request, bad_json, bad_after, bad_limit, bad_push_endpoint,
    │                              bad_conversation_id (a link's lines batch)
    ├── Unauthorized          401  unauthorized, token_revoked, token_expired, bad_pair_code
    ├── Forbidden             403  bad_origin, wrong_token_kind
    ├── NotFound              404  not_found, unknown_session, unknown_device, unknown_phone,
    │                              unknown_subagent, unknown_message
    ├── MethodNotAllowed      405  method_not_allowed
    ├── Conflict              409  device_offline, epoch_mismatch, after_beyond_last,
    │                              history_unavailable, session_locked, session_exists,
    │                              card_closed, card_changed, card_not_ready, read_only,
    │                              session_archived, outbox_full, too_many_sessions,
    │                              command_failed (or the Mac's own code: held_full,
    │                              attachments_full, disk_full …)
    ├── PayloadTooLarge       413  body_too_large, text_too_large
    ├── Unprocessable         422  not_finite, bad_session_id
    ├── TooManyRequests       429  pair_rate_limited
    ├── StoreUnavailable      503  store_unavailable (the database failed: disk full, I/O, closed)
    └── GatewayTimeout        504  device_timeout

Foreign errors are translated once, where they enter: the database's (``sqlite3``) in
``relay/writer.py`` and the store's reads, into ``StoreUnavailable``; nothing above the store sees
``sqlite3`` errors of that kind. A constraint or programming error stays what it is: a bug.

A transcript line over ``max_line_bytes`` is not an HTTP error: it becomes a ``line_too_large``
marker event and the ack lists it in ``rejected``.

Every store a Mac or a phone fills is bounded by a setting, and the error names it: a full outbox
(``outbox_full``: ``outbox_max_per_session``, ``outbox_max_bytes_per_session``,
``outbox_max_per_mac``, ``outbox_max_bytes_per_mac``), a Mac with ``sessions_max_per_mac``
sessions (``too_many_sessions``, also on the link for a ``lines`` batch or a ``hello`` naming a
new session), a session's conversations (``conversations_max_per_session``: the newest are
kept, the oldest forgotten, never an event; a conversation id that is not one is
``bad_conversation_id``), a session's finished moves (``moves_kept_per_session``). A move counts
against the target's ``sessions_max_per_mac`` as a new session does. The streams one login holds (``sse_max_streams_per_token``) are no error: the
oldest is closed with the ``closed`` event (``too_many_streams``). On the link a session id that
is not a UUID is ``bad_session_id``, as on the phone's API.
"""

from __future__ import annotations

from typing import Any


class RelayError(Exception):
    status = 500
    code = "internal"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


class BadRequest(RelayError):
    status = 400
    code = "bad_request"


class Unauthorized(RelayError):
    status = 401
    code = "unauthorized"


class Forbidden(RelayError):
    status = 403
    code = "forbidden"


class NotFound(RelayError):
    status = 404
    code = "not_found"


class Conflict(RelayError):
    status = 409
    code = "conflict"


class MethodNotAllowed(RelayError):
    status = 405
    code = "method_not_allowed"


class PayloadTooLarge(RelayError):
    status = 413
    code = "body_too_large"


class Unprocessable(RelayError):
    """Well-formed JSON with a value the relay refuses (a number that is not finite, an id that
    is not a UUID)."""

    status = 422
    code = "unprocessable"


class TooManyRequests(RelayError):
    status = 429
    code = "rate_limited"


class StoreUnavailable(RelayError):
    status = 503
    code = "store_unavailable"


class GatewayTimeout(RelayError):
    status = 504
    code = "device_timeout"
