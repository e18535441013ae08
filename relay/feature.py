"""The one interface through which a feature plugs into the relay (relay/app.py ``FEATURES``).

A feature is declared once, as a ``Feature``: its name, its schema (tables the store makes as it
opens), its router (``/api/…`` routes) and its ``start``, which the app's lifespan awaits with the
running ``RelayState``. ``start`` registers the feature on the extension points it uses (declared
in relay/hookspecs.py: line observers and event listeners on the store, watchers, command guards,
result readers, snapshot fields … on ``state.hooks``), starts its background tasks on a TaskSet of
its own (wire/tasks.py), and returns its running part (kept on the state:
``state.part(Retention)``, and as ``app.state.<name>``), closed when the relay stops. Whatever the
feature keeps in memory lives on that part, never on ``RelayState``.

The core (store, link, hub, sse, routes) never imports a feature module; features import the
core, and the request-scoped helpers from relay/deps.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fastapi import APIRouter

from relay.db import Schema
from relay.state import RelayState


@runtime_checkable
class Part(Protocol):
    """A feature's running part: whatever it holds open, closed when the relay stops."""

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Feature:
    name: str
    # Its tables (and triggers, and what fills them from what is already stored): run by the
    # store's writer as the store opens, before any line comes in (relay/store/store.py).
    schema: Schema | None = None
    # Its line observers, listeners, watchers, background tasks: see the module's docstring.
    start: Callable[[RelayState], Awaitable[object]] | None = None
    router: APIRouter | None = None  # its routes, under /api


def schemas(features: tuple[Feature, ...]) -> list[Schema]:
    """The features' schemas, for ``Store(config, schemas=…)``."""
    return [f.schema for f in features if f.schema is not None]


async def start_all(features: tuple[Feature, ...], state: RelayState) -> dict[str, object]:
    """Start each feature in order, keeping what each returns on the state; answers the
    running parts by feature name."""
    started: dict[str, object] = {}
    for feature in features:
        if feature.start is None:
            continue
        part = await feature.start(state)
        if part is not None:
            state.add_part(part)
            started[feature.name] = part
    return started


async def close_all(state: RelayState) -> None:
    """Close the running parts, the last started first."""
    for part in reversed(list(state.parts.values())):
        if isinstance(part, Part):
            await part.close()
