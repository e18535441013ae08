"""The relay's store, by concept: one module per set of tables, each holding every statement on
them, and the :class:`Store` that runs them on the database (relay/db/).

- accounts.py — accounts, logins (tokens, hashed) and pairing codes; ``Principal``
- devices.py — the Macs and phones of an account; ``Device``, ``Phone``
- sessions.py — sessions and what each one's Mac last said; ``Session``
- ingest.py — the transactions that number events: a batch of lines, a Mac's hello
- batch.py — planning a batch (dedupe, order, number): pure
- conversations.py — what of each transcript is stored (offsets, line uuids)
- events.py — the numbered events kept per session
- store.py — ``Store``: the writer, the readers, and the hooks of its transactions

Rows come back typed (``Session.from_row`` …), never as tuples read by position. A feature reads
and changes core rows through these functions (``sessions.set_derived_title`` …), never with SQL
of its own on the core's tables.
"""

from __future__ import annotations

from relay.db import Schema
from relay.hookspecs import NewLines
from relay.store.accounts import Principal, hash_secret
from relay.store.devices import Device, Phone
from relay.store.ingest import IngestResult, Reconciled, Reconciliation
from relay.store.sessions import Session, new_session_id
from relay.store.store import Store

__all__ = [
    "Device",
    "IngestResult",
    "NewLines",
    "Phone",
    "Principal",
    "Reconciled",
    "Reconciliation",
    "Schema",
    "Session",
    "Store",
    "hash_secret",
    "new_session_id",
]
