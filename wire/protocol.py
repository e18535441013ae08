"""The wire protocol, defined once: display events and every message on the agent link.

The agent (`agent/`) and the relay import these models; `docs/protocol.md` describes them for
people. Every link message is a JSON object with a ``type`` field naming its model below.

Agent → relay: ``hello``, ``lines``, ``session_update``, ``command_result``, ``history``,
``decision``, ``ping``.
Relay → agent: ``welcome``, ``ack``, ``events``, ``command``, ``history_request``, ``error``, ``pong``,
``decision_ack``.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from wire.memory_section import FACT_MAX_CHARS

PROTOCOL_VERSION = 1

# Limits on every integer from the wire. Seqs and offsets reach the page, so they stay within
# JavaScript's safe integers (2^53 - 1; SQLite's INTEGER would take 2^63 - 1): a larger value
# is a ``bad_message``, never an overflow deeper in.
MAX_SAFE_INTEGER = 2**53 - 1
MAX_SEQ = MAX_SAFE_INTEGER
MAX_BATCH = MAX_SAFE_INTEGER
MAX_OFFSET = MAX_SAFE_INTEGER
# A line at or past this byte offset cannot be in a real transcript (1 TiB): the relay drops it
# (reported in the ack as ``out_of_range``) instead of letting it hide every later line.
MAX_TRANSCRIPT_OFFSET = 2**40
# What a conversation is filed under (a ``lines`` batch, a stored offset): a Claude Code
# conversation's UUID, a subagent's ``agent-…``, the bridge's own ``bridge``. Never a path.
CONVERSATION_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
MAX_HISTORY_LIMIT = 10_000  # events one history request may ask for
MAX_RECENT_FOLDERS = 30  # working folders a Mac lists in its hello
MAX_CWD_CHARS = 4096

# WebSocket close codes of the link (docs/protocol.md §11), sent by the relay, read by the Mac
# from the close frame.
CLOSE_REPLACED = 4000  # a newer link of the same Mac took over
CLOSE_PROTOCOL = 4002  # the first message was not a valid hello
CLOSE_UNAUTHORIZED = 4401  # the device token is unknown, revoked or expired: pair again
CLOSE_TRY_AGAIN = 1013  # the relay cannot check the token now (its database is away): retry

Seq = Annotated[int, Field(ge=1, le=MAX_SEQ)]
SeqOrZero = Annotated[int, Field(ge=0, le=MAX_SEQ)]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]
BatchNumber = Annotated[int, Field(ge=0, le=MAX_BATCH)]

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone UTF-16 surrogate replaced by U+FFFD.

    JSON may carry ``"\\ud83d"`` alone (what a JavaScript program writes when it cuts an emoji
    in half); Python decodes it to a code point that UTF-8, SQLite and the page cannot take.
    Pairs were already joined by the decoder, so any surrogate left is a lone one."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=False)


# ---------------------------------------------------------------------------
# Display events
# ---------------------------------------------------------------------------


class EventKind(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    THINKING = "thinking"
    TOOL_USE = "tool_use"
    TOOL_RESULT = "tool_result"
    MARKER = "marker"
    # auto mode's classifier refused a tool call: ``text`` is its reason, ``tool_use_id`` the call
    DENIAL = "denial"
    # the relay's snapshot of the session's decisions ledger (relay/features/snapshots.py):
    # ``text`` its one line, ``input`` relay/snapshot.Snapshot's JSON (or its counts when large)
    SNAPSHOT = "snapshot"


class MarkerKind(StrEnum):
    COMPACTED = "compacted"  # 📦 context compacted
    CLEARED = "cleared"  # 🧹 /clear · conversation cleared
    LOCAL_COMMAND = "local_command"  # /model, /compact … and their output
    INTERRUPTED = "interrupted"  # [Request interrupted by user…]
    HOOK_ALLOWED = "hook_allowed"  # Allowed by PermissionRequest hook
    HOOK_DENIED = "hook_denied"
    REJECTED = "rejected"  # the person rejected a tool use
    TASK_NOTIFICATION = "task_notification"  # a background agent finished
    API_ERROR = "api_error"
    UNREADABLE = "unreadable"  # a line that could not be read
    LINE_TOO_LARGE = "line_too_large"
    AUTO_PASSED = "auto_passed"  # a dialog passed without asking (agent)
    REVIVED = "revived"  # 🔁 the Mac restarted, the session was reopened
    ALLOW_ALL = "allow_all"  # "allow all" started or ended (agent)
    GRANT = "grant"  # a grant given, revoked or ended with its claude process (agent)
    MOVED = "moved"  # 🚚 the session moved to this Mac from another (agent)
    RESUMED = "resumed"  # a stopped session started again lean: fresh or from a summary (agent)
    INFO = "info"


class DisplayEvent(_Model):
    """One item of a session's history as the page draws it (before numbering)."""

    kind: EventKind
    text: str = ""
    # tool_use / tool_result
    tool: str | None = None
    tool_use_id: str | None = None
    summary: str | None = None  # readable one-line summary of a tool's input
    input: dict[str, Any] | None = None  # the tool's input, long strings truncated
    is_error: bool = False
    full_length: int | None = None  # length of the text before truncation
    truncated: bool = False
    # markers
    marker: MarkerKind | None = None
    # where it came from
    timestamp: str | None = None
    uuid: str | None = None
    agent_id: str | None = None  # set for a subagent's (sidechain) lines
    model: str | None = None
    message_id: str | None = None


class NumberedEvent(DisplayEvent):
    """A stored event: a display event with its place in the session's history."""

    session_id: str
    seq: Seq
    epoch: str
    conversation_id: str | None = None
    offset: Offset | None = None  # byte offset of the transcript line it came from


# ---------------------------------------------------------------------------
# Pieces shared by several messages
# ---------------------------------------------------------------------------


class LineRecord(_Model):
    """One complete transcript line and its identity: conversation id + byte offset (+ uuid)."""

    offset: Offset
    text: str
    uuid: str | None = None


class DroppedLine(_Model):
    """A line of a batch the relay did not store, and why (reported in the ack)."""

    offset: int
    # duplicate: stored before (a resend); out_of_order: not after the line before it in the
    # conversation; out_of_range: at or past MAX_TRANSCRIPT_OFFSET
    reason: Literal["duplicate", "out_of_order", "out_of_range"]


class CardOption(_Model):
    key: str
    label: str


class Card(_Model):
    """A dialog on the Mac's screen, as the phone shows it.

    A permission card's ``tool`` / ``tool_input`` come from Claude Code's own request (the
    PermissionRequest / PreToolUse hook: the whole command, the file path, the edit) when it
    matches the dialog on screen (``source: "hook"``); otherwise they are read from the screen,
    which is cut to the terminal's width (``source: "screen"``, with ``warning``). A card may
    reach the phone before its dialog is drawn: ``answerable`` is false until it is seen.
    ``digest`` is the dialog's text digest the answer is bound to (with ``tool_use_id``).
    """

    id: str
    # "denied": auto mode's classifier refused a call (no dialog: built from the hook, agent/denials.py)
    # "resume": Claude Code's own "resume from summary / full session" chooser (agent/resumechooser.py)
    kind: Literal["permission", "question", "plan", "dialog", "keyed", "stuck", "denied", "resume"]
    title: str = ""
    text: str = ""
    options: list[CardOption] = Field(default_factory=list)
    multi_select: bool = False
    tool: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    source: Literal["hook", "screen"] = "screen"
    answerable: bool = True
    warning: str | None = None
    digest: str | None = None


# When a message from the phone is typed: "held" at the next safe point (a tool finished, the
# turn ended, a card answered), "now" at once (interrupting the turn), "after_turn" only once the
# turn has ended.
MessageWhen = Literal["held", "now", "after_turn"]

# Files the phone may attach to a message (agent/attachments.py saves them on the Mac): the
# types Claude Code reads as images, and plain documents.
ATTACHMENT_TYPES: dict[str, str] = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/csv": ".csv",
    "application/json": ".json",
}
AttachmentType = Literal[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
]
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024  # the wire's bound; the relay's setting is at most this
MAX_ATTACHMENTS = 10  # attachments of one message
MAX_ATTACHMENT_NAME_CHARS = 200
ATTACHMENT_ID = r"^a[0-9a-f]{24}$"  # made by the Mac; the phone never names a file


class AttachmentInfo(_Model):
    """A file saved on the Mac for a message: its id there, the name the phone gave it (shown
    only), its type and size."""

    id: str = Field(pattern=ATTACHMENT_ID)
    name: str = Field(max_length=MAX_ATTACHMENT_NAME_CHARS)
    media_type: AttachmentType
    size: int = Field(ge=0, le=MAX_ATTACHMENT_BYTES)


class HeldMessage(_Model):
    id: str
    text: str
    state: Literal["held", "typing", "typed", "cancelled", "failed"] = "held"
    created_at: float | None = None
    when: MessageWhen = "held"
    attachments: list[AttachmentInfo] = Field(default_factory=list)


class SessionPosition(_Model):
    """What a Mac knows of a session's numbered history, sent in hello."""

    session_id: str
    last_seq: SeqOrZero = 0
    epoch: str | None = None


ClaudeStanding = Literal["ok", "missing", "logged_out", "unknown"]
MAX_HINT_CHARS = 500


class DeviceInfo(_Model):
    name: str = ""
    hostname: str = ""
    os: str = ""
    agent_version: str = ""
    claude_version: str = ""
    # Whether the agent found Claude Code (None: an agent too old to say), how it stands
    # (``missing``; ``logged_out``: `claude auth status` says no login; ``unknown``: it could
    # not tell) and, when it is missing, the line that installs it.
    claude_found: bool | None = None
    claude_standing: ClaudeStanding | None = None
    claude_install_hint: str = Field(default="", max_length=MAX_HINT_CHARS)
    # The working folders of this Mac's sessions, past and present, the most recent first: the
    # new-session form offers them.
    recent_folders: list[Annotated[str, Field(max_length=MAX_CWD_CHARS)]] = Field(
        default_factory=list, max_length=MAX_RECENT_FOLDERS
    )


GRANT_ID = r"^g_[0-9a-f]{12}$"  # a grant's id (agent/grants.py), checked before it is sent


class GrantInfo(_Model):
    """A card's "always allow this kind of tool" for the running claude process (agent/grants.py):
    ``kind`` ``category`` (``name`` is read, edit, execute, web or mcp) or ``tool`` (``name`` is
    the tool's), the card's ``tool``, the ``card_id`` it was given on and when (Unix seconds)."""

    id: str = Field(pattern=GRANT_ID)
    kind: Literal["category", "tool"]
    name: str = Field(min_length=1, max_length=200)
    tool: str = Field(min_length=1, max_length=200)
    card_id: str | None = Field(default=None, max_length=200)
    granted_at: float = Field(ge=0, le=1e11, allow_inf_nan=False)


MAX_FAILURE_LINES = 8  # the lines of Claude Code's own message a start failure carries
MAX_FAILURE_LINE_CHARS = 300
MAX_FAILURE_TEXT_CHARS = 1000  # its reason and its action
FAILURE_CODE = r"^[a-z][a-z_]{0,63}$"


class StartFailureInfo(_Model):
    """Why a session's claude ended before its session was ever live (agent/startfail.py):
    ``code`` (``claude_not_logged_in``, ``claude_bad_flag`` … ``claude_exited``), ``reason``
    (Claude Code's own words, the first meaningful line), ``action`` (what the person does,
    naming the Mac), ``last_lines`` (the message as it was on the pane's last screen) and the
    exit ``status`` / ``signal`` when known."""

    code: str = Field(pattern=FAILURE_CODE)
    reason: str = Field(max_length=MAX_FAILURE_TEXT_CHARS)
    action: str = Field(max_length=MAX_FAILURE_TEXT_CHARS)
    last_lines: list[Annotated[str, Field(max_length=MAX_FAILURE_LINE_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FAILURE_LINES
    )
    status: int | None = Field(default=None, ge=0, le=255)
    signal: int | None = Field(default=None, ge=0, le=255)


# How a stopped session starts again (issue 23): ``full`` resumes the whole conversation
# (``claude --resume``), ``summary`` resumes it then runs Claude Code's own ``/compact`` before
# the held messages, ``fresh`` starts a new conversation whose first message is the handoff.
ResumeScope = Literal["full", "summary", "fresh"]
RESUME_SCOPES: tuple[ResumeScope, ...] = ("full", "summary", "fresh")


class SessionInfo(_Model):
    """What the Mac reports about a session's live side (never stored as state)."""

    session_id: str
    cwd: str | None = None
    title: str | None = None
    conversation_id: str | None = None
    state: Literal["starting", "idle", "busy", "waiting", "ended"] | None = None
    # How its claude's latest start came back: the resume scope used (None: a new session's
    # first start, or an older agent).
    resume_scope: ResumeScope | None = None
    activity: str | None = None  # e.g. "coding"
    card: Card | None = None  # a field left out means "unchanged"
    clear_card: bool = False  # the card closed
    held: list[HeldMessage] | None = None
    preview: str | None = None
    permission_mode: str | None = None
    model: str | None = None
    error: str | None = None  # why the Mac could not (re)start the session; None once it runs
    # claude ended before the session was live: why, in its words, and what to do (None: it
    # did not, or a later start works). ``error`` then holds the same, in one sentence.
    failure: StartFailureInfo | None = None
    # The grants of the running claude process, all of them (a field left out: unchanged).
    grants: list[GrantInfo] | None = Field(default=None, max_length=64)


# ---------------------------------------------------------------------------
# Agent → relay
# ---------------------------------------------------------------------------


class Hello(_Model):
    type: Literal["hello"] = "hello"
    protocol: int = PROTOCOL_VERSION
    device: DeviceInfo = Field(default_factory=DeviceInfo)
    sessions: list[SessionPosition] = Field(default_factory=list)


class Lines(_Model):
    """A batch of complete new lines of one conversation of one session."""

    type: Literal["lines"] = "lines"
    batch: BatchNumber
    session_id: str
    conversation_id: str
    lines: list[LineRecord]
    cwd: str | None = None  # lets the relay create a session it has not seen yet


class SessionUpdate(_Model):
    """A change of a session's live side. Only the fields present change (send exclude_unset)."""

    type: Literal["session_update"] = "session_update"
    session: SessionInfo


class CommandResult(_Model):
    type: Literal["command_result"] = "command_result"
    command_id: str
    ok: bool
    error: str | None = None
    code: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class History(_Model):
    """The Mac's answer to a history request: events from its archive."""

    type: Literal["history"] = "history"
    request_id: str
    events: list[NumberedEvent] = Field(default_factory=list)
    error: str | None = None


class Decision(_Model):
    """A permission request the Mac answered by itself, for the audit log (relay/features/audit.py).

    Sent when a PermissionRequest hook is answered by the session's policy (a tool's or a
    category's rule, or "allow all"), so no card was ever shown. ``id`` is the Mac's own: the
    relay keeps one entry per id, so a decision sent again after a reconnect is stored once."""

    type: Literal["decision"] = "decision"
    id: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    session_id: str = Field(min_length=1, max_length=200)
    at: float = Field(ge=0, le=1e11, allow_inf_nan=False)  # epoch seconds on the Mac
    source: Literal["policy", "allow_all", "hook"]
    rule: str = Field(max_length=500)  # e.g. "tool Bash: allow", "category read: allow"
    decision: Literal["allow", "deny"]
    tool: str | None = Field(default=None, max_length=200)
    tool_use_id: str | None = Field(default=None, max_length=200)
    input_digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    summary: str = Field(default="", max_length=500)  # the tool input in one readable line


def input_digest(tool_input: Any) -> str | None:
    """SHA-256 of a tool input's canonical JSON (sorted keys, no spaces, UTF-8): the same input
    gives the same digest on the Mac and on the relay, whatever order its keys came in."""
    if tool_input is None:
        return None
    text = json.dumps(
        tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Ping(_Model):
    type: Literal["ping"] = "ping"


class DeviceUpdate(_Model):
    """What the Mac says about itself changed since hello (Claude Code was updated meanwhile)."""

    type: Literal["device"] = "device"
    device: DeviceInfo


AgentMessage = Annotated[
    Hello | Lines | SessionUpdate | CommandResult | History | Decision | Ping | DeviceUpdate,
    Field(discriminator="type"),
]
agent_message = TypeAdapter(AgentMessage)


# ---------------------------------------------------------------------------
# Relay → agent
# ---------------------------------------------------------------------------


class Welcome(_Model):
    type: Literal["welcome"] = "welcome"
    protocol: int = PROTOCOL_VERSION
    device_id: str
    sessions: list[SessionPosition] = Field(default_factory=list)


class Ack(_Model):
    """A batch is durably stored: lines up to ``through_offset`` need never be sent again."""

    type: Literal["ack"] = "ack"
    batch: BatchNumber
    session_id: str
    conversation_id: str
    through_offset: int  # -1 while nothing of the conversation is stored
    last_seq: SeqOrZero
    epoch: str
    duplicates: int = 0  # lines already stored before (sent twice after a reconnect)
    rejected: list[str] = Field(default_factory=list)  # why lines were replaced by markers
    dropped: list[DroppedLine] = Field(default_factory=list)  # lines not stored, by offset


class Events(_Model):
    """Numbered events sent back to the Mac for its archive."""

    type: Literal["events"] = "events"
    session_id: str
    epoch: str
    events: list[NumberedEvent]


CommandName = Literal[
    "create_session",
    "send",
    "answer_card",
    "interrupt",
    "end",
    "rest",
    "reopen",
    "cancel_held",
    "set_policy",
    "change_policy",
    "delete_history",
    "list_files",
    "read_file",
    "git_status",
    "git_diff",
    "transcript_line",
    "set_mode",
    "set_model",
    "save_attachment",
    "revoke_grant",
    "set_resume",
    "list_conversations",
    "read_conversation",
    # Moving a session to another Mac (relay/features/moves.py, agent/moving.py)
    "move_probe",
    "move_export",
    "move_accept",
    "move_read",
    "move_write",
    "move_place",
    "move_finish",
    # Memory with a tap (relay/features/memory.py, agent/memoryfiles.py)
    "write_memory",
]

# Limits of a command's args (docs/protocol.md §9), checked by the agent: args outside them are
# answered ``bad_args`` at once.
MAX_MESSAGE_CHARS = 100_000  # a message's text; the relay's max_message_chars is at most this
MAX_DECISIONS_COUNT = 1_000_000  # a handoff's count of decisions
CONVERSATION_ID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # Claude Code's
MAX_MODEL_CHARS = 200
MAX_CARD_KEY_CHARS = 32
MAX_CARD_KEYS = 64
SENDER_MESSAGE_ID = r"^[A-Za-z0-9_-]{8,64}$"  # a message id the sender chose (send)
HELD_MESSAGE_ID = r"^[A-Za-z0-9_-]{1,64}$"  # any held message's id (cancel_held)
LINE_UUID = r"^[A-Za-z0-9_-]{1,64}$"  # a transcript line's uuid (transcript_line)
MAX_BRANCH_CHARS = 200  # a worktree's branch name

PermissionMode = Literal[
    "manual", "default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"
]
# Each mode by the name Claude Code shows (the page's web/js/i18n.js says the same): what a
# person reads anywhere, never the raw value (hooks' "default" is Manual).
MODE_NAMES: Final[dict[str, str]] = {
    "manual": "Manual",
    "default": "Manual",
    "acceptEdits": "Accept edits",
    "plan": "Plan",
    "auto": "Auto",
    "bypassPermissions": "Bypass",
    "dontAsk": "Don't ask",
}
CardKey = Annotated[str, Field(max_length=MAX_CARD_KEY_CHARS)]


class ArgsModel(_Model):
    """The args of one command. ``name`` is the command it belongs to; on the link the args are
    the JSON object of the fields that were given (``None`` ones left out)."""

    name: ClassVar[CommandName]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True, exclude_none=True)


class CreateSessionArgs(ArgsModel):
    """Launch claude in ``cwd`` under the command's session id; type ``prompt`` once ready."""

    name: ClassVar[CommandName] = "create_session"
    cwd: str = Field(min_length=1, max_length=MAX_CWD_CHARS)
    prompt: str | None = None
    permission_mode: PermissionMode | None = None
    model: str | None = Field(default=None, max_length=MAX_MODEL_CHARS)
    policy: dict[str, Any] | None = None  # first permission rules (wire/policy.py)
    allow_all: bool = False  # older relays' way of asking for "allow all" (now in policy)
    # A fork: this session (of this Mac) continues in a new one, with its history
    # (``claude --resume <its conversation> --fork-session``); cwd is the parent's.
    fork_of: str | None = Field(default=None, min_length=1, max_length=200)
    # A new git worktree on a new branch (agent/worktree.py): true, or the branch's name.
    worktree: bool | Annotated[str, Field(min_length=1, max_length=MAX_BRANCH_CHARS)] | None = None
    # A conversation begun at the desk (list_conversations) that this session continues: its
    # own (``--resume``, by ``resume_scope``), or a fork of it (``desk_fork``: a live one).
    desk_conversation: str | None = Field(default=None, pattern=CONVERSATION_ID)
    desk_fork: bool = False
    resume_scope: ResumeScope | None = None
    handoff: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    decisions: int | None = Field(default=None, ge=0, le=MAX_DECISIONS_COUNT)


class SendArgs(ArgsModel):
    """Type a message (or hold it while a turn runs); ``now`` interrupts first. ``when`` says
    it whole (``now: true`` is ``when: "now"``); ``attachments`` are ids of files saved on the
    Mac by ``save_attachment``, handed to Claude Code as ``@path`` references."""

    name: ClassVar[CommandName] = "send"
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    now: bool = False
    when: MessageWhen | None = None
    attachments: list[Annotated[str, Field(pattern=ATTACHMENT_ID)]] | None = Field(
        default=None, max_length=MAX_ATTACHMENTS
    )
    # The phone's own ids are 8-64 characters (the relay checks SENDER_MESSAGE_ID); the Mac
    # takes any id of a held message's shape.
    message_id: str | None = Field(default=None, pattern=HELD_MESSAGE_ID)


class AnswerCardArgs(ArgsModel):
    """Answer the current card: one of ``key`` / ``keys`` (multi-select) / ``text``."""

    name: ClassVar[CommandName] = "answer_card"
    key: CardKey | None = None
    keys: list[CardKey] | None = Field(default=None, max_length=MAX_CARD_KEYS)
    text: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    always: bool = False  # also a grant: "always allow this kind of tool" (agent/grants.py)
    card_id: str = Field(min_length=1)


class InterruptArgs(ArgsModel):
    name: ClassVar[CommandName] = "interrupt"


class EndArgs(ArgsModel):
    name: ClassVar[CommandName] = "end"


class RestArgs(ArgsModel):
    name: ClassVar[CommandName] = "rest"


class ReopenArgs(ArgsModel):
    """Start a stopped session again. ``scope``/``handoff``: this once, instead of the ones the
    session keeps (set_resume)."""

    name: ClassVar[CommandName] = "reopen"
    scope: ResumeScope | None = None
    handoff: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    decisions: int | None = Field(default=None, ge=0, le=MAX_DECISIONS_COUNT)


MAX_DESK_CONVERSATIONS = 500


class ListConversationsArgs(ArgsModel):
    """The Mac's Claude Code conversations, newest first, per folder (agent/desk.py): the ones
    started at the desk too. Not about one session: the command's session id is empty."""

    name: ClassVar[CommandName] = "list_conversations"
    limit: int = Field(default=200, ge=1, le=MAX_DESK_CONVERSATIONS)


MAX_READ_CONVERSATION_BYTES = 8 * 1024 * 1024


class ReadConversationArgs(ArgsModel):
    """One of the Mac's Claude Code conversations, read only: its last ``max_bytes`` of lines
    (whole lines; the session id is empty)."""

    name: ClassVar[CommandName] = "read_conversation"
    conversation_id: str = Field(pattern=CONVERSATION_ID)
    max_bytes: int = Field(default=2 * 1024 * 1024, ge=1024, le=MAX_READ_CONVERSATION_BYTES)


class SetResumeArgs(ArgsModel):
    """The session's resume scope (None: ``full``, the person has not picked) and the handoff a
    ``fresh`` start types first, with the count of decisions it holds (the marker line's N).
    Kept in the Mac's registry and used at every start of the stopped session."""

    name: ClassVar[CommandName] = "set_resume"
    scope: ResumeScope | None = None
    handoff: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    decisions: int = Field(default=0, ge=0, le=MAX_DECISIONS_COUNT)


class CancelHeldArgs(ArgsModel):
    name: ClassVar[CommandName] = "cancel_held"
    message_id: str = Field(pattern=HELD_MESSAGE_ID)


class SetPolicyArgs(ArgsModel):
    """Replace the session's permission rules (checked by wire/policy.py's Policy.from_json)."""

    name: ClassVar[CommandName] = "set_policy"
    policy: dict[str, Any]


class ChangePolicyArgs(ArgsModel):
    """Change some rules, the others kept (checked by wire/policy.py's Policy.changed)."""

    name: ClassVar[CommandName] = "change_policy"
    changes: dict[str, Any]


class DeleteHistoryArgs(ArgsModel):
    """Retention deleted the session: drop its archive and record."""

    name: ClassVar[CommandName] = "delete_history"


class ListFilesArgs(ArgsModel):
    """The entries of a folder of the session's working folder ("" is the folder itself)."""

    name: ClassVar[CommandName] = "list_files"
    path: str = Field(default="", max_length=MAX_CWD_CHARS)


class ReadFileArgs(ArgsModel):
    """The text of a file of the session's working folder (cut at the Mac's limit)."""

    name: ClassVar[CommandName] = "read_file"
    path: str = Field(min_length=1, max_length=MAX_CWD_CHARS)


class GitStatusArgs(ArgsModel):
    """The staged, unstaged and untracked files of the session's working folder."""

    name: ClassVar[CommandName] = "git_status"


class GitDiffArgs(ArgsModel):
    """The staged and unstaged diffs of one file of the session's working folder."""

    name: ClassVar[CommandName] = "git_diff"
    path: str = Field(min_length=1, max_length=MAX_CWD_CHARS)


class TranscriptLineArgs(ArgsModel):
    """One raw line of the session's transcripts, found by its uuid (the relay cut its texts
    when it converted it; the page asks for them whole)."""

    name: ClassVar[CommandName] = "transcript_line"
    uuid: str = Field(pattern=LINE_UUID)


# A model name as ``/model`` and ``--model`` take it: an alias (``sonnet``, ``opus[1m]``) or a
# full name (``claude-sonnet-4-5``); nothing that could end the command line typed with it.
MODEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9._:@\[\]-]{0,199}$"


class SetModeArgs(ArgsModel):
    """Change a running session's permission mode with Claude Code's own mode cycle key."""

    name: ClassVar[CommandName] = "set_mode"
    mode: PermissionMode


class SetModelArgs(ArgsModel):
    """Change a running session's model with Claude Code's ``/model <name>``."""

    name: ClassVar[CommandName] = "set_model"
    model: str = Field(pattern=MODEL_NAME)


# The base64 text of the largest attachment.
MAX_ATTACHMENT_BASE64 = (MAX_ATTACHMENT_BYTES + 2) // 3 * 4


class SaveAttachmentArgs(ArgsModel):
    """Keep a file from the phone on the Mac for the session's next message (agent/attachments.py):
    saved under a name the Mac makes, outside the working folder; answered with its id."""

    name: ClassVar[CommandName] = "save_attachment"
    filename: str = Field(min_length=1, max_length=MAX_ATTACHMENT_NAME_CHARS)
    media_type: AttachmentType
    data: str = Field(min_length=1, max_length=MAX_ATTACHMENT_BASE64)  # base64


class RevokeGrantArgs(ArgsModel):
    """End one grant of the running claude process (agent/grants.py); the next request of
    that kind asks again."""

    name: ClassVar[CommandName] = "revoke_grant"
    grant_id: str = Field(pattern=GRANT_ID)


# -- moving a session to another Mac (docs/protocol.md §9, relay/features/moves.py) -----------

MOVE_ID = r"^[A-Za-z0-9_-]{8,64}$"
# A file of a move, named relative to the move's folder: each part starts with a letter, digit,
# "_" or "-" (never "." or ".."), never an absolute path (the Mac checks again as it opens one).
MOVE_FILE = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_-][A-Za-z0-9_.-]*){0,7}$"
MAX_MOVE_CHUNK = 4 * 1024 * 1024  # bytes of one chunk read or written (the setting is less)
MAX_MOVE_FILES = 10_000
MAX_MOVE_FILE_BYTES = 2**50
MAX_HAVE_COMMITS = 100_000
COMMIT_ID = r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$"
MoveId = Annotated[str, Field(pattern=MOVE_ID)]
MoveFileName = Annotated[str, Field(max_length=400, pattern=MOVE_FILE)]


class MoveFile(_Model):
    """One file a move carries (the folder's archive, a transcript, the session's record)."""

    name: MoveFileName
    size: Annotated[int, Field(ge=0, le=MAX_MOVE_FILE_BYTES)]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class MoveProbeArgs(ArgsModel):
    """Target: what the folder ``cwd`` holds here and the commits it has (so the source sends
    only what this Mac lacks), and the free disk space."""

    name: ClassVar[CommandName] = "move_probe"
    move_id: MoveId
    cwd: str = Field(min_length=1, max_length=MAX_CWD_CHARS)


class MoveExportArgs(ArgsModel):
    """Source: stop typing held messages, wait for the turn to end (``idle``) or interrupt it
    (``now``), then pack the folder and the transcripts. Asked again until it answers ``ready``
    (or ``failed``): each answer says where it is."""

    name: ClassVar[CommandName] = "move_export"
    move_id: MoveId
    when: Literal["idle", "now"] = "idle"
    have: list[Annotated[str, Field(pattern=COMMIT_ID)]] = Field(
        default_factory=list, max_length=MAX_HAVE_COMMITS
    )
    wait: float = Field(default=2.0, ge=0, le=20, allow_inf_nan=False)  # seconds it may take


class MoveAcceptArgs(ArgsModel):
    """Target: check the folder (it must not differ) and the disk, and answer how much of each
    file it already has (a move cut off goes on from there)."""

    name: ClassVar[CommandName] = "move_accept"
    move_id: MoveId
    cwd: str = Field(min_length=1, max_length=MAX_CWD_CHARS)
    manifest: dict[str, Any]  # the folder's (agent/foldersync.py FolderManifest)
    files: list[MoveFile] = Field(max_length=MAX_MOVE_FILES)


class MoveReadArgs(ArgsModel):
    """Source: ``length`` bytes of a file of the move from ``offset`` (base64 in ``data``)."""

    name: ClassVar[CommandName] = "move_read"
    move_id: MoveId
    file: MoveFileName
    offset: Annotated[int, Field(ge=0, le=MAX_MOVE_FILE_BYTES)]
    length: Annotated[int, Field(ge=1, le=MAX_MOVE_CHUNK)]


class MoveWriteArgs(ArgsModel):
    """Target: bytes of a file of the move at ``offset`` (base64); answers the size it has."""

    name: ClassVar[CommandName] = "move_write"
    move_id: MoveId
    file: MoveFileName
    offset: Annotated[int, Field(ge=0, le=MAX_MOVE_FILE_BYTES)]
    data: str = Field(max_length=(MAX_MOVE_CHUNK + 2) // 3 * 4)


class MovePlaceArgs(ArgsModel):
    """Target: check every file, unpack the folder, place the transcripts and resume the
    conversation (not yet reported: the relay has not handed the session over). Asked again
    until it answers ``ready`` (or ``failed``)."""

    name: ClassVar[CommandName] = "move_place"
    move_id: MoveId
    wait: float = Field(default=2.0, ge=0, le=20, allow_inf_nan=False)
    # The Mac the session comes from, as the relay names it: the card that asks the person to
    # trust the folder there says so.
    source_name: str = Field(default="", max_length=200)


class MoveFinishArgs(ArgsModel):
    """Either side: the relay's store decided the move (``commit``: the session is the
    target's now; ``abort``: it stays the source's). Idempotent: sent until answered."""

    name: ClassVar[CommandName] = "move_finish"
    move_id: MoveId
    outcome: Literal["commit", "abort"]
    # Target, on commit: how far the relay stored each conversation (its follower goes on
    # from there) and where the session came from, for the conversation's line.
    stored: dict[Annotated[str, Field(max_length=200)], Annotated[int, Field(ge=-1)]] = Field(
        default_factory=dict, max_length=MAX_MOVE_FILES
    )
    source_name: str = Field(default="", max_length=200)
    target_name: str = Field(default="", max_length=200)
    reason: str = Field(default="", max_length=1000)
    # Target, on commit: how the relay numbered the session's events (its last seq, epoch and
    # the epoch's first seq). The events the source carried are kept only as numbered so.
    last_seq: SeqOrZero | None = None
    epoch: str | None = Field(default=None, max_length=64)
    epoch_start: Annotated[int, Field(ge=1, le=MAX_SEQ + 1)] = 1


MemoryFileName = Literal["CLAUDE.local.md", "CLAUDE.md"]  # the first is the default
MAX_MEMORY_FACTS = 200  # facts one memory section holds


class WriteMemoryArgs(ArgsModel):
    """Write the facts the person accepted into the product's section of ``file`` in ``cwd``
    (the session's working folder or a folder inside it), wire/memory_section.py; answers the
    change as a unified diff and the file's path. ``dry_run``: only the diff, nothing written.
    ``facts`` are the whole section (what it holds afterwards, in order)."""

    name: ClassVar[CommandName] = "write_memory"
    cwd: str = Field(min_length=1, max_length=MAX_CWD_CHARS)
    file: MemoryFileName = "CLAUDE.local.md"
    facts: list[Annotated[str, Field(min_length=1, max_length=FACT_MAX_CHARS)]] = Field(
        default_factory=list, max_length=MAX_MEMORY_FACTS
    )
    dry_run: bool = False


CommandArgs = (
    CreateSessionArgs
    | SendArgs
    | AnswerCardArgs
    | InterruptArgs
    | EndArgs
    | RestArgs
    | ReopenArgs
    | CancelHeldArgs
    | SetPolicyArgs
    | ChangePolicyArgs
    | DeleteHistoryArgs
    | ListFilesArgs
    | ReadFileArgs
    | GitStatusArgs
    | GitDiffArgs
    | TranscriptLineArgs
    | SetModeArgs
    | SetModelArgs
    | SaveAttachmentArgs
    | RevokeGrantArgs
    | SetResumeArgs
    | ListConversationsArgs
    | ReadConversationArgs
    | MoveProbeArgs
    | MoveExportArgs
    | MoveAcceptArgs
    | MoveReadArgs
    | MoveWriteArgs
    | MovePlaceArgs
    | MoveFinishArgs
    | WriteMemoryArgs
)
# Each command's args model, by name.
COMMAND_ARGS: dict[CommandName, type[CommandArgs]] = {
    model.name: model for model in get_args(CommandArgs)
}


def args_problem(exc: ValidationError) -> str:
    """A validation failure as one readable line: ``field: what is wrong; …``."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors()
    )


class Command(_Model):
    """A command for a session's Mac. ``args`` is the JSON object of the name's args model
    (COMMAND_ARGS), read with :meth:`parsed_args` by the handler, so args that do not fit are
    answered ``bad_args`` instead of making the whole message unreadable."""

    type: Literal["command"] = "command"
    command_id: str
    name: CommandName
    session_id: str
    args: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, command_id: str, session_id: str, args: CommandArgs) -> Command:
        """The command carrying ``args`` (its name is the args model's)."""
        return cls(
            command_id=command_id, name=args.name, session_id=session_id, args=args.to_json()
        )

    def parsed_args(self) -> CommandArgs:
        """The args as the name's model; raises pydantic's ValidationError when they do not fit."""
        return COMMAND_ARGS[self.name].model_validate(self.args)


class HistoryRequest(_Model):
    type: Literal["history_request"] = "history_request"
    request_id: str
    session_id: str
    before: Annotated[int, Field(ge=1, le=MAX_SEQ + 1)]
    limit: Annotated[int, Field(ge=1, le=MAX_HISTORY_LIMIT)]


class LinkError(_Model):
    type: Literal["error"] = "error"
    code: str
    message: str
    batch: BatchNumber | None = None  # set when the error answers a lines batch instead of an ack


class Pong(_Model):
    type: Literal["pong"] = "pong"


class DecisionAck(_Model):
    """The relay's answer to a ``decision``: in the audit log (now or before), or refused for
    good (``stored`` false, with the error code). The Mac keeps a decision until this comes."""

    type: Literal["decision_ack"] = "decision_ack"
    id: str = Field(min_length=1, max_length=64)
    stored: bool = True
    code: str | None = None


RelayMessage = Annotated[
    Welcome | Ack | Events | Command | HistoryRequest | LinkError | Pong | DecisionAck,
    Field(discriminator="type"),
]
relay_message = TypeAdapter(RelayMessage)
