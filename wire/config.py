"""Every setting of claude-bridge, declared once with its default and help text.

The table below is the single source of defaults (timings and the relay's own limits).
A setting is read, in order of precedence, from an explicit override (a command-line flag),
the environment variable ``CB_<NAME>`` (upper case), then the default. A test fails when a
setting is missing from the README, so adding one here means documenting it there too.
"""

from __future__ import annotations

import builtins
import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from wire.errors import ConfigError as ConfigError

_T = TypeVar("_T")


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str
    part: str  # "relay", "agent" or "both": which side reads it

    @property
    def env_var(self) -> str:
        return "CB_" + self.name.upper()


KIB = 1024
MIB = 1024 * KIB

SETTINGS: tuple[Setting, ...] = (
    # Timings and limits
    Setting("transcript_read_interval", 0.7, "Seconds between transcript reads (agent).", "agent"),
    Setting("screen_read_interval", 1.5, "Seconds between screen reads (agent).", "agent"),
    Setting(
        "preview_read_interval",
        0.7,
        "Seconds between in-progress text reads during a turn.",
        "agent",
    ),
    Setting(
        "missed_hook_close",
        15.0,
        "Seconds after which a turn whose Stop hook was missed is closed.",
        "agent",
    ),
    Setting(
        "revive_window_hours",
        12.0,
        "Sessions alive within this many hours are revived at start.",
        "agent",
    ),
    Setting("revive_max", 5, "At most this many sessions are revived, newest first.", "agent"),
    Setting(
        "held_after_revive", 2.5, "Seconds after a revive before held messages are typed.", "agent"
    ),
    Setting(
        "model_switch_window",
        30.0,
        "Seconds after a model change during which its dialog is auto-passed.",
        "agent",
    ),
    Setting(
        "denial_wait",
        30.0,
        "Seconds a call auto mode's classifier refused waits for the phone's \"allow once\" "
        "(Claude Code's PermissionDenied hook; 0: none, the refusal stands at once).",
        "agent",
    ),
    Setting(
        "events_kept",
        1000,
        "Events kept per session on the relay; older ones are fetched from the Mac.",
        "relay",
    ),
    Setting("catchup_page", 500, "Largest page of events one catch-up request returns.", "relay"),
    Setting(
        "max_page_bytes",
        4 * MIB,
        "Largest page of events in bytes; a page stops early (has_more) but holds at least one.",
        "relay",
    ),
    # Relay: where and how it listens
    Setting(
        "data_dir", "~/.claude-bridge/relay", "Folder of the relay's database (relay.db).", "relay"
    ),
    Setting(
        "host",
        "127.0.0.1",
        "Address the relay listens on; loopback unless a TLS proxy fronts it.",
        "relay",
    ),
    Setting("port", 8765, "Port the relay listens on.", "relay"),
    Setting(
        "public_url",
        "",
        "Address phones use to reach the relay (for pairing links); empty = http://host:port.",
        "relay",
    ),
    Setting(
        "web_dir",
        "",
        "Folder of the control page's static files; empty = the page installed with the code.",
        "relay",
    ),
    # Relay: limits on input
    Setting("max_body_bytes", 1 * MIB, "Largest HTTP request body; larger ones get 413.", "relay"),
    Setting(
        "max_line_bytes",
        8 * MIB,
        "Largest transcript line accepted; a larger one is replaced by a marker event.",
        "relay",
    ),
    Setting("max_link_message_bytes", 32 * MIB, "Largest message on the agent link.", "relay"),
    Setting(
        "attachment_max_bytes",
        10 * MIB,
        "Largest file a phone may attach to a message (at most 20 MiB); the Mac checks it too.",
        "both",
    ),
    Setting(
        "max_message_chars",
        100_000,
        "Longest message text a phone may send (at most 100,000).",
        "relay",
    ),
    Setting(
        "title_format",
        "{title}",
        "How automatic session titles read: {title} (required), {project} and {folder}, e.g. "
        "'{project} · {title}'. A title a person gave is shown as typed.",
        "relay",
    ),
    Setting(
        "handoff_max_tokens",
        8000,
        "Most tokens a fresh resume's handoff may take (decisions and constraints are never cut).",
        "relay",
    ),
    Setting(
        "attachments_max_per_session",
        50,
        "Most files one session keeps attached on the Mac; past it the oldest a message already "
        "took make room, else the upload is refused (attachments_full).",
        "agent",
    ),
    Setting(
        "attachments_max_bytes_per_session",
        200 * MIB,
        "Most bytes of files one session keeps attached on the Mac; past it the oldest a message "
        "already took make room, else the upload is refused (attachments_full).",
        "agent",
    ),
    Setting(
        "held_max_per_session",
        50,
        "Most messages one session holds on the Mac, not yet typed; one more is refused "
        "(held_full) until some are typed or cancelled.",
        "agent",
    ),
    Setting(
        "held_max_bytes_per_session",
        2 * MIB,
        "Most bytes of text one session holds on the Mac, not yet typed; past it a message is "
        "refused (held_full) until some are typed or cancelled.",
        "agent",
    ),
    Setting(
        "sessions_max_per_mac",
        10_000,
        "Most sessions the relay keeps for one Mac (retention deletes old ones); a new one past "
        "it is refused (too_many_sessions). 0 = no limit.",
        "relay",
    ),
    Setting(
        "conversations_max_per_session",
        500,
        "Most conversations (Claude Code's, its subagents') the relay lists and keeps stored "
        "offsets for in one session, the newest; older ones are forgotten, never their events. "
        "0 = no limit.",
        "relay",
    ),
    Setting(
        "allow_all_default_minutes",
        60,
        'Minutes "allow all" lasts when it is turned on with no duration ("session": until '
        "the session ends).",
        "relay",
    ),
    Setting(
        "tool_result_max_chars",
        4000,
        "Tool result text kept in an event; the full length is recorded.",
        "relay",
    ),
    Setting(
        "tool_input_max_chars",
        4000,
        "Longest string kept from a tool's input in an event.",
        "relay",
    ),
    # Relay: streams and commands
    Setting(
        "sse_keepalive",
        15.0,
        "Seconds between SSE keep-alive comments (the page counts a stream silent for two as cut).",
        "relay",
    ),
    Setting(
        "stream_heartbeat_interval",
        4.0,
        "Seconds between heartbeat events on the page's streams; the page says Live only while "
        "one came in the last 10 s (a frozen relay keeps its sockets open but sends nothing).",
        "relay",
    ),
    Setting(
        "outbox_retry_interval",
        5.0,
        "Seconds between attempts to deliver messages queued on the relay for an offline Mac.",
        "relay",
    ),
    Setting(
        "outbox_max_per_session",
        100,
        "Most messages queued on the relay for one session while its Mac is offline "
        "(outbox_full past it).",
        "relay",
    ),
    Setting(
        "outbox_max_bytes_per_session",
        2 * MIB,
        "Most bytes of text queued on the relay for one session while its Mac is offline "
        "(outbox_full past it).",
        "relay",
    ),
    Setting(
        "outbox_max_per_mac",
        500,
        "Most messages queued on the relay for all the sessions of one Mac while it is offline "
        "(outbox_full past it).",
        "relay",
    ),
    Setting(
        "outbox_max_bytes_per_mac",
        8 * MIB,
        "Most bytes of text queued on the relay for all the sessions of one Mac while it is "
        "offline (outbox_full past it).",
        "relay",
    ),
    Setting(
        "sse_queue_size",
        2000,
        "Events buffered per SSE subscriber; on overflow it gets resync and is closed.",
        "relay",
    ),
    Setting(
        "sse_max_streams_per_token",
        20,
        "Most SSE streams one login (token) holds open on a relay node; a new one past it closes "
        "that login's oldest (a phone that reconnects often is never locked out).",
        "relay",
    ),
    Setting(
        "command_timeout", 15.0, "Seconds the relay waits for the Mac to answer a command.", "relay"
    ),
    Setting(
        "move_chunk_bytes",
        512 * KIB,
        "Bytes of one chunk of a moving session's files on the link (below max_link_message_bytes).",
        "relay",
    ),
    Setting(
        "move_reconnect_wait",
        60.0,
        "Seconds a move waits for a Mac that went offline mid-move before it gives up.",
        "relay",
    ),
    Setting(
        "move_idle_wait",
        1800.0,
        "Seconds a move asked for when idle waits for the running turn to end.",
        "relay",
    ),
    Setting(
        "move_pack_timeout",
        600.0,
        "Seconds the Mac a session moves from may take to pack it once its turn is over; past "
        "it the move fails (pack_timeout) and the session stays there.",
        "relay",
    ),
    Setting(
        "move_transfer_timeout",
        3600.0,
        "Seconds a move's files may take to travel from one Mac to the other; past it the move "
        "fails (transfer_timeout) and the session stays where it was.",
        "relay",
    ),
    Setting(
        "move_place_timeout",
        900.0,
        "Seconds the Mac a session moves to may take to lay it down (check, unpack, resume); "
        "past it the move fails (place_timeout) and the session stays where it was.",
        "relay",
    ),
    Setting(
        "moves_kept_per_session",
        10,
        "Finished moves (done or failed) the relay keeps per session, the newest; older ones "
        "are deleted as a new move starts (at least 1: a session shows its latest).",
        "relay",
    ),
    Setting(
        "move_resume_timeout",
        90.0,
        "Seconds the Mac a session moves to waits for its resumed Claude Code to be ready.",
        "agent",
    ),
    Setting(
        "history_timeout",
        5.0,
        "Seconds the relay waits for the Mac to send older history.",
        "relay",
    ),
    Setting(
        "auth_recheck_interval",
        5.0,
        "Seconds between re-checks of an open stream's token (revocation).",
        "relay",
    ),
    # Relay: pairing and tokens
    Setting("pair_code_ttl", 600.0, "Seconds a one-time pairing code stays valid.", "relay"),
    Setting(
        "pair_attempts_per_minute",
        10,
        "Pairing attempts allowed per client address per minute (a code also dies after 5 "
        "wrong guesses).",
        "relay",
    ),
    Setting(
        "trusted_proxies",
        "",
        "Addresses of the reverse proxies in front of the relay (comma-separated IPs or "
        "networks, e.g. 127.0.0.1); only their X-Forwarded-For / -Proto / -Host headers are "
        "believed. Empty = none: every forwarded header is ignored.",
        "relay",
    ),
    Setting("token_ttl_days", 365.0, "Days a paired token stays valid; 0 = no expiry.", "relay"),
    # Relay: storage
    Setting(
        "store_synchronous",
        "NORMAL",
        "SQLite synchronous mode: NORMAL survives a killed process, FULL also a power cut.",
        "relay",
    ),
    Setting(
        "writer_batch_max", 512, "Most write jobs committed together in one transaction.", "relay"
    ),
    Setting(
        "database_url",
        "",
        "PostgreSQL URL of the relay's store (postgresql://user:password@host/db); several relay "
        "nodes may share it. Empty = SQLite in data_dir.",
        "relay",
    ),
    Setting(
        "database_pool_size",
        8,
        "Most connections one relay node opens to PostgreSQL (its readers; the writer and the "
        "listener have one each).",
        "relay",
    ),
    Setting(
        "node_heartbeat_interval",
        2.0,
        "Seconds between a relay node's heartbeats in PostgreSQL (its lease on its Macs' links).",
        "relay",
    ),
    Setting(
        "node_lease_seconds",
        10.0,
        "Seconds after its last heartbeat a relay node is taken for dead: its Macs count as "
        "offline until they link again, to any node.",
        "relay",
    ),
    # Relay: Web Push notifications (relay/push.py)
    Setting(
        "push_subject",
        "",
        "Contact sent to push services in the VAPID claim (mailto: or https: URL); "
        "empty = public_url when it is https, else mailto:claude-bridge@localhost.",
        "relay",
    ),
    Setting(
        "push_ttl",
        3600,
        "Seconds a push service keeps a notification for a phone that is not reachable.",
        "relay",
    ),
    Setting(
        "push_allowed_hosts",
        "",
        "Push service hosts allowed although they are not public https servers (comma-separated "
        "host names or addresses, e.g. a private push service): they may use http and resolve "
        "to private addresses. Empty = none: only https hosts with public addresses.",
        "relay",
    ),
    Setting("push_timeout", 10.0, "Seconds the relay waits for a push service to answer.", "relay"),
    # Relay: usage and cost (relay/cost.py, relay/prices.json)
    Setting(
        "model_prices",
        "",
        "Per-model price overrides in USD per million tokens, on top of the bundled catalogue: "
        'a JSON object or a JSON file\'s path, e.g. {"my-model": {"input": 3, "output": 15, '
        '"cache_read": 0.3, "cache_write": 3.75}}; all zeros = free. Empty = the catalogue only.',
        "relay",
    ),
    # Relay: retention (relay/retention.py)
    Setting(
        "archive_after_days",
        30.0,
        "Days a session may sit idle before it is archived (read-only, still searchable); "
        "0 = never archive.",
        "relay",
    ),
    Setting(
        "delete_after_days",
        180.0,
        "Days after archiving before a session and its events are deleted on the relay and "
        "its Mac; 0 = never delete.",
        "relay",
    ),
    Setting(
        "audit_keep_days",
        365.0,
        "Days an audit log entry (a decision on a card) is kept, counted from the decision, "
        "whether or not its session is still kept; 0 = keep forever.",
        "relay",
    ),
    Setting(
        "retention_interval",
        3600.0,
        "Seconds between retention runs (the first runs when the relay starts).",
        "relay",
    ),
    Setting(
        "files_max_file_bytes",
        256 * KIB,
        "Largest part of a file the page is shown from a session's folder; the rest is cut.",
        "agent",
    ),
    Setting(
        "files_max_entries",
        1000,
        "Most entries of one folder (or changed files of git status) sent to the page.",
        "agent",
    ),
    Setting(
        "files_max_diff_bytes",
        512 * KIB,
        "Largest diff of one file (staged and unstaged each) sent to the page; the rest is cut.",
        "agent",
    ),
    Setting(
        "git_timeout",
        10.0,
        "Seconds the git commands of one answer to the page may take together in a session's folder.",
        "agent",
    ),
    Setting(
        "full_line_max_bytes",
        8 * MIB,
        "Largest transcript line a Mac sends back whole when the page asks for a text the relay cut.",
        "agent",
    ),
    Setting(
        "move_max_bytes",
        500 * MIB,
        "Largest working folder a move copies; larger ones are refused before anything moves.",
        "agent",
    ),
    Setting(
        "move_skip_folders",
        "node_modules,.venv,venv,__pycache__,.tox,.nox,.mypy_cache,.pytest_cache,.ruff_cache,"
        ".parcel-cache,.next,.nuxt,.gradle",
        "Folder names a move never copies, ignored or not (comma-separated); a virtualenv "
        "(a folder holding pyvenv.cfg) and a repository inside the folder are never copied either.",
        "agent",
    ),
    Setting(
        "retention_retry_interval",
        5.0,
        "Seconds between checks for Macs back online that still have deleted sessions to drop.",
        "relay",
    ),
)

_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


_TYPE_LABELS: dict[type, str] = {
    int: "a whole number",
    float: "a finite number",
    bool: "true or false",
    str: "text",
}


@dataclass(frozen=True)
class Config:
    """Resolved settings. Immutable: a value read once never changes under the reader."""

    values: Mapping[builtins.str, Any] = field(default_factory=dict)

    # Typed reads: ``config.int("port")`` is an ``int`` to the type checker and at run time, so
    # no call site casts. A wrong name, or a name read as a type it is not declared with, is a
    # ConfigError naming the setting (a test checks every call site in the code against the table).
    def int(self, name: builtins.str) -> builtins.int:
        return self._read(name, builtins.int)

    def float(self, name: builtins.str) -> builtins.float:
        return self._read(name, builtins.float)

    def str(self, name: builtins.str) -> builtins.str:
        return self._read(name, builtins.str)

    def bool(self, name: builtins.str) -> builtins.bool:
        return self._read(name, builtins.bool)

    def _read(self, name: builtins.str, kind: type[_T]) -> _T:
        setting = _BY_NAME.get(name)
        if setting is None:
            raise ConfigError(f"unknown setting {name!r}")
        declared = type(setting.default)
        if declared is not kind:
            raise ConfigError(
                f"setting {name} is {_TYPE_LABELS[declared]}, not {_TYPE_LABELS[kind]}"
            )
        value = self.values[name]
        # type(), not isinstance(): a bool is an int to isinstance.
        if type(value) is not kind or not isinstance(value, kind):
            raise ConfigError(f"setting {name} holds {value!r}, not {_TYPE_LABELS[kind]}")
        return value

    @property
    def data_path(self) -> Path:
        return Path(self.str("data_dir")).expanduser()

    @property
    def base_url(self) -> builtins.str:
        url = self.str("public_url")
        if url:
            return url.rstrip("/")
        return f"http://{self.str('host')}:{self.int('port')}"

    def replace(self, **overrides: Any) -> Config:
        return load(overrides, environ={}, base=self)


def _coerce(setting: Setting, raw: Any) -> Any:
    kind = type(setting.default)
    if isinstance(raw, kind) and not (kind is int and isinstance(raw, bool)):
        if kind is float and not math.isfinite(raw):
            raise ConfigError(f"setting {setting.name} ({setting.env_var}) wants a finite number")
        return raw
    try:
        if kind is bool:
            return str(raw).lower() in {"1", "true", "yes", "on"}
        if kind is int:
            return int(raw)
        if kind is float:
            value = float(raw)
            if not math.isfinite(value):  # "inf" would make a timeout or an age endless
                raise ValueError(raw)
            return value
        return str(raw)
    except (TypeError, ValueError):
        label = _TYPE_LABELS.get(kind, kind.__name__)
        raise ConfigError(
            f"setting {setting.name} ({setting.env_var}) wants {label}, got {raw!r}"
        ) from None


def load(
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    base: Config | None = None,
) -> Config:
    """Resolve every setting: overrides beat ``CB_*`` environment variables beat defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if base is not None:
            values[setting.name] = base.values[setting.name]
        elif setting.env_var in env:
            values[setting.name] = _coerce(setting, env[setting.env_var])
        else:
            values[setting.name] = setting.default
    for name, raw in (overrides or {}).items():
        if raw is None:
            continue
        known = _BY_NAME.get(name)
        if known is None:
            raise ConfigError(f"unknown setting {name!r}")
        values[name] = _coerce(known, raw)
    return Config(values)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(raw: str) -> tuple[Network, ...]:
    """The ``trusted_proxies`` setting: comma-separated addresses or networks."""
    networks = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(
                f"trusted_proxies (CB_TRUSTED_PROXIES): {item!r} is not an address or network"
            ) from None
    return tuple(networks)
