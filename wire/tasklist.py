"""The latest task list of a conversation, read from its transcript lines. Pure: no I/O.

Shared (``wire/``) because both sides need it: the relay keeps a session's open items (the
decisions ledger, its snapshots, ``GET …/decisions``) from the lines it stores, and the agent
reads the same lines from disk (a conversation begun at the desk, a handoff built on the Mac).

Claude Code 2.1.332 keeps a task list with one of two tool families (tests/fixtures/claude/
2.1.332/tasks/, FINDINGS.md §3); neither writes the list as it stands into the transcript, so it
is rebuilt from the tool uses and their results:

* **TaskCreate** ``{"subject", "description", "activeForm"?}`` → result ``Task #1 created
  successfully: <subject>`` with ``toolUseResult: {"task": {"id", "subject", "description"}}``:
  a new ``pending`` task (ids ``"1"``, ``"2"`` … per list).
* **TaskUpdate** ``{"taskId", "status"?, "subject"?, "description"?, "activeForm"?}`` → ``Updated
  task #1 status`` with ``toolUseResult: {"success": true, "taskId", "updatedFields",
  "statusChange": {"from", "to"}}``: that task changed (``status: "deleted"`` removes it).
* **TaskList** ``{}`` → ``#1 [completed] Write the parser`` … with ``toolUseResult: {"tasks":
  [{"id", "subject", "status", "blockedBy"}]}``: the whole list as Claude Code has it, which
  replaces what was rebuilt (the text is read when the field is missing).
* **TodoWrite** ``{"todos": [{"content", "status", "activeForm"}]}`` (the whole list each time)
  → ``toolUseResult: {"oldTodos", "newTodos"}``: replaces the list; ids are positions.

A change counts only once its tool result came back without ``is_error`` (a refused or
interrupted call changed nothing). Lines of subagents (``isSidechain``) are not the session's
list. Feed one conversation's lines in order (``/clear`` starts another conversation, with its
own list). Bounded: at most ``MAX_TASKS`` tasks, ``MAX_PENDING`` tool uses awaiting a result,
texts cut to ``MAX_TEXT_CHARS``, ids to ``MAX_ID_CHARS``; anything malformed is skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["MAX_TASKS", "Task", "TaskStatus", "TaskTracker", "latest_tasks"]

TaskStatus = Literal["pending", "in_progress", "completed"]
STATUSES: frozenset[str] = frozenset({"pending", "in_progress", "completed"})
DELETED = "deleted"
TASK_TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite"})

MAX_TASKS = 200
MAX_PENDING = 100
MAX_TEXT_CHARS = 500
MAX_ID_CHARS = 40

_CREATED_RE = re.compile(r"^Task #(\S{1,40}) created successfully")
_LISTED_RE = re.compile(r"^#(\S{1,40}) \[(pending|in_progress|completed)\] (.+)$")


@dataclass(frozen=True)
class Task:
    id: str
    subject: str
    status: TaskStatus
    active_form: str | None = None


def _text(value: Any, limit: int = MAX_TEXT_CHARS) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())[:limit]
    return text or None


def _task_id(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return _text(value, MAX_ID_CHARS)


def _status(value: Any) -> TaskStatus | None:
    if value == "pending":
        return "pending"
    if value == "in_progress":
        return "in_progress"
    if value == "completed":
        return "completed"
    return None


def _blocks(line: Mapping[str, Any]) -> list[dict[str, Any]]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


class TaskTracker:
    """A conversation's task list, kept up to date line by line (:meth:`feed`)."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._pending: dict[str, tuple[str, dict[str, Any]]] = {}  # tool use id → (name, input)

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The list in Claude Code's order (creation, or as TaskList / TodoWrite gave it)."""
        return tuple(self._tasks.values())

    def seed(self, tasks: Iterable[Task]) -> None:
        """Start from a list kept earlier (the relay's, across a restart): each task with a
        known status, at most ``MAX_TASKS``; the tool uses still awaited are not known."""
        self._tasks = {}
        for task in tasks:
            if len(self._tasks) >= MAX_TASKS:
                break
            if task.status in STATUSES and task.id and task.id not in self._tasks:
                self._tasks[task.id] = task

    def feed(self, line: Mapping[str, Any]) -> bool:
        """Read one transcript line (parsed); True when the list changed."""
        if not isinstance(line, Mapping) or line.get("isSidechain") is True:
            return False
        changed = False
        for block in _blocks(line):
            kind = block.get("type")
            if kind == "tool_use":
                self._remember(block)
            elif kind == "tool_result":
                changed = self._settle(block, line.get("toolUseResult")) or changed
        return changed

    def _remember(self, block: Mapping[str, Any]) -> None:
        name, use_id, data = block.get("name"), block.get("id"), block.get("input")
        if name not in TASK_TOOLS or not isinstance(use_id, str) or not isinstance(data, dict):
            return
        if len(self._pending) >= MAX_PENDING:
            self._pending.pop(next(iter(self._pending)))
        self._pending[use_id] = (str(name), data)

    def _settle(self, block: Mapping[str, Any], result: Any) -> bool:
        use_id = block.get("tool_use_id")
        if not isinstance(use_id, str) or use_id not in self._pending:
            return False
        name, data = self._pending.pop(use_id)
        if block.get("is_error") is True:
            return False
        result = result if isinstance(result, dict) else {}
        before = self.tasks
        if name == "TodoWrite":
            todos = result.get("newTodos", data.get("todos"))
            self._replace(todos, subject_key="content", by_position=True)
        elif name == "TaskList":
            listed = result.get("tasks")
            if isinstance(listed, list):
                self._replace(listed, subject_key="subject", by_position=False)
            else:
                self._replace(self._listed_from_text(_result_text(block)), "subject", False)
        elif name == "TaskCreate":
            self._create(data, result, _result_text(block))
        elif name == "TaskUpdate":
            self._update(data, result)
        elif name == "TaskGet":
            task = result.get("task")
            if isinstance(task, dict) and _task_id(task.get("id")) in self._tasks:
                self._update({"taskId": task.get("id"), "status": task.get("status")}, {})
        return self.tasks != before

    @staticmethod
    def _listed_from_text(text: str) -> list[dict[str, str]]:
        out = []
        for row in text.splitlines():
            match = _LISTED_RE.match(row.strip())
            if match:
                out.append({"id": match[1], "status": match[2], "subject": match[3]})
        return out

    def _replace(self, items: Any, subject_key: str, by_position: bool) -> None:
        if not isinstance(items, list):
            return
        fresh: dict[str, Task] = {}
        for n, item in enumerate(items, start=1):
            if len(fresh) >= MAX_TASKS:
                break
            if not isinstance(item, dict):
                continue
            task_id = str(n) if by_position else _task_id(item.get("id"))
            subject, status = _text(item.get(subject_key)), _status(item.get("status"))
            if task_id is None or subject is None or status is None or task_id in fresh:
                continue
            known = self._tasks.get(task_id)
            active = _text(item.get("activeForm")) or (known.active_form if known else None)
            fresh[task_id] = Task(task_id, subject, status, active)
        self._tasks = fresh

    def _create(self, data: Mapping[str, Any], result: Mapping[str, Any], text: str) -> None:
        made = result.get("task")
        made = made if isinstance(made, dict) else {}
        task_id = _task_id(made.get("id"))
        if task_id is None:
            match = _CREATED_RE.match(text.strip())
            task_id = match[1] if match else None
        subject = _text(made.get("subject")) or _text(data.get("subject"))
        if task_id is None or subject is None or len(self._tasks) >= MAX_TASKS:
            return
        self._tasks[task_id] = Task(task_id, subject, "pending", _text(data.get("activeForm")))

    def _update(self, data: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        task_id = _task_id(data.get("taskId"))
        if task_id is None or task_id not in self._tasks or result.get("success") is False:
            return
        change = result.get("statusChange")
        wanted = change.get("to") if isinstance(change, dict) else data.get("status")
        if wanted == DELETED:
            del self._tasks[task_id]
            return
        task = self._tasks[task_id]
        self._tasks[task_id] = replace(
            task,
            status=_status(wanted) or task.status,
            subject=_text(data.get("subject")) or task.subject,
            active_form=_text(data.get("activeForm")) or task.active_form,
        )


def latest_tasks(lines: Iterable[Mapping[str, Any] | str | bytes]) -> tuple[Task, ...]:
    """The task list after ``lines`` (parsed objects, or JSON text; others skipped)."""
    tracker = TaskTracker()
    for line in lines:
        if isinstance(line, (str, bytes)):
            try:
                parsed = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(parsed, dict):
                continue
            line = parsed
        tracker.feed(line)
    return tracker.tasks
