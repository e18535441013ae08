"""A SESSION or a MAC as a person names it on the command line, found among the relay's.

SESSION, wherever a command takes one, is a session id or -1, -2 … (creation order, newest first,
as `claude-bridge sessions` numbers them), a unique start of an id (4 characters or more) or a
title (:func:`resolve`; ``open --session`` and ``audit --session`` take an id or -N only). A Mac is
its id or its name (:func:`pick_device`); with none named, the only one online, else this one.

A library, not a command. Everything here is pure but :func:`find_session` and :func:`mac_name`,
which ask the relay through the client they are given.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from cli.client import ApiError, CommandError, Device, RelayClient, SessionSnapshot

OFFSET = re.compile(r"-([1-9][0-9]*)")
MIN_PREFIX = 4  # a start of an id shorter than this names too many


# -- sessions ----------------------------------------------------------------------------------


def parse_ref(text: str, what: str = "--session") -> int | str:
    """``-N`` → the offset N (1 = the newest created session); anything else is a session id."""
    text = text.strip()
    if not text:
        raise CommandError(f"{what} needs a session id or -1, -2 …")
    found = OFFSET.fullmatch(text)
    if found:
        return int(found.group(1))
    if text.startswith("-") and text[1:].isdigit():
        raise CommandError(f"{what} {text}: offsets start at -1 (the newest created session)")
    return text


def by_creation(sessions: Sequence[SessionSnapshot]) -> list[SessionSnapshot]:
    """Newest created first (ties: the later place in the list, which creation gives)."""
    return sorted(
        sessions, key=lambda s: (s.get("created_at") or "", s.get("position") or 0), reverse=True
    )


def pick_offset(sessions: Sequence[SessionSnapshot], offset: int) -> SessionSnapshot:
    ordered = by_creation(sessions)
    if offset > len(ordered):
        have = (
            "there are no sessions yet"
            if not ordered
            else f"there {'is' if len(ordered) == 1 else 'are'} only {len(ordered)} "
            f"session{'' if len(ordered) == 1 else 's'}"
        )
        raise CommandError(
            f"no session -{offset}: {have}",
            "`claude-bridge sessions` lists them, newest created first (-1, -2 …)",
        )
    return ordered[offset - 1]


def resolve(sessions: Sequence[SessionSnapshot], text: str) -> SessionSnapshot:
    """The session ``text`` names: -N (creation order, newest first), an id, a unique start of
    an id (at least 4 characters), a title (a unique one, any case), or a Claude conversation
    id one of them had. CommandError, with the candidates, when none or several match. Pure."""
    ref = parse_ref(text, "SESSION")
    if isinstance(ref, int):
        return pick_offset(sessions, ref)
    wanted = ref.strip()
    exact = [s for s in sessions if s["id"] == wanted.lower()]
    if exact:
        return exact[0]
    named = [s for s in sessions if (s.get("title") or "").strip().lower() == wanted.lower()]
    if len(named) == 1:
        return named[0]
    started = (
        [s for s in sessions if s["id"].startswith(wanted.lower())]
        if len(wanted) >= MIN_PREFIX
        else []
    )
    if len(started) == 1 and not named:
        return started[0]
    talked = [s for s in sessions if s.get("conversation_id") == wanted.lower()]
    if len(talked) == 1 and not named and not started:
        return talked[0]
    several = named or started
    if several:
        listing = "; ".join(f"{s['id']} ({s.get('title') or '—'})" for s in several[:8])
        raise CommandError(
            f"{len(several)} sessions match {wanted!r}: give more of the id", listing
        )
    raise CommandError(
        f"no session {wanted}",
        "`claude-bridge sessions` lists them (ids, titles and -1, -2 …)"
        + ("" if len(wanted) >= MIN_PREFIX else f"; a start of an id has {MIN_PREFIX} characters"),
    )


def find_session(relay: RelayClient, text: str) -> SessionSnapshot:
    """The snapshot of the session SESSION names (see :func:`resolve`), or a CommandError
    saying so."""
    ref = parse_ref(text, "SESSION")
    if isinstance(ref, int):
        found = relay.session(pick_offset(relay.sessions(), ref)["id"])
        if found is None:
            raise CommandError(f"session -{ref} was just removed; run this again")
        return found
    found = relay.session(ref)
    if found is None:  # a unique start of an id, or a title
        found = relay.session(resolve(relay.sessions(), ref)["id"])
        if found is None:
            raise CommandError(f"session {ref} was just removed; run this again")
    return found


# -- Macs --------------------------------------------------------------------------------------


def this_mac(devices: Sequence[Device]) -> Device | None:
    """The Mac this command runs on, when its agent has linked to this relay's account (the
    agent writes its device id in its data folder, ``$CB_AGENT_DIR`` or ~/.claude-bridge)."""
    folder = os.path.expanduser(os.environ.get("CB_AGENT_DIR") or "~/.claude-bridge")
    try:
        with open(os.path.join(folder, "device-id"), encoding="utf-8") as handle:
            device_id = handle.read().strip()
    except OSError:
        return None
    return next((d for d in devices if d["id"] == device_id), None)


def mac_listing(devices: Sequence[Device]) -> str:
    return "; ".join(
        f"{d['name']} ({d['id']}, {'online' if d.get('online') else 'offline'})" for d in devices
    )


def pick_device(devices: Sequence[Device], wanted: str | None) -> Device:
    """The Mac named by ``--device`` (id or name), else the only online one, else this Mac
    when it is one of several online."""
    listing = mac_listing(devices)
    if wanted is not None:
        for device in devices:
            if wanted == device["id"]:
                return device
        named = [d for d in devices if str(d["name"]).lower() == wanted.lower()]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise CommandError(
                f"{len(named)} Macs are named {wanted!r}; give its id with --device",
                f"Macs: {listing}",
            )
        raise CommandError(
            f"no Mac {wanted!r} in this account",
            f"Macs: {listing}" if devices else "pair one: `claude-bridge pair --kind device`",
        )
    online = [d for d in devices if d.get("online")]
    if len(online) == 1:
        return online[0]
    here = this_mac(online)
    if here is not None:
        return here
    if not devices:
        raise CommandError(
            "no Mac is paired with this relay", "pair one: `claude-bridge pair --kind device`"
        )
    if not online:
        raise CommandError(
            "no Mac is online to start the session on",
            f"start the agent on one, or choose one with --device. Macs: {listing}",
        )
    raise CommandError(
        f"{len(online)} Macs are online; choose one with --device ID or NAME", f"Macs: {listing}"
    )


def mac_name(relay: RelayClient, device_id: str | None) -> str:
    """The name of the Mac ``device_id``, or the id itself when the relay cannot say."""
    try:
        devices = relay.devices()
    except ApiError:
        return device_id or "?"
    return next((str(d["name"]) for d in devices if d["id"] == device_id), device_id or "?")
