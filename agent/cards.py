"""What a Claude Code screen says: the open card, busy or idle, the text being written.

Pure functions over ``agent.screen.Screen`` (no I/O, no clock). Everything keys on markers
that stay put when Claude Code moves its chrome around, never on row numbers:

* the prompt box: a ``────`` rule, a row starting with ``❯`` (plus continuation rows), a rule;
  the footer is what follows it;
* numbered dialogs: a ``❯ N.`` row and its sibling ``N.`` rows at the same column, with a
  dialog footer (``Esc to cancel`` / ``Enter to select`` / ``Enter to confirm`` …), a question
  chip or tab bar, a ``Do you want …`` line, or the ``Exit plan mode?`` title;
* arrow-key dialogs: a ``❯ text`` row (no number) above a dialog footer;
* a multi-select question whose cursor is on its unnumbered ``Submit`` row (``❯    Submit``) is
  the same question card, read from the numbered rows around that cursor;
* Claude Code's own resume chooser (``This session is 3d old and 121.5k tokens.``) is its own
  kind, ``resume``, carrying the age and size it states (agent/resumechooser.py);
* the title of a dialog is the first row under the rule (``────`` or ``▔▔▔``) above it.

Wrapped rows are joined back using the width of the rule that bounds the dialog (or the prompt
box), so a screen captured at one size reads the same when shown on a larger terminal.

``keys_for`` turns an answer into tmux ``send-keys`` groups. A group is a list of key names
(``["Down"]``, ``["Enter"]``, ``["1"]``); text is the group ``["-l", text]``, which the
multiplexer pastes (agent/mux.py: a bracketed paste, never keys), its text already
``wire.pastetext.clean``. Send each group with its own ``send-keys`` call, in order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from wcwidth import wcswidth

from agent import resumechooser
from agent.mux import LITERAL
from agent.resumechooser import ResumeOffer
from agent.screen import Screen, from_plain, render
from wire import pastetext
from wire.protocol import Card, CardOption

__all__ = [
    "DetectedCard",
    "HookAsk",
    "QuestionTab",
    "ScreenFacts",
    "classify_text",
    "describe",
    "early_card",
    "from_hook",
    "hook_matches",
    "keys_for",
    "read_screen",
]

CardKind = Literal["permission", "question", "plan", "dialog", "keyed", "stuck", "resume"]


@dataclass(frozen=True)
class QuestionTab:
    """One tab of a multi-question AskUserQuestion dialog (``←  ☐ Colour  ☐ Toppings  ✔ Submit  →``)."""

    name: str
    answered: bool = False  # ☒
    current: bool = False
    submit: bool = False  # the ``✔ Submit`` tab (current on the review step)


@dataclass(frozen=True)
class DetectedCard:
    kind: CardKind
    title: str
    text: str
    options: tuple[CardOption, ...]
    selected: int | None  # 1-based position in ``options`` of the ❯ row
    multi_select: bool = False
    tool: str | None = None
    tool_input: dict[str, Any] | None = None
    questions: tuple[QuestionTab, ...] = ()
    fingerprint: str = ""
    # extras used by keys_for
    free_text_key: str | None = None  # the 'Type something.' option
    checked: tuple[str, ...] = ()  # multi-select: keys ticked on screen
    review: bool = False  # the 'Review your answers' step of a multi-question card
    confirm_with_enter: bool = False  # a 'dialog' whose footer says 'Enter to save/confirm'
    amendable: bool = False  # permission footer shows 'Tab to amend'
    submit_row: int | None = None  # multi-select: position of the unnumbered 'Submit' row
    on_submit: bool = False  # multi-select: the cursor is on that row (``selected`` is None)
    footer_keys: bool = False  # options are key names read from the footer ('Enter to …')
    # a permission card built from Claude Code's own request (see from_hook / early_card)
    tool_use_id: str | None = None
    source: Literal["hook", "screen"] = "screen"
    answerable: bool = True  # false: the request came, its dialog is not drawn yet
    warning: str | None = None
    resume: ResumeOffer | None = None  # a ``resume`` card: the age and size the chooser states

    def __post_init__(self) -> None:
        if not self.fingerprint:
            object.__setattr__(self, "fingerprint", _fingerprint(self))

    def to_card(self, card_id: str) -> Card:
        return Card(
            id=card_id,
            kind=self.kind,
            title=self.title,
            text=self.text,
            options=[CardOption(key=o.key, label=o.label) for o in self.options],
            multi_select=self.multi_select,
            tool=self.tool,
            tool_input=dict(self.tool_input) if self.tool_input is not None else None,
            tool_use_id=self.tool_use_id,
            source=self.source,
            answerable=self.answerable,
            warning=self.warning,
            digest=self.fingerprint,
        )


@dataclass(frozen=True)
class ScreenFacts:
    card: DetectedCard | None
    busy: bool
    tool_running: bool = False
    preview: str | None = None
    draft: str = ""
    mode: str | None = None
    queued: bool = False
    exited: bool = False
    interrupted: bool = False  # the interruption notice is the last thing shown (draft or not)
    prompt_visible: bool = False  # claude's input box is drawn


# ---------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------


def read_screen(screen: Screen) -> ScreenFacts:
    # Claude Code draws "❯\xa0" and "⎿\xa0\xa0": read no-break spaces as spaces
    lines = [line.replace("\xa0", " ") for line in screen.lines]
    prompt = _find_prompt(lines)
    # a dialog replaces the prompt box, so one is looked for only below the box (if any)
    start = prompt.bottom + 1 if prompt else 0
    card = _numbered_card(screen, lines, start) or _keyed_card(lines, start, screen.width)
    if card is None and prompt is None:
        card = _footer_card(lines)
    if card is not None:
        return ScreenFacts(card=card, busy=False, prompt_visible=prompt is not None)
    if prompt is None and _looks_exited(lines):
        return ScreenFacts(card=None, busy=False, exited=True)

    footer = lines[prompt.bottom + 1 :] if prompt else []
    footer_text = " ".join(r.strip() for r in footer if r.strip())
    mode = _mode(footer_text) if prompt else None
    draft, placeholder_queued = _draft(lines, prompt) if prompt else ("", False)
    end = prompt.top if prompt else len(lines)
    spinner = _find_spinner(lines, end)
    busy = spinner is not None or "esc to interrupt" in footer_text.lower()
    queued = placeholder_queued or any(_QUEUED_RE.match(r) for r in lines[:end])

    turn_end = spinner if spinner is not None else end
    turn_start = _turn_start(lines, turn_end)
    tool_running = busy and any(_TOOL_RUNNING_RE.search(r) for r in lines[turn_start:turn_end])
    preview = None
    if busy and not tool_running:
        eff = _rule_width(lines, prompt.top) if prompt else screen.width
        preview = _preview(lines, turn_start, turn_end, eff)

    notice = _interrupted_row(lines, prompt.top) if prompt and not busy else None
    if notice is not None and not draft and not queued:
        card = _stuck_card(lines, notice)
    return ScreenFacts(
        card=card,
        busy=busy,
        tool_running=tool_running,
        preview=preview,
        draft=draft,
        mode=mode,
        queued=queued,
        exited=False,
        interrupted=notice is not None,
        prompt_visible=prompt is not None,
    )


def classify_text(text: str, width: int = 0, height: int = 0) -> ScreenFacts:
    """Read a capture from a file: ANSI (``capture-pane -e``) or plain, told apart by ESC."""
    if "\x1b" in text:
        rows = text.replace("\r\n", "\n").removesuffix("\n").split("\n")
        visible = [re.sub(r"\x1b\[[0-9;:?]*[A-Za-z]", "", r) for r in rows]
        w = width or max([_cells(v) for v in visible] + [1])
        h = height or max(len(rows), 1)
        return read_screen(render(text, w, h))
    return read_screen(from_plain(text, width, height))


def describe(facts: ScreenFacts) -> dict[str, Any]:
    """The JSON ``claude-bridge screen FILE`` prints."""
    card: dict[str, Any] | None = None
    if facts.card is not None:
        c = facts.card
        card = {
            "kind": c.kind,
            "title": c.title,
            "text": c.text,
            "options": [{"key": o.key, "label": o.label} for o in c.options],
            "multi_select": c.multi_select,
            "tool": c.tool,
            "tool_input": c.tool_input,
        }
    return {"card": card, "busy": facts.busy, "preview": facts.preview}


# ---------------------------------------------------------------------------
# permission cards from Claude Code's own request (hooks)
# ---------------------------------------------------------------------------

NOT_MATCHING = (
    "Claude Code's request does not match the dialog on the Mac's screen: this card shows the "
    "screen's text, which may be cut short."
)
NO_REQUEST = (
    "No request from Claude Code goes with this dialog: its text is read from the screen, which "
    "may be cut short or printed by a program."
)
NOT_DRAWN = "The dialog is not on the Mac's screen yet: this card can be answered once it is."


@dataclass(frozen=True)
class HookAsk:
    """A permission Claude Code asked for through its hooks: the PermissionRequest's
    ``tool_name`` and full ``tool_input``, with the ``tool_use_id`` of the PreToolUse that
    carried the same input (PermissionRequest itself has none in 2.1.328); ``at`` is when the
    request came (the agent's clock)."""

    tool: str
    tool_input: dict[str, Any]
    tool_use_id: str | None = None
    at: float = 0.0


def hook_matches(card: DetectedCard, ask: HookAsk) -> bool:
    """Is ``card`` (read from the screen) the dialog of ``ask``? The same tool, and what the
    dialog shows of the input (the command, the file path, the URL…) is part of the request's.
    The screen's text is cut to the terminal width and wrapped, so it is compared without
    whitespace and piece by piece around any ``…``."""
    if card.kind != "permission" or not _same_tool(card.tool, ask.tool):
        return False
    shown = card.tool_input or {}
    full = ask.tool_input
    if ask.tool == "Bash":
        return _pieces_in(str(shown.get("command", "")), _text(full.get("command")))
    if "file_path" in shown:
        path = full.get("file_path", full.get("notebook_path"))
        return isinstance(path, str) and _path_matches(str(shown["file_path"]), path)
    for key in ("url", "query", "prompt"):
        if key in shown:
            return _pieces_in(str(shown[key]), _text(full.get(key)))
    # nothing of the input parsed from the dialog: one of its texts must be shown there
    values = [_squash(v)[:24] for v in full.values() if isinstance(v, str) and v.strip()]
    body = _squash(card.text)
    return not values or any(v in body for v in values)


def from_hook(card: DetectedCard, ask: HookAsk) -> DetectedCard:
    """The permission card of a dialog that matches ``ask``: what will run comes from the
    request (the whole command, the file and its edit), the keys and the digest from the
    screen."""
    return dataclasses.replace(
        card,
        tool=ask.tool,
        tool_input=dict(ask.tool_input),
        text=_request_text(ask, _question_row(card.text)),
        tool_use_id=ask.tool_use_id,
        source="hook",
        answerable=True,
        warning=None,
    )


def early_card(ask: HookAsk) -> DetectedCard:
    """The card of a request whose dialog is not drawn yet: shown, not answerable."""
    return DetectedCard(
        kind="permission",
        title=ask.tool,
        text=_request_text(ask, ""),
        options=(),
        selected=None,
        tool=ask.tool,
        tool_input=dict(ask.tool_input),
        tool_use_id=ask.tool_use_id,
        source="hook",
        answerable=False,
        warning=NOT_DRAWN,
    )


def _same_tool(screen_tool: str | None, hook_tool: str) -> bool:
    if screen_tool == hook_tool:
        return True
    return screen_tool == "MCP" and hook_tool.startswith("mcp__")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _squash(text: str) -> str:
    return "".join(text.split())


def _pieces_in(shown: str, full: str) -> bool:
    """Every piece of the screen's text (cut where it shows ``…``) is in ``full``, in order,
    the first at its start."""
    pieces = [p for p in _squash(shown).split("…") if p]
    target = _squash(full)
    if not pieces or not target.startswith(pieces[0]):
        return False
    at = len(pieces[0])
    for piece in pieces[1:]:
        found = target.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _path_matches(shown: str, full: str) -> bool:
    """The dialog shows a path relative to the folder (``hello.txt``), under ``~``, or cut in
    the middle with ``…``; the request has it absolute."""
    shown = shown.strip()
    if "…" in shown:
        head, _, tail = shown.rpartition("…")
        return full.endswith(tail) and _squash(head.rstrip("…")) in full[: len(full) - len(tail)]
    if shown.startswith("~/"):
        return full.endswith(shown[1:])
    return full == shown or full.endswith("/" + shown.removeprefix("./"))


def _question_row(text: str) -> str:
    rows = text.splitlines()
    return rows[-1] if rows and rows[-1].startswith("Do you want") else ""


def _request_text(ask: HookAsk, question: str) -> str:
    data = ask.tool_input
    if ask.tool == "Bash":
        parts = [_text(data.get("description")), _text(data.get("command"))]
    else:
        path = data.get("file_path", data.get("notebook_path"))
        parts = [_text(path) or _text(data.get("url")) or _text(data.get("query"))]
    return "\n".join(p for p in [*parts, question] if p)


def keys_for(
    card: DetectedCard, answer: str | list[str] | None = None, text: str | None = None
) -> list[list[str]]:
    """The tmux key groups that give ``answer`` (option keys) and ``text`` to ``card``.

    * permission / plan / question (single-select) / review: the digit, no Enter (a digit
      answers at once); 'Type something.' takes its digit, then ``["-l", text]``, then Enter;
      a permission with ``text`` uses 'Tab to amend' (Tab, the text, Enter) on option 1.
    * question, any: with the cursor on the 'Type something' row, a digit is typed into its
      text, and on a multi-select question's Submit row digits and Tab do nothing (2.1.332,
      f_ask_question/15–20): the cursor first goes Up to option 1.
    * question (multi-select): the digit of every option whose tick must change (a digit
      toggles without moving the cursor), then Tab to the next tab, and ``1`` on the review
      step when this is the last question. With 'Type something': its digit, the text (the
      cursor is then in its field, where Tab moves to the Submit row), Tab, Enter (Submit),
      then the same. With no tab bar: Up/Down to the Submit row, Enter.
    * dialog: the digit, plus Enter when the footer says 'Enter to save/confirm'.
    * resume: the digit alone (it answers at once; an Enter after it would reach the prompt).
    * keyed: Up/Down from the ❯ row to the wanted option, then Enter.
    * stuck: nothing (answering means typing a message) → ``[]``.

    ``text`` is pasted as ``pastetext.clean`` leaves it (no control character: none can act as
    a key in the dialog); text with nothing left once cleaned is no text.
    Raises ``ValueError`` for a key that is not an option, or a missing/extra answer.
    """
    if card.kind == "stuck":
        return []
    if text is not None:
        text = pastetext.clean(text)
    keys = [o.key for o in card.options]
    wanted = [answer] if isinstance(answer, str) else list(answer or [])
    if not wanted and text is not None and card.free_text_key:
        wanted = [card.free_text_key]
    for key in wanted:
        if key not in keys:
            raise ValueError(f"{key!r} is not an option of this card ({', '.join(keys)})")
    if not wanted:
        raise ValueError("an answer is required")
    if len(set(wanted)) != len(wanted):
        raise ValueError("an option was given twice")

    if card.kind == "question" and card.multi_select and not card.review:
        return _multi_select_keys(card, wanted, text)
    if len(wanted) != 1:
        raise ValueError("this card takes one answer")
    key = wanted[0]

    if card.footer_keys:
        if text is not None:
            raise ValueError("this dialog takes no text")
        return [[key]]
    if card.kind == "resume":
        if text is not None:
            raise ValueError("the resume chooser takes no text")
        return [[key]]
    if card.kind == "keyed":
        if text is not None:
            raise ValueError("a keyed dialog takes no text")
        return [*_moves(card, keys.index(key) + 1), ["Enter"]]
    if key == card.free_text_key:
        if not text:
            raise ValueError("'Type something.' needs text")
        if _in_free_text(card):
            return [[LITERAL, text], ["Enter"]]  # its digit would be typed into the text
        return [[key], [LITERAL, text], ["Enter"]]
    if card.kind == "question" and text is None:
        return [*_leave_free_text(card), [key]]
    if text is not None:
        if card.kind == "permission" and card.amendable and key == keys[0]:
            return [*_moves(card, 1), ["Tab"], [LITERAL, text], ["Enter"]]
        raise ValueError("this answer takes no text")
    if card.kind == "dialog" and card.confirm_with_enter:
        return [[key], ["Enter"]]
    return [[key]]


# ---------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------

_SPINNER_RE = re.compile(
    r"^[^\w\s●❯⎿│╭╰─▔] [^\s…][^…]{0,80}…"
    r"(?:\s*$| \((?=[^)]*(?:\d+s\b|running |esc to interrupt|tokens|thinking))[^)]*\)?)"
)
_QUEUED_RE = re.compile(r"^\s*⎿\s+Queued\b")
_INTERRUPTED_RE = re.compile(r"^\s*⎿\s+Interrupted(?:\s+·|\s+by user|\s*$)")
_TOOL_RUNNING_RE = re.compile(
    r"ctrl\+b to run in background|^\s*⎿\s+(?:Running|Waiting)…"
    r"|^\s*⎿\s+\$ .*\((?:\d+h )?(?:\d+m )?\d+s\)\s*$"
)
_FOOTER_HINT_RE = re.compile(
    r"\b(?:Esc to (?:cancel|close|exit|go back|clear)|Enter to (?:select|confirm|save|resume|"
    r"submit|continue|choose|go)|↑/↓ to (?:navigate|select)|Tab to amend)\b"
)
_PLAN_RE = re.compile(
    r"^\s*(?:Exit plan mode\?|Ready to code\?|Would you like to proceed\?)|wants to exit plan mode"
)
_CHIP_RE = re.compile(r"^\s*(?:←\s+)?[☐☒✔]\s+\S")
_CHECKBOX_RE = re.compile(r"^\[( |✔|✓|x|X|×|■)\]\s*")
_FREE_TEXT_RE = re.compile(r"^Type something\.?$")
_TOOL_SUMMARY_RE = re.compile(
    r"^\s{2}(?:Ran|Read|Did not run|No result recorded|Searched|Listed|Wrote|Edited|Updated|"
    r"Created|Fetched|Found|Sleeping|Running)\b"
)
_TOOL_HEADER_RE = re.compile(r"^● [A-Z][\w.:-]*(?:\(.*\))?\s*$")
# Claude Code's own wording of a tool permission (not e.g. 'Do you want to use this API key?')
_PERMISSION_ASK_RE = re.compile(
    r"^\s*Do you want to (?:proceed|create|make this edit|allow Claude|overwrite|delete|run)\b"
)
_PERMISSION_TOOLS = {
    "bash command": "Bash",
    "create file": "Write",
    "edit file": "Edit",
    "overwrite file": "Write",
    "read file": "Read",
    "fetch": "WebFetch",
    "web search": "WebSearch",
    "edit notebook": "NotebookEdit",
    "notebook edit": "NotebookEdit",
    "tool use": "MCP",
}
_MODES = (
    (re.compile(r"manual mode on|default mode on"), "manual"),
    (re.compile(r"plan mode on"), "plan"),
    (re.compile(r"accept edits on"), "acceptEdits"),
    (re.compile(r"auto mode on"), "auto"),
    (re.compile(r"bypass permissions on"), "bypassPermissions"),
    (re.compile(r"don't ask on|dont ask on"), "dontAsk"),
)
_PLACEHOLDERS = re.compile(r"^(?:Press up to edit queued messages|Try \".*\")$")


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


def _cells(text: str) -> int:
    if text.isascii():
        return len(text)
    n = wcswidth(text)
    return n if n >= 0 else len(text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_rule(line: str) -> bool:
    """A dialog or prompt-box rule: ``────`` or ``▔▔▔`` (not the dashed ``╌╌╌``)."""
    s = line.strip()
    return len(s) >= 8 and (set(s) == {"─"} or set(s) == {"▔"})


def _is_dashed(line: str) -> bool:
    s = line.strip()
    return len(s) >= 8 and set(s) == {"╌"}


def _is_box_only(line: str) -> bool:
    s = line.strip()
    return bool(s) and set(s) <= set("╭╮╰╯─│┌┐└┘ ")


def _soft_wrapped(prev: str, nxt: str, width: int) -> bool:
    """Was ``nxt`` pushed to its own row by word wrapping? (its first word did not fit)."""
    word = nxt.strip().split(" ", 1)[0]
    return bool(word) and _cells(prev.rstrip()) + 1 + _cells(word) > width - 3


def _unwrap(rows: list[str], width: int) -> str:
    """Rows → text: wrapped rows joined with a space, paragraphs (blank rows) with newlines."""
    out: list[str] = []
    prev = ""
    for row in rows:
        if not row.strip():
            if out and out[-1] != "\n":
                out.append("\n")
            prev = ""
            continue
        piece = row.strip()
        if out and out[-1] != "\n":
            out.append(" " if _soft_wrapped(prev, row, width) else "\n")
        out.append(piece)
        prev = row
    return "".join(out).strip("\n")


def _fingerprint(card: DetectedCard) -> str:
    blob = json.dumps(
        [card.kind, card.title, card.text, [[o.key, o.label] for o in card.options]],
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _moves(card: DetectedCard, target: int, here: int | None = None) -> list[list[str]]:
    """Up/Down from the cursor (or from row ``here``) to row ``target`` (1-based, counting a
    multi-select question's unnumbered Submit row where it is drawn: after option
    ``submit_row - 1``)."""
    if here is None:
        here = card.selected or 1
        if card.submit_row is not None and card.on_submit:
            here = card.submit_row
        elif card.submit_row is not None and here >= card.submit_row:
            here += 1  # an option drawn below the Submit row ('Chat about this')
    step = "Down" if target > here else "Up"
    return [[step] for _ in range(abs(target - here))]


def _rule_width(lines: list[str], row: int) -> int:
    return len(lines[row].rstrip()) if 0 <= row < len(lines) else 0


# ---------------------------------------------------------------------------
# prompt box, footer, busy
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Prompt:
    top: int  # row of the rule above the prompt
    bottom: int  # row of the rule below it


def _find_prompt(lines: list[str]) -> _Prompt | None:
    """The lowest ``rule / ❯ … / rule`` group: Claude Code's input box."""
    for bottom in range(len(lines) - 1, 0, -1):
        if not (_is_rule(lines[bottom]) and _indent(lines[bottom]) == 0):
            continue
        for top in range(bottom - 2, max(-1, bottom - 40), -1):
            line = lines[top]
            if _is_rule(line):
                first = lines[top + 1]
                if (
                    _indent(line) == 0
                    and first[:1] in ("❯", "!", "#", ">")
                    and all(not r.strip() or r.startswith("  ") for r in lines[top + 2 : bottom])
                ):
                    return _Prompt(top, bottom)
                break
    return None


def _draft(lines: list[str], prompt: _Prompt) -> tuple[str, bool]:
    rows = lines[prompt.top + 1 : prompt.bottom]
    first = rows[0][2:] if rows[0][1:2] == " " else rows[0][1:]
    texts = [first] + [r[2:] for r in rows[1:]]
    width = _rule_width(lines, prompt.top)
    joined: list[str] = []
    for i, t in enumerate(texts):
        if i and _cells(texts[i - 1]) + 2 >= width - 1:
            joined.append(t)
        else:
            joined.append(("\n" if i else "") + t)
    draft = "".join(joined).strip()
    if _PLACEHOLDERS.match(draft):
        return "", draft.startswith("Press up to edit queued")
    return draft, False


def _mode(footer: str) -> str | None:
    for pattern, name in _MODES:
        if pattern.search(footer):
            return name
    return None


def _find_spinner(lines: list[str], end: int) -> int | None:
    """Row of the running-turn spinner above ``end``: after the last message start."""
    for i in range(end - 1, max(-1, end - 40), -1):
        line = lines[i]
        if _SPINNER_RE.match(line):
            return i
        if line.startswith(("●", "❯")):
            return None
    return None


def _turn_start(lines: list[str], end: int) -> int:
    """Row after the user message that started the running turn (queued messages skipped)."""
    for i in range(end - 1, -1, -1):
        if lines[i].startswith("❯"):
            nxt = next((r for r in lines[i + 1 : end] if r.strip()), "")
            if _QUEUED_RE.match(nxt):
                continue
            return i + 1
    return 0


def _preview(lines: list[str], start: int, end: int, width: int) -> str | None:
    """The assistant's text blocks (``● …``) between ``start`` and ``end``, unwrapped."""
    blocks: list[str] = []
    i = start
    # the first block may have scrolled off: rows indented by two at the top belong to it
    current: list[str] | None = None
    if start == 0:
        while i < end and not lines[i].strip():
            i += 1
        if i < end and lines[i].startswith("  ") and not lines[i].lstrip().startswith("⎿"):
            current = []
    while i < end:
        line = lines[i]
        if line.startswith("●"):
            if current:
                blocks.append(_unwrap(current, width))
            is_tool = bool(_TOOL_HEADER_RE.match(line)) and _next_is_result(lines, i, end)
            current = None if is_tool else [" " + line[1:]]
        elif current is not None:
            if (line and not line.startswith("  ")) or line.lstrip().startswith("⎿"):
                blocks.append(_unwrap(current, width))
                current = None
            elif line.strip() and not (current and current[-1].strip()):
                # a new paragraph: a collapsed tool group ('  Ran 1 shell command') ends the text
                if _TOOL_SUMMARY_RE.match(line) or _next_is_result(lines, i, end):
                    blocks.append(_unwrap(current, width))
                    current = None
                else:
                    current.append(line)
            else:
                current.append(line)
        i += 1
    if current:
        blocks.append(_unwrap(current, width))
    text = "\n\n".join(b for b in blocks if b.strip())
    return text or None


def _next_is_result(lines: list[str], i: int, end: int) -> bool:
    for row in lines[i + 1 : end]:
        if row.strip():
            return row.lstrip().startswith("⎿")
    return False


def _looks_exited(lines: list[str]) -> bool:
    text = "\n".join(lines)
    if not text.strip():
        return True
    return any(
        marker in text
        for marker in ("Resume this session with:", "Pane is dead", "didn't start because")
    )


def _interrupted_row(lines: list[str], top: int) -> int | None:
    """Row of the interruption notice when it is the last thing above the prompt box."""
    i = top - 1
    # skip blank rows and right-aligned hints ('◐ medium · /effort', 'ctrl+y to paste …')
    while i >= 0 and (not lines[i].strip() or _indent(lines[i]) >= 16):
        i -= 1
    return i if i >= 0 and _INTERRUPTED_RE.match(lines[i]) else None


def _stuck_card(lines: list[str], i: int) -> DetectedCard:
    notice = lines[i].strip().removeprefix("⎿").strip()
    start = i
    while start > 0 and not lines[start - 1].startswith("❯"):
        start -= 1
    context = [
        r.strip().removeprefix("●").removeprefix("⎿").strip()
        for r in lines[start:i]
        if r.strip() and not _SPINNER_RE.match(r)
    ]
    prompt = lines[start - 1][1:].strip() if start > 0 else ""
    text_rows = ([f"❯ {prompt}"] if prompt else []) + context[-8:]
    return DetectedCard(
        kind="stuck",
        title=notice,
        text="\n".join(text_rows),
        options=(),
        selected=None,
    )


# ---------------------------------------------------------------------------
# numbered dialogs: permission, question, plan, dialog
# ---------------------------------------------------------------------------

_SELECTED_NUMBERED_RE = re.compile(r"^( *)❯ (\d+)\.(?: |$)")
# a multi-select question's cursor on its unnumbered Submit row: '❯    Submit' (f_ask_question/15)
_SELECTED_SUBMIT_RE = re.compile(r"^( *)❯ +(?:Submit|Next)\s*$")
_OPTION_TAIL_RE = re.compile(r"(\d+)\.(?: (.*))?$")


@dataclass
class _Option:
    row: int
    key: str
    label: str
    description: str = ""


# What may stand left of an option's number: the cursor, or the arrow a dialog too tall for
# its terminal draws on its first and last visible option ('↑ 2. [ ] Olives', 2.1.332 at 70x14)
_OPTION_LEFT = ("", "❯", "↑", "↓")


def _option_at(line: str, col: int) -> tuple[str, str] | None:
    if len(line) <= col or line[:col].strip() not in _OPTION_LEFT:
        return None
    m = _OPTION_TAIL_RE.match(line, col)
    if not m:
        return None
    return m.group(1), (m.group(2) or "").strip()


def _numbered_card(screen: Screen, lines: list[str], start: int) -> DetectedCard | None:
    for sel in range(len(lines) - 1, start - 1, -1):
        m = _SELECTED_NUMBERED_RE.match(lines[sel]) or _SELECTED_SUBMIT_RE.match(lines[sel])
        if m:
            card = _parse_numbered(screen, lines, sel, len(m.group(1)) + 2, start)
            if card is not None:
                return card
    return None


def _parse_numbered(
    screen: Screen, lines: list[str], sel: int, col: int, start: int
) -> DetectedCard | None:
    n = len(lines)

    def in_block(i: int) -> bool:
        line = lines[i]
        return not line.strip() or _is_rule(line) or _indent(line) > col

    first = sel
    i = sel - 1
    while i >= start:
        if _option_at(lines[i], col):
            first = i
        elif not in_block(i):
            break
        i -= 1
    last = sel
    i = sel + 1
    while i < n:
        if _option_at(lines[i], col):
            last = i
        elif not in_block(i):
            break
        i += 1
    # the last option's own continuation rows
    end = last + 1
    while end < n and lines[end].strip() and not _is_rule(lines[end]) and _indent(lines[end]) > col:
        end += 1

    # the dialog's top: the nearest rule above the first option
    top = first - 1
    while top >= start and not _is_rule(lines[top]):
        top -= 1
    header = lines[top + 1 : first] if top >= start else _header_fallback(lines, first, start)
    width = _rule_width(lines, top) if top >= start else screen.width
    width = width or screen.width
    after = [r for r in lines[end:] if r.strip()]
    footer = " ".join(r.strip() for r in after)

    options, submit_row, cursor_on_submit = _collect_options(lines, first, end, col, width)
    if not options:
        return None
    keys = [o.key for o in options]
    selected = (
        None
        if cursor_on_submit
        else next((k + 1 for k, o in enumerate(options) if o.row == sel), None)
    )

    header_rows = list(header)
    is_plan = any(_PLAN_RE.search(r) for r in header_rows)
    chip_row = next((k for k, r in enumerate(header_rows) if _CHIP_RE.match(r)), None)
    review = any(r.strip() == "Review your answers" for r in header_rows)
    multi = any(_CHECKBOX_RE.match(o.label) for o in options)
    questionish = (
        chip_row is not None
        or review
        or multi
        or any(_FREE_TEXT_RE.match(_CHECKBOX_RE.sub("", o.label)) for o in options)
        or any(o.label == "Chat about this" for o in options)
    )
    asks = any(r.strip().startswith("Do you want") for r in header_rows)
    permission = (
        _title(header_rows).lower() in _PERMISSION_TOOLS
        or "Tab to amend" in footer
        or any(_PERMISSION_ASK_RE.match(r) for r in header_rows)
    )
    has_footer = bool(_FOOTER_HINT_RE.search(footer))
    if not (is_plan or questionish or asks or has_footer):
        return None  # a numbered list in the conversation, not a dialog
    if len(set(keys)) != len(keys):
        return None

    if cursor_on_submit and not multi:
        return None  # only a multi-select question has a Submit row among its options
    if is_plan:
        return _plan_card(header_rows, options, selected, width)
    if questionish:
        card = _question_card(
            screen, top, header_rows, options, selected, width, review, chip_row, submit_row
        )
        return dataclasses.replace(card, on_submit=cursor_on_submit)
    if permission:
        return _permission_card(header_rows, options, selected, width, footer)
    labels = [_label(o) for o in options]
    # its title wraps on a narrow terminal: read it as the first paragraph
    paragraphs = _unwrap(header_rows, width).split("\n")
    if resumechooser.is_chooser(paragraphs[0], labels):
        title = paragraphs[0]
        return DetectedCard(
            kind="resume",
            title=title,
            text="\n".join(paragraphs[1:]),
            options=tuple(
                CardOption(key=o.key, label=lab) for o, lab in zip(options, labels, strict=True)
            ),
            selected=selected,
            resume=resumechooser.read_offer(title),
        )
    return DetectedCard(
        kind="dialog",
        title=_title(header_rows),
        text=_unwrap(_after_title(header_rows), width),
        options=tuple(CardOption(key=o.key, label=_label(o)) for o in options),
        selected=selected,
        confirm_with_enter=bool(re.search(r"Enter to (?:save|confirm|continue|submit)", footer)),
    )


def _header_fallback(lines: list[str], first: int, start: int) -> list[str]:
    i = first - 1
    while i >= start and not lines[i].startswith(("●", "❯", "  ⎿")):
        i -= 1
    return lines[i + 1 : first]


def _collect_options(
    lines: list[str], first: int, end: int, col: int, width: int
) -> tuple[list[_Option], int | None, bool]:
    options: list[_Option] = []
    submit_row: int | None = None
    cursor_on_submit = False
    prev_row = ""
    in_description = False
    for i in range(first, end):
        line = lines[i]
        opt = _option_at(line, col)
        if opt:
            options.append(_Option(i, opt[0], opt[1]))
            prev_row = line
            in_description = False
            continue
        if not line.strip() or _is_rule(line) or not options:
            continue
        stripped = line.strip().removeprefix("❯").strip()
        if stripped in ("Submit", "Next") and _indent(line) <= col + 4:
            # the row after the option above it: options scrolled off the top count too
            above = options[-1].key
            submit_row = int(above) + 1 if above.isdigit() else len(options) + 1
            cursor_on_submit = line.strip().startswith("❯")
            continue
        current = options[-1]
        if not in_description and _soft_wrapped(prev_row, line, width):
            current.label = f"{current.label} {line.strip()}"
        elif in_description:
            current.description = f"{current.description} {line.strip()}"
        else:
            current.description = line.strip()
            in_description = True
        prev_row = line
    return options, submit_row, cursor_on_submit


def _label(option: _Option) -> str:
    label = _CHECKBOX_RE.sub("", option.label)
    # two-column pickers ('Opus      Opus 5.5 · Best for …'): label — description
    label = re.sub(r"\s{2,}", " — ", label)
    if option.description:
        label = f"{label} — {option.description}"
    return label


def _title(header: list[str]) -> str:
    return next((r.strip() for r in header if r.strip()), "")


def _after_title(header: list[str]) -> list[str]:
    seen = False
    out: list[str] = []
    for r in header:
        if not seen:
            seen = bool(r.strip())
            continue
        out.append(r)
    return out


def _plan_card(
    header: list[str], options: list[_Option], selected: int | None, width: int
) -> DetectedCard:
    title_row = next((r for r in header if _PLAN_RE.search(r)), "")
    title = title_row.strip() if "?" in title_row else _title(header)
    rows = [
        r.replace("│", " ").rstrip() for r in header if r.strip() != title and not _is_box_only(r)
    ]
    return DetectedCard(
        kind="plan",
        title=title,
        text=_unwrap(rows, width),
        options=tuple(CardOption(key=o.key, label=_label(o)) for o in options),
        selected=selected,
    )


def _parse_tabs(screen: Screen, row: int, line: str) -> tuple[QuestionTab, ...]:
    body = line.strip()
    if not (body.startswith("←") or body.endswith("→")):
        return ()
    chips = list(re.finditer(r"([☐☒✔])\s+(.+?)(?=\s{2,}|\s*→|\s*$)", line))
    marked = [(s, e) for (y, s, e) in screen.highlights if y == row]
    tabs: list[QuestionTab] = []
    for m in chips:
        current = any(s < m.end() and m.start() < e for s, e in marked)
        tabs.append(
            QuestionTab(
                name=m.group(2).strip(),
                answered=m.group(1) == "☒",
                current=current,
                submit=m.group(1) == "✔" and m.group(2).strip() == "Submit",
            )
        )
    return tuple(tabs)


def _question_card(
    screen: Screen,
    top: int,
    header: list[str],
    options: list[_Option],
    selected: int | None,
    width: int,
    review: bool,
    chip_row: int | None,
    submit_row: int | None,
) -> DetectedCard:
    multi = any(_CHECKBOX_RE.match(o.label) for o in options)
    tabs: tuple[QuestionTab, ...] = ()
    chip = ""
    if chip_row is not None:
        tabs = _parse_tabs(screen, top + 1 + chip_row, header[chip_row])
        if not tabs:
            chip = re.sub(r"^\s*[☐☒✔]\s+", "", header[chip_row]).strip()
    if tabs and not any(t.current for t in tabs):
        tabs = _guess_current_tab(tabs, review, multi)
    body = header[chip_row + 1 :] if chip_row is not None else header
    body = [r for r in body if r.strip() != "Review your answers"]
    if review:
        title = "Review your answers"
        text = _review_text(body)
    else:
        current = next((t for t in tabs if t.current and not t.submit), None)
        title = current.name if current else chip
        text = _unwrap(body, width)
    checked: list[str] = []
    free_text: str | None = None
    card_options: list[CardOption] = []
    for o in options:
        box = _CHECKBOX_RE.match(o.label)
        if box and box.group(1) != " ":
            checked.append(o.key)
        if _FREE_TEXT_RE.match(_CHECKBOX_RE.sub("", o.label)):
            free_text = o.key
        card_options.append(CardOption(key=o.key, label=_label(o)))
    return DetectedCard(
        kind="question",
        title=title or "Question",
        text=text,
        options=tuple(card_options),
        selected=selected,
        multi_select=multi,
        questions=tabs,
        free_text_key=free_text,
        checked=tuple(checked),
        review=review,
        submit_row=submit_row,
    )


def _guess_current_tab(
    tabs: tuple[QuestionTab, ...], review: bool, multi: bool
) -> tuple[QuestionTab, ...]:
    """Plain text shows no highlight: review → Submit; else the first unanswered question,
    or the last question when all are ticked (a multi-select tab ticks as soon as one box is)."""
    questions = [k for k, t in enumerate(tabs) if not t.submit]
    pick: int | None
    if review:
        pick = next((k for k, t in enumerate(tabs) if t.submit), None)
    else:
        pick = next((k for k in questions if not tabs[k].answered), None)
        if pick is None and questions:
            pick = questions[-1]
    return tuple(QuestionTab(t.name, t.answered, k == pick, t.submit) for k, t in enumerate(tabs))


def _review_text(body: list[str]) -> str:
    out: list[str] = []
    for row in body:
        s = row.strip()
        if not s:
            continue
        if s.startswith("→") and out:
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s.removeprefix("●").strip())
    return "\n".join(out)


def _permission_card(
    header: list[str],
    options: list[_Option],
    selected: int | None,
    width: int,
    footer: str,
) -> DetectedCard:
    title = _title(header)
    body = _after_title(header)
    # drop the 'Tip: …' paragraph (and the rows it wrapped onto)
    cleaned: list[str] = []
    in_tip = False
    prev = ""
    for row in body:
        if row.strip().startswith("Tip:"):
            in_tip = True
        elif in_tip and not (row.strip() and _soft_wrapped(prev, row, width)):
            in_tip = False
        if not in_tip:
            cleaned.append(row)
        prev = row
    sections: list[list[str]] = [[]]
    for row in cleaned:
        if _is_dashed(row):
            sections.append([])
        else:
            sections[-1].append(row)
    pre = sections[0]
    question_rows: list[str] = []
    last = sections[-1]
    q_at = next((k for k in range(len(last) - 1, -1, -1) if last[k].strip()), None)
    if q_at is not None and (last[q_at].strip().startswith("Do you want") or "?" in last[q_at]):
        question_rows = [last[q_at]]
        sections[-1] = last[:q_at]
    tool = _PERMISSION_TOOLS.get(title.lower(), title or None)
    tool_input: dict[str, Any] = {}
    inside = sections[1] if len(sections) > 2 else []
    text_parts: list[str] = []
    if tool == "Bash":
        description = _unwrap(pre, width)
        command = _unwrap_command(inside, width)
        tool_input["command"] = command
        if description:
            tool_input["description"] = description
        text_parts = [description, command]
    else:
        pre_rows = [r for r in pre if r.strip()]
        if tool in ("Write", "Edit", "Read", "NotebookEdit") and pre_rows:
            path_rows = _path_rows(pre_rows, width)
            tool_input["file_path"] = "".join(r.strip() for r in path_rows)
        for row in cleaned:
            m = re.match(r"^\s*(url|prompt|query):\s+(.*)$", row.strip("│ "))
            if m:
                tool_input.setdefault(m.group(1), m.group(2).strip())
        text_parts = [_unwrap(pre, width)]
        for section in sections[1:]:
            rows = [r.rstrip() for r in section if r.strip()]
            if rows:
                cut = min(_indent(r) for r in rows)
                text_parts.append("\n".join(r[cut:] for r in rows))
    if question_rows:
        text_parts.append(question_rows[0].strip())
    return DetectedCard(
        kind="permission",
        title=title,
        text="\n".join(p for p in text_parts if p),
        options=tuple(CardOption(key=o.key, label=_label(o)) for o in options),
        selected=selected,
        tool=tool,
        tool_input=tool_input or None,
        amendable="Tab to amend" in footer,
    )


def _path_rows(rows: list[str], width: int) -> list[str]:
    """The file path row, plus the rows it was hard-wrapped onto."""
    out = [rows[0]]
    for row in rows[1:]:
        if _cells(out[-1]) >= width - 2:
            out.append(row)
        else:
            break
    return out


def _unwrap_command(rows: list[str], width: int) -> str:
    """A command as shown between the dashed rules: real newlines kept, wrapped rows joined."""
    out: list[str] = []
    prev = ""
    for row in rows:
        if not row.strip():
            continue
        text = row[1:] if row.startswith(" ") else row
        if out and _cells(prev) >= width - 2:
            out[-1] += text  # hard-wrapped at the edge
        elif out and _soft_wrapped(prev, row, width):
            out[-1] += " " + text.strip()
        else:
            out.append(text.rstrip())
        prev = row
    return "\n".join(out).strip()


# ---------------------------------------------------------------------------
# arrow-key dialogs (folder trust, the --resume picker)
# ---------------------------------------------------------------------------

_SELECTED_PLAIN_RE = re.compile(r"^( *)❯ (?!\d+\.(?: |$))(\S.*)$")
_META_RE = re.compile(r"\b(?:ago|just now)\b.*·|^\d+ (?:second|minute|hour|day|week|month)s? ago")


# A dialog this reader has no rule for still says, in its footer, which keys do what:
# "Enter to stay in auto mode · shift+Tab to leave for accept edits mode and stop · Esc to cancel".
_FOOTER_KEYS = {
    "enter": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "shift+tab": "BTab",
}
_FOOTER_SEGMENT_RE = re.compile(r"^(enter|esc|escape|tab|shift\+tab) to (.+)$", re.IGNORECASE)


def _footer_card(lines: list[str]) -> DetectedCard | None:
    """A 'dialog' card from the last row when it lists keys and what they do (no prompt box)."""
    rows = [i for i, r in enumerate(lines) if r.strip()]
    if not rows:
        return None
    last = rows[-1]
    options: list[CardOption] = []
    for segment in lines[last].strip().split(" · "):
        match = _FOOTER_SEGMENT_RE.match(segment.strip())
        if match is None:
            continue
        key = _FOOTER_KEYS[match.group(1).lower()]
        if key not in (o.key for o in options):
            options.append(CardOption(key=key, label=f"{match.group(1)}: {match.group(2)}"))
    if len(options) < 2:
        return None
    top = max((i for i in range(last) if _is_rule(lines[i])), default=-1) + 1
    body = [r.strip() for r in lines[top:last] if r.strip()]
    if not body:
        return None
    return DetectedCard(
        kind="dialog",
        title=body[0],
        text="\n".join(body[1:]),
        options=tuple(options),
        selected=None,
        footer_keys=True,
    )


def _keyed_card(lines: list[str], start: int, width: int) -> DetectedCard | None:
    footer_row = None
    for i in range(len(lines) - 1, start - 1, -1):
        if _FOOTER_HINT_RE.search(lines[i]) and "esc to interrupt" not in lines[i]:
            footer_row = i
            break
    if footer_row is None:
        return None
    sel = None
    for i in range(footer_row - 1, start - 1, -1):
        if _is_rule(lines[i]):
            break
        m = _SELECTED_PLAIN_RE.match(lines[i])
        if m:
            sel = i
            break
    if sel is None:
        return None
    col = _indent(lines[sel]) + 2

    def at_col(i: int) -> bool:
        line = lines[i]
        return bool(line.strip()) and (i == sel or (_indent(line) == col and not _is_rule(line)))

    rows = [sel]
    i = sel - 1
    while i >= start:
        if at_col(i):
            rows.insert(0, i)
        elif not lines[i].strip() and i - 1 >= start and at_col(i - 1):
            pass
        else:
            break
        i -= 1
    i = sel + 1
    while i < footer_row:
        if at_col(i):
            rows.append(i)
        elif not lines[i].strip() and i + 1 < footer_row and at_col(i + 1):
            pass
        else:
            break
        i += 1

    def text_of(i: int) -> str:
        return lines[i].strip().removeprefix("❯").strip()

    labels: list[tuple[int, str]] = []
    if any(_META_RE.search(text_of(r)) for r in rows):
        for k, r in enumerate(rows):
            nxt = rows[k + 1] if k + 1 < len(rows) else None
            if nxt == r + 1 and _META_RE.search(text_of(nxt)) and not _META_RE.search(text_of(r)):
                labels.append((r, f"{text_of(r)} — {text_of(nxt)}"))
    else:
        labels = [(r, text_of(r)) for r in rows]
    if not labels or sel not in [r for r, _ in labels]:
        return None

    top = rows[0] - 1
    while top >= start and not _is_rule(lines[top]):
        top -= 1
    eff = _rule_width(lines, top) if top >= start else width
    body: list[str] = []
    for row in lines[top + 1 : rows[0]]:
        if _is_box_only(row) or row.strip().strip("│").strip().startswith("⌕"):
            continue  # box borders and the search field
        body.append(row.replace("│", " ").rstrip())
    title = _title(body)
    body_text = _unwrap(_after_title(body), eff or width)
    return DetectedCard(
        kind="keyed",
        title=title,
        text=body_text,
        options=tuple(CardOption(key=str(k + 1), label=lab) for k, (_, lab) in enumerate(labels)),
        selected=[r for r, _ in labels].index(sel) + 1,
    )


# ---------------------------------------------------------------------------
# multi-select keys
# ---------------------------------------------------------------------------


def _in_free_text(card: DetectedCard) -> bool:
    """Is the cursor in the 'Type something' row (where digits are typed as text)?"""
    if card.free_text_key is None or card.selected is None or card.on_submit:
        return False
    return card.options[card.selected - 1].key == card.free_text_key


def _leave_free_text(card: DetectedCard) -> list[list[str]]:
    """Up to option 1 when the cursor is where digits do not pick: the 'Type something' row
    (they become its text) or a multi-select question's Submit row (they do nothing)."""
    if card.on_submit or _in_free_text(card):
        return _moves(card, 1)
    return []


def _multi_select_keys(card: DetectedCard, wanted: list[str], text: str | None) -> list[list[str]]:
    boxes = {o.key for o in card.options if not o.label.startswith("Chat about this")}
    actions = [k for k in wanted if k not in boxes]
    groups = _leave_free_text(card)
    here = 1 if groups else None  # the cursor's row once it has left
    if actions:
        if len(wanted) != 1:
            raise ValueError("'Chat about this' cannot be combined with other answers")
        return [*groups, [actions[0]]]
    want = set(wanted)
    have = set(card.checked)
    free = card.free_text_key
    for o in card.options:
        if o.key not in boxes or o.key == free:
            continue
        if (o.key in want) != (o.key in have):
            groups.append([o.key])
    in_field = False
    if free is not None and free in want:
        if not text:
            raise ValueError("'Type something' needs text")
        if free not in have:
            groups.append([free])  # ticks it; the cursor stays
        groups.append([LITERAL, text])  # the paste goes into its field, and the cursor with it
        in_field = True
        here = [o.key for o in card.options].index(free) + 1
    elif text is not None:
        raise ValueError("text goes with the 'Type something' option")
    elif free is not None and free in have:
        groups.append([free])
    tabs = [t for t in card.questions if not t.submit]
    if card.questions:
        current = next((k for k, t in enumerate(tabs) if t.current), len(tabs) - 1)
        # Tab goes to the next tab, but from the text field to the Submit row, which Enter takes
        groups += [["Tab"], ["Enter"]] if in_field else [["Tab"]]
        if current == len(tabs) - 1:
            groups.append(["1"])  # 'Submit answers' on the review step
        return groups
    if card.submit_row is not None:
        groups += _moves(card, card.submit_row, here)
    groups.append(["Enter"])
    return groups
