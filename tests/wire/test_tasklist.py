"""wire.tasklist: the latest task list rebuilt from the transcripts of the real Claude Code 2.1.332
(TaskCreate / TaskUpdate / TaskList, and TodoWrite), checked against the task files it kept."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import FIXTURES
from wire.tasklist import MAX_TASKS, Task, TaskStatus, TaskTracker, latest_tasks

TASKS = FIXTURES / "claude" / "2.1.332" / "tasks"
PROPS = settings(max_examples=150, derandomize=True, database=None, deadline=None)


def _lines(case: str) -> list[str]:
    return (TASKS / case / "transcript.jsonl").read_text(encoding="utf-8").splitlines()


def _states(case: str) -> list[tuple[tuple[str, str, TaskStatus], ...]]:
    """The list after each line that changed it."""
    tracker = TaskTracker()
    states = []
    for line in _lines(case):
        if tracker.feed(json.loads(line)):
            states.append(tuple((t.id, t.subject, t.status) for t in tracker.tasks))
    return states


def test_task_tools_as_captured() -> None:
    tasks = latest_tasks(_lines("tasks_v2"))
    assert tasks == (
        Task("1", "Write the parser", "completed", "Writing the parser"),
        Task("2", "Add parser tests", "in_progress", "Adding parser tests"),
        Task("3", "Update the docs", "pending", None),
    )
    # what Claude Code itself kept in ~/.claude/tasks/<session id>/ at the end
    kept = sorted(
        (json.loads(p.read_text()) for p in (TASKS / "tasks_v2" / "home").rglob("*.json")),
        key=lambda t: t["id"],
    )
    assert [(t.id, t.subject, t.status) for t in tasks] == [
        (k["id"], k["subject"], k["status"]) for k in kept
    ]


def test_each_step_of_the_task_tools() -> None:
    p, w, c = "pending", "in_progress", "completed"
    parser, tests, docs = "Write the parser", "Add parser tests", "Update the docs"
    assert _states("tasks_v2") == [
        (("1", parser, p),),
        (("1", parser, p), ("2", tests, p)),
        (("1", parser, p), ("2", tests, p), ("3", docs, p)),
        (("1", parser, w), ("2", tests, p), ("3", docs, p)),
        # the two updates came back in the other order: task 2 first
        (("1", parser, w), ("2", tests, w), ("3", docs, p)),
        (("1", parser, c), ("2", tests, w), ("3", docs, p)),
    ]  # TaskList then agreed: no change


def test_todowrite_as_captured() -> None:
    assert latest_tasks(_lines("todowrite")) == (
        Task("1", "Write the parser", "completed", "Writing the parser"),
        Task("2", "Add parser tests", "in_progress", "Adding parser tests"),
        Task("3", "Update the docs", "pending", "Updating the docs"),
    )
    assert len(_states("todowrite")) == 2


def _use(use_id: str, name: str, data: dict[str, Any], side: bool = False) -> dict[str, Any]:
    return {
        "type": "assistant",
        "isSidechain": side,
        "message": {"content": [{"type": "tool_use", "id": use_id, "name": name, "input": data}]},
    }


def _result(use_id: str, text: str, result: Any = None, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": error}
    line: dict[str, Any] = {"type": "user", "message": {"content": [block]}}
    if result is not None:
        line["toolUseResult"] = result
    return line


def test_only_calls_that_succeeded_count() -> None:
    lines = [
        _use("a", "TaskCreate", {"subject": "One"}),
        _result("a", "Task #1 created successfully: One"),  # no toolUseResult: read the text
        _use("b", "TaskUpdate", {"taskId": "1", "status": "completed"}),
        _result("b", "<tool_use_error>refused</tool_use_error>", error=True),
        _use("c", "TaskUpdate", {"taskId": "1", "status": "in_progress"}),  # never answered
        _use("d", "TaskCreate", {"subject": "Two"}, side=True),  # a subagent's
        _result("d", "Task #2 created successfully: Two"),
    ]
    assert latest_tasks(lines) == (Task("1", "One", "pending", None),)


def test_task_list_replaces_and_deleted_removes() -> None:
    listed = "#1 [completed] One\n#4 [pending] Four"
    lines = [
        _use("a", "TaskCreate", {"subject": "One", "activeForm": "Doing one"}),
        _result("a", "Task #1 created successfully: One", {"task": {"id": "1", "subject": "One"}}),
        _use("b", "TaskCreate", {"subject": "Two"}),
        _result("b", "Task #2 created successfully: Two", {"task": {"id": "2", "subject": "Two"}}),
        _use("c", "TaskList", {}),
        _result("c", listed),  # the text alone
    ]
    assert latest_tasks(lines) == (
        Task("1", "One", "completed", "Doing one"),
        Task("4", "Four", "pending", None),
    )
    gone = [
        *lines,
        _use("d", "TaskUpdate", {"taskId": "4", "status": "deleted"}),
        _result("d", "ok"),
    ]
    assert [t.id for t in latest_tasks(gone)] == ["1"]


def test_json_text_and_junk_lines() -> None:
    lines: list[Any] = [json.dumps(line) for line in (_use("a", "TodoWrite", {"todos": []}),)]
    lines += ["not json", b"[1]", json.dumps(_result("a", "ok", {"newTodos": [
        {"content": "Only", "status": "pending"}, {"content": "Bad", "status": "nope"}, 5]}))]  # fmt: skip
    assert latest_tasks(lines) == (Task("1", "Only", "pending", None),)


def test_bounded() -> None:
    todos = [{"content": f"t{n}", "status": "pending"} for n in range(MAX_TASKS + 50)]
    lines = [_use("a", "TodoWrite", {"todos": todos}), _result("a", "ok")]
    assert len(latest_tasks(lines)) == MAX_TASKS
    long = [
        _use("a", "TaskCreate", {"subject": "x" * 10_000}),
        _result("a", "Task #1 created successfully: xx"),
    ]
    (task,) = latest_tasks(long)
    assert len(task.subject) <= 500


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=25,
)
TOOL_LINE = st.builds(
    lambda kind, use_id, name, data, result, error: (
        _use(use_id, name, data if isinstance(data, dict) else {})
        if kind
        else _result(use_id, "Task #1 created successfully", result, error)
    ),
    st.booleans(),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite", "Bash"]),
    JSONISH,
    JSONISH,
    st.booleans(),
)


@PROPS
@given(st.lists(st.one_of(TOOL_LINE, JSONISH), max_size=30))
def test_any_lines_give_a_well_formed_list(lines: list[Any]) -> None:
    tasks = latest_tasks(lines)
    assert len(tasks) <= MAX_TASKS
    assert len({t.id for t in tasks}) == len(tasks)
    for t in tasks:
        assert t.status in ("pending", "in_progress", "completed")
        assert t.id and t.subject


def test_a_tracker_seeded_with_a_kept_list_goes_on_from_it() -> None:
    tracker = TaskTracker()
    kept = [Task("1", "Write the parser", "in_progress"), Task("2", "Update the docs", "pending")]
    tracker.seed([*kept, Task("1", "a repeat", "pending"), Task("3", "odd", "deleted")])  # type: ignore[arg-type]
    assert tracker.tasks == tuple(kept)
    use = {"type": "tool_use", "id": "u1", "name": "TaskUpdate"}
    use["input"] = {"taskId": "1", "status": "completed"}  # type: ignore[assignment]
    tracker.feed({"type": "assistant", "message": {"content": [use]}})
    result = {"type": "tool_result", "tool_use_id": "u1", "content": "Updated task #1 status"}
    assert tracker.feed({"type": "user", "message": {"content": [result]}})
    assert [(t.id, t.status) for t in tracker.tasks] == [("1", "completed"), ("2", "pending")]
    tracker.seed([Task(str(n), f"t{n}", "pending") for n in range(MAX_TASKS + 5)])
    assert len(tracker.tasks) == MAX_TASKS
