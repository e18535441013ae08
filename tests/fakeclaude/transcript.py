"""Transcript writing: captured transcript lines, rewritten for this session, appended one by one.

A turn is written as a sequence of *segments*: slices of the real transcripts in
``tests/fixtures/transcripts`` (``SEGMENTS``). Each line is rewritten before it is appended:

* ``sessionId`` / ``session_id`` -> the current conversation id, ``promptId`` -> the current prompt;
* the captured cwd, HOME and project slug -> this run's;
* every other uuid, ``toolu_…``, ``msg_mock_…``/``req_mock_…`` and agent id -> a fresh one,
  consistent within the turn (so ``parentUuid`` chains, ``messageId`` and ``leafUuid`` still link);
* a ``parentUuid`` that points outside what was written -> the last line written (``leaf``);
* ``tool_result`` blocks -> the id of the last ``tool_use`` written;
* timestamps -> now; the captured prompt text -> what was typed;
* ``Done. Tool result was: …`` (the mock model's reply) -> recomputed from the last tool result.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TOOLU_RE = re.compile(r"toolu_[0-9a-f]{24}")
MOCK_ID_RE = re.compile(r"(?:msg|req)_mock_[0-9a-f]+")
AGENT_RE = re.compile(r"\ba[0-9a-f]{16}\b")
TIMESTAMP_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
DONE_PREFIX = "Done. Tool result was: "


@dataclass(frozen=True)
class Fixture:
    file: str
    session_id: str
    scenario: str
    # after /clear the real program still writes the old id in some attachments' ``session_id``
    previous_session_id: str | None = None

    @property
    def cwd(self) -> str:
        return f"/tmp/realclaude/work-{self.scenario}_80x24"

    @property
    def home(self) -> str:
        return f"/tmp/realclaude/home-{self.scenario}_80x24"


FIXTURE_FILES = {
    "b": Fixture(
        "b_idle__7b0634a3-d517-466d-a69d-5c6d96e8c874.jsonl",
        "7b0634a3-d517-466d-a69d-5c6d96e8c874",
        "b_idle",
    ),
    "d": Fixture(
        "d_bash_permission__544d7fc9-b2af-4196-a2f2-d9970b3c5421.jsonl",
        "544d7fc9-b2af-4196-a2f2-d9970b3c5421",
        "d_bash_permission",
    ),
    "e": Fixture(
        "e_write_edit_permission__17b3dc11-42f1-4749-bfd5-c6774fb0bb26.jsonl",
        "17b3dc11-42f1-4749-bfd5-c6774fb0bb26",
        "e_write_edit_permission",
    ),
    "f": Fixture(
        "f_ask_question__e742cf13-df73-4ab4-baaa-981c74271f48.jsonl",
        "e742cf13-df73-4ab4-baaa-981c74271f48",
        "f_ask_question",
    ),
    "g": Fixture(
        "g_plan_approval__f7b09c69-d7d2-4ff4-91d8-0e36843636a7.jsonl",
        "f7b09c69-d7d2-4ff4-91d8-0e36843636a7",
        "g_plan_approval",
    ),
    "h": Fixture(
        "h_interrupt__47d6db31-7cf5-4042-91e4-784bfab4ad29.jsonl",
        "47d6db31-7cf5-4042-91e4-784bfab4ad29",
        "h_interrupt",
    ),
    "ij": Fixture(
        "ij_clear_compact__5d5356b2-0124-47ba-a14f-3db705579c69.jsonl",
        "5d5356b2-0124-47ba-a14f-3db705579c69",
        "ij_clear_compact",
    ),
    "ijc": Fixture(
        "ij_clear_compact__f5213fa4-0e8e-478c-9c7a-812e27e71c8f.jsonl",
        "f5213fa4-0e8e-478c-9c7a-812e27e71c8f",
        "ij_clear_compact",
        previous_session_id="5d5356b2-0124-47ba-a14f-3db705579c69",
    ),
    "m": Fixture(
        "m_subagent__b9a49076-7ef0-4409-b3eb-ff11c5c634e6.jsonl",
        "b9a49076-7ef0-4409-b3eb-ff11c5c634e6",
        "m_subagent",
    ),
    "ms": Fixture(
        "m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl",
        "b9a49076-7ef0-4409-b3eb-ff11c5c634e6",
        "m_subagent",
    ),
    "n": Fixture(
        "n_permissionrequest_allow_hook__4d013a6c-21a8-43b8-9122-f08493e9b5ca.jsonl",
        "4d013a6c-21a8-43b8-9122-f08493e9b5ca",
        "n_permissionrequest_allow_hook",
    ),
}

# name -> (fixture, first line, end line (exclusive), the prompt typed in that capture)
SEGMENTS: dict[str, tuple[str, int, int, str | None]] = {
    # a prompt: first of a conversation (header lines + environment attachments) or a later one
    "prompt_first": ("b", 0, 22, "hello there"),
    "prompt_first_plan": ("g", 0, 19, "MAKE_PLAN for me"),  # with the plan_mode attachment
    "prompt_first_after_clear": ("ijc", 5, 24, "hello after clear"),
    "prompt_later": ("d", 36, 39, "RUN_BASH two"),
    "queue_enqueue": ("ij", 22, 23, "hello two"),
    "queue_dequeue": ("ij", 29, 30, None),
    # the plain answer and the end of a turn (Stop hook summary, turn duration, last-prompt …)
    "answer": ("b", 22, 24, None),
    "close": ("b", 24, 30, "hello there"),
    # after a tool: the mock model's "Done. Tool result was: …" (text recomputed)
    "tool_done": ("d", 29, 30, None),
    # RUN_BASH: text + tool_use; the result (after the hook's allow, if any); a rejection
    "bash_call": ("d", 19, 21, None),
    "bash_result": ("d", 25, 29, None),
    "tool_result": ("d", 26, 27, None),
    "hook_allowed": ("n", 26, 27, None),
    "rejected": ("d", 41, 43, None),
    # WRITE_FILE
    "write_call": ("e", 22, 25, None),
    "write_result": ("e", 25, 33, "WRITE_FILE please"),
    # AskUserQuestion: one question, two questions; the answer (rewritten with the real answers)
    "ask_call": ("f", 18, 24, "ASK_ME something"),
    "ask2_call": ("f", 37, 38, None),
    "ask_result": ("f", 24, 31, "ASK_ME something"),
    # MAKE_PLAN: ToolSearch call, its result, then text + ExitPlanMode
    "plan_toolsearch": ("g", 19, 21, None),
    "plan_toolsearch_result": ("g", 21, 35, "MAKE_PLAN for me"),
    "plan_call": ("g", 35, 38, None),
    # SLOW: the (partial) streamed text, and the interruption marker
    "slow_text": ("h", 22, 23, None),
    "interrupted": ("h", 23, 24, None),
    # /compact and /clear
    "compact": ("ij", 38, 53, "hello two"),
    "clear_header": ("ijc", 0, 5, None),
    # SUBAGENT: text + Agent, async launch result, queue lines, follow-up turn; the sidechain
    "agent_call": ("m", 18, 25, "SUBAGENT please"),
    "agent_result": ("m", 25, 33, "SUBAGENT please"),
    "agent_notification": ("m", 34, 36, None),
    "agent_followup": ("m", 38, 43, None),
    "sidechain_call": ("ms", 0, 14, None),
    "sidechain_result": ("ms", 14, 20, None),
}

CAPTURED_AGENT_ID = "a0f2c7af82d1d7fd7"


@functools.cache
def fixture_lines(key: str) -> list[dict[str, Any]]:
    path = FIXTURES / FIXTURE_FILES[key].file
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def slug(cwd: str) -> str:
    """The project folder name: every non-alphanumeric character of the cwd becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def fresh_id(like: str) -> str:
    """A new id of the same shape as ``like``."""
    if UUID_RE.fullmatch(like):
        return str(uuid.uuid4())
    if like.startswith("toolu_"):
        return "toolu_" + secrets.token_hex(12)
    if AGENT_RE.fullmatch(like):
        return "a" + secrets.token_hex(8)
    head, _, tail = like.rpartition("_")
    return f"{head}_{secrets.token_hex(len(tail) // 2 + 1)[: len(tail)]}"


Edit = Callable[[dict[str, Any]], dict[str, Any] | None]


class Conversation:
    """One ``<session-id>.jsonl`` file, written a segment at a time."""

    def __init__(
        self,
        home: Path,
        cwd: str,
        session_id: str,
        mode: str,
        path: Path | None = None,
        previous_session_id: str | None = None,
    ) -> None:
        self.previous_session_id = previous_session_id or session_id
        self.home = str(home)
        self.cwd = cwd
        self.slug = slug(cwd)
        self.session_id = session_id
        self.mode = mode
        self.path = path or home / ".claude" / "projects" / self.slug / f"{session_id}.jsonl"
        self.prompt_id: str | None = None
        self.prompt_uuid: str | None = None
        self._segment_uuids: set[str | None] = set()
        self.leaf: str | None = None
        self.ids: dict[str, str] = {}
        self.last_tool_use: tuple[str, str] | None = None  # (tool_use id, assistant line uuid)
        self.last_result = ""
        self.last_text = ""
        self.prompt_index = 0
        self.split = os.environ.get("FAKECLAUDE_SPLIT_WRITES", "assistant")
        self.split_delay = float(os.environ.get("FAKECLAUDE_SPLIT_DELAY", "0.05"))
        if self.path.exists():
            self._resume_state()

    # -------------------------------------------------------------- reading back

    def lines(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _resume_state(self) -> None:
        for line in self.lines():
            if line.get("uuid") and not line.get("isSidechain"):
                self.leaf = line["uuid"]
            if line.get("type") == "user" and line.get("promptSource"):
                self.prompt_index += 1

    @property
    def started(self) -> bool:
        return self.path.exists() and self.path.stat().st_size > 0

    # -------------------------------------------------------------- writing

    def new_turn(self, prompt_id: str | None, keep_ids: bool = False) -> None:
        """Fresh uuids for the next segments (each captured line is used at most once per turn)."""
        self.prompt_id = prompt_id
        # keep_ids: the next turn still names this turn's tool and agent ids (a task notification)
        self.ids = (
            {k: v for k, v in self.ids.items() if not UUID_RE.fullmatch(k)} if keep_ids else {}
        )

    def write(
        self, name: str, prompt: str | None = None, edit: Edit | None = None
    ) -> list[dict[str, Any]]:
        """Append segment ``name``; ``edit`` may change (or drop, by returning None) each line."""
        key, start, end, captured_prompt = SEGMENTS[name]
        fixture = FIXTURE_FILES[key]
        written = []
        originals = fixture_lines(key)[start:end]
        self._segment_uuids = {line.get("uuid") for line in originals}
        for original in originals:
            rewritten: dict[str, Any] | None = self._rewrite(
                copy.deepcopy(original), fixture, captured_prompt, prompt
            )
            if edit is not None and rewritten is not None:
                rewritten = edit(rewritten)
            if rewritten is None:
                continue
            self.append(rewritten)
            written.append(rewritten)
        return written

    def append(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            if self.split == "all" or (
                self.split == "assistant" and line.get("type") == "assistant"
            ):
                half = len(text) // 2  # the agent must cope with a line that arrives in two pieces
                f.write(text[:half])
                f.flush()
                time.sleep(self.split_delay)
                text = text[half:]
            f.write(text)
            f.flush()
        self._remember(line)

    def _remember(self, line: dict[str, Any]) -> None:
        if line.get("uuid"):
            self.leaf = line["uuid"]
        message = line.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return
        for block in message["content"]:
            if block.get("type") == "tool_use":
                self.last_tool_use = (block["id"], line["uuid"])
            elif block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
                self.last_result = str(content)
            elif block.get("type") == "text" and line.get("type") == "assistant":
                self.last_text = block["text"]

    # -------------------------------------------------------------- rewriting

    def _rewrite(
        self, line: dict[str, Any], fx: Fixture, captured: str | None, prompt: str | None
    ) -> dict[str, Any]:
        is_prompt = line.get("type") == "user" and "promptSource" in line
        parent = line.get("parentUuid", "-")
        known_parent = parent in self.ids
        # file-history lines name the prompt they belong to
        snapshot_of = [
            k
            for k in ("messageId", "snapshotMessageId")
            if line.get(k) and line[k] not in self.ids and line[k] not in self._segment_uuids
        ]
        swaps = {captured: prompt} if captured and prompt is not None else {}
        line = self._walk(line, None, fx, swaps)
        for k in snapshot_of:
            if self.prompt_uuid:
                line[k] = self.prompt_uuid
                if k == "messageId" and isinstance(line.get("snapshot"), dict):
                    line["snapshot"]["messageId"] = self.prompt_uuid
        if parent != "-":
            if known_parent:
                line["parentUuid"] = self.ids[parent]
            elif parent is None and not is_prompt:
                line["parentUuid"] = None
            else:
                line["parentUuid"] = self.leaf
        if "promptId" in line and self.prompt_id:
            line["promptId"] = self.prompt_id
        if "leafUuid" in line:
            line["leafUuid"] = self.leaf
        if "permissionMode" in line:
            line["permissionMode"] = self.mode
        if is_prompt:
            self.prompt_uuid = line.get("uuid")
            self.prompt_index += 1
            if isinstance(line.get("turnPosition"), dict):
                line["turnPosition"] = {
                    "promptIndex": self.prompt_index,
                    "turnIndex": self.prompt_index,
                }
        self._link_tool(line)
        return line

    def _walk(self, value: Any, key: str | None, fx: Fixture, swaps: dict[str, str]) -> Any:
        if isinstance(value, dict):
            return {k: self._walk(v, k, fx, swaps) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, key, fx, swaps) for v in value]
        if not isinstance(value, str):
            return value
        if key == "timestamp" and TIMESTAMP_RE.fullmatch(value):
            return now_iso()
        if value in swaps:
            return swaps[value]
        value = UUID_RE.sub(lambda m: self._id(m.group(0), fx), value)
        for pattern in (TOOLU_RE, MOCK_ID_RE, AGENT_RE):
            value = pattern.sub(lambda m: self._id(m.group(0), fx), value)
        value = value.replace(fx.home, self.home).replace(fx.cwd, self.cwd)
        value = value.replace(slug(fx.cwd), self.slug).replace(
            "/tmp/claude-0/", f"/tmp/claude-{os.getuid()}/"
        )
        if value.startswith(DONE_PREFIX) and key == "text":
            value = DONE_PREFIX + self.last_result[:120]
        return value

    def _id(self, original: str, fx: Fixture) -> str:
        if original == fx.session_id:
            return self.session_id
        if original == fx.previous_session_id:
            return self.previous_session_id
        if original not in self.ids:
            self.ids[original] = fresh_id(original)
        return self.ids[original]

    def _link_tool(self, line: dict[str, Any]) -> None:
        if self.last_tool_use is None:
            return
        tool_id, tool_uuid = self.last_tool_use
        attachment = line.get("attachment")
        if isinstance(attachment, dict) and "toolUseID" in attachment:
            attachment["toolUseID"] = tool_id
        message = line.get("message")
        if (
            line.get("type") != "user"
            or not isinstance(message, dict)
            or not isinstance(message.get("content"), list)
        ):
            return
        for block in message["content"]:
            if block.get("type") == "tool_result":
                block["tool_use_id"] = tool_id
                if "sourceToolAssistantUUID" in line:
                    line["sourceToolAssistantUUID"] = tool_uuid


def append_history(home: Path, display: str, project: str, session_id: str) -> None:
    """One ``~/.claude/history.jsonl`` entry per prompt (``display, project, sessionId, timestamp``)."""
    entry = {
        "display": display,
        "pastedContents": {},
        "timestamp": int(time.time() * 1000),
        "project": project,
        "sessionId": session_id,
    }
    path = home / ".claude" / "history.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
