"""Dialogs the agent passes by itself, without a card — pure rules, no I/O.

Each pass presses the option a person starting the session that way would pick, and leaves one
line in the conversation saying so:

* **Folder trust** while the session starts (no prompt submitted yet in this launch): claude was
  opened in that folder from the phone on purpose. Captured: ``a_startup_trust``. Never for a
  folder that arrived with a move from another Mac (``folder_arrived``): nobody chose it on this
  Mac, and once trusted, Claude Code runs the programs its project settings name (hooks, a
  status line, MCP servers). That dialog is a card (:func:`arrived_trust_text`): the person
  trusts the folder on the phone, or says no and claude exits.
* **Development channels** while starting: the warning Claude Code draws when it was started with
  ``--dangerously-load-development-channels`` (the person chose that flag). Title, text and
  options are those of 2.1.328's ``DevChannelsDialog`` (``WARNING: Loading development channels``,
  ``I am using this for local development`` / ``Exit``); 2.1.328 does not draw it without a
  claude.ai login, so it is not in the captures.
* **Claude in Chrome** while starting: the one-time notice about the browser extension (title
  ``Claude in Chrome``, Enter continues), likewise from 2.1.328's ``ClaudeInChromeOnboarding``
  (drawn only for a claude.ai subscriber; not in the captures either).
* **Model switch** within ``model_switch_window`` seconds (30 s) after the model was changed
  from the phone (``/model …`` typed, or the model picker answered): ``Switch model?`` with
  ``Yes, switch to <model>`` / ``No, go back``. Captured: ``l_model/07`` and ``09``. Outside the
  window it stays a card: somebody else changed the model, the person decides.

* **Claude Code's own resume chooser** (card kind ``resume``, agent/resumechooser.py) while
  starting, only when the session has a resume scope the person set (its own, the account's, or
  this reopen's): ``summary`` presses "Resume from summary", ``full`` "Resume full session
  as-is" (never "Don't ask again"). With no scope set it is the person's card: Enter would pick
  the summary, so nothing presses it blindly (a revive included).

Anything else is a card for the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from agent import resumechooser
from wire.protocol import ResumeScope

PassKind = Literal["trust", "channels", "chrome", "model", "resume"]

TRUST_LINE = "🔐 Folder trust was accepted so the session could start"
CHANNELS_LINE = (
    "🧪 Development channels were allowed so the session could start "
    "(claude was started with --dangerously-load-development-channels)"
)
CHROME_LINE = "🌐 The Claude in Chrome notice was passed so the session could start"
MODEL_LINE = "🔀 Model switch confirmed: {choice}"
RESUME_LINE = "📋 Claude Code asked how to resume: {choice} (the session's resume scope is {scope})"

CHANNELS_TITLE = "Loading development channels"
CHANNELS_YES = "I am using this for local development"
CHROME_TITLE = "Claude in Chrome"
MODEL_TITLE = "Switch model?"
MODEL_YES = "Yes, switch to"
MODEL_PICKER_TITLE = "Select model"  # /model's picker (l_model/02): answering it changes the model


class OptionLike(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def label(self) -> str: ...


class CardLike(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def options(self) -> tuple[OptionLike, ...] | list[OptionLike]: ...


@dataclass(frozen=True)
class AutoPass:
    kind: PassKind
    key: str | None  # the option to pick; None = press Enter (a notice with no options)
    line: str  # what the conversation says about it
    choice: str | None = None  # the resume chooser's option picked (its value: compact, continue)


def is_trust(card: CardLike) -> bool:
    return card.kind == "keyed" and "trust" in (card.title + " " + card.text).lower()


def persons_startup_dialog(card: CardLike, *, arrived: bool, trust_passed: bool) -> bool:
    """A start-up dialog the agent does not pass by itself, so the person is asked: one of
    another kind once trust is passed (an API key, a login…), and the trust dialog of a folder
    that ``arrived`` from another Mac."""
    if is_trust(card):
        return arrived
    return trust_passed


def _option(card: CardLike, starts: str) -> OptionLike | None:
    wanted = starts.lower()
    return next((o for o in card.options if o.label.strip().lower().startswith(wanted)), None)


def decide(
    card: CardLike,
    *,
    starting: bool,
    since_model_change: float | None,
    model_switch_window: float,
    folder_arrived: bool = False,
    resume_scope: ResumeScope | None = None,
) -> AutoPass | None:
    """What to press for ``card``, or None when it is the person's to answer.

    ``starting``: no prompt was submitted since the launch. ``since_model_change``: seconds since
    the phone changed the model (None = it did not). ``folder_arrived``: the session's folder
    came from another Mac and the person has not trusted it here yet (its trust is theirs).
    ``resume_scope``: the scope the person set for this start (None: none set).
    """
    if starting and card.kind == "resume":
        answer = resumechooser.answer_for(resume_scope, card.options)
        if answer.key is None or answer.choice is None or resume_scope is None:
            return None
        label = resumechooser.LABELS[answer.choice]
        line = RESUME_LINE.format(choice=label, scope=resume_scope)
        return AutoPass("resume", answer.key, line, choice=answer.choice)
    if starting:
        if is_trust(card):
            if folder_arrived:
                return None
            yes = _option(card, "yes")
            return AutoPass("trust", yes.key, TRUST_LINE) if yes else None
        if CHANNELS_TITLE.lower() in card.title.lower():
            yes = _option(card, CHANNELS_YES)
            return AutoPass("channels", yes.key, CHANNELS_LINE) if yes else None
        if card.title.strip() == CHROME_TITLE:
            # No options of its own; read from its footer ("Enter to continue · …") when drawn.
            enter = next((o.key for o in card.options if o.key == "Enter"), None)
            if enter is not None or not card.options:
                return AutoPass("chrome", enter, CHROME_LINE)
    if (
        card.title.strip() == MODEL_TITLE
        and since_model_change is not None
        and 0 <= since_model_change <= model_switch_window
    ):
        yes = _option(card, MODEL_YES)
        if yes is not None:
            return AutoPass("model", yes.key, MODEL_LINE.format(choice=yes.label.strip()))
    return None


def arrived_trust_text(source: str, dialog: str) -> tuple[str, str]:
    """The title and text of the card for Claude Code's trust dialog (its own text ``dialog``)
    in a folder that arrived from the Mac ``source``. Pure."""
    title = f"Trust the folder that came from {source}?"
    text = (
        f"This session's folder arrived from {source} with the move; nobody chose it on this "
        "Mac. Once you trust it, Claude Code runs its project settings here: the programs "
        ".claude/settings.json, .claude/settings.local.json and .mcp.json name (hooks, a status "
        "line, MCP servers). Say yes only if you know what the folder holds; no exits Claude "
        "Code and ends the session.\n\n" + dialog
    )
    return title, text


def trusted(card: CardLike, answer: str | list[str] | None) -> bool | None:
    """Whether ``answer`` to the trust dialog ``card`` trusts the folder (its "Yes, I trust"
    option), refuses it ("No, exit"), or neither (None). Pure."""
    if not is_trust(card) or not isinstance(answer, str):
        return None
    chosen = next((o for o in card.options if o.key == answer), None)
    if chosen is None:
        return None
    label = chosen.label.strip().lower()
    return True if label.startswith("yes") else False if label.startswith("no") else None


def changes_model(text: str) -> bool:
    """Typed text that changes the model (``/model`` with or without a name)."""
    first = text.strip().split(maxsplit=1)
    return bool(first) and first[0] == "/model"
