"""A running session's permission mode and model: read from what Claude Code shows, and the
next step of changing them from the phone — pure rules, no I/O.

**Mode.** Claude Code cycles its permission mode with Shift+Tab and names the mode in the line
under the prompt box (``⏸ manual mode on``, ``⏵⏵ accept edits on``, ``⏸ plan mode on``,
``⏵⏵ auto mode on``; ``bypass permissions on`` only when it was started allowing that). Hooks
carry ``permission_mode`` (manual is ``default`` there). To reach a mode the agent presses the key
and reads the mode line after each press (:func:`next_mode_step`): done when it shows the target,
given up when the cycle comes back to where it began without passing it (the mode is not in this
claude's cycle: bypass permissions without the launch flag, ``dontAsk``).

**Model.** ``/model <name>`` prints one result line under the command: ``Set model to …`` when
it took the name, else why not (:func:`model_outcome`): 2.1.332 first asks the API with one
small request whether the model exists (``Model 'x' not found`` when not) and, once the
conversation has begun, draws ``Switch model?`` (passed by agent/autopass.py). It also writes the
name as the default for new sessions into ``~/.claude/settings.json`` (``Set model to Haiku 4.5
and saved as your default for new sessions``); a change made from the phone is for that session
only, so the agent puts the file's ``model`` back as it was (:func:`settings_restored`). The model a session runs with is told by
its SessionStart hook (``model``), by each assistant line of its transcript (``message.model``)
and by that result line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.errors import CommandFailed
from agent.state import launch_mode
from wire.protocol import MODE_NAMES

CYCLE_KEY = "BTab"  # Shift+Tab, as tmux names it
MAX_PRESSES = 8  # more modes than any cycle has: a mode not reached by then is not in it


@dataclass(frozen=True)
class ModeStep:
    """What to do next to reach a mode: ``press`` the cycle key, ``done``, or ``give_up`` with
    ``reason``."""

    action: Literal["press", "done", "give_up"]
    reason: str = ""


def next_mode_step(target: str, seen: Sequence[str | None]) -> ModeStep:
    """The next step toward ``target`` given the modes the screen showed so far, the first before
    any press (``None``: no mode line was read on that screen)."""
    wanted = launch_mode(target) or target
    if not seen or seen[-1] is None:
        return ModeStep(
            "give_up",
            "the Mac's screen shows no mode line (a dialog or a notice is in its place): "
            "try again when the session is idle",
        )
    current = seen[-1]
    if current == wanted:
        return ModeStep("done")
    if len(seen) > 1 and current == seen[0]:
        cycle = " → ".join(MODE_NAMES.get(m or "", m or "?") for m in seen)
        return ModeStep("give_up", _not_in_cycle(wanted, cycle))
    if len(seen) > MAX_PRESSES:
        return ModeStep("give_up", f"{MAX_PRESSES} presses of Shift+Tab did not reach it")
    return ModeStep("press")


def _not_in_cycle(mode: str, cycle: str) -> str:
    why = {
        "bypassPermissions": " (claude offers it only when started allowing it: start the "
        "session in Bypass mode)",
        "dontAsk": " (it is chosen at start only)",
    }.get(mode, "")
    return f"{MODE_NAMES.get(mode, mode)} mode is not in this session's mode cycle ({cycle}){why}"


def mode_of_hook(payload: dict[str, object]) -> str | None:
    """The mode a hook payload names, as ``--permission-mode`` takes it."""
    value = payload.get("permission_mode")
    return launch_mode(value) if isinstance(value, str) else None


# -- the model ---------------------------------------------------------------------------------

# Not a model a person chose: what Claude Code writes for its own messages (API errors).
_NOT_MODELS = frozenset({"<synthetic>", ""})


def model_of_line(text: str) -> str | None:
    """The model of a transcript line: an assistant line's ``message.model`` (main conversation,
    not a subagent's sidechain); None for any other line."""
    if '"assistant"' not in text or '"model"' not in text:
        return None
    try:
        line = json.loads(text)
    except ValueError:
        return None
    if not isinstance(line, dict) or line.get("type") != "assistant" or line.get("isSidechain"):
        return None
    message = line.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model if isinstance(model, str) and model not in _NOT_MODELS else None


def latest_model(lines: Sequence[str]) -> str | None:
    """The model of the last assistant line among ``lines`` (a transcript's tail, oldest first)."""
    for text in reversed(lines):
        model = model_of_line(text)
        if model is not None:
            return model
    return None


def model_of_hook(payload: dict[str, object]) -> str | None:
    value = payload.get("model")
    return value if isinstance(value, str) and value not in _NOT_MODELS else None


@dataclass(frozen=True)
class ModelOutcome:
    ok: bool
    text: str  # Claude Code's own result line, e.g. "Set model to Sonnet 4.5"
    shown: str | None = None  # the model as it names it ("Sonnet 4.5")


_RESULT = re.compile(r"^\s*⎿\s+(?P<text>\S.*?)\s*$")
_SET = re.compile(
    r"^Set model to (?P<model>.+?)(?: and saved as your default.*| for this session.*)?$"
)
_COMMAND = re.compile(r"^\s*❯\s+/model\s+(?P<name>\S+)\s*$")


def model_outcome(lines: Sequence[str], name: str) -> ModelOutcome | None:
    """What the latest ``/model <name>`` on the screen led to, None while it shows nothing yet.

    The result is the ``⎿`` line right under the command's ``❯ /model <name>`` line; a
    ``Set model to …`` line is success, any other line says why not."""
    command_row = None
    for index in range(len(lines) - 1, -1, -1):
        match = _COMMAND.match(lines[index].replace("\xa0", " "))
        if match and match.group("name") == name:
            command_row = index
            break
    if command_row is None:
        return None
    parts: list[str] = []
    for row in lines[command_row + 1 : command_row + 6]:
        row = row.replace("\xa0", " ")
        if not parts:
            match = _RESULT.match(row)
            if match is None:
                if row.strip():
                    return None  # not drawn yet (the command menu, a spinner)
                continue
            parts.append(match.group("text"))
        elif row.startswith("     ") and row.strip() and not row.strip().startswith(("⎿", "❯")):
            parts.append(row.strip())  # the line wrapped
        else:
            break
    if not parts:
        return None
    text = " ".join(parts)
    found = _SET.match(text)
    if found:
        return ModelOutcome(True, text, found.group("model"))
    return ModelOutcome(False, text)


MISSING = object()  # the settings had no "model" key


def settings_restored(current: object, before: object) -> dict[str, object] | None:
    """Claude Code's settings (``current``, as read) with their ``model`` as it was before a
    ``/model`` from the phone (``before``: the value, or MISSING); None when nothing differs or
    the settings are not an object (then they are left alone)."""
    if not isinstance(current, dict):
        return None
    now = current.get("model", MISSING)
    if now is before or now == before:
        return None
    restored = {k: v for k, v in current.items() if k != "model"}
    if before is not MISSING:
        restored["model"] = before
    return restored


def check_idle(pane_alive: bool, state: str, card_kind: str | None, what: str) -> None:
    """Mode and model change only on an idle prompt: keys for them would go into a dialog or
    Claude Code would take ``/model`` as a message queued behind the turn. CommandFailed says
    why not (``what``: "mode" or "model"). Pure."""
    if not pane_alive:
        raise CommandFailed("session_ended", "the session is not running; reopen it first")
    if state == "busy":
        raise CommandFailed(
            "session_busy", f"a turn is running; the {what} changes once it is idle"
        )
    if state in ("waiting", "starting"):
        card = f"a {card_kind} card" if card_kind else "a dialog"
        raise CommandFailed(
            "session_not_idle",
            f"the session is {state} ({card if state == 'waiting' else 'starting'}); "
            f"answer it first, then change the {what}",
        )
