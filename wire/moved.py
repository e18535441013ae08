"""What a moved session's record and files may say: checked before anything is believed.

A move (relay/features/moves.py, agent/moving.py) carries the session's record
(``session.json``, the source's agent/registry.py ``SessionRecord``) beside the folder's archive,
the conversations' transcripts, the event archive and the held messages' attachments. All of it
comes from another Mac: the target and the relay treat it as untrusted data (issue 20). Both
check it with this module, the relay before it carries a byte to the target, the target again
before it places anything. Pure: no I/O.

The files of a move (:func:`files_problem`): ``folder.bin`` and ``session.json``, at most one
``events.jsonl``, a conversation's transcript ``transcripts/<uuid>.jsonl`` and the files of its
own folder ``transcripts/<uuid>/…``, the project's memory ``transcripts/memory/…``, and a held
message's attachment ``attachments/<id><extension>``. Nothing else.

The record (:func:`read_record`, raising :class:`RecordProblem` with a code the phone shows):

- one JSON object of at most ``MAX_RECORD_BYTES``, whose ``id`` is the moving session's;
- every conversation id (``conversation_id``, ``conversation_ids``, ``fork_conversation``) and
  ``parent_id`` a lower-case UUID (they name files and go on claude's command line);
- each transcript that arrived is of a conversation the record names, and the conversation its
  claude goes on with (``--resume``, or ``--resume … --fork-session`` for a fork not yet
  prompted) arrived with it — a conversation the target's Claude Code might find elsewhere in
  its home is never resumed; a session never prompted starts afresh under its own id;
  ``conversation_ids`` keeps only the conversations that arrived;
- held messages: at most ``MAX_MOVED_HELD``, each a HeldMessage within the wire's bounds (a
  ``typing`` one is ``held`` again); each attachment of one still to be typed arrived as its
  file, of its declared size (``attachment_missing``, ``bad_attachment``), and no other
  attachment file did;
- the model a plain name (``MODEL_NAME``) or none; the branch shown plain text or none; times
  and flags of their types or their defaults; the resume scope one of ``RESUME_SCOPES`` or none,
  the handoff a text within ``MAX_MESSAGE_CHARS`` or none, its decisions a count or 0.

What the record says of its permission mode and policy is read here (``permission_mode``, and
``policy`` with only the rules that restrict: ``ask`` and ``deny``), but what the target does
with them is the target's own decision (agent/moving.py ``moved_record``). Paths of the other
Mac (its transcript path, its fork's copy, its worktree), its hook secret, its grants, its
offsets and queued markers are never read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError

from wire.errors import PolicyError
from wire.policy import Policy
from wire.protocol import (
    ATTACHMENT_TYPES,
    MAX_ATTACHMENTS,
    MAX_DECISIONS_COUNT,
    MAX_MESSAGE_CHARS,
    MODEL_NAME,
    RESUME_SCOPES,
    HeldMessage,
    PermissionMode,
    ResumeScope,
)

FOLDER_FILE = "folder.bin"
RECORD_FILE = "session.json"
EVENTS_FILE = "events.jsonl"
TRANSCRIPTS = "transcripts"
ATTACHMENTS = "attachments"
MEMORY = "memory"  # the project's memory folder, beside its conversations

MAX_RECORD_BYTES = 8 * 1024 * 1024
MAX_MOVED_HELD = 100
MAX_CONVERSATIONS = 1000
MAX_BRANCH_CHARS = 255
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HELD_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_ATTACHMENT_FILE = re.compile(
    r"^a[0-9a-f]{24}(?:" + "|".join(re.escape(e) for e in set(ATTACHMENT_TYPES.values())) + ")$"
)
_PART = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}$")  # a name in a transcript's folder
PERMISSION_MODES = frozenset(get_args(PermissionMode))
STILL_TO_TYPE = ("held", "typing")


class RecordProblem(ValueError):
    """What a move carries cannot be believed: ``code`` (``bad_record``,
    ``attachment_missing``, ``bad_attachment``) and why, for the phone."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _bad(message: str) -> RecordProblem:
    return RecordProblem(
        "bad_record", f"the session's record from the other Mac is refused: {message}"
    )


@dataclass(frozen=True)
class MovedRecord:
    """The believable part of a moved session's record."""

    id: str
    conversation_id: str | None
    conversation_ids: tuple[str, ...]
    fork_conversation: str | None
    parent_id: str | None
    permission_mode: str | None  # what the source said (one of PermissionMode) or None
    model: str | None
    policy: dict[str, Any]  # wire/policy.py's JSON form, the restricting rules only
    held: tuple[HeldMessage, ...]
    alive: bool
    ended_by_person: bool
    resting: bool
    created_at: float  # 0.0: not said
    last_alive_at: float
    branch: str | None
    # How it starts again (set_resume): its scope, the handoff a fresh start types, its count.
    resume_scope: ResumeScope | None = None
    handoff: str | None = None
    handoff_decisions: int = 0

    def attachment_files(self) -> dict[str, Any]:
        """The attachment files a move of this record carries, by name: each held message's
        still to be typed (AttachmentInfo by ``attachments/<id><extension>``)."""
        return {
            attachment_name(a.id, a.media_type): a
            for m in self.held
            if m.state in STILL_TO_TYPE
            for a in m.attachments
        }


def attachment_name(attachment_id: str, media_type: str) -> str:
    return f"{ATTACHMENTS}/{attachment_id}{ATTACHMENT_TYPES[media_type]}"


def is_uuid(value: Any) -> bool:
    return isinstance(value, str) and UUID.match(value) is not None


def transcript_of(name: str) -> str | None:
    """The conversation whose main transcript the file ``name`` is (``transcripts/<uuid>.jsonl``),
    else None."""
    rest = name.removeprefix(TRANSCRIPTS + "/")
    if rest != name and rest.endswith(".jsonl") and is_uuid(rest[: -len(".jsonl")]):
        return rest[: -len(".jsonl")]
    return None


def files_problem(names: list[str]) -> str | None:
    """Why a move's list of files is refused (a name that is none of a move's), or None."""
    if FOLDER_FILE not in names or RECORD_FILE not in names:
        return "the folder's archive or the session's record is missing"
    for name in names:
        if name in (FOLDER_FILE, RECORD_FILE, EVENTS_FILE) or transcript_of(name):
            continue
        head, _, rest = name.partition("/")
        if head == ATTACHMENTS and _ATTACHMENT_FILE.match(rest):
            continue
        top, _, inside = rest.partition("/")
        if (
            head == TRANSCRIPTS
            and (top == MEMORY or is_uuid(top))
            and inside
            and all(_PART.match(p) for p in inside.split("/"))
        ):
            continue
        return f"{name[:120]!r} is not a file a move carries"
    return None


def read_record(raw: bytes, session_id: str, files: Mapping[str, int]) -> MovedRecord:
    """The record ``raw`` (``session.json``) of the session ``session_id`` moving with ``files``
    (every file's name and size), checked as the module says; RecordProblem otherwise."""
    if len(raw) > MAX_RECORD_BYTES:
        raise _bad(f"it is {len(raw):,} bytes, more than {MAX_RECORD_BYTES:,}")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _bad("it is not JSON") from None
    if not isinstance(data, dict):
        raise _bad("it is not a JSON object")
    if not is_uuid(session_id) or data.get("id") != session_id:
        raise _bad(f"it is the record of {str(data.get('id'))[:80]!r}, not of session {session_id}")
    problem = files_problem(list(files))
    if problem is not None:
        raise _bad(problem)
    conversation_id = _uuid_or_none(data.get("conversation_id"), "conversation_id")
    fork = _uuid_or_none(data.get("fork_conversation"), "fork_conversation")
    parent_id = _uuid_or_none(data.get("parent_id"), "parent_id")
    said = data.get("conversation_ids", [])
    if not isinstance(said, list) or len(said) > MAX_CONVERSATIONS:
        raise _bad(f"conversation_ids is not a list of at most {MAX_CONVERSATIONS}")
    for value in said:
        _uuid_or_none(value, "conversation_ids")
    arrived = {c for name in files if (c := transcript_of(name)) is not None}
    unnamed = sorted(arrived - {*said, conversation_id, fork})
    if unnamed:
        raise _bad(f"a transcript of conversation {unnamed[0]} arrived, which it does not name")
    _check_resumed(session_id, conversation_id, fork, arrived)
    held = _held(data.get("held", []))
    checked = MovedRecord(
        id=session_id,
        conversation_id=conversation_id,
        conversation_ids=tuple(
            dict.fromkeys(c for c in said if c in arrived or c == conversation_id)
        ),
        fork_conversation=fork,
        parent_id=parent_id,
        permission_mode=m if (m := data.get("permission_mode")) in PERMISSION_MODES else None,
        model=m if isinstance(m := data.get("model"), str) and re.match(MODEL_NAME, m) else None,
        policy=restricting(data.get("policy")),
        held=held,
        alive=_flag(data.get("alive"), True),
        ended_by_person=_flag(data.get("ended_by_person"), False),
        resting=_flag(data.get("resting"), False),
        created_at=_time(data.get("created_at")),
        last_alive_at=_time(data.get("last_alive_at")),
        branch=_branch(data.get("branch")),
        resume_scope=next((r for r in RESUME_SCOPES if r == data.get("resume_scope")), None),
        handoff=h
        if isinstance(h := data.get("handoff"), str) and len(h) <= MAX_MESSAGE_CHARS
        else None,
        handoff_decisions=d
        if isinstance(d := data.get("handoff_decisions"), int)
        and not isinstance(d, bool)
        and 0 <= d <= MAX_DECISIONS_COUNT
        else 0,
    )
    _check_attachments(checked, files)
    return checked


def restricting(policy: Any) -> dict[str, Any]:
    """A policy (wire/policy.py's JSON form) less all it allows: "allow all" and every allow
    rule go, the ask and deny rules stay. RecordProblem when it is not a policy."""
    if policy is None or policy == {}:
        return Policy().to_json()
    if not isinstance(policy, Mapping):
        raise _bad("its policy is not a JSON object")
    kept: dict[str, Any] = {}
    for part in ("categories", "tools"):
        rules = policy.get(part) or {}
        if not isinstance(rules, Mapping):
            raise _bad(f"its policy's {part} are not a JSON object")
        kept[part] = {name: rule for name, rule in rules.items() if rule != "allow"}
    try:
        return Policy.from_json(kept).to_json()
    except PolicyError as exc:
        raise _bad(f"its policy: {exc}") from None


def _uuid_or_none(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not is_uuid(value):
        raise _bad(f"{name} {str(value)[:80]!r} is not a conversation id (a lower-case UUID)")
    return str(value)


def _check_resumed(
    session_id: str, conversation_id: str | None, fork: str | None, arrived: set[str]
) -> None:
    """The conversation the session's claude goes on with arrived (or it starts afresh)."""
    if fork is not None and conversation_id in (None, session_id) and session_id not in arrived:
        if fork not in arrived:  # a fork never prompted: claude forks the conversation again
            raise _bad(f"the conversation {fork} the session forks did not arrive with it")
    elif conversation_id not in (None, session_id) and conversation_id not in arrived:
        raise _bad(f"its conversation {conversation_id} did not arrive with it")


def _held(value: Any) -> tuple[HeldMessage, ...]:
    if not isinstance(value, list) or len(value) > MAX_MOVED_HELD:
        raise _bad(f"its held messages are not a list of at most {MAX_MOVED_HELD}")
    held = []
    for item in value:
        try:
            message = HeldMessage.model_validate(item)
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise _bad(f"a held message: {where}: {problem['msg']}") from None
        if not HELD_ID.match(message.id) or len(message.text) > MAX_MESSAGE_CHARS:
            raise _bad(f"a held message {message.id[:40]!r} is not one the phone sent")
        if len(message.attachments) > MAX_ATTACHMENTS:
            raise _bad(f"a held message has more than {MAX_ATTACHMENTS} attachments")
        if message.state == "typing":  # it was being typed there: it is typed here
            message = message.model_copy(update={"state": "held"})
        held.append(message)
    return tuple(held)


def _check_attachments(record: MovedRecord, files: Mapping[str, int]) -> None:
    wanted = record.attachment_files()
    for name, info in wanted.items():
        if name not in files:
            raise RecordProblem(
                "attachment_missing",
                f"the attachment {info.name!r} of a held message did not come with the session: "
                "cancel that message on the other Mac (or send it again), then move the session",
            )
        if files[name] != info.size:
            raise RecordProblem(
                "bad_attachment",
                f"the attachment {info.name!r} of a held message is {files[name]:,} bytes, "
                f"not the {info.size:,} it was saved with",
            )
    for name in files:
        if name.startswith(ATTACHMENTS + "/") and name not in wanted:
            raise RecordProblem(
                "bad_attachment", f"{name[:80]!r} is the attachment of no held message"
            )


def _flag(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _time(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and 0 < value < 2**40 else 0.0


def _branch(value: Any) -> str | None:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_BRANCH_CHARS:
        return None
    return value if value.isprintable() and not any(c.isspace() for c in value) else None
