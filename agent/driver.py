"""One session's loop: its screen read into facts and a state, its card and the request that
built it, the keys that answer it, the dialogs passed by rule, its held messages typed at safe
points, and what the relay is told of it.

A ``SessionDriver`` is the session's ``Runtime`` (what the agent knows of it while it runs) with
the work done on it. What it reaches outside itself is given to it: the multiplexer
(agent/seams.py), the configuration, and a ``SessionHost`` (the relay's update, the registry's
save, the session's markers, the agent's background tasks), so it runs on the in-memory fakes as
on tmux. The sessions' life — launching, reopening, reviving, ending — is agent/sessions.py's;
the hooks (agent/hookevents.py) and the commands (agent/commands.py) hand each session's part to
its driver.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent import attachments, autopass, startfail
from agent import denials as denialrules
from agent import grants as grantrules
from agent import held as heldrules
from agent import modes as moderules
from agent.cards import (
    NO_REQUEST,
    NOT_MATCHING,
    DetectedCard,
    HookAsk,
    ScreenFacts,
    early_card,
    from_hook,
    hook_matches,
    keys_for,
    read_screen,
)
from agent.errors import CommandFailed, DialogOpen, MuxError, NotLinked, PaneGone
from agent.files import write_json
from agent.launch import COMPACT_COMMAND
from agent.mux import LastScreen, Pane, session_name
from agent.registry import SessionRecord
from agent.screen import render
from agent.seams import Multiplexer
from agent.state import (
    Computed,
    HookFacts,
    SessionInputs,
    apply_hook,
    close_open_turn,
    compute,
    current_mode,
    launch_mode,
    screen_idle_since,
)
from agent.status import ClaudeStatus, find_for_session, read_status
from agent.transcript import TranscriptFollower
from wire import policy as policyrules
from wire.config import Config
from wire.markers import bridge_line
from wire.protocol import (
    MAX_FAILURE_LINE_CHARS,
    MAX_FAILURE_LINES,
    MAX_FAILURE_TEXT_CHARS,
    AnswerCardArgs,
    GrantInfo,
    HeldMessage,
    MarkerKind,
    ResumeScope,
    SessionInfo,
    StartFailureInfo,
)

_log = logging.getLogger("agent")

FIRST_FRAME_QUIET = 1.0  # keys in the first ~0.5 s after the first frame are dropped
CARD_CONFIRM_TIMEOUT = 4.0  # how long an answered card may stay on screen before keys are retried
CARD_RETRY_AFTER = 0.8
DIALOG_SETTLE = 0.4  # a key sent within ~10 ms of a dialog appearing is dropped: wait a little
LEAD_SETTLE = 2.0  # s after a resume's lead was typed before an idle screen lets held ones go
TYPE_CONFIRM = 1.5  # how long a paste or an Enter may take to show on screen
ESCAPE_CONFIRM = 1.5  # how long Esc may take to stop a turn or close a dialog on screen
KEY_GAP = 0.06  # between key groups, so each is drawn before the next (multi-step answers)
BURST_SECONDS = 1.0  # after a hook, read the screen every BURST_INTERVAL for this long
BURST_INTERVAL = 0.1
EARLY_CARD_FOR = 10.0  # a request's card waits this long for its dialog to be drawn
DIALOG_WATCH_INTERVAL = 0.02  # screen reads meanwhile
MODEL_CONFIRM = 8.0  # how long /model's result line may take to be drawn
FOLDER_TRUSTED_LINE = (
    "🔐 You trusted the folder that came from {source}: Claude Code runs its project settings here"
)
FOLDER_NOT_TRUSTED = (
    "The folder that came from {source} was not trusted on this Mac, so Claude Code did not "
    "start and the session was ended. Send it a message to be asked again."
)


def policy_of(record: SessionRecord) -> policyrules.Policy:
    return policyrules.from_record(record.policy, record.allow_all)


def set_policy(
    record: SessionRecord, policy: policyrules.Policy, ended: str = "it was turned off"
) -> None:
    """Keep the session's new policy; "allow all" starting or ending is told in the
    conversation (``ended`` says why it ended)."""
    before = policy_of(record)
    record.policy = policy.to_json()
    record.allow_all = policy.allow_all
    if policy.allow_all and (
        not before.allow_all or before.allow_all_until != policy.allow_all_until
    ):
        queue_marker(record, MarkerKind.ALLOW_ALL, _allow_all_started(policy))
    elif before.allow_all and not policy.allow_all:
        queue_marker(record, MarkerKind.ALLOW_ALL, f"🔒 Allow all ended ({ended}): tools ask again")


def _allow_all_started(policy: policyrules.Policy) -> str:
    until = policy.allow_all_until
    if until is None:
        span = "until the session ends"
    else:
        left = max(0, round((until - time.time()) / 60))
        hours, minutes = divmod(left, 60)
        length = " ".join(
            p for p in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "") if p
        )
        at = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%d %H:%M UTC")
        span = f"for {length or 'less than a minute'}, until {at}"
    return f"🔓 Allow all is on {span}: tools no rule names run without asking"


def queue_marker(record: SessionRecord, marker: MarkerKind, text: str) -> None:
    """A line of the bridge's own in the session's conversation, sent with the next lines."""
    record.marker_seq += 1
    line = bridge_line(marker, text, _now_iso(), f"bridge-{record.id}-{record.marker_seq}")
    record.pending_markers.append({"offset": record.marker_seq, "text": line})


def _is_no(card: DetectedCard, answer: str | list[str] | None) -> bool:
    """The answer picks a "No…" option: it grants nothing, "always" or not."""
    if not isinstance(answer, str):
        return False
    label = next((o.label for o in card.options if o.key == answer), "")
    return label.strip().lower().startswith("no")


def _settings_model(path: Path) -> object:
    """The ``model`` of Claude Code's settings file now (modes.MISSING when it has none)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return moderules.MISSING
    return data.get("model", moderules.MISSING) if isinstance(data, dict) else moderules.MISSING


def _restore_settings_model(path: Path, before: object) -> None:
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    restored = moderules.settings_restored(current, before)
    if restored is not None:
        write_json(path, restored)
        _log.info("put the default model in %s back as it was", path)


MAX_EXIT_NUMBER = 255  # an exit status or a signal number past this is not one


def _exit_number(value: int | None) -> int | None:
    return value if value is not None and 0 <= value <= MAX_EXIT_NUMBER else None


def failure_info(found: startfail.StartFailure) -> StartFailureInfo:
    """A start failure as the relay is told of it (wire/protocol.py's limits)."""
    reason = found.lines[0] if found.lines else "Claude Code ended without a word"
    return StartFailureInfo(
        code=found.code,
        reason=reason[:MAX_FAILURE_TEXT_CHARS],
        action=found.action[:MAX_FAILURE_TEXT_CHARS],
        last_lines=[line[:MAX_FAILURE_LINE_CHARS] for line in found.lines[:MAX_FAILURE_LINES]],
        status=_exit_number(found.status),
        signal=_exit_number(found.signal),
    )


def kept_failure(record: SessionRecord) -> StartFailureInfo | None:
    """The start failure the registry kept for the session (None: none, or not readable)."""
    if record.start_failure is None:
        return None
    try:
        return StartFailureInfo.model_validate(record.start_failure)
    except ValueError:
        return None


def failure_error(info: StartFailureInfo) -> str:
    """The failure in one sentence: the session's ``error`` on the phone."""
    reason = info.reason.rstrip(" .")
    return f"Claude Code stopped before the session started ({reason}). {info.action}"


async def read_start_failure(mux: Multiplexer, name: str, mac: str) -> StartFailureInfo:
    """Why the claude of the dead pane ``name`` ended before its session was live."""
    try:
        last = await mux.last_screen(name)
    except PaneGone:
        last = LastScreen("", "", "", 0)
    found = startfail.explain_exit(
        last.screen, last.history, last.status or None, mac=mac, width=last.width
    )
    return failure_info(found)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Runtime:
    """What the agent knows of one session while it runs (the record is what it remembers)."""

    record: SessionRecord
    follower: TranscriptFollower
    hooks: HookFacts = field(default_factory=HookFacts)
    screen: ScreenFacts | None = None
    screen_at: float | None = None
    idle_since: float | None = None
    first_frame_at: float | None = None
    status: str | None = None
    status_at: float | None = None
    pane_alive: bool = False
    computed: Computed | None = None
    card: DetectedCard | None = None
    card_id: str | None = None
    card_count: int = 0
    card_seen_at: float = 0.0
    status_pid: int | None = None  # the claude process whose status file this session reads
    screen_key: tuple[str, int, int] | None = None  # the capture the current facts came from
    sent: dict[str, Any] = field(default_factory=dict)  # last values sent to the relay
    keys: asyncio.Lock = field(default_factory=asyncio.Lock)  # one typist at a time
    wake_screen: asyncio.Event = field(default_factory=asyncio.Event)
    next_screen: float = 0.0
    burst_until: float = 0.0  # read the screen often until then (a hook said something changed)
    trust_passed: bool = False  # start-up dialogs other than those passed by rule go to the phone
    passing: bool = False  # a dialog is being passed by rule (agent/autopass.py)
    pass_failed: set[str] = field(default_factory=set)  # dialogs that would not pass: cards
    model_changed_at: float | None = None  # the phone changed the model (its confirmation passes)
    held_not_before: float = 0.0  # after a revive, held messages wait a little
    # When a resume's lead was typed: held messages follow once the screen is idle again (a
    # /compact may be over before the screen is read busy, so no idle transition would come).
    after_lead_at: float | None = None
    # The resume scope the person set for this start (its own, the account's, this reopen's):
    # Claude Code's own resume chooser is answered by it; None: the chooser is the person's.
    chooser_scope: ResumeScope | None = None
    moving: bool = False  # in a move to or from another Mac: its held messages wait
    launching: bool = False  # its terminal is being (re)made: screen reads wait
    error: str | None = None  # why its last launch failed (shown on the phone), None once up
    failure: StartFailureInfo | None = None  # its claude ended before it was live: why
    was_live: bool = False  # its claude's session started (SessionStart), or outlived an agent
    # The latest mode line read on its screen, and when: a screen without one (a dialog, a
    # notice in the footer) says nothing of the mode, so an older hook's does not win then.
    screen_mode: str | None = None
    screen_mode_at: float | None = None
    transcript_retry_at: float = 0.0  # the relay refused its last batch: not before then
    transcript_backoff: float = 0.0
    transcript_refusal: str | None = None  # why, as last logged
    tool_uses: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # PreToolUse
    ask: HookAsk | None = None  # the permission Claude Code asked for, its dialog due or open
    ask_seen: bool = False  # that dialog was seen on screen
    model_now: str | None = None  # the model it runs with, as Claude Code last told
    # A call auto mode's classifier refused, its hook waiting for the phone (agent/denials.py):
    # the refusal, its card id and the answer the hook waits for; then the "allow once" armed.
    denial: denialrules.Denial | None = None
    denial_card_id: str | None = None
    denial_answer: asyncio.Future[str | None] | None = None
    allow_once: denialrules.Denial | None = None

    @property
    def name(self) -> str:
        return session_name(self.record.id)

    @property
    def state(self) -> str:
        return self.computed.state if self.computed else "starting"

    def relaunched(self) -> None:
        """Its claude was started again: nothing read of the last process holds."""
        self.hooks = HookFacts()
        self.screen = None
        self.screen_at = None
        self.screen_mode, self.screen_mode_at = None, None
        self.first_frame_at = None
        self.trust_passed = False
        self.model_changed_at = None
        self.pass_failed.clear()
        self.pane_alive = True
        self.was_live = False
        self.computed = None
        self.sent.clear()
        self.next_screen = 0

    def reattached(self, now: float) -> None:
        """Its terminal outlived the previous agent: it is up, past its first frame and its
        start-up dialogs."""
        self.pane_alive = True
        self.was_live = True
        self.first_frame_at = now - FIRST_FRAME_QUIET
        self.trust_passed = True


def lead_settled(after_lead_at: float | None, state: str, now: float) -> bool:
    """A resume's lead was typed a while ago and the screen is idle: what waits behind it may go."""
    return after_lead_at is not None and state == "idle" and now >= after_lead_at + LEAD_SETTLE


@dataclass(frozen=True)
class SessionHost:
    """What a session's driver reaches outside the session (the agent gives its own; tests give
    fakes)."""

    update: Callable[[SessionInfo], Awaitable[None]]  # the relay link's; NotLinked when down
    save: Callable[[], None]  # write the registry now
    changed: Callable[[], None]  # the registry changed: written soon
    add_marker: Callable[[SessionRecord, MarkerKind, str], None]  # a line in its conversation
    end_allow_all: Callable[[float, SessionRecord], None]  # the session is over (at that time)
    spawn: Callable[[Coroutine[Any, Any, None]], None]  # run in the background, kept till done


@dataclass
class SessionDriver(Runtime):
    """One session's loop (see the module's docstring): its runtime and the work done on it."""

    mux: Multiplexer = field(kw_only=True)
    config: Config = field(kw_only=True)
    claude_home: Path = field(kw_only=True)  # where Claude Code keeps its status files
    host: SessionHost = field(kw_only=True)
    data_dir: Path | None = field(default=None, kw_only=True)  # the agent's: attachments there
    mac_name: str = field(default=startfail.DEFAULT_MAC, kw_only=True)  # named in what to do

    # -- hooks -----------------------------------------------------------------------------

    def note_hook(self, event: str, payload: dict[str, Any], now: float) -> None:
        """A hook of this session: its facts for the state, and the requests that may ask."""
        self.hooks = apply_hook(self.hooks, event, payload, now)
        self._note_request(event, payload)
        if event == "SessionStart":
            self.note_model(moderules.model_of_hook(payload))

    def note_model(self, model: str | None) -> None:
        """Claude Code named the model it runs with (a hook, a transcript line, /model's line)."""
        if model is not None and model != self.model_now:
            self.model_now = model
            self.wake_screen.set()  # the next read tells the relay

    def note_lines(self, texts: list[str]) -> None:
        """New lines of the conversation: its latest assistant line names the model."""
        self.note_model(moderules.latest_model(texts))

    def ask_card(self, tool: str, payload: dict[str, Any], now: float) -> None:
        """A permission request the policy leaves to the person."""
        # The card goes to the phone now, before the dialog is drawn (not answerable
        # until it is): what will run is known from the request itself.
        self.ask, self.ask_seen = self._ask_from(tool, payload, now), False
        self.wake_screen.set()
        self.burst_until = now + BURST_SECONDS
        self.track_card()
        # sent once the hook's answer is on its way: Claude Code draws the dialog only
        # after it, so nothing here may delay it
        asyncio.get_running_loop().call_soon(self.host.spawn, self.send_update())

    def _note_request(self, event: str, payload: dict[str, Any]) -> None:
        """Keep the tool uses that may still ask (PreToolUse carries the tool use id that
        PermissionRequest lacks), and forget a request once its tool ran or the turn ended."""
        tool_use_id = payload.get("tool_use_id")
        tool_use_id = tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None
        tool = payload.get("tool_name")
        tool_input = payload.get("tool_input")
        if event == "PreToolUse" and tool_use_id and isinstance(tool, str):
            self.tool_uses[tool_use_id] = (tool, tool_input if isinstance(tool_input, dict) else {})
            while len(self.tool_uses) > 64:  # parallel subagents' uses; never ending ones drop
                del self.tool_uses[next(iter(self.tool_uses))]
        elif event in ("PostToolUse", "PostToolUseFailure") and tool_use_id:
            self.tool_uses.pop(tool_use_id, None)
            if self.ask is not None and self.ask.tool_use_id == tool_use_id:
                self.ask = None
        elif event in ("Stop", "SessionEnd") or (
            event == "SessionStart" and payload.get("source") != "compact"
        ):
            self.tool_uses.clear()
            self.ask = None

    def _ask_from(self, tool: str, payload: dict[str, Any], now: float) -> HookAsk:
        tool_input = payload.get("tool_input")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        tool_use_id = payload.get("tool_use_id")
        if not isinstance(tool_use_id, str) or not tool_use_id:
            # the latest tool use of that tool with the very same input
            tool_use_id = next(
                (
                    tid
                    for tid, (name, given) in reversed(self.tool_uses.items())
                    if name == tool and given == tool_input
                ),
                None,
            )
        return HookAsk(tool=tool, tool_input=tool_input, tool_use_id=tool_use_id, at=now)

    # -- the relay -----------------------------------------------------------------------------

    async def send_update(self, force: bool = False) -> None:
        """Tell the relay what changed in the session's live side (only what changed)."""
        record = self.record
        state = self.state if self.pane_alive else "ended"
        card = self.card.to_card(self.card_id) if self.card and self.card_id else None
        if card is None and self.denial is not None and self.denial_card_id is not None:
            card = self.denial.card(self.denial_card_id)  # the session needs the person
            state = "waiting" if state in ("busy", "idle") else state
        preview = None
        if self.screen and state == "busy" and not self.screen.tool_running:
            preview = self.screen.preview
        current: dict[str, Any] = {
            "state": state,
            "activity": self.computed.activity if self.computed and self.pane_alive else None,
            "card": card.model_dump() if card else None,
            "held": [h.model_dump() for h in record.held],
            "preview": preview,
            "cwd": record.cwd,
            "conversation_id": record.conversation_id,
            "resume_scope": record.resumed_scope,
            "permission_mode": record.permission_mode,
            "model": self.model_now or record.model,
            "error": self.error,
            "failure": self.failure.model_dump() if self.failure else None,
            # A dead claude's grants are over (the next launch resets them)
            "grants": [grantrules.info(g) for g in grantrules.of_record(record)]
            if self.pane_alive
            else [],
        }
        changed = {k: v for k, v in current.items() if force or self.sent.get(k, object()) != v}
        if not changed:
            return
        fields: dict[str, Any] = {"session_id": record.id}
        for key, value in changed.items():
            if key == "card":
                if value is None:
                    fields["clear_card"] = True
                else:
                    fields["card"] = card
            elif key == "held":
                fields["held"] = list(record.held)
            elif key == "grants":
                fields["grants"] = [GrantInfo.model_validate(g) for g in value]
            elif key == "failure":
                fields["failure"] = self.failure
            else:
                fields[key] = value
        info = SessionInfo(**fields)
        try:
            await self.host.update(info)
        except NotLinked:
            return
        self.sent.update(changed)

    # -- screens and state ---------------------------------------------------------------------

    async def read(self, alive: bool, now: float, pane: Pane | None = None) -> None:
        record = self.record
        was_alive = self.pane_alive
        self.pane_alive = alive
        if alive:
            try:
                capture = await self.mux.capture(self.name, pane)
            except PaneGone:
                self.pane_alive = False
            else:
                key = (capture.text, capture.width, capture.height)
                if self.screen is not None and key == self.screen_key:
                    facts = self.screen  # an unchanged screen reads the same (the reader is pure)
                else:
                    facts = read_screen(render(capture.text, capture.width, capture.height))
                    self.screen_key = key
                if self.first_frame_at is None and capture.text.strip():
                    self.first_frame_at = now
                self.idle_since = screen_idle_since(self.idle_since, facts, now)
                self.screen = facts
                self.screen_at = now
                if facts.mode is not None:
                    self.screen_mode, self.screen_mode_at = facts.mode, now
        if self.hooks.session_started_at is not None:
            self.was_live = True
        if was_alive and not self.pane_alive:
            _log.info("session %s ended (its terminal is gone)", record.id)
            if not self.was_live and not record.ended_by_person:
                # claude ended before its session was live (a login, a flag, a config): why, in
                # its own words, stays on the session until a start works; its held messages
                # stay held, and it is not revived (a message reopens it).
                self.failure = await read_start_failure(self.mux, self.name, self.mac_name)
                self.error = failure_error(self.failure)
                record.start_failure = self.failure.model_dump()
                record.alive = False
                record.held = [
                    m.model_copy(update={"state": "held"}) if m.state == "typing" else m
                    for m in record.held
                ]
                _log.warning("session %s: %s", record.id, self.error)
            self.host.end_allow_all(now, record)
            await self.mux.kill(self.name)
            record.alive = False if record.ended_by_person or record.resting else record.alive
            self.host.changed()
        mode = current_mode(self.hooks, self.screen_mode, self.screen_mode_at)
        if mode is not None and mode != record.permission_mode:
            # Remembered for reopen and revive: a plan approved leaves plan mode, Shift+Tab in
            # the terminal changes it, and the session must come back as it was.
            _log.info("session %s: permission mode %s", record.id, mode)
            record.permission_mode = mode
            self.host.changed()
        status = self._claude_status()
        if status is not None:
            self.status, self.status_at = status.status, status.status_at
        computed = compute(
            SessionInputs(
                hooks=self.hooks,
                screen=self.screen,
                screen_at=self.screen_at,
                status=self.status,
                status_at=self.status_at,
                process_alive=self.pane_alive,
                launched_at=record.launched_at,
                now=now,
                missed_hook_close=self.config.float("missed_hook_close"),
                screen_idle_since=self.idle_since,
                first_frame_at=self.first_frame_at,
            )
        )
        if computed.close_turn:
            self.hooks = close_open_turn(self.hooks)
        startup_card = self.screen.card if self.screen and computed.state == "starting" else None
        if startup_card is not None and autopass.persons_startup_dialog(
            startup_card, arrived=record.arrived_from is not None, trust_passed=self.trust_passed
        ):
            computed = dataclasses.replace(
                computed, state="waiting", reasons=(*computed.reasons, "startup-dialog")
            )
        previous = self.state
        self.computed = computed
        if self._auto_pass(now):
            self.next_screen = now + BURST_INTERVAL  # the dialog goes; read again soon
            return
        self.track_card()
        busy = computed.state == "busy"
        interval = self.config.float("preview_read_interval" if busy else "screen_read_interval")
        if now < self.burst_until:
            interval = BURST_INTERVAL
        if self.card is not None and not self.card.answerable:
            interval = DIALOG_WATCH_INTERVAL  # its card waits for the dialog: catch it drawn
        self.next_screen = now + float(interval)
        await self.send_update()
        if (previous != computed.state and computed.state == "idle") or lead_settled(
            self.after_lead_at, computed.state, now
        ):
            self.after_lead_at = None
            await self.deliver_held(reason="idle")
        elif self.card is not None and self.card.kind == "stuck" and previous == "busy":
            await self.deliver_held(reason="interrupted")  # the turn ended by Esc

    @property
    def asks_folder_trust(self) -> bool:
        """Claude Code is up and shows the trust dialog of a folder that arrived from another
        Mac: the card is the person's (a move is over once it is drawn)."""
        return (
            self.pane_alive
            and self.state == "waiting"
            and self.card is not None
            and self.record.arrived_from is not None
            and autopass.is_trust(self.card)
        )

    def _claude_status(self) -> ClaudeStatus | None:
        """Claude Code's status file: found once by conversation id, then read by its pid."""
        home = self.claude_home
        conversation = self.record.conversation_id or self.record.id
        if self.status_pid is not None:
            status = read_status(home, self.status_pid)
            if status is not None and status.session_id == conversation:
                return status
        status = find_for_session(home, conversation)
        self.status_pid = status.pid if status is not None else None
        return status

    def track_card(self) -> None:
        """The card of what the screen shows. A card id is bound to one dialog: its text's
        digest and, for a permission, the tool use it asks for; either changing makes a new
        card, so an answer given for one dialog can never be taken for another."""
        card = self._card_for(self.screen.card if self.screen and self.state == "waiting" else None)
        if card is None:
            self.card, self.card_id = None, None
            return
        if (
            self.card is None
            or card.fingerprint != self.card.fingerprint
            or card.tool_use_id != self.card.tool_use_id
            or card.answerable != self.card.answerable
        ):
            self.card_count += 1
            self.card_id = f"{card.fingerprint[:10]}-{self.card_count}"
            self.card_seen_at = time.monotonic()
        self.card = card

    def _card_for(self, shown: DetectedCard | None) -> DetectedCard | None:
        """A permission dialog's card is built from the request that matches it (the whole
        command, the file, the edit); the screen says only that it is drawn and its keys."""
        ask = self.ask
        source = self.record.arrived_from
        if shown is not None and source is not None and autopass.is_trust(shown):
            title, text = autopass.arrived_trust_text(source, shown.text)
            return dataclasses.replace(shown, title=title, text=text)  # its fingerprint stays
        if shown is not None and shown.kind == "permission":
            if ask is not None and hook_matches(shown, ask):
                self.ask_seen = True
                return from_hook(shown, ask)
            return dataclasses.replace(shown, warning=NOT_MATCHING if ask else NO_REQUEST)
        if ask is not None:
            drawn = self.screen.card if self.screen else None
            if self.ask_seen and (drawn is None or drawn.kind != "permission"):
                self.ask = None  # its dialog was answered
            elif (
                not self.ask_seen
                and (shown is None or shown.kind == "stuck")
                and time.time() - ask.at < EARLY_CARD_FOR
            ):
                return early_card(ask)
        return shown

    def _auto_pass(self, now: float) -> bool:
        """True while the dialog on screen is one the agent passes by itself (rules in
        agent/autopass.py): its keys are pressed in the background and it never becomes a card."""
        card = self.screen.card if self.screen is not None else None
        if card is None:
            return False
        if self.passing:
            return True
        if card.fingerprint in self.pass_failed:
            return False
        prompted = self.hooks.last_prompt_at is not None and (
            self.hooks.last_prompt_at >= self.record.launched_at
        )
        since = now - self.model_changed_at if self.model_changed_at is not None else None
        decision = autopass.decide(
            card,
            starting=not prompted,
            since_model_change=since,
            model_switch_window=self.config.float("model_switch_window"),
            folder_arrived=self.record.arrived_from is not None,
            resume_scope=self.chooser_scope,
        )
        if decision is None:
            if not prompted:
                self.trust_passed = True  # a start-up dialog of another kind: the person's
            return False
        if self.first_frame_at is None or now - self.first_frame_at < FIRST_FRAME_QUIET:
            return True  # keys now would be dropped: pass it on a later read
        self.passing = True  # until the pass below ends
        self.host.spawn(self._pass_dialog(card, decision))
        return True

    async def _pass_dialog(self, card: DetectedCard, decision: autopass.AutoPass) -> None:
        groups = keys_for(card, decision.key) if decision.key is not None else [["Enter"]]
        try:
            async with self.keys:
                await asyncio.sleep(DIALOG_SETTLE)  # keys right after a dialog appears are lost
                await self._press(groups)
                closed = await self._confirm_closed(card, groups)
        except (PaneGone, MuxError):
            return
        finally:
            self.passing = False
        if not closed:
            _log.warning(
                "session %s: the %s dialog did not take %s; it is shown as a card instead",
                self.record.id, decision.kind, groups,
            )  # fmt: skip
            self.pass_failed.add(card.fingerprint)
            self.wake_screen.set()
            return
        _log.info("session %s: passed the %s dialog", self.record.id, decision.kind)
        if decision.kind == "trust":
            self.trust_passed = True
        if decision.kind == "model":
            self.model_changed_at = None  # one change, one confirmation
        if decision.choice == "compact":
            # Claude Code compacts from its own summary: a /compact after it would do it twice.
            self.record.lead = [t for t in self.record.lead if t != COMPACT_COMMAND]
            self.host.save()
        self.host.add_marker(self.record, MarkerKind.AUTO_PASSED, decision.line)
        self.wake_screen.set()

    # -- held messages -------------------------------------------------------------------------

    async def deliver_held(self, reason: str) -> None:
        record = self.record
        if record.lead:
            # A resume's own first words (the handoff, /compact) go before any held message.
            await self.type_lead(reason)
            return
        waiting = heldrules.due(record.held, reason)
        if not waiting or not self.pane_alive or self.moving:
            return
        if time.time() < self.held_not_before:
            await asyncio.sleep(self.held_not_before - time.time())
        card_kind = self.card.kind if self.card else None
        decision = heldrules.decide(heldrules.Situation(self.state, card_kind), now_requested=False)
        safe_point = reason in heldrules.SAFE_POINTS
        if decision is heldrules.Delivery.HOLD and not (safe_point and self.state == "busy"):
            return
        if decision in (heldrules.Delivery.REOPEN_THEN_TYPE,):
            return
        await self.type_messages(waiting, dismiss=decision is heldrules.Delivery.DISMISS_THEN_TYPE)

    async def type_lead(self, reason: str) -> None:
        """Type the first of the record's lead (agent/launch.py's plan: the handoff of a fresh
        resume, ``/compact`` of a summary one) alone, once claude is idle with no dialog; the
        held messages wait for the turn it starts to end (the next idle)."""
        record = self.record
        if not self.pane_alive or self.moving or reason not in heldrules.TURN_ENDED:
            return
        if self.state != "idle" or self.card is not None:
            return
        if time.time() < self.held_not_before:
            await asyncio.sleep(self.held_not_before - time.time())
        async with self.keys:
            if not record.lead:
                return
            text = record.lead[0]
            try:
                await self._quiet_after_first_frame()
                typed = await self._paste_and_submit(text)
            except (PaneGone, DialogOpen):
                typed = False
            if typed:
                record.lead = record.lead[1:]
                self.after_lead_at = time.time()
                self.host.save()
            else:
                _log.info("session %s: the resume's first words wait for the screen", record.id)
        self.wake_screen.set()
        await self.send_update()

    async def type_messages(
        self,
        messages: list[HeldMessage],
        *,
        dismiss: bool = False,
        interrupt: bool = False,
    ) -> None:
        record = self.record
        ids = {m.id for m in messages}
        async with self.keys:
            # Recheck under the lock: another delivery may have typed them meanwhile.
            messages = [m for m in record.held if m.id in ids and m.state == "held"]
            if not messages:
                return
            record.held = heldrules.mark(record.held, ids, "typing")
            self.host.save()  # before typing: a crash now never leads to typing it twice
            outcome = "failed"
            try:
                await self._quiet_after_first_frame()
                if dismiss or interrupt:
                    await self._escape()
                block = heldrules.block_text(messages, self._attachment_paths(messages))
                if autopass.changes_model(block):
                    self.model_changed_at = time.time()  # its "Switch model?" passes
                outcome = "typed" if await self._paste_and_submit(block) else "failed"
            except PaneGone:
                pass
            except DialogOpen as exc:
                # Not a key went into the dialog; the messages wait for it to close (a card
                # answered delivers them), unless their text already sits in the prompt box.
                _log.info("session %s: a %s dialog is open; the message waits", record.id, exc.kind)
                outcome = "failed" if exc.pasted else "held"
                self.wake_screen.set()
            record.held = heldrules.mark(record.held, ids, outcome)
            record.held = heldrules.prune(record.held)
            self.host.save()
        self.wake_screen.set()
        await self.send_update()

    def _attachment_paths(self, messages: list[HeldMessage]) -> dict[str, str]:
        """Where the messages' attachments are on the Mac (agent/attachments.py)."""
        if self.data_dir is None:
            return {}
        return {
            attachment.id: str(path)
            for m in messages
            for attachment in m.attachments
            if (path := attachments.path_of(self.data_dir, self.record.id, attachment)).is_file()
        }

    async def _escape(self) -> None:
        """Esc, until the screen shows the turn stopped or the dialog closed; once more if not.

        On a busy Mac the terminal may read Esc together with the paste that follows it as one
        escape sequence and drop both: the text would then wait behind the turn instead of
        interrupting it. So the paste goes only once the Esc is seen to have worked (or after a
        second try: Claude Code then holds the text until the turn ends, as it would anyway)."""
        for _ in range(2):
            await self._no_dialog(escaping=True)
            await self.mux.send_keys(self.name, [["Escape"]])
            deadline = time.monotonic() + ESCAPE_CONFIRM
            while time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                facts = await self._screen_now()
                if not (facts.busy or (facts.card is not None and facts.card.kind != "stuck")):
                    await asyncio.sleep(0.1)  # let the prompt settle before the paste
                    return
        _log.warning("session %s: Esc did not stop the turn; typing anyway", self.record.id)

    async def _quiet_after_first_frame(self) -> None:
        """Claude Code drops keys sent in the first ~0.5 s after its first frame."""
        if self.first_frame_at is None:
            return
        wait = self.first_frame_at + FIRST_FRAME_QUIET - time.time()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _screen_now(self) -> ScreenFacts:
        """A fresh read of the session's screen, outside the screen loop's schedule."""
        capture = await self.mux.capture(self.name)
        return read_screen(render(capture.text, capture.width, capture.height))

    async def _draft(self) -> str:
        return (await self._screen_now()).draft

    async def _wait_draft(self, present: bool, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if bool(await self._draft()) == present:
                return True
            await asyncio.sleep(0.1)
        return False

    async def _paste_and_submit(self, text: str) -> bool:
        """Paste the text, check it landed in the prompt box, press Enter, check it left.

        A paste into a screen that is not ready is dropped by Claude Code without a trace, and
        "typed" must mean typed: so every step is confirmed on the screen, and retried once.
        """
        for _ in range(2):
            await self._no_dialog()
            await self.mux.paste(self.name, text, enter=False)
            if await self._wait_draft(present=True, timeout=TYPE_CONFIRM):
                break
        else:
            return False
        for _ in range(2):
            await self._no_dialog(pasted=True)  # an Enter in a dialog picks its option
            await self.mux.send_keys(self.name, [["Enter"]])
            if await self._wait_draft(present=False, timeout=TYPE_CONFIRM):
                return True
        return False

    async def _no_dialog(self, *, escaping: bool = False, pasted: bool = False) -> None:
        """Raise DialogOpen unless a fresh read of the screen shows no dialog the next key would
        go to (for Esc: none that Esc would answer). The last known state is not enough: a
        dialog may have been drawn since."""
        facts = await self._screen_now()
        kind = facts.card.kind if facts.card is not None else None
        if not (heldrules.may_escape(kind) if escaping else heldrules.may_type(kind)):
            raise DialogOpen(kind, pasted=pasted)

    # -- answering a card ----------------------------------------------------------------------

    def _same_dialog(self, card: DetectedCard, drawn: DetectedCard) -> bool:
        """Is ``drawn`` (just read) the dialog ``card`` was made for?

        A card read from the screen alone is bound to the digest of the dialog's text. A
        permission built from a request is bound to that request's tool use and to the dialog's
        question and keys: what the person approves is the request's input (shown from the
        hook), and the screen's rendering of it may still change as Claude Code finishes drawing
        a diff, which must not make the same dialog look like another one."""
        if card.tool_use_id is None:
            return drawn.fingerprint == card.fingerprint
        same_question = (drawn.kind, drawn.title, drawn.options) == (
            card.kind,
            card.title,
            card.options,
        )
        return same_question and self.ask is not None and self.ask.tool_use_id == card.tool_use_id

    async def _show_changed(self, facts: ScreenFacts) -> None:
        """The screen moved on under a card: show the phone what is there now."""
        self.screen, self.screen_at = facts, time.time()
        self.screen_key = None
        self.track_card()
        await self.send_update()
        self.wake_screen.set()

    async def _press(self, groups: list[list[str]]) -> None:
        for index, group in enumerate(groups):
            if index:
                await asyncio.sleep(KEY_GAP)
            await self.mux.send_keys(self.name, [group])

    async def _confirm_closed(self, card: DetectedCard, groups: list[list[str]]) -> bool:
        """Read the screen until the dialog is gone; resend once if the keys were dropped."""
        deadline = time.monotonic() + CARD_CONFIRM_TIMEOUT
        retried = False
        started = time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.15)
            facts = await self._screen_now()
            now = time.time()
            self.screen, self.screen_at = facts, now
            self.idle_since = screen_idle_since(self.idle_since, facts, now)
            if facts.card is None or facts.card.fingerprint != card.fingerprint:
                self.wake_screen.set()
                return True
            same_view = facts.card == card  # nothing moved: the keys never landed
            if same_view and not retried and time.monotonic() - started > CARD_RETRY_AFTER:
                await self._press(groups)
                retried = True
        return False

    # -- commands from the phone -------------------------------------------------------------

    async def send_now(self, message: HeldMessage, now_requested: bool) -> None:
        """A message just held for a running session: typed now if its state allows (the rules
        in agent/held.py), else it waits and the phone is shown it held."""
        record = self.record
        card_kind = self.card.kind if self.card else None
        decision = heldrules.decide(
            heldrules.Situation(self.state, card_kind), now_requested, when=message.when
        )
        if decision in (heldrules.Delivery.TYPE_NOW, heldrules.Delivery.DISMISS_THEN_TYPE):
            await self.type_messages(
                [message], dismiss=decision is heldrules.Delivery.DISMISS_THEN_TYPE
            )
        elif decision is heldrules.Delivery.INTERRUPT_THEN_TYPE:
            await self.type_messages(heldrules.with_now(record.held, message), interrupt=True)
        else:
            await self.send_update()

    async def answer_card(
        self, args: AnswerCardArgs, send: Callable[[str], Awaitable[object]]
    ) -> dict[str, Any]:
        """Answer the session's card with its dialog's keys (``send`` sends a stuck card's
        message as the phone's send does)."""
        if self.denial is not None and args.card_id == self.denial_card_id:
            return await self._answer_denial(args)
        if self.card is None or self.card_id != args.card_id:
            raise CommandFailed("card_closed", "this card is already closed")
        card = self.card
        if not card.answerable:
            raise CommandFailed(
                "card_not_ready",
                "the dialog is not on the Mac's screen yet; answer once the card says it is",
            )
        answer: str | list[str] | None = args.keys or args.key
        text = args.text
        try:
            groups = keys_for(card, answer, text)
        except ValueError as exc:
            raise CommandFailed("bad_answer", str(exc)) from exc
        if card.kind == "stuck":
            if not text:
                raise CommandFailed("bad_answer", "answer a stuck card with a message")
            await send(text)
            return {"closed": True}
        changed: dict[str, Any] = {}
        if args.always and card.kind == "permission" and not _is_no(card, answer):
            # "Always allow this kind of tool for this session": a grant for this claude process
            # (agent/grants.py). Saved before the keys, so it holds for the next request even if
            # this answer is retried.
            grant = self.give_grant(card.tool or self.hooks.permission_tool, args.card_id)
            changed["grant"] = grant.to_json() if grant is not None else None
        if card.title.strip() == autopass.MODEL_PICKER_TITLE:
            self.model_changed_at = time.time()  # its "Switch model?" passes
        async with self.keys:
            settle = self.card_seen_at + DIALOG_SETTLE - time.monotonic()
            if settle > 0:
                await asyncio.sleep(settle)
            # The answer is for the dialog the card was made from: read the screen once more
            # right before the keys, and refuse if another dialog (or none) is there now.
            fresh = await self._screen_now()
            drawn = fresh.card
            if drawn is None or not self._same_dialog(card, drawn):
                await self._show_changed(fresh)
                raise CommandFailed(
                    "card_changed",
                    "the dialog on the Mac changed before this answer arrived; nothing was "
                    "pressed: look at the new card",
                )
            try:
                groups = keys_for(drawn, answer, text)  # from where its cursor is now
            except ValueError as exc:
                raise CommandFailed("bad_answer", str(exc)) from exc
            await self._press(groups)
            closed = await self._confirm_closed(drawn, groups)  # the screen's own view
        if not closed:
            raise CommandFailed(
                "card_still_open", "the terminal did not take the answer; try again"
            )
        if self.record.arrived_from is not None:
            verdict = autopass.trusted(card, answer)
            if verdict is not None:
                self._arrived_folder_answered(verdict)
        await self.deliver_held(reason="card")
        return {"closed": True, **changed}

    def _arrived_folder_answered(self, trusted: bool) -> None:
        """The person answered the trust dialog of a folder that arrived from another Mac: yes,
        and its later starts are as any session's; no, and claude exits: the session is ended,
        with the reason (a message opens it again, and the dialog is asked again)."""
        record = self.record
        source = record.arrived_from
        if trusted:
            record.arrived_from = None
            line = FOLDER_TRUSTED_LINE.format(source=source)
        else:
            record.alive, record.ended_by_person = False, True
            self.error = FOLDER_NOT_TRUSTED.format(source=source)
            line = "🔐 " + self.error
        self.host.add_marker(record, MarkerKind.INFO, line)
        self.host.save()
        _log.info("session %s: the folder from %s trusted: %s", record.id, source, trusted)
        self.wake_screen.set()

    # -- auto mode's refusals (agent/denials.py) ------------------------------------------------

    def note_denial(self, payload: dict[str, Any], now: float) -> asyncio.Future[str | None] | None:
        """A PermissionDenied hook: show its card and answer the hook once the phone did (or
        the wait ended: the hook server then answers nothing, and the refusal stands)."""
        denial = denialrules.from_hook(payload, now)
        wait = self.config.float("denial_wait")
        if denial is None or wait <= 0:
            return None
        if self.denial_answer is not None and not self.denial_answer.done():
            self.denial_answer.set_result(None)  # an older one still open: it stands
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | None] = loop.create_future()
        self.card_count += 1
        self.denial, self.denial_answer = denial, answer
        self.denial_card_id = f"denied-{self.card_count}"

        def closed(_: object) -> None:
            if self.denial_answer is answer:
                self.denial, self.denial_card_id, self.denial_answer = None, None, None
                self.host.spawn(self.send_update())

        answer.add_done_callback(closed)

        def expire() -> None:
            if not answer.done():
                answer.set_result(None)  # no answer in time: the refusal stands

        loop.call_later(wait, expire)
        self.host.spawn(self.send_update())
        _log.info(
            "session %s: auto mode refused %s: %s", self.record.id, denial.tool, denial.reason
        )
        return answer

    async def _answer_denial(self, args: AnswerCardArgs) -> dict[str, Any]:
        denial, answer = self.denial, self.denial_answer
        if denial is None or answer is None or answer.done():
            raise CommandFailed("card_closed", "the refusal's wait ended: it stands")
        if args.key == denialrules.ALLOW_ONCE:
            self.allow_once = dataclasses.replace(denial, at=time.time())
            answer.set_result(denialrules.retry_output())
            return {"closed": True, "allowed_once": True}
        if args.key == denialrules.KEEP_BLOCKED:
            answer.set_result(None)
            return {"closed": True, "allowed_once": False}
        raise CommandFailed("bad_answer", "answer allow_once or keep_blocked")

    # -- grants (agent/grants.py) ---------------------------------------------------------------

    def give_grant(self, tool: str | None, card_id: str | None) -> grantrules.Grant | None:
        """The grant a card's "always" gives (None: it gives none, e.g. the policy already
        decides that tool); a new one is kept with the session and told in its conversation."""
        record = self.record
        held = grantrules.of_record(record)
        grants, grant = grantrules.give(
            held, tool, policy_of(record), card_id=card_id,
            launched_at=record.launched_at, now=time.time(),
        )  # fmt: skip
        if grant is not None and grant not in held:
            grantrules.keep(record, grants)
            self.host.add_marker(record, MarkerKind.GRANT, grantrules.given_line(grant))
            self.host.save()
            _log.info("session %s: granted %s", record.id, grant.describe())
        return grant

    async def interrupt(self) -> None:
        if not self.pane_alive:
            raise CommandFailed("session_ended", "the session is not running")
        async with self.keys:
            await self.mux.send_keys(self.name, [["Escape"]])
        self.wake_screen.set()

    # -- mode and model, changed from the phone ---------------------------------------------

    def _for_next_start(self, **values: str) -> dict[str, Any]:
        """A stopped session starts with these (``--permission-mode``, ``--model``) when it is
        reopened; nothing is typed now."""
        for key, value in values.items():
            setattr(self.record, key, value)
        self.host.save()
        return {**values, "applies": "on_reopen"}

    async def set_mode(self, target: str) -> dict[str, Any]:
        """Press Shift+Tab until the mode line shows ``target`` (agent/modes.py decides each
        step); the record keeps it for reopen and revive."""
        wanted = launch_mode(target) or target
        if not self.pane_alive:
            return self._for_next_start(permission_mode=wanted)
        moderules.check_idle(
            self.pane_alive, self.state, self.card.kind if self.card else None, "mode"
        )
        async with self.keys:
            await self._quiet_after_first_frame()
            facts = await self._screen_now()
            if facts.card is not None or facts.busy:
                raise CommandFailed(
                    "session_not_idle", "a dialog or a turn is on the Mac's screen; try again"
                )
            seen: list[str | None] = [facts.mode]
            while True:
                step = moderules.next_mode_step(wanted, seen)
                if step.action == "done":
                    break
                if step.action == "give_up":
                    self.wake_screen.set()
                    raise CommandFailed("mode_unavailable", step.reason)
                seen.append(await self._press_for_mode(seen[-1]))
        now = time.time()
        self.screen_mode, self.screen_mode_at = wanted, now
        if self.record.permission_mode != wanted:
            self.record.permission_mode = wanted
            self.host.save()
        self.wake_screen.set()
        await self.send_update()
        return {"permission_mode": wanted, "presses": len(seen) - 1}

    async def _press_for_mode(self, before: str | None) -> str | None:
        """One press of the cycle key; the mode line once it changed (pressed again once if the
        key was dropped)."""
        for _ in range(2):
            await self.mux.send_keys(self.name, [[moderules.CYCLE_KEY]])
            deadline = time.monotonic() + TYPE_CONFIRM
            while time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                facts = await self._screen_now()
                if facts.card is not None:
                    raise CommandFailed(
                        "session_not_idle",
                        f"a {facts.card.kind} dialog opened while the mode was changed; "
                        "the mode is where the screen shows it",
                    )
                if facts.mode is not None and facts.mode != before:
                    return facts.mode
        return before

    async def set_model(self, model: str) -> dict[str, Any]:
        """Type ``/model <model>`` and read Claude Code's answer under it: ``Set model to …``
        (kept for reopen and revive) or why not."""
        if not self.pane_alive:
            return self._for_next_start(model=model)
        moderules.check_idle(
            self.pane_alive, self.state, self.card.kind if self.card else None, "model"
        )
        command = f"/model {model}"
        settings = self.claude_home / "settings.json"
        default_before = _settings_model(settings)
        async with self.keys:
            await self._quiet_after_first_frame()
            self.model_changed_at = time.time()  # a "Switch model?" it draws passes
            try:
                typed = await self._paste_and_submit(command)
            except DialogOpen as exc:
                raise CommandFailed(
                    "session_not_idle", f"a {exc.kind} dialog is open; answer it first"
                ) from None
        if not typed:
            raise CommandFailed("not_typed", "the terminal did not take /model; try again")
        deadline = time.monotonic() + MODEL_CONFIRM
        outcome: moderules.ModelOutcome | None = None
        while time.monotonic() < deadline and outcome is None:
            await asyncio.sleep(0.15)
            capture = await self.mux.capture(self.name)
            lines = render(capture.text, capture.width, capture.height).lines
            outcome = moderules.model_outcome(lines, model)
        self.wake_screen.set()
        if outcome is not None and outcome.ok:
            # The change is this session's: the person's default for new sessions stays.
            _restore_settings_model(settings, default_before)
        if outcome is None:
            raise CommandFailed(
                "model_unconfirmed", f"the Mac's screen did not confirm {command} in time"
            )
        if not outcome.ok:
            raise CommandFailed("model_refused", f"Claude Code: {outcome.text}")
        if self.record.model != model:
            self.record.model = model
            self.host.save()
        self.model_now = model
        await self.send_update()
        return {"model": model, "shown": outcome.shown, "line": outcome.text}
