"""A session's state, computed from hooks, the screen and Claude Code's status file.

Everything here is pure: plain values in, plain values out, the clock passed in. The agent keeps
a :class:`HookFacts` per session, folds every hook report into it with :func:`apply_hook`, keeps
the latest screen read (and, with :func:`screen_idle_since`, since when the screen has been idle),
the latest status file, and asks :func:`compute` what the session is doing now.

Three signals
-------------
* **Hooks** say when a turn opens (``UserPromptSubmit``) and closes (``Stop``), which tool runs,
  when a permission is asked, when the conversation changes (``SessionStart`` after ``/clear`` or
  compaction) and when Claude Code ends (``SessionEnd``). They are prompt but incomplete: Claude
  Code 2.1.328 fires **no** ``Stop`` after Esc, a rejected dialog or Ctrl-C, and hooks say nothing
  of dialogs drawn in the terminal.
* **The screen** (read every 1.5 s) shows cards, the spinner / ``esc to interrupt`` of a running
  turn, and the interruption notice. It is complete but late.
* **The status file** (``~/.claude/sessions/<pid>.json``: idle / busy / waiting) changes at once,
  but it is never the only signal: it says nothing of questions, plans or the interruption notice,
  it says ``idle`` for a moment after Enter, and ``busy`` while a background agent runs although
  the prompt is usable. Here it only bridges the lag of a screen read, and confirms an idle screen.

Rules (priority ``ended`` > ``starting`` > ``waiting`` > ``busy`` > ``idle``)
--------------------------------------------------------------------------------
Inputs older than the launch (a hook, screen or status of an earlier life of the session) are
ignored, so a reopened session does not inherit its predecessor's end.

1. **ended** — the pane / claude process is gone; or ``SessionEnd`` came after the launch, except
   with reason ``clear`` (``/clear`` fires ``SessionEnd`` for the old conversation and then
   ``SessionStart`` for the new one, in the same process); or the screen reader says claude exited
   (a blank screen counts only once claude has drawn something since the launch: before its first
   frame a slow-loading claude shows a blank screen too).
2. **starting** — from the launch until claude is up. While no prompt has been submitted in this
   launch, a keyed dialog on screen (folder trust, the ``--resume`` picker …) is a start-up
   dialog: still *starting*. Otherwise claude is up once a screen read shows it (a busy screen, a
   card, or an idle prompt), or — with a screen read that is not a keyed dialog — once a hook or
   the status file says so. No screen read yet: *starting*, unless a prompt was already submitted.
3. **waiting** — the screen shows a card, any kind, including ``stuck``. Also when the status file
   says ``waiting`` and changed after the latest screen read (and after the latest turn edge):
   the screen read lags, the card shows up on the next read. A newer screen without a card wins
   over the status file: the phone could not show a card anyway.
4. **busy** — a turn is open by hooks (``UserPromptSubmit`` without ``Stop``), or compaction runs
   (``PreCompact`` without ``SessionStart compact``), or the screen is busy (spinner,
   ``esc to interrupt``, a running tool), or the status file says ``busy`` and changed after the
   latest screen read and turn edge.
5. **idle** — none of the above.

A screen read older than the latest turn edge (``SessionStart``, ``UserPromptSubmit``, ``Stop``)
is stale for cards and busy-ness: after ``Stop`` the session is idle at once, after
``UserPromptSubmit`` a stale ``stuck`` card does not hide the new turn. (It still counts for the
keyed start-up dialog: ``SessionStart`` plus a stale trust dialog stays *starting* until the next
screen read shows the prompt.)

Closing a turn whose hook was missed (``Computed.close_turn``)
---------------------------------------------------------------
A turn open by hooks is closed — ``close_turn`` is True, the state is computed as if it were
closed, and the caller folds :func:`close_open_turn` into its facts — when a screen read taken
after the latest hook of the main turn shows:

* the ``stuck`` card (``Interrupted · What should Claude do instead?``), or the interrupted state
  (optional screen attribute ``interrupted``): at once;
* an idle screen (no card, no spinner, no ``esc to interrupt``, no tool running) while the status
  file says ``idle`` and changed after that hook: at once — Claude Code itself went idle after
  the turn's last hook (an Esc on a question or a plan, a prompt withdrawn while thinking, both
  with no interruption notice). Right after Enter the status file still says ``idle``, but that
  value is older than the ``UserPromptSubmit``, so it cannot close the new turn;
* an idle screen for ``missed_hook_close`` seconds (15 s), counted from the later of
  ``screen_idle_since`` and the turn's last hook (any hook proves the turn alive). Not while the
  status file says ``waiting``: an unrecognised dialog is open.

This is how a turn left open by Esc, a rejected dialog or Ctrl-C (no ``Stop`` hook) is recovered.
The same applies to compaction left open (``PreCompact`` without ``SessionStart compact``).

Decisions on the ambiguous cases
--------------------------------
* Status ``waiting`` with no card on screen: *waiting* only while the screen read is older than
  the status change (see 3).
* Status ``busy`` with a newer idle screen and no turn open by hooks (a background agent runs, or
  its result is being delivered): *idle* with activity ``subagents``. The prompt is usable and the
  person can type; calling it *busy* would hold the person's messages until the
  background agent finishes, possibly minutes later.
* No hook ever came: the hooks contribute nothing, so the screen decides (the status file still
  bridges a screen read's lag). ``Computed.reasons`` then carries ``no-hooks``.

Activity (``Computed.activity``)
--------------------------------
While *busy*: ``compacting``; ``coding`` while Edit / Write / MultiEdit / NotebookEdit runs (shown
as "Coding"); ``tool`` while another tool runs (no in-progress text then); ``subagents``
while background agents run; else None. While *idle*: ``subagents`` when background agents run
or the status file says ``busy``. Otherwise None.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from agent.launch import PERMISSION_MODES

State = Literal["starting", "idle", "busy", "waiting", "ended"]

#: Tools that edit files: the session shows "Coding" while one runs.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
#: The prompt of an automatic follow-up turn, started by Claude Code when a background agent ends.
TASK_NOTIFICATION = "<task-notification>"
#: Status file values; anything else counts as no status.
STATUSES = frozenset({"idle", "busy", "waiting"})


class CardLike(Protocol):
    """What :func:`compute` needs of a card read from the screen."""

    @property
    def kind(self) -> str: ...  # permission | question | plan | dialog | keyed | stuck


class ScreenLike(Protocol):
    """What :func:`compute` needs of one screen read (``agent.cards.ScreenFacts`` fits).

    Two more attributes are read when present: ``interrupted`` (bool, the interruption notice is
    the last thing shown, even with text typed after it) closes an open turn at once, and
    ``prompt_visible`` (bool, claude's input box is drawn) lets a reader tell a blank screen at
    launch from an idle prompt; without it an idle screen counts as claude's prompt.
    """

    @property
    def card(self) -> CardLike | None: ...
    @property
    def busy(self) -> bool: ...
    @property
    def tool_running(self) -> bool: ...
    @property
    def exited(self) -> bool: ...


@dataclass(frozen=True)
class RunningTool:
    """A tool of the main agent that has started (PreToolUse) and not finished (Post*)."""

    tool_use_id: str | None
    name: str
    started_at: float


@dataclass(frozen=True)
class HookFacts:
    """What the hook reports of one session say, folded by :func:`apply_hook`.

    Times are the agent's clock when the report arrived. ``conversation_id`` and
    ``transcript_path`` follow the latest ``SessionStart`` (``/clear`` makes a new conversation,
    compaction keeps it in 2.1.328).
    """

    first_hook_at: float | None = None
    last_hook_at: float | None = None
    last_event: str | None = None
    #: latest hook of the main turn (not a background subagent's own tool hooks)
    last_main_hook_at: float | None = None
    #: latest SessionStart, UserPromptSubmit or Stop: screens read before it are stale
    last_turn_edge_at: float | None = None
    # SessionStart
    session_started_at: float | None = None
    start_source: str | None = None  # startup | resume | clear | compact
    conversation_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    model: str | None = None
    permission_mode: str | None = None  # as the latest hook that carried one named it
    permission_mode_at: float | None = None
    # turns
    turn_open: bool = False
    turn_started_at: float | None = None
    turn_automatic: bool = False  # opened by a <task-notification> prompt, not by a person
    last_prompt_at: float | None = None
    prompts: int = 0
    last_stop_at: float | None = None
    tools: tuple[RunningTool, ...] = ()
    permission_pending: bool = False
    permission_tool: str | None = None
    notification: str | None = None  # notification_type of the latest Notification
    # background work
    background_agents: frozenset[str] = frozenset()
    compacting: bool = False
    compacting_since: float | None = None
    # end
    session_ended: bool = False
    ended_at: float | None = None
    end_reason: str | None = None  # of the latest SessionEnd, "clear" included

    @property
    def tool_running(self) -> str | None:
        """Name of the main agent's most recently started tool still running, if any."""
        return self.tools[-1].name if self.tools else None

    @property
    def hooks_seen(self) -> bool:
        return self.last_hook_at is not None


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _running_subagents(payload: dict[str, Any]) -> frozenset[str] | None:
    """Ids of running subagents in a Stop's ``background_tasks`` (None when it has none)."""
    tasks = payload.get("background_tasks")
    if not isinstance(tasks, list):
        return None
    ids: set[str] = set()
    for task in tasks:
        if (
            isinstance(task, dict)
            and task.get("type") == "subagent"
            and task.get("status") == "running"
            and isinstance(task.get("id"), str)
        ):
            ids.add(task["id"])
    return frozenset(ids)


# What a turn that is over leaves (a Stop, a session's end): no turn, no tool, no dialog waiting.
_TURN_OVER: dict[str, Any] = {
    "turn_open": False,
    "turn_automatic": False,
    "tools": (),
    "permission_pending": False,
    "permission_tool": None,
}


def apply_hook(facts: HookFacts, event: str, payload: dict[str, Any], now: float) -> HookFacts:
    """Fold one hook report into the facts; returns a new value, ``facts`` is left as it was.

    Unknown events only refresh the times. A subagent's own tool hooks (they carry
    ``agent_id``) do not touch the main agent's tools.
    """
    subagent = isinstance(payload.get("agent_id"), str) and event not in (
        "SubagentStart",
        "SubagentStop",
    )
    main = not subagent and event not in ("SubagentStart", "SubagentStop", "SessionEnd")
    changes: dict[str, Any] = {
        "first_hook_at": facts.first_hook_at if facts.first_hook_at is not None else now,
        "last_hook_at": now,
        "last_event": event,
    }
    if main:
        changes["last_main_hook_at"] = now
    mode = _str(payload, "permission_mode")
    if mode is not None:
        changes["permission_mode"] = mode
        changes["permission_mode_at"] = now

    if event == "SessionStart":
        source = _str(payload, "source")
        changes.update(
            last_turn_edge_at=now,
            session_started_at=now,
            start_source=source,
            conversation_id=_str(payload, "session_id") or facts.conversation_id,
            transcript_path=_str(payload, "transcript_path") or facts.transcript_path,
            cwd=_str(payload, "cwd") or facts.cwd,
            model=_str(payload, "model") or facts.model,
            compacting=False,
            compacting_since=None,
            session_ended=False,
        )
        if source != "compact":
            # A new process (startup, resume) or a new conversation (clear): no turn runs.
            # Compaction may happen inside a running turn (auto-compact), so it leaves the turn.
            changes.update(
                turn_open=False,
                turn_automatic=False,
                tools=(),
                permission_pending=False,
                permission_tool=None,
            )
        if source in ("startup", "resume"):
            changes["background_agents"] = frozenset()
    elif event == "UserPromptSubmit":
        prompt = _str(payload, "prompt") or ""
        changes.update(
            last_turn_edge_at=now,
            turn_open=True,
            turn_automatic=prompt.lstrip().startswith(TASK_NOTIFICATION),
            last_prompt_at=now,
            prompts=facts.prompts + 1,
            permission_pending=False,
            permission_tool=None,
        )
        if not facts.turn_open:
            changes["turn_started_at"] = now
        if not facts.turn_open or facts.permission_pending:
            # A prompt typed while the turn runs is queued and keeps the running tool; one typed
            # after a dialog was rejected means that dialog's tool never ran.
            changes["tools"] = ()
    elif event == "Stop":
        changes.update(_TURN_OVER, last_turn_edge_at=now, last_stop_at=now)
        running = _running_subagents(payload)
        if running is not None:
            changes["background_agents"] = running
    elif event == "PreToolUse" and not subagent:
        tool = RunningTool(_str(payload, "tool_use_id"), _str(payload, "tool_name") or "?", now)
        changes["tools"] = (*facts.tools, tool)
        changes.update(_reopen(facts, now))
    elif event in ("PostToolUse", "PostToolUseFailure") and not subagent:
        changes.update(
            tools=_without(facts.tools, _str(payload, "tool_use_id"), _str(payload, "tool_name")),
            permission_pending=False,
            permission_tool=None,
        )
    elif event == "PermissionRequest":
        changes.update(permission_pending=True, permission_tool=_str(payload, "tool_name"))
        if not subagent:
            changes.update(_reopen(facts, now))
    elif event == "Notification":
        changes["notification"] = _str(payload, "notification_type")
    elif event == "SubagentStart":
        agent = _str(payload, "agent_id")
        if agent is not None:
            changes["background_agents"] = facts.background_agents | {agent}
    elif event == "SubagentStop":
        agent = _str(payload, "agent_id")
        if agent is not None:
            changes["background_agents"] = facts.background_agents - {agent}
    elif event == "PreCompact":
        changes.update(compacting=True, compacting_since=now)
    elif event == "SessionEnd":
        reason = _str(payload, "reason")
        changes["end_reason"] = reason
        if reason != "clear":
            changes.update(
                _TURN_OVER,
                session_ended=True,
                ended_at=now,
                compacting=False,
                compacting_since=None,
            )
    return replace(facts, **changes)


# Claude Code 2.1.328 calls the "manual" mode "default" in hook payloads; its
# command line and its screen say "manual".
_MODE_ALIASES = {"default": "manual"}


def launch_mode(name: str | None) -> str | None:
    """A permission mode as a hook or the screen's mode line names it, as ``claude
    --permission-mode`` takes it; None for a name that is not a mode."""
    if name is None:
        return None
    name = _MODE_ALIASES.get(name, name)
    return name if name in PERMISSION_MODES else None


def current_mode(hooks: HookFacts, screen_mode: str | None, screen_at: float | None) -> str | None:
    """The permission mode the session is in now: the newer of the latest hook's and the latest
    mode line read on the screen (``screen_at``: when it was read), None when neither says. A
    plan approved or Shift+Tab in the terminal changes it; both are true when made, so the newer
    one is the current mode."""
    from_hook = launch_mode(hooks.permission_mode)
    from_screen = launch_mode(screen_mode)
    if from_hook is None or from_screen is None:
        return from_screen or from_hook
    hook_at = hooks.permission_mode_at
    newer_hook = hook_at is not None and (screen_at is None or hook_at > screen_at)
    return from_hook if newer_hook else from_screen


def _reopen(facts: HookFacts, now: float) -> dict[str, Any]:
    """A main-agent tool hook proves a turn runs, even if it was closed as missed."""
    if facts.turn_open:
        return {}
    return {"turn_open": True, "turn_started_at": now}


def _without(
    tools: tuple[RunningTool, ...], tool_use_id: str | None, name: str | None
) -> tuple[RunningTool, ...]:
    """Drop the finished tool: by id, else the latest one of that name."""
    if tool_use_id is not None:
        kept = tuple(t for t in tools if t.tool_use_id != tool_use_id)
        if len(kept) != len(tools):
            return kept
    for i in range(len(tools) - 1, -1, -1):
        if tools[i].name == name:
            return tools[:i] + tools[i + 1 :]
    return tools


def close_open_turn(facts: HookFacts) -> HookFacts:
    """What the caller folds in when :func:`compute` says ``close_turn``."""
    return replace(
        facts,
        turn_open=False,
        turn_automatic=False,
        tools=(),
        permission_pending=False,
        permission_tool=None,
        compacting=False,
        compacting_since=None,
    )


def screen_idle(screen: ScreenLike) -> bool:
    """No card, no spinner / ``esc to interrupt``, no tool running, claude still there."""
    return screen.card is None and not (screen.busy or screen.tool_running or screen.exited)


def screen_idle_since(previous: float | None, screen: ScreenLike | None, at: float) -> float | None:
    """Fold one screen read (taken at ``at``) into "idle since"; None while it is not idle."""
    if screen is None or not screen_idle(screen):
        return None
    return previous if previous is not None else at


@dataclass(frozen=True)
class SessionInputs:
    hooks: HookFacts
    screen: ScreenLike | None  # latest screen read (None = none yet)
    screen_at: float | None
    status: str | None  # status file: idle | busy | waiting | None (file absent)
    status_at: float | None  # when the status took that value (statusUpdatedAt)
    process_alive: bool  # the pane / claude process exists
    launched_at: float
    now: float
    missed_hook_close: float = 15.0
    #: first of the uninterrupted run of idle screen reads ending with the latest one
    #: (:func:`screen_idle_since`); None = not idle or not tracked
    screen_idle_since: float | None = None
    #: when the screen first showed anything since the launch (None = not yet): a blank screen
    #: before it is claude still loading, after it claude gone
    first_frame_at: float | None = None


@dataclass(frozen=True)
class Computed:
    state: State
    activity: str | None  # coding | tool | compacting | subagents | None
    reasons: tuple[str, ...]  # which signals decided, for logs and debugging
    close_turn: bool  # close the open turn (missed Stop): fold close_open_turn() into the facts


def _since_launch(at: float | None, launched_at: float) -> bool:
    return at is not None and at >= launched_at


def compute(inputs: SessionInputs) -> Computed:
    """The session's state now; see the module docstring for the rules."""
    h = inputs.hooks
    launched = inputs.launched_at
    screen = inputs.screen
    screen_at = inputs.screen_at
    if screen is not None and screen_at is not None and screen_at < launched:
        screen, screen_at = None, None  # a read of an earlier life
    status = inputs.status if inputs.status in STATUSES else None
    status_at = inputs.status_at
    if status is not None and status_at is not None and status_at < launched:
        status, status_at = None, None

    # 1. ended
    if not inputs.process_alive:
        return Computed("ended", None, ("process-gone",), False)
    if h.session_ended and _since_launch(h.ended_at, launched):
        return Computed("ended", None, (f"session-end:{h.end_reason}",), False)
    if screen is not None and screen.exited:
        if _since_launch(inputs.first_frame_at, launched):
            return Computed("ended", None, ("screen-exited",), False)
        return Computed("starting", None, ("no-frame-yet",), False)

    # 2. starting
    card = screen.card if screen is not None else None
    prompted = _since_launch(h.last_prompt_at, launched)
    if not prompted:
        if card is not None and card.kind == "keyed":
            return Computed("starting", None, ("startup-dialog",), False)
        if screen is None:
            return Computed("starting", None, ("no-screen-yet",), False)
        if not (
            _screen_shows_claude(screen)
            or _since_launch(h.last_hook_at, launched)
            or status is not None
        ):
            return Computed("starting", None, ("no-prompt-yet",), False)

    reasons: list[str] = [] if h.hooks_seen else ["no-hooks"]

    # A screen read before the latest turn edge says nothing of cards or busy-ness now.
    edge = h.last_turn_edge_at
    if screen is not None and screen_at is not None and edge is not None and screen_at < edge:
        screen, card = None, None
        reasons.append("screen-stale")
    # The status file overrides the screen only when it changed after the screen read and
    # after the latest turn edge.
    status_fresh = (
        status is not None
        and (
            screen is None
            or (status_at is not None and screen_at is not None and status_at > screen_at)
        )
        and (edge is None or (status_at is not None and status_at > edge))
    )

    close, why = _close_turn(inputs, screen, screen_at, status, status_at)
    if close:
        reasons.append(why)
    turn_open = h.turn_open and not close
    compacting = h.compacting and not close

    # 3. waiting
    if card is not None:
        reasons.append(f"card:{card.kind}")
        return Computed("waiting", None, tuple(reasons), close)
    if status == "waiting" and status_fresh:
        reasons.append("status-waiting")
        return Computed("waiting", None, tuple(reasons), close)

    # 4. busy
    screen_busy = screen is not None and (screen.busy or screen.tool_running)
    status_busy = status == "busy" and status_fresh
    if turn_open or compacting or screen_busy or status_busy:
        if turn_open:
            reasons.append("hook-turn-auto" if h.turn_automatic else "hook-turn")
        if compacting:
            reasons.append("compacting")
        if screen_busy:
            reasons.append("screen-busy")
        if status_busy:
            reasons.append("status-busy")
        return Computed(
            "busy", _busy_activity(h, screen, compacting, turn_open), tuple(reasons), close
        )

    # 5. idle
    reasons.append("screen-idle" if screen is not None else "hooks-idle")
    activity = None
    if h.background_agents:
        activity = "subagents"
        reasons.append("background-agents")
    elif status == "busy":
        activity = "subagents"
        reasons.append("status-busy-background")
    return Computed("idle", activity, tuple(reasons), close)


def _screen_shows_claude(screen: ScreenLike) -> bool:
    """The screen shows claude up and running (not blank, not a start-up dialog)."""
    if screen.busy or screen.tool_running:
        return True
    if screen.card is not None:
        return screen.card.kind != "keyed"
    return bool(getattr(screen, "prompt_visible", True))


def _close_turn(
    inputs: SessionInputs,
    screen: ScreenLike | None,
    screen_at: float | None,
    status: str | None,
    status_at: float | None,
) -> tuple[bool, str]:
    """Whether the open turn (or compaction) lost its closing hook, and which rule says so."""
    h = inputs.hooks
    if not (h.turn_open or h.compacting) or screen is None:
        return False, ""
    last = h.last_main_hook_at
    at = screen_at if screen_at is not None else inputs.now
    if last is not None and at <= last:
        return False, ""  # the screen predates the turn's latest hook
    if screen.card is not None:
        return (True, "stuck-close") if screen.card.kind == "stuck" else (False, "")
    if bool(getattr(screen, "interrupted", False)):
        return True, "interrupted-close"
    if not screen_idle(screen):
        return False, ""
    if (
        status == "idle"
        and status_at is not None
        and (last is None or status_at > last)
        and at >= status_at
    ):
        return True, "status-idle-close"
    if status == "waiting":
        return False, ""
    starts = [t for t in (inputs.screen_idle_since, last) if t is not None]
    if starts and inputs.now - max(starts) >= inputs.missed_hook_close:
        return True, "missed-hook-close"
    return False, ""


def _busy_activity(
    h: HookFacts, screen: ScreenLike | None, compacting: bool, turn_open: bool
) -> str | None:
    if compacting:
        return "compacting"
    tool = h.tool_running if turn_open else None
    if tool in EDIT_TOOLS:
        return "coding"
    if tool is not None or (screen is not None and screen.tool_running):
        return "tool"
    if h.background_agents:
        return "subagents"
    return None
