"""Turns: what the fake does for a prompt, chosen by keyword like the real mock API.

| keyword      | what happens                                                              |
|--------------|---------------------------------------------------------------------------|
| RUN_BASH     | text + Bash ``touch bash_made.txt && echo hi`` (asks in manual mode)      |
| WRITE_FILE   | text + Write ``<cwd>/hello.txt`` (asks unless accept-edits / auto)        |
| ASK_TWO      | AskUserQuestion, two questions, the second multi-select                   |
| ASK_ME       | AskUserQuestion, one question                                             |
| MAKE_PLAN    | ToolSearch, text + ExitPlanMode (plan approval)                           |
| SLOW         | a streamed answer lasting FAKECLAUDE_SLOW_SECONDS                         |
| SUBAGENT     | background Agent, then the automatic follow-up turn                       |
| anything else| "Hello! This is the mock API. How can I help?"                            |

Every function here is a generator driven by ``App.step``: ``yield Sleep(s)`` to let time
pass, ``answer = yield SomeDialog(...)`` to wait for the person. It returns True when the
turn ends normally (the Stop hook then fires) and False when it ended by a rejection or an
interrupt (no Stop hook, as in the real program).
"""

from __future__ import annotations

import os
import random
import re
import secrets
import subprocess
import time
import uuid
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from . import screens as S
from .ansi import wrap
from .app import (
    App,
    AskDialog,
    BashDialog,
    Dialog,
    Interrupted,
    PlanDialog,
    Sleep,
    Spin,
    WriteDialog,
)
from .hooks import permission_decision
from .transcript import CAPTURED_AGENT_ID, Conversation, append_history

Turn = Generator[Any, Any, bool]

ANSWER = "Hello! This is the mock API. How can I help?"
BASH_COMMAND = "touch bash_made.txt && echo hi"
BASH_DESCRIPTION = "Create a file and print hi"
BASH_ACTIVITY = "Creating a file and printing hi"
WRITE_NAME, WRITE_CONTENT = "hello.txt", "hello from mock\n"
PLAN_TEXT = "Plan\n\n1. Create hello.txt\n2. Run echo hi\n3. Report back"
PLAN_APPROVED = "User has approved exiting plan mode. You can now proceed."
SLOW_TEXT = (
    "This is a deliberately slow streamed answer so that the busy screen can be captured."
    + "".join(f" Sentence number {n} of the slow answer keeps streaming." for n in range(1, 5))
)
SUB_DESCRIPTION = "Inspect folder"
SUB_PROMPT = "SUBTASK_PROMPT: please list the folder with LS_SUB and report."
SUB_REPORT = "Subagent report: the folder was listed."
COMPACT_SUMMARY = (
    "<analysis>Mock analysis.</analysis>\n<summary>\n1. Primary Request and Intent:\n   The user exercised "
    "the mock API.\n2. Current Work:\n   Nothing pending.\n</summary>"
)
BUSY_VERBS = [
    "Flibbertigibbeting",
    "Hashing",
    "Discombobulating",
    "Pondering",
    "Caramelizing",
    "Proofing",
    "Nebulizing",
    "Fiddle-faddling",
]
DONE_VERBS = ["Cooked", "Crunched", "Brewed", "Worked", "Cogitated", "Sautéed", "Churned"]

ASK_ME = [
    S.Question(
        "Which colour should the widget be?",
        "Colour",
        [("Red", "A warm colour"), ("Blue", "A cool colour"), ("Green", "A natural colour")],
        False,
    )
]
ASK_TWO = [
    S.Question(
        "Which colour should the widget be?",
        "Colour",
        [("Red", "A warm colour"), ("Blue", "A cool colour")],
        False,
    ),
    S.Question(
        "Which toppings do you want?",
        "Toppings",
        [("Cheese", "Cheesy"), ("Olives", "Salty"), ("Basil", "Fresh")],
        True,
    ),
]


def clock() -> str:
    return time.strftime("%I:%M %p").lstrip("0")


def tool_questions(questions: list[S.Question]) -> list[dict[str, Any]]:
    return [
        {
            "question": q.question,
            "header": q.header,
            "options": [{"label": label, "description": desc} for label, desc in q.options],
            "multiSelect": q.multi,
        }
        for q in questions
    ]


def pick(text: str) -> Callable[[App], Turn]:
    for keyword, scenario in (
        ("RUN_BASH", run_bash),
        ("WRITE_FILE", write_file),
        ("ASK_TWO", ask_two),
        ("ASK_ME", ask_me),
        ("MAKE_PLAN", make_plan),
        ("SLOW", slow),
        ("SUBAGENT", subagent),
    ):
        if keyword in text:
            return scenario
    return plain


# ---------------------------------------------------------------- the frame of every turn


def prompt_turn(app: App, text: str, source: str = "typed") -> Turn:
    """UserPromptSubmit, the transcript lines of the prompt, the scenario, then Stop."""
    started = time.monotonic()
    app.prompt_id = str(uuid.uuid4())
    app.conv.new_turn(app.prompt_id)
    app.turn_prompt, app.turn_output = text, False
    app.set_status("busy")
    block = app.screen.add(S.user_prompt(text))
    app.live = ["", *S.streaming_dot()]
    app.spin = Spin(random.choice(BUSY_VERBS), started)
    app.draw()
    app.hook("UserPromptSubmit", prompt=text)
    write_prompt(app, text, source)
    append_history(app.home, text, app.cwd, app.session_id)
    try:
        finished = yield from pick(text)(app)
    except Interrupted:
        finished = interrupted(app, block)
    if finished:
        yield from finish(app, started)
    return finished


def write_prompt(app: App, text: str, source: str) -> None:
    conv = app.conv
    if not conv.started:
        name = "prompt_first_plan" if app.mode == "plan" else "prompt_first"
    elif conv.prompt_index == 0:
        name = "prompt_first_after_clear"
    else:
        name = "prompt_later"

    def edit(line: dict[str, Any]) -> dict[str, Any]:
        if line.get("type") == "user" and "promptSource" in line:
            line["promptSource"] = source
        return line

    conv.write(name, prompt=text, edit=edit)


def finish(app: App, started: float, done: bool = True) -> Turn:
    """The Stop hook (the spinner says so meanwhile), its transcript summary, ``✻ Worked for …``."""
    try:
        yield Sleep(0.05)
    except (
        Interrupted
    ):  # Ctrl-C / Esc while the answer is drawn but the turn not closed (k_resume/02)
        app.live, app.spin = [], None
        app.screen.extend(len(app.screen.blocks) - 1, [S.INTERRUPTED])
        app.conv.write("interrupted")
        return False
    if app.spin is not None:
        app.spin.tokens = 8
    results = app.hook(
        "Stop",
        stop_hook_active=False,
        last_assistant_message=app.conv.last_text,
        background_tasks=app.background_tasks,
        session_crons=[],
    )
    seconds = time.monotonic() - started

    def edit(line: dict[str, Any]) -> dict[str, Any] | None:
        if line.get("subtype") == "stop_hook_summary":
            if not results:
                return None
            line["hookCount"] = len(results)
            line["hookInfos"] = [
                {"command": r.command, "durationMs": r.duration_ms} for r in results
            ]
        elif line.get("subtype") == "turn_duration":
            line["durationMs"] = int(seconds * 1000)
        return line

    app.conv.write("close", prompt=app.turn_prompt, edit=edit)
    app.live, app.spin = [], None
    if done:
        app.screen.add(S.done_line(random.choice(DONE_VERBS), seconds, clock()))
    return True


def interrupted(app: App, block: int) -> bool:
    """Esc / Ctrl-C: before anything was drawn the prompt goes back into the box."""
    app.live, app.spin = [], None
    if not app.turn_output:
        del app.screen.blocks[block]
        app.input = app.turn_prompt
    else:
        app.screen.extend(len(app.screen.blocks) - 1, [S.INTERRUPTED])
        app.conv.write("interrupted")
    return False


def say(app: App, text: str) -> int:
    app.live = []
    app.turn_output = True
    return app.screen.add(S.assistant(text))


def think(app: App) -> Generator[Any, Any, None]:
    yield Sleep(app.think_seconds)


def tool_done(app: App) -> Generator[Any, Any, None]:
    """The mock model's reply after a tool result."""
    app.live = ["", *S.streaming_dot()]
    yield from think(app)
    app.conv.write("tool_done")
    say(app, app.conv.last_text)


def ask_permission(
    app: App,
    tool: str,
    tool_input: dict[str, Any],
    suggestions: list[dict[str, Any]] | None,
    dialog: Callable[[], Dialog],
) -> Generator[Any, Any, Any]:
    """``"mode"`` (no question in this mode), ``("hook", "allow"|"deny", message)`` or the dialog's answer."""
    auto = app.mode in ("auto", "bypassPermissions") or (
        app.mode == "acceptEdits" and tool in ("Write", "Edit")
    )
    if auto:
        return "mode"
    fields: dict[str, Any] = {"tool_input": tool_input}
    if suggestions is not None:
        fields["permission_suggestions"] = suggestions
    verdict = permission_decision(app.hook("PermissionRequest", tool, **fields))
    if verdict is not None:
        return ("hook", *verdict)
    app.live = []
    answer = yield dialog()
    return answer


def deny_by_hook(app: App, block: int, rows: list[str], message: str) -> Turn:
    """Composed (not captured): a PermissionRequest hook's deny; the model sees the message."""
    app.screen.replace(block, [*rows, S.elbow(f"Denied by PermissionRequest hook: {message}")])

    def edit(line: dict[str, Any]) -> dict[str, Any] | None:
        if line.get("type") == "user" and isinstance(line["message"]["content"], list):
            block_ = line["message"]["content"][0]
            if block_.get("type") != "tool_result":
                return None
            block_["content"] = message
            line["toolUseResult"] = f"Error: {message}"
            line.pop("toolDenialKind", None)
        return line

    app.conv.write("rejected", edit=edit)
    yield from tool_done(app)
    return True


# ---------------------------------------------------------------- scenarios


def plain(app: App) -> Turn:
    yield from think(app)
    say(app, ANSWER)
    app.conv.write("answer")
    return True


def run_bash(app: App) -> Turn:
    yield from think(app)
    say(app, "I'll run a command.")
    app.conv.write("bash_call")
    assert app.conv.last_tool_use is not None
    tool_id = app.conv.last_tool_use[0]
    tool_input = {"command": BASH_COMMAND, "description": BASH_DESCRIPTION}
    app.hook("PreToolUse", "Bash", tool_input=tool_input, tool_use_id=tool_id)
    block = app.screen.add(S.bash_pending(BASH_ACTIVITY, BASH_COMMAND))
    suggestions: list[dict[str, Any]] = [
        {"type": "addDirectories", "directories": [app.cwd], "destination": "session"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
    ]
    answer = yield from ask_permission(
        app,
        "Bash",
        tool_input,
        suggestions,
        lambda: BashDialog(app.cwd, BASH_COMMAND, BASH_DESCRIPTION),
    )
    if answer == "no":
        app.screen.replace(block, S.bash_rejected(BASH_COMMAND))
        app.conv.write("rejected")
        return False
    if isinstance(answer, tuple) and answer[:2] == ("hook", "deny"):
        return (yield from deny_by_hook(app, block, S.bash_rejected(BASH_COMMAND)[:2], answer[2]))
    if answer == "yes-auto":
        app.mode = app.conv.mode = "auto"
    by_hook = isinstance(answer, tuple) and answer[0] == "hook"
    feedback = answer[1] if isinstance(answer, tuple) and answer[0] == "amend" else None
    app.tool_used = True
    start = time.monotonic()
    done = subprocess.run(
        ["sh", "-c", BASH_COMMAND], cwd=app.cwd, capture_output=True, text=True, check=False
    )
    out = done.stdout.rstrip("\n")
    ms = int((time.monotonic() - start) * 1000)
    app.screen.replace(block, S.bash_ran(by_hook=by_hook))
    if by_hook:
        app.conv.write("hook_allowed")

    def edit(line: dict[str, Any]) -> dict[str, Any]:
        content = (line.get("message") or {}).get("content")
        if isinstance(content, list) and content and content[0].get("type") == "tool_result":
            content[0]["content"] = out
            line["toolUseResult"]["stdout"] = out
            if feedback:
                content.append({"type": "text", "text": feedback})
            if by_hook:
                line["permissionDecision"] = {
                    "decision": "accept",
                    "source": "hook",
                    "reasonType": "hook",
                    "reasonCode": "bashMiss:no-rule-match",
                }
        return line

    app.conv.write("bash_result", edit=edit)
    app.hook(
        "PostToolUse",
        "Bash",
        tool_input=tool_input,
        tool_response={
            "stdout": out,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        tool_use_id=tool_id,
        duration_ms=ms,
    )
    if feedback:  # composed: the amended text shows as a user line
        app.screen.add(S.user_prompt(feedback))
    yield from tool_done(app)
    return True


def write_file(app: App) -> Turn:
    yield from think(app)
    say(app, "I'll create the file.")
    app.conv.write("write_call")
    assert app.conv.last_tool_use is not None
    tool_id = app.conv.last_tool_use[0]
    path = os.path.join(app.cwd, WRITE_NAME)
    tool_input = {"file_path": path, "content": WRITE_CONTENT}
    app.hook("PreToolUse", "Write", tool_input=tool_input, tool_use_id=tool_id)
    block = app.screen.add([S.tool_header("Write", WRITE_NAME, done=False)])
    suggestions = [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    answer = yield from ask_permission(
        app,
        "Write",
        tool_input,
        suggestions,
        lambda: WriteDialog(WRITE_NAME, WRITE_CONTENT.splitlines()),
    )
    header = S.tool_header("Write", WRITE_NAME, done=False)
    if answer == "no":  # composed: a rejected Write was not captured
        app.screen.replace(
            block, [header, S.elbow(f"User rejected write to {WRITE_NAME}"), S.INTERRUPTED]
        )
        app.conv.write("rejected")
        return False
    if isinstance(answer, tuple) and answer[:2] == ("hook", "deny"):
        return (yield from deny_by_hook(app, block, [header], answer[2]))
    if answer == "yes-accept-edits":
        app.mode = app.conv.mode = "acceptEdits"
    by_hook = isinstance(answer, tuple) and answer[0] == "hook"
    app.tool_used = True
    start = time.monotonic()
    Path(path).write_text(WRITE_CONTENT, encoding="utf-8")
    ms = int((time.monotonic() - start) * 1000)
    app.screen.replace(
        block,
        S.write_done(WRITE_NAME, WRITE_CONTENT.splitlines())
        + ([S.ALLOWED_BY_HOOK] if by_hook else []),
    )
    if by_hook:
        app.conv.write("hook_allowed")
    app.conv.write("write_result", prompt=app.turn_prompt)
    app.hook(
        "PostToolUse",
        "Write",
        tool_input=tool_input,
        tool_response={
            "type": "create",
            "filePath": path,
            "content": WRITE_CONTENT,
            "structuredPatch": [],
            "originalFile": None,
            "userModified": False,
        },
        tool_use_id=tool_id,
        duration_ms=ms,
    )
    yield from tool_done(app)
    return True


def ask_me(app: App) -> Turn:
    return (yield from ask(app, ASK_ME))


def ask_two(app: App) -> Turn:
    return (yield from ask(app, ASK_TWO))


def ask(app: App, questions: list[S.Question]) -> Turn:
    yield from think(app)
    app.live = []
    if len(questions) == 1:
        app.conv.write("ask_call", prompt=app.turn_prompt)
    else:
        app.conv.write("ask2_call")
    assert app.conv.last_tool_use is not None
    tool_id = app.conv.last_tool_use[0]
    tool_input: dict[str, Any] = {"questions": tool_questions(questions)}
    app.hook("PreToolUse", "AskUserQuestion", tool_input=tool_input, tool_use_id=tool_id)
    # An "allow" from a PermissionRequest hook does not answer the questions.
    verdict = permission_decision(
        app.hook("PermissionRequest", "AskUserQuestion", tool_input=tool_input)
    )
    if verdict is not None and verdict[0] == "deny":
        block = app.screen.add([S.tool_header("AskUserQuestion", "", done=False)])
        return (yield from deny_by_hook(app, block, [], verdict[1]))
    answer = yield AskDialog(questions)
    app.turn_output = True
    if answer == "declined":
        app.screen.add(S.ask_declined(questions))
        app.conv.write("rejected")
        return False
    answers: dict[str, str] = answer["answers"]
    pairs = ", ".join(f'"{q}"="{a}"' for q, a in answers.items())
    if answer["typed"]:
        text = (
            f"The user answered: {pairs}. Read the answers carefully — they may request clarification, "
            "changes, or that you not proceed — and follow what they actually say."
        )
    else:
        text = f"Your questions have been answered: {pairs}. You can now continue with these answers in mind."
    app.screen.add(S.ask_answered(list(answers.items())))
    result = {"questions": tool_input["questions"], "answers": answers, "annotations": {}}

    def edit(line: dict[str, Any]) -> dict[str, Any]:
        content = (line.get("message") or {}).get("content")
        if isinstance(content, list) and content and content[0].get("type") == "tool_result":
            content[0]["content"] = text
            line["toolUseResult"] = result
        return line

    app.conv.write("ask_result", prompt=app.turn_prompt, edit=edit)
    app.tool_used = True
    app.hook(
        "PostToolUse",
        "AskUserQuestion",
        tool_input={**tool_input, "answers": answers, "annotations": {}},
        tool_response=result,
        tool_use_id=tool_id,
        duration_ms=1,
    )
    yield from tool_done(app)
    return True


def make_plan(app: App) -> Turn:
    yield from think(app)
    app.conv.write("plan_toolsearch")
    assert app.conv.last_tool_use is not None
    search = {"query": "select:ExitPlanMode", "max_results": 1}
    search_id = app.conv.last_tool_use[0]
    app.hook("PreToolUse", "ToolSearch", tool_input=search, tool_use_id=search_id)
    app.hook(
        "PostToolUse",
        "ToolSearch",
        tool_input=search,
        tool_response={
            "matches": ["ExitPlanMode"],
            "query": "select:ExitPlanMode",
            "total_deferred_tools": 13,
        },
        tool_use_id=search_id,
        duration_ms=40,
    )
    app.conv.write("plan_toolsearch_result", prompt=app.turn_prompt)
    app.conv.write("plan_call")
    tool_id = app.conv.last_tool_use[0]
    block = say(app, "Here is my plan.")
    app.hook("PreToolUse", "ExitPlanMode", tool_input={}, tool_use_id=tool_id)
    answer = yield from ask_permission(app, "ExitPlanMode", {}, None, PlanDialog)
    if answer == "reject":
        app.screen.extend(block, S.plan_rejected(PLAN_TEXT))
        app.conv.write("rejected")
        return False
    if isinstance(answer, tuple) and answer[:2] == ("hook", "deny"):
        return (yield from deny_by_hook(app, block, [], answer[2]))
    # Approved: the session leaves plan mode for manual.
    app.mode = app.conv.mode = "default"
    words = re.sub(r"[^a-z0-9]+", "-", app.turn_prompt.lower()).strip("-")
    plan_file = str(app.home / ".claude" / "plans" / f"{words}-synthetic-mitten.md")
    app.screen.add([f"{S.GREEN}●{S.FG} Exited plan mode"])  # composed: not captured at 80x24
    response = {"plan": None, "isAgent": False, "filePath": plan_file}

    def result(line: dict[str, Any]) -> dict[str, Any]:
        line["message"]["content"][0].update(content=PLAN_APPROVED)
        line["message"]["content"][0].pop("is_error", None)
        line["toolUseResult"] = response
        return line

    def exit_attachment(line: dict[str, Any]) -> dict[str, Any]:
        line["attachment"] = {
            "type": "plan_mode_exit",
            "planFilePath": plan_file,
            "planExists": False,
        }
        return line

    app.conv.write("tool_result", edit=result)
    app.conv.write("hook_allowed", edit=exit_attachment)
    app.hook(
        "PostToolUse",
        "ExitPlanMode",
        tool_input={},
        tool_response=response,
        tool_use_id=tool_id,
        duration_ms=1,
    )
    yield from tool_done(app)
    return True


def slow(app: App) -> Turn:
    """Streamed text: ``●`` alone until a line is complete, then whole wrapped lines (``c_busy``)."""
    words = SLOW_TEXT.split(" ")
    start = time.monotonic()
    shown = 0
    try:
        while shown < len(words):
            elapsed = time.monotonic() - start
            shown = min(len(words), int(len(words) * elapsed / max(app.slow_seconds, 0.01)) + 1)
            lines = S.assistant(" ".join(words[:shown]))
            complete = lines[:-1] if shown < len(words) else lines
            app.live = ["", *(complete or S.streaming_dot())]
            app.turn_output = True
            if app.spin is not None:
                app.spin.tokens = int(shown * 1.3)
            if shown < len(words):
                yield Sleep(0.25)
    except Interrupted:
        app.live, app.spin = [], None
        partial = " ".join(words[:shown])
        app.screen.add([*S.assistant(partial), S.INTERRUPTED])
        app.conv.write("slow_text", edit=lambda line: _set_text(line, partial))
        app.conv.write("interrupted")
        return False
    say(app, SLOW_TEXT)
    app.conv.write("answer", edit=lambda line: _set_text(line, SLOW_TEXT))
    return True


def _set_text(line: dict[str, Any], text: str) -> dict[str, Any]:
    if line.get("type") == "assistant":
        line["message"]["content"][0]["text"] = text
        line["message"]["stop_reason"] = "end_turn"
    return line


def subagent(app: App) -> Turn:
    """A background Agent: the turn ends while it runs, then a follow-up turn starts by itself."""
    yield from think(app)
    say(app, "Delegating to a subagent.")
    app.conv.write("agent_call", prompt=app.turn_prompt)
    assert app.conv.last_tool_use is not None
    tool_id = app.conv.last_tool_use[0]
    agent_id = "a" + secrets.token_hex(8)
    app.conv.ids[CAPTURED_AGENT_ID] = agent_id
    tool_input = {
        "description": SUB_DESCRIPTION,
        "prompt": SUB_PROMPT,
        "subagent_type": "general-purpose",
    }
    app.hook("PreToolUse", "Agent", tool_input=tool_input, tool_use_id=tool_id)
    app.hook("SubagentStart", agent_id=agent_id, agent_type="general-purpose")
    output = f"/tmp/claude-{os.getuid()}/{app.conv.slug}/{app.session_id}/tasks/{agent_id}.output"
    app.hook(
        "PostToolUse",
        "Agent",
        tool_input=tool_input,
        tool_response={
            "isAsync": True,
            "status": "async_launched",
            "agentId": agent_id,
            "description": SUB_DESCRIPTION,
            "resolvedModel": "claude-opus-5-5",
            "prompt": SUB_PROMPT,
            "outputFile": output,
            "canReadOutputFile": True,
            "canContinueAgent": True,
        },
        tool_use_id=tool_id,
        duration_ms=22,
    )
    app.screen.add(
        [
            S.tool_header("Agent", SUB_DESCRIPTION, done=True),
            S.elbow(f"{S.FG}Backgrounded agent{S.GREY} (↓ to manage · ctrl+o to expand)"),
        ]
    )
    app.tasks_hint = True
    app.tool_used = True
    app.conv.write("agent_result", prompt=app.turn_prompt)
    yield from tool_done(app)

    # the subagent itself: its own transcript and hooks (agent_id / agent_type)
    side_path = app.conv.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl"
    side = Conversation(app.home, app.cwd, app.session_id, app.mode, path=side_path)
    side.new_turn(app.prompt_id)
    side.ids[CAPTURED_AGENT_ID] = agent_id
    side.split = "off"
    side.write("sidechain_call")
    assert side.last_tool_use is not None
    ls_input = {"command": "ls", "description": "List folder"}
    extra = {"agent_id": agent_id, "agent_type": "general-purpose"}
    app.hook("PreToolUse", "Bash", tool_input=ls_input, tool_use_id=side.last_tool_use[0], **extra)
    app.hook(
        "PostToolUse",
        "Bash",
        tool_input=ls_input,
        tool_response={
            "stdout": "",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        tool_use_id=side.last_tool_use[0],
        duration_ms=43,
        **extra,
    )
    side.write("sidechain_result")
    app.background_tasks = [
        {
            "id": agent_id,
            "type": "subagent",
            "status": "running",
            "description": SUB_DESCRIPTION,
            "agent_type": "general-purpose",
        }
    ]
    app.hook(
        "SubagentStop",
        stop_hook_active=False,
        agent_transcript_path=str(side_path),
        last_assistant_message=SUB_REPORT,
        background_tasks=app.background_tasks,
        session_crons=[],
        **extra,
    )
    app.conv.write("agent_notification")
    yield from finish(app, time.monotonic(), done=False)
    app.background_tasks = []
    app.screen.add(
        [
            f"{S.GREY}✻{S.FG} {S.GREY}Waiting for {S.BOLD}1{S.RESET}{S.GREY} background agent to finish{S.FG}"
        ]
    )
    app.live = []
    yield Sleep(0.5)

    # the follow-up turn claude starts by itself when the agent has finished
    started = time.monotonic()
    app.prompt_id = str(uuid.uuid4())
    app.conv.new_turn(app.prompt_id, keep_ids=True)
    app.spin = Spin(random.choice(BUSY_VERBS), started)
    written = app.conv.write("agent_followup")
    notification = next(
        line["message"]["content"] for line in written if line.get("promptSource") == "system"
    )
    app.turn_prompt = notification
    app.hook("UserPromptSubmit", prompt=notification)
    app.screen.add([f'{S.GREEN}●{S.FG} Agent "{SUB_DESCRIPTION}" finished{S.GREY} · 0s{S.FG}'])
    yield from think(app)
    say(app, ANSWER)
    yield from finish(app, started)
    return False  # the follow-up's Stop has fired already


# ---------------------------------------------------------------- /clear and /compact


def command_turn(app: App, command: str) -> Turn:
    yield Sleep(0.05)
    app.prompt_id = str(uuid.uuid4())
    if command == "/clear":
        app.hook("SessionEnd", reason="clear")
        old = app.session_id
        app.session_id, app.prompt_id = str(uuid.uuid4()), None
        app.conv = Conversation(
            app.home, app.cwd, app.session_id, app.mode, previous_session_id=old
        )
        app.conv.new_turn(None)
        app.conv.write("clear_header")
        app.screen.reset()
        app.screen.add(S.user_prompt("/clear"))
        app.clear_next = True
        app.set_status("idle", force=True)
        app.hook("SessionStart", source="clear")
        return False
    # /compact
    app.conv.new_turn(app.prompt_id)
    block = app.screen.add(S.user_prompt("/compact"))
    results = app.hook("PreCompact", trigger="manual", custom_instructions=None)
    agent_id = "a" + secrets.token_hex(8)
    agent_path = app.conv.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl"
    app.hook(
        "SubagentStop",
        agent_id=agent_id,
        agent_type="",
        stop_hook_active=False,
        agent_transcript_path=str(agent_path),
        last_assistant_message=COMPACT_SUMMARY,
        background_tasks=[],
        session_crons=[],
    )
    app.hook("SessionStart", source="compact", model="claude-opus-5-5")
    notes = [
        f"PreCompact [{r.command}] completed successfully"
        if r.exit_code == 0
        else f"PreCompact [{r.command}] failed with non-blocking status code {r.exit_code}"
        for r in results
    ]
    stdout = "\n".join(
        f"\x1b[2m{text}\x1b[22m" for text in ["Compacted (ctrl+o to see full summary)", *notes]
    )
    leaf = app.conv.leaf

    def edit(line: dict[str, Any]) -> dict[str, Any]:
        if line.get("subtype") == "compact_boundary":
            line["logicalParentUuid"] = leaf
        content = (line.get("message") or {}).get("content")
        if isinstance(content, str) and content.startswith("<local-command-stdout>"):
            line["message"]["content"] = f"<local-command-stdout>{stdout}</local-command-stdout>"
        return line

    app.conv.write("compact", prompt=app.turn_prompt, edit=edit)
    rows = [f"{S.GREY}{S.ELBOW}{S.DIM}{S.FG}Compacted (ctrl+o to see full summary){S.RESET}"]
    for text in notes:
        rows += [f"     {S.DIM}{line}{S.RESET}" for line in wrap(text, S.WIDTH - 5, S.WIDTH - 5)]
    app.screen.extend(block, rows)
    return False
