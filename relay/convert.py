"""Turn one Claude Code transcript line into display events.

A pure module: no I/O, no clock, no state kept between calls. ``convert_line`` reads one JSONL
line as Claude Code 2.1.328 writes it and returns the display events the page draws plus the
line's facts (usage, cost, permission mode, ...) that later features need.

Choices made here (the page relies on them):

* Every line type and subtype we know has an explicit entry in a table below (``LINE_TYPES``,
  ``SYSTEM_SUBTYPES``, ``ATTACHMENT_TYPES``, ``USER_BLOCK_TYPES``, ``ASSISTANT_BLOCK_TYPES``;
  ``is_handled`` asks them). An unknown top-level ``type`` gives one UNREADABLE marker. Unknown
  attachment types give no event (attachments are context for the model, never shown), unknown
  system subtypes give an INFO marker when they carry text, and unknown content blocks are skipped.
* The compaction summary (a user line with ``isCompactSummary``) gives no event: the
  ``compact_boundary`` line just before it already gives the "📦 context compacted" marker.
* /clear gives one CLEARED marker, from its ``<command-name>/clear</command-name>`` line. 2.1.328
  also writes a ``system/local_command`` line for it; that line is the command's (empty) output and
  gives no event, so the page never shows the marker twice.
* A tool use the person rejected gives its TOOL_RESULT (``is_error``) and then a REJECTED marker
  with the same ``tool_use_id``.
* Claude Code's synthetic "No response requested." answer (written on resume after an interrupt)
  gives no event: Claude Code itself does not show it.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from wire.config import SETTINGS
from wire.markers import BRIDGE_LINE_TYPE, BRIDGE_MARKERS
from wire.protocol import DisplayEvent, EventKind, MarkerKind
from wire.tools import one_line, summarize_tool_input

if TYPE_CHECKING:
    from wire.config import Config

__all__ = [
    "ASSISTANT_BLOCK_TYPES",
    "ATTACHMENT_TYPES",
    "DEFAULT_LIMITS",
    "LINE_TYPES",
    "SYSTEM_SUBTYPES",
    "UNKNOWN_AGENT_ID",
    "USER_BLOCK_TYPES",
    "Conversion",
    "ConversionLimits",
    "LineFacts",
    "convert_line",
    "is_handled",
    "unwrap_pasted",
]


def _setting_default(name: str) -> int:
    # wire.config is the single source of defaults; mirror it instead of repeating numbers.
    for setting in SETTINGS:
        if setting.name == name:
            return int(setting.default)
    raise LookupError(name)


@dataclass(frozen=True, slots=True)
class ConversionLimits:
    """How much of long tool texts an event keeps."""

    tool_result_max_chars: int = _setting_default("tool_result_max_chars")
    tool_input_max_chars: int = _setting_default("tool_input_max_chars")

    def __post_init__(self) -> None:
        if self.tool_result_max_chars < 0 or self.tool_input_max_chars < 0:
            raise ValueError("conversion limits must not be negative")

    @classmethod
    def from_config(cls, config: Config) -> ConversionLimits:
        return cls(
            tool_result_max_chars=config.int("tool_result_max_chars"),
            tool_input_max_chars=config.int("tool_input_max_chars"),
        )


DEFAULT_LIMITS: Final = ConversionLimits()
# Texts kept whole: a line converted again for the page's "Show all".
_UNCUT: Final = ConversionLimits(
    tool_result_max_chars=sys.maxsize, tool_input_max_chars=sys.maxsize
)


@dataclass(frozen=True, slots=True)
class LineFacts:
    """Data from a line that makes no (or not only) display events but later features need."""

    # The line's "type"; None when the line is not a JSON object with a string "type".
    line_type: str | None = None
    uuid: str | None = None
    # The line's sessionId (Claude Code calls the conversation id sessionId).
    conversation_id: str | None = None
    # Assistant message.id: Claude Code writes one line per content block, repeating id + usage.
    message_id: str | None = None
    # The model that answered (assistant lines, model attachments); never "<synthetic>".
    model: str | None = None
    usage: dict[str, Any] | None = None  # assistant message.usage as written
    cost_state: dict[str, Any] | None = None  # the whole cost-state line
    title: str | None = None  # custom-title / ai-title / summary lines
    permission_mode: str | None = None  # permission-mode lines and user lines' permissionMode
    tools_used: list[str] | None = None  # tools-used lines
    agent_id: str | None = None  # sidechain (subagent) agentId
    files_touched: list[str] = field(default_factory=list)  # paths from tool_use inputs
    subtype: str | None = None  # a system line's subtype (stop_hook_summary, turn_duration…)
    # The text of a compaction summary (a user line with isCompactSummary), which is not shown
    compact_summary: str | None = None


@dataclass(frozen=True, slots=True)
class Conversion:
    events: list[DisplayEvent]
    facts: LineFacts
    # The line's JSON object as parsed here, for the few readers that need what the facts do not
    # carry (read it, never change it): the line is parsed once. None for an unreadable line.
    line: dict[str, Any] | None = None


# ---------------------------------------------------------------------------
# Fixed texts and small limits of the display
# ---------------------------------------------------------------------------

_TYPE_NAME_CHARS: Final = 40  # how much of an unknown type name a marker repeats
# Older transcripts mark sidechain lines without an agentId; the page still has to tell them apart.
UNKNOWN_AGENT_ID: Final = "sidechain"

_SYNTHETIC_MODEL: Final = "<synthetic>"
_NO_RESPONSE: Final = "No response requested."
_REJECTED_RESULT: Final = "User rejected tool use"
_REJECTED_KIND: Final = "user-rejected"
_REJECTED_TEXT_PREFIX: Final = "The user doesn't want to proceed with this tool use"
_INTERRUPT_PREFIX: Final = "[Request interrupted by user"
_INTERRUPT_TOOL_USE: Final = "[Request interrupted by user for tool use]"

_TEXT_COMPACTED: Final = "📦 context compacted"
_TEXT_CLEARED: Final = "🧹 /clear · conversation cleared"
_TEXT_INTERRUPTED: Final = "Interrupted by user"
_TEXT_INTERRUPTED_TOOL: Final = "Interrupted by user during a tool use"
_TEXT_REJECTED: Final = "Rejected by user"

# Terminal escapes in local command output (colour, OSC links): compiled once, used per line.
_ANSI_RE: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_WRAPPER_TAG_RE: Final = re.compile(
    r"</?(?:local-command-stdout|local-command-stderr|bash-stdout|bash-stderr|bash-input)>"
)

_JsonObj = dict[str, Any]


class _BadShape(Exception):
    """A line of a known type whose fields are not shaped as expected."""


# Anything a malformed line can make the handlers raise. ValueError covers pydantic's
# ValidationError (a field of the wrong type); RecursionError absurdly deep input.
_SHAPE_ERRORS: Final = (_BadShape, TypeError, AttributeError, KeyError, ValueError, RecursionError)


# ---------------------------------------------------------------------------
# Per-line context
# ---------------------------------------------------------------------------


class _Ctx:
    """What one call learns while converting a line (local to the call, never shared)."""

    __slots__ = (
        "agent_id",
        "cost_state",
        "events",
        "files",
        "limits",
        "message_id",
        "model",
        "permission_mode",
        "timestamp",
        "title",
        "tools_used",
        "usage",
        "uuid",
    )

    def __init__(
        self,
        limits: ConversionLimits,
        timestamp: str | None,
        uuid: str | None,
        agent_id: str | None,
    ) -> None:
        self.limits = limits
        self.timestamp = timestamp
        self.uuid = uuid
        self.agent_id = agent_id
        self.events: list[DisplayEvent] = []
        self.files: list[str] = []
        self.message_id: str | None = None
        self.model: str | None = None
        self.usage: dict[str, Any] | None = None
        self.cost_state: dict[str, Any] | None = None
        self.title: str | None = None
        self.permission_mode: str | None = None
        self.tools_used: list[str] | None = None

    def add(self, kind: EventKind, **fields: Any) -> None:
        self.events.append(
            DisplayEvent(
                kind=kind,
                timestamp=self.timestamp,
                uuid=self.uuid,
                agent_id=self.agent_id,
                **fields,
            )
        )

    def marker(self, marker: MarkerKind, text: str, **fields: Any) -> None:
        self.add(EventKind.MARKER, marker=marker, text=text, **fields)


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def _obj(value: object, what: str) -> _JsonObj:
    if isinstance(value, dict):
        return value
    raise _BadShape(f"{what} is not an object")


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) > limit:
        return text[:limit], True
    return text, False


def _trim_strings(value: Any, limit: int) -> tuple[Any, bool]:
    """Shorten every string longer than ``limit`` inside ``value``; copy only what changes."""
    if isinstance(value, str):
        return _cut(value, limit)
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for key, item in value.items():
            new, cut = _trim_strings(item, limit)
            if cut:
                if out is None:
                    out = dict(value)
                out[key] = new
        return (value, False) if out is None else (out, True)
    if isinstance(value, list):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new, cut = _trim_strings(item, limit)
            if cut:
                if items is None:
                    items = list(value)
                items[index] = new
        return (value, False) if items is None else (items, True)
    return value, False


def _tag(text: str, name: str) -> str | None:
    """The text inside ``<name>…</name>`` (to the end if unclosed), or None."""
    opening = f"<{name}>"
    start = text.find(opening)
    if start < 0:
        return None
    start += len(opening)
    end = text.find(f"</{name}>", start)
    return text[start:] if end < 0 else text[start:end]


def _clean_output(text: str) -> str:
    return _ANSI_RE.sub("", _WRAPPER_TAG_RE.sub("", text)).strip()


# ---------------------------------------------------------------------------
# Content blocks
# ---------------------------------------------------------------------------

_FILE_KEYS: Final = ("file_path", "path", "notebook_path")


def _tool_use(block: _JsonObj, ctx: _Ctx, message_id: str | None, model: str | None) -> None:
    name = block.get("name")
    if not isinstance(name, str):
        raise _BadShape("tool_use without a name")
    tool_input = block.get("input")
    if tool_input is None:
        tool_input = {}
    elif not isinstance(tool_input, dict):
        raise _BadShape("tool_use input is not an object")
    for key in _FILE_KEYS:
        path = tool_input.get(key)
        if isinstance(path, str) and path and path not in ctx.files:
            ctx.files.append(path)
    kept, cut = _trim_strings(tool_input, ctx.limits.tool_input_max_chars)
    ctx.add(
        EventKind.TOOL_USE,
        tool=name,
        tool_use_id=_str(block.get("id")),
        summary=summarize_tool_input(name, tool_input),
        input=kept,
        truncated=cut,
        model=model,
        message_id=message_id,
    )


def _result_text(content: object) -> str:
    """Tool result content (a string or a list of blocks) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _BadShape("tool_result content is neither text nor a list")
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
            continue
        block = _obj(item, "tool_result content block")
        kind = block.get("type")
        if kind == "text":
            parts.append(_str(block.get("text")) or "")
        elif kind == "image":
            parts.append("[image]")
        elif kind == "tool_reference":
            # ToolSearch loads deferred tools; its result only names them.
            parts.append(f"[tool loaded: {_str(block.get('tool_name')) or '?'}]")
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def _is_rejection(line: _JsonObj, text: str) -> bool:
    return (
        line.get("toolUseResult") == _REJECTED_RESULT
        or line.get("toolDenialKind") == _REJECTED_KIND
        or text.startswith(_REJECTED_TEXT_PREFIX)
    )


# Auto mode's classifier refused the call (2.1.332, tests/fixtures/auto_mode/2.1.332/denied): the
# tool_result's line says so; its text carries the reason.
_AUTO_MODE_DENIAL: Final = "automode-blocked"
_TEXT_DENIED: Final = "⛔ Blocked by auto mode"
_AUTO_MODE_REASON = re.compile(
    r"denied by the Claude Code auto mode classifier\. Reason: (.*?)(?:\. If you have|$)", re.S
)


def _auto_mode_reason(line: _JsonObj, text: str) -> str | None:
    """The classifier's reason when auto mode denied this call, else None."""
    decision = line.get("permissionDecision")
    code = decision.get("reasonCode") if isinstance(decision, dict) else None
    if line.get("toolDenialKind") != _AUTO_MODE_DENIAL and code != "classifier:auto-mode":
        return None
    found = _AUTO_MODE_REASON.search(text)
    return (found.group(1).strip() if found else "") or "no reason given"


def _tool_result(block: _JsonObj, line: _JsonObj, ctx: _Ctx) -> None:
    text = _result_text(block.get("content"))
    kept, cut = _cut(text, ctx.limits.tool_result_max_chars)
    is_error = block.get("is_error") is True
    tool_use_id = _str(block.get("tool_use_id"))
    ctx.add(
        EventKind.TOOL_RESULT,
        text=kept,
        tool_use_id=tool_use_id,
        is_error=is_error,
        full_length=len(text),
        truncated=cut,
    )
    if is_error and _is_rejection(line, text):
        ctx.marker(MarkerKind.REJECTED, _TEXT_REJECTED, tool_use_id=tool_use_id)
    reason = _auto_mode_reason(line, text) if is_error else None
    if reason is not None:
        text = f"{_TEXT_DENIED}: {one_line(reason, 500)}"
        ctx.add(EventKind.DENIAL, text=text, tool_use_id=tool_use_id)


# ---------------------------------------------------------------------------
# User text: prompts and the special texts Claude Code writes as user messages
# ---------------------------------------------------------------------------


def _command(text: str, ctx: _Ctx) -> None:
    name = (_tag(text, "command-name") or _tag(text, "command-message") or "").strip()
    name = name.lstrip("/")
    if not name:
        return  # a command line without a command names nothing to show
    if name == "clear":
        ctx.marker(MarkerKind.CLEARED, _TEXT_CLEARED)
        return
    args = (_tag(text, "command-args") or "").strip()
    shown = f"/{name} {args}" if args else f"/{name}"
    ctx.marker(MarkerKind.LOCAL_COMMAND, one_line(shown))


def _command_output(text: str, ctx: _Ctx) -> None:
    output = _clean_output(text)
    if not output:
        return  # commands like /clear print nothing; an empty marker says nothing
    kept, cut = _cut(output, ctx.limits.tool_result_max_chars)
    ctx.marker(MarkerKind.LOCAL_COMMAND, kept, full_length=len(output), truncated=cut)


def _bash_input(text: str, ctx: _Ctx) -> None:
    # "!command" typed in the prompt box runs in a shell without the model.
    command = (_tag(text, "bash-input") or "").strip()
    ctx.marker(MarkerKind.LOCAL_COMMAND, one_line(f"! {command}"))


def _task_notification(text: str, ctx: _Ctx) -> None:
    summary = (_tag(text, "summary") or "").strip()
    status = (_tag(text, "status") or "").strip()
    head = summary or (f"Background task {status}" if status else "Background task finished")
    result = (_tag(text, "result") or "").strip()
    kept, cut = _cut(result, ctx.limits.tool_result_max_chars)
    tool_use_id = _tag(text, "tool-use-id")
    ctx.marker(
        MarkerKind.TASK_NOTIFICATION,
        f"{head}\n{kept}" if kept else head,
        tool_use_id=tool_use_id.strip() if tool_use_id else None,
        full_length=len(result) if result else None,
        truncated=cut,
    )


def _skip_text(text: str, ctx: _Ctx) -> None:
    """Context for the model (reminders, caveats), not something the person said."""


_TextHandler = Callable[[str, _Ctx], None]

# Texts Claude Code writes as user messages that are not typed prompts, by how they start.
_TAGGED_TEXTS: Final[tuple[tuple[str, _TextHandler], ...]] = (
    ("<command-name>", _command),
    ("<command-message>", _command),  # older versions put the message tag first
    ("<local-command-stdout>", _command_output),
    ("<local-command-stderr>", _command_output),
    ("<bash-input>", _bash_input),
    ("<bash-stdout>", _command_output),
    ("<bash-stderr>", _command_output),
    ("<task-notification>", _task_notification),
    ("<system-reminder>", _skip_text),
    ("<local-command-caveat>", _skip_text),
)


def _special_text(text: str) -> _TextHandler | None:
    if text.startswith("<"):
        for prefix, handler in _TAGGED_TEXTS:
            if text.startswith(prefix):
                return handler
    elif text.startswith(_INTERRUPT_PREFIX):
        return _interrupted
    return None


def _interrupted(text: str, ctx: _Ctx) -> None:
    tool_use = text.startswith(_INTERRUPT_TOOL_USE)
    ctx.marker(MarkerKind.INTERRUPTED, _TEXT_INTERRUPTED_TOOL if tool_use else _TEXT_INTERRUPTED)


# ---------------------------------------------------------------------------
# Line handlers
# ---------------------------------------------------------------------------

_Handler = Callable[[_JsonObj, _Ctx], None]


def _content_blocks(message: _JsonObj) -> list[Any]:
    content = message.get("content")
    if isinstance(content, list):
        return content
    if isinstance(content, str):
        return [content]
    raise _BadShape("message.content is neither text nor a list")


def _user(line: _JsonObj, ctx: _Ctx) -> None:
    blocks = _content_blocks(_obj(line.get("message"), "message"))
    mode = line.get("permissionMode")
    if isinstance(mode, str):
        ctx.permission_mode = mode
    if line.get("isMeta") is True or line.get("isCompactSummary") is True:
        return  # caveats, reminders, skill bodies, the compaction summary: not shown
    prompt: list[str] = []

    def flush() -> None:
        if prompt:
            ctx.add(EventKind.USER, text="\n".join(prompt))
            prompt.clear()

    for item in blocks:
        if isinstance(item, str):
            text = item
        else:
            block = _obj(item, "content block")
            kind = block.get("type")
            if kind == "tool_result":
                flush()
                _tool_result(block, line, ctx)
                continue
            if kind != "text":
                placeholder = _USER_ATTACHED_BLOCKS.get(kind) if isinstance(kind, str) else None
                if placeholder is not None:
                    prompt.append(placeholder)
                continue  # other block types have nothing to draw
            value = block.get("text")
            if not isinstance(value, str):
                raise _BadShape("text block without text")
            text = value
        text = unwrap_pasted(text)
        special = _special_text(text)
        if special is None:
            if text:
                prompt.append(text)
        else:
            flush()
            special(text, ctx)
    flush()


# Claude Code 2.1.332 writes a long pasted prompt (every message the bridge types is a paste)
# wrapped: "\n\n<pasted_content id="3dd1">\n" + the text + "\n</pasted_content id="3dd1">\n".
_PASTED_RE: Final = re.compile(
    r'\s*<pasted_content id="([^"\n]{0,40})">\n(.*)\n</pasted_content id="\1">\s*', re.S
)


def unwrap_pasted(text: str) -> str:
    """A prompt that is nothing but one pasted text, as the person wrote it (the wrapper is
    Claude Code's, for the model); any other prompt as it is."""
    found = _PASTED_RE.fullmatch(text)
    return found.group(2) if found else text


# Blocks a person can attach to a prompt, drawn as a placeholder inside the USER event.
_USER_ATTACHED_BLOCKS: Final[Mapping[str, str]] = {
    "image": "[image]",
    "document": "[document]",
}


def _assistant(line: _JsonObj, ctx: _Ctx) -> None:
    message = _obj(line.get("message"), "message")
    blocks = _content_blocks(message)
    message_id = _str(message.get("id"))
    model = _str(message.get("model"))
    usage = message.get("usage")
    ctx.message_id = message_id
    ctx.usage = usage if isinstance(usage, dict) else None
    ctx.model = model if model != _SYNTHETIC_MODEL else None
    if line.get("isApiErrorMessage") is True:
        text = "\n".join(_block_text(item) for item in blocks).strip()
        ctx.marker(MarkerKind.API_ERROR, text or "API error", model=model, message_id=message_id)
        return
    for item in blocks:
        if isinstance(item, str):
            block: _JsonObj = {"type": "text", "text": item}
        else:
            block = _obj(item, "content block")
        kind = block.get("type")
        if kind == "text":
            value = block.get("text")
            if not isinstance(value, str):
                raise _BadShape("text block without text")
            if not value or value.isspace():
                continue
            if model == _SYNTHETIC_MODEL and value == _NO_RESPONSE:
                continue
            ctx.add(EventKind.ASSISTANT, text=value, model=model, message_id=message_id)
        elif kind == "thinking":
            ctx.add(
                EventKind.THINKING,
                text=_str(block.get("thinking")) or "",
                model=model,
                message_id=message_id,
            )
        elif kind == "redacted_thinking":
            ctx.add(EventKind.THINKING, text="", model=model, message_id=message_id)
        elif kind in ("tool_use", "server_tool_use"):
            _tool_use(block, ctx, message_id, model)
        # Other block types (server tool results, future kinds) have nothing to draw.


def _block_text(item: object) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        return _str(item.get("text")) or ""
    raise _BadShape("content block is not an object")


# -- system lines ------------------------------------------------------------


def _compact_boundary(line: _JsonObj, ctx: _Ctx) -> None:
    ctx.marker(MarkerKind.COMPACTED, _TEXT_COMPACTED)


def _local_command(line: _JsonObj, ctx: _Ctx) -> None:
    # The command itself was drawn from its <command-name> user line (for /clear, the CLEARED
    # marker); this line carries only its output, usually empty.
    content = _str(line.get("content"))
    if content:
        _command_output(content, ctx)


def _api_error_retry(line: _JsonObj, ctx: _Ctx) -> None:
    # Claude Code records API failures it retries as system lines; the shape varies by version.
    attempt = line.get("retryAttempt")
    most = line.get("maxRetries")
    text = _str(line.get("content")) or "API error"
    if isinstance(attempt, int) and isinstance(most, int):
        text = f"{text} · retrying ({attempt}/{most})"
    ctx.marker(MarkerKind.API_ERROR, one_line(text))


def _system_other(line: _JsonObj, ctx: _Ctx) -> None:
    # A subtype we do not know: show its text, if any, rather than hide something Claude Code shows.
    content = _str(line.get("content"))
    if content:
        text = _clean_output(content)
        if text:
            kept, cut = _cut(text, ctx.limits.tool_result_max_chars)
            ctx.marker(MarkerKind.INFO, kept, full_length=len(text), truncated=cut)


def _noise(line: _JsonObj, ctx: _Ctx) -> None:
    """Bookkeeping Claude Code writes for itself: no event, no facts."""


_SYSTEM_HANDLERS: Final[Mapping[str, _Handler]] = {
    "compact_boundary": _compact_boundary,
    "local_command": _local_command,
    "stop_hook_summary": _noise,
    "turn_duration": _noise,
    "api_error": _api_error_retry,
    "informational": _system_other,
}


def _system(line: _JsonObj, ctx: _Ctx) -> None:
    subtype = line.get("subtype")
    handler = _SYSTEM_HANDLERS.get(subtype) if isinstance(subtype, str) else None
    (handler or _system_other)(line, ctx)


# -- attachment lines --------------------------------------------------------


def _hook_decision(attachment: _JsonObj, ctx: _Ctx) -> None:
    decision = attachment.get("decision")
    hook = _str(attachment.get("hookEvent")) or "PermissionRequest"
    tool_use_id = _str(attachment.get("toolUseID"))
    if decision == "allow":
        ctx.marker(MarkerKind.HOOK_ALLOWED, f"Allowed by {hook} hook", tool_use_id=tool_use_id)
    elif decision == "deny":
        ctx.marker(MarkerKind.HOOK_DENIED, f"Denied by {hook} hook", tool_use_id=tool_use_id)


def _model_attachment(attachment: _JsonObj, ctx: _Ctx) -> None:
    identity = attachment.get("identity")
    if isinstance(identity, dict):
        ctx.model = _str(identity.get("modelId"))


def _attachment_noise(attachment: _JsonObj, ctx: _Ctx) -> None:
    """Context Claude Code gives the model; nothing to draw."""


_ATTACHMENT_HANDLERS: Final[Mapping[str, _Handler]] = {
    "hook_permission_decision": _hook_decision,
    "model": _model_attachment,
    "environment": _attachment_noise,
    "deferred_tools_delta": _attachment_noise,
    "deferred_tools_record": _attachment_noise,
    "agent_listing_delta": _attachment_noise,
    "skill_listing": _attachment_noise,
    "date": _attachment_noise,
    "prompt_snapshot": _attachment_noise,
    "session_context": _attachment_noise,
    "remote_session_change": _attachment_noise,
    "hook_cancelled": _attachment_noise,
    "plan_mode": _attachment_noise,
    "plan_mode_exit": _attachment_noise,
}


def _attachment(line: _JsonObj, ctx: _Ctx) -> None:
    attachment = _obj(line.get("attachment"), "attachment")
    kind = attachment.get("type")
    handler = _ATTACHMENT_HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        handler(attachment, ctx)
    # Unknown attachment types: no event. New ones appear often and they are model context.


# -- lines that only carry facts ---------------------------------------------


def _cost_state(line: _JsonObj, ctx: _Ctx) -> None:
    ctx.cost_state = line


def _permission_mode(line: _JsonObj, ctx: _Ctx) -> None:
    ctx.permission_mode = _str(line.get("permissionMode"))


def _tools_used(line: _JsonObj, ctx: _Ctx) -> None:
    tools = line.get("tools")
    if isinstance(tools, list):
        ctx.tools_used = [tool for tool in tools if isinstance(tool, str)]


def _bridge_marker(line: _JsonObj, ctx: _Ctx) -> None:
    """One of the agent's own marker lines (the format is wire/markers.py's)."""
    kind = line.get("marker")
    text = _str(line.get("text"))
    if kind not in BRIDGE_MARKERS or not text:
        raise _BadShape(f"a bridge marker line with marker {kind!r}")
    ctx.marker(MarkerKind(kind), text)


def _title_from(key: str) -> _Handler:
    def handler(line: _JsonObj, ctx: _Ctx) -> None:
        ctx.title = _str(line.get(key))

    return handler


_LINE_HANDLERS: Final[Mapping[str, _Handler]] = {
    "user": _user,
    "assistant": _assistant,
    "system": _system,
    "attachment": _attachment,
    "cost-state": _cost_state,
    "permission-mode": _permission_mode,
    "tools-used": _tools_used,
    "custom-title": _title_from("customTitle"),  # /rename
    "ai-title": _title_from("aiTitle"),
    "summary": _title_from("summary"),  # older versions' session summary
    "file-history-snapshot": _noise,
    "file-history-delta": _noise,
    "api-request": _noise,
    "api-request-blob": _noise,
    "api-request-shape": _noise,
    "atis-latch": _noise,
    "queue-operation": _noise,
    "last-prompt": _noise,
    "mode": _noise,
    "agent-name": _noise,
    BRIDGE_LINE_TYPE: _bridge_marker,
}

LINE_TYPES: Final[frozenset[str]] = frozenset(_LINE_HANDLERS)
SYSTEM_SUBTYPES: Final[frozenset[str]] = frozenset(_SYSTEM_HANDLERS)
ATTACHMENT_TYPES: Final[frozenset[str]] = frozenset(_ATTACHMENT_HANDLERS)
# "str" stands for message.content given as one string instead of a list of blocks.
USER_BLOCK_TYPES: Final[frozenset[str]] = frozenset(
    {"str", "text", "tool_result", *_USER_ATTACHED_BLOCKS}
)
ASSISTANT_BLOCK_TYPES: Final[frozenset[str]] = frozenset(
    {"str", "text", "thinking", "redacted_thinking", "tool_use", "server_tool_use"}
)
_SUBTYPE_TABLES: Final[Mapping[str, frozenset[str]]] = {
    "system": SYSTEM_SUBTYPES,
    "attachment": ATTACHMENT_TYPES,
    "user": USER_BLOCK_TYPES,
    "assistant": ASSISTANT_BLOCK_TYPES,
}


def is_handled(line_type: str, subtype: str = "") -> bool:
    """Whether a line type (and its subtype, attachment type or content block type) has an
    explicit entry in this module's tables."""
    if line_type not in LINE_TYPES:
        return False
    table = _SUBTYPE_TABLES.get(line_type)
    return table is None or not subtype or subtype in table


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def _unreadable(
    reason: str,
    line_type: str | None = None,
    timestamp: str | None = None,
    uuid: str | None = None,
    conversation_id: str | None = None,
    agent_id: str | None = None,
) -> Conversion:
    event = DisplayEvent(
        kind=EventKind.MARKER,
        marker=MarkerKind.UNREADABLE,
        text=f"A transcript line could not be read ({reason})",
        timestamp=timestamp,
        uuid=uuid,
        agent_id=agent_id,
    )
    facts = LineFacts(
        line_type=line_type, uuid=uuid, conversation_id=conversation_id, agent_id=agent_id
    )
    return Conversion([event], facts)


def _refuse_constant(name: str) -> float:
    # NaN and Infinity are not JSON (Claude Code never writes them) and a browser's JSON.parse
    # refuses them: a line holding one must not reach a phone inside an event.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):  # 1e999 reads as infinity
        raise ValueError(f"{literal[:20]} is out of range")
    return value


def convert_line(
    text: str | bytes, limits: ConversionLimits = DEFAULT_LIMITS, *, cut: bool = True
) -> Conversion:
    """Turn one transcript line into zero or more display events and the line's facts.

    With ``cut=False`` no text is shortened (``limits`` is not used): the whole text of an event
    whose stored copy was cut. Never raises on bad input: a line that cannot be read gives
    exactly one UNREADABLE marker.
    """
    if not cut:
        limits = _UNCUT
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            return _unreadable("not valid UTF-8")
    if not text or text.isspace():
        return _unreadable("empty line")
    try:
        line = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return _unreadable("not valid JSON")
    if not isinstance(line, dict):
        return _unreadable("not a JSON object")
    line_type = line.get("type")
    if not isinstance(line_type, str):
        return _unreadable("no line type")

    timestamp = _str(line.get("timestamp"))
    uuid = _str(line.get("uuid"))
    conversation_id = _str(line.get("sessionId"))
    agent_id = _str(line.get("agentId"))
    if agent_id is None and line.get("isSidechain") is True:
        agent_id = UNKNOWN_AGENT_ID

    handler = _LINE_HANDLERS.get(line_type)
    if handler is None:
        reason = f"unknown line type {line_type[:_TYPE_NAME_CHARS]!r}"
        return _unreadable(reason, line_type, timestamp, uuid, conversation_id, agent_id)
    ctx = _Ctx(limits, timestamp, uuid, agent_id)
    try:
        handler(line, ctx)
    except _SHAPE_ERRORS:
        reason = f"unexpected shape of a {line_type!r} line"
        return _unreadable(reason, line_type, timestamp, uuid, conversation_id, agent_id)
    facts = LineFacts(
        line_type=line_type,
        uuid=uuid,
        conversation_id=conversation_id,
        message_id=ctx.message_id,
        model=ctx.model,
        usage=ctx.usage,
        cost_state=ctx.cost_state,
        title=ctx.title,
        permission_mode=ctx.permission_mode,
        tools_used=ctx.tools_used,
        agent_id=agent_id,
        files_touched=ctx.files,
        subtype=_str(line.get("subtype")) if line_type == "system" else None,
        compact_summary=_compact_summary(line) if line_type == "user" else None,
    )
    return Conversion(ctx.events, facts, line)


def _compact_summary(line: _JsonObj) -> str | None:
    """The summary text of a compaction summary line (its content's text blocks joined)."""
    if line.get("isCompactSummary") is not True:
        return None
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("text")
        )
    return None
