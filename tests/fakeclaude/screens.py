"""Screens of Claude Code 2.1.328 at 80x24, cut from the captures in ``tests/fixtures/screens``.

A frame is 24 ANSI rows. It is composed the way the real program lays out its screen:
the conversation (``Screen.blocks``: the banner, then one block per message, each block
separated by a blank row) is anchored at the top; the prompt box (with the spinner above it
while busy) is anchored at the bottom, an open dialog follows the conversation directly; when
it all does not fit, the top rows scroll away.

Rows that never change are cut from a capture (``cut``); rows that depend on the state
(a moved cursor, a prompt, a footer) are built with the exact colours seen in the captures.
Every builder is checked against the capture it imitates in ``tests/agent/test_fakeclaude.py``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from .ansi import normalise, plain, truncate, width, wrap

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WIDTH, HEIGHT = 80, 24

# Colours and attributes exactly as tmux reported them in the captures.
GREY = "\x1b[38;5;246m"
RULE = "\x1b[38;5;244m"
WHITE = "\x1b[38;5;231m"
ACCENT = "\x1b[38;5;153m"
GREEN = "\x1b[38;5;114m"
ORANGE = "\x1b[38;5;174m"
TEAL = "\x1b[38;5;73m"
LILAC = "\x1b[38;5;147m"
DASHES = "\x1b[38;5;239m"
CHIP = "\x1b[38;5;16m\x1b[48;5;153m"
PROMPT_BG = "\x1b[48;5;237m"
FG = "\x1b[39m"
BG = "\x1b[49m"
RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
REVERSE = "\x1b[7m"
NBSP = "\xa0"
ELBOW = f"  ⎿ {NBSP}"


@functools.cache
def capture(name: str) -> tuple[str, ...]:
    """The 24 normalised rows of ``screens/<name>_80x24.screen_ansi.txt``."""
    path = FIXTURES / "screens" / f"{name}_80x24.screen_ansi.txt"
    rows = path.read_text(encoding="utf-8").split("\n")[:HEIGHT]
    rows += [""] * (HEIGHT - len(rows))
    return tuple(normalise(rows))


def capture_cwd(name: str) -> str:
    """The working directory the real program ran in for that capture."""
    return f"/tmp/realclaude/work-{name.split('/')[0]}_80x24"


def cut(name: str, start: int, end: int, swap: dict[str, str] | None = None) -> list[str]:
    """Rows ``start``..``end`` (inclusive) of a capture, with text replaced per ``swap``."""
    rows = list(capture(name)[start : end + 1])
    for old, new in (swap or {}).items():
        rows = [row.replace(old, new) for row in rows]
    return [truncate(row, WIDTH) for row in rows]


def display_path(cwd: str, home: str) -> str:
    """How the banner and the trust dialog name the folder (``~`` for the home folder)."""
    if home and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
        return "~" + cwd[len(home.rstrip("/")) :]
    return cwd


# ---------------------------------------------------------------- conversation rows


def banner(cwd: str) -> list[str]:
    """Blank, the three banner rows, blank (``a_startup_trust/03``)."""
    name = "a_startup_trust/03_idle_after_trust"
    return cut(name, 0, 4, {capture_cwd(name): cwd})


def user_prompt(text: str) -> list[str]:
    """``❯ text`` on the grey band, wrapped; a slash command is drawn the way ``/clear`` was."""
    if text.startswith("/") and "\n" not in text:
        return [f"{GREY}{PROMPT_BG}❯{FG} {WHITE}{text}{FG}"]
    rows = []
    for n, line in enumerate(_wrap_paragraphs(text, WIDTH - 2)):
        lead = f"{GREY}{PROMPT_BG}❯ " if n == 0 else f"{PROMPT_BG}  "
        rows.append(f"{lead}{WHITE}{line}{FG}")
    return rows


def queued_prompt(text: str) -> list[str]:
    """A message typed while busy (``c_busy/05``)."""
    first = text.split("\n")[0]
    return [
        f"{GREY}{PROMPT_BG}❯ {first}{FG}",
        f"{BG}{GREY}  ⎿  Queued · ctrl+x ctrl+s to send now{FG}",
    ]


def assistant(text: str, bullet: str = WHITE) -> list[str]:
    """``● text`` wrapped at 78 columns with a two-space hanging indent."""
    lines = _wrap_paragraphs(text, WIDTH - 2)
    return [f"{bullet}●{FG} {lines[0]}".rstrip()] + [f"  {line}" for line in lines[1:]]


def streaming_dot() -> list[str]:
    """The lone ``●`` drawn before the first complete line of an answer arrives."""
    return [f"{WHITE}●"]


def elbow(text: str) -> str:
    """A grey ``  ⎿  text`` result row."""
    return f"{GREY}{ELBOW}{text}"


INTERRUPTED = elbow("Interrupted · What should Claude do instead?")


def tool_header(name: str, arg: str, done: bool) -> str:
    """``● Write(hello.txt)``: grey while waiting for permission, green once it ran."""
    return f"{GREEN if done else GREY}●{FG} {BOLD}{name}{RESET}({arg})"


def bash_pending(activity: str, command: str) -> list[str]:
    """The Bash call while its permission dialog is open (``d_bash_permission/01``)."""
    return [f"{GREY}●{FG} {activity}", f"{GREY}  ⎿  $ {command}{FG}"]


def bash_ran(count: int = 1, by_hook: bool = False, failed: int = 0) -> list[str]:
    """``Ran 1 shell command`` (``d_bash_permission/03``, ``n_permissionrequest_allow_hook/01``)."""
    tail = f" · {failed} failed" if failed else ""
    noun = "command" if count == 1 else "commands"
    rows = [f"  {GREY}Ran {BOLD}{count}{RESET}{GREY} shell {noun}{tail} {FG}"]
    if by_hook:
        rows.append(ALLOWED_BY_HOOK)
    return rows


ALLOWED_BY_HOOK = elbow(f"Allowed by {BOLD}PermissionRequest{RESET}{GREY} hook")


def bash_rejected(command: str, verb: str = "Did not run") -> list[str]:
    """``Did not run 1 call`` / ``⎿  $ cmd`` / ``⎿  Interrupted …`` (``d_bash_permission/04``)."""
    return [f"  {GREY}{verb} {BOLD}1{RESET}{GREY} call {FG}", elbow(f"$ {command}"), INTERRUPTED]


def write_done(path: str, lines: list[str]) -> list[str]:
    """``● Write(p)`` / ``⎿  Wrote N lines to p`` / numbered lines (``e_write_edit_permission/02``)."""
    noun = "line" if len(lines) == 1 else "lines"
    rows = [
        tool_header("Write", path, done=True),
        f"{GREY}{ELBOW}{FG}Wrote {BOLD}{len(lines)}{RESET} {noun} to {BOLD}{path}",
    ]
    rows += [f"{RESET}     {DIM}{n:>2} {RESET}{line}" for n, line in enumerate(lines, 1)]
    return rows


def done_line(verb: str, seconds: float, clock: str) -> list[str]:
    """``✻ Worked for 0s · done 9:32 PM``."""
    return [f"{GREY}✻{FG} {GREY}{verb} for {duration(seconds)} · done {clock}{FG}"]


def duration(seconds: float) -> str:
    """``12s`` or ``1m 8s`` as the spinner and the done line write it."""
    s = int(seconds)
    return f"{s}s" if s < 60 else f"{s // 60}m {s % 60}s"


def spinner(glyph: str, verb: str, seconds: float, tokens: int, hook: str | None = None) -> str:
    """``✢ Pondering… (0s · ↓ 2 tokens)``, or ``(running Stop hook · 0s · ↓ 8 tokens)``."""
    running = f"running {hook} hook · " if hook else ""
    return (
        f"{ORANGE}{glyph}{FG} {ORANGE}{verb}… {GREY}({running}{duration(seconds)} · ↓{FG} "
        f"{GREY}{tokens} tokens){FG}"
    )


SPINNER_GLYPHS = "·✢*✶✻✽"
EFFORT = " " * 60 + f"{GREY}◐ medium · /effort"


def rule(colour: str = RULE, columns: int = WIDTH) -> str:
    return colour + "─" * columns


def input_row(text: str, busy: bool = False) -> str:
    """The prompt box's input row; the reversed blank is the drawn cursor."""
    if busy and not text:
        return f"{GREY}❯{NBSP}{REVERSE}{FG} {RESET}"
    if text.startswith("/") and " " not in text:
        return f"{FG}❯{NBSP}{ACCENT}{text}{REVERSE}{FG} {RESET}"
    shown = text.replace("\n", " ")
    if width(shown) > WIDTH - 4:
        shown = shown[-(WIDTH - 4) :]
    return f"{FG}❯{NBSP}{shown}{REVERSE} {RESET}"


QUEUED_HINT = f"{GREY}❯{NBSP}{REVERSE}{FG}P{RESET}{DIM}{FG}{BG}ress up to edit queued messages"

MODE_TEXT = {
    # permission mode -> (footer text, colour, whether "(shift+tab to cycle)" follows)
    "default": ("⏸ manual mode on", GREY, False),
    "plan": ("⏸ plan mode on", TEAL, True),
    "acceptEdits": ("⏵⏵ accept edits on", LILAC, True),
    "auto": ("⏵⏵ auto mode on", LILAC, True),  # composed: colour not captured
    "bypassPermissions": ("⏵⏵ bypass permissions on", LILAC, True),  # composed
    "dontAsk": ("⏵⏵ don't ask mode on", LILAC, True),  # composed
}


def footer(
    mode: str,
    *,
    busy: bool = False,
    draft: bool = False,
    agents_hint: bool = False,
    tasks: bool = False,
) -> str:
    """The row under the prompt box, e.g. ``⏸ manual mode on · ? for shortcuts · ← for agents``."""
    text, colour, cycles = MODE_TEXT.get(mode, MODE_TEXT["default"])
    row = f"  {colour}{text}"
    if cycles:
        row += f"{GREY} (shift+tab to cycle)"
    if draft:
        return row + FG
    if tasks:
        row += f"{GREY} · /tasks to see subagents"
    if busy:
        row += f"{GREY} · esc to interrupt"
    elif not cycles:
        row += f"{GREY} · ? for shortcuts"
    if agents_hint:
        row += f"{GREY} · ← for agents"
    return row + FG


def plain_footer(text: str) -> str:
    """A grey footer such as ``Press Ctrl-D again to exit``."""
    return f"  {GREY}{text}{FG}"


# ---------------------------------------------------------------- slash-command menu

SLASH_MENUS = {
    "/compact": lambda: cut("ij_clear_compact/01_typed_slash_compact_menu", 16, 19),
    "/clear": lambda: cut("ij_clear_compact/04_typed_slash_clear_menu", 18, 19),
    # composed in the same layout: this menu was not captured
    "/exit": lambda: [f"  {ACCENT}❯ /{BOLD}exit{RESET}{ACCENT}" + " " * 23 + f"Exit the REPL{FG}"],
}


def slash_menu(text: str) -> list[str]:
    """The autocomplete rows shown above the prompt box while a known command is typed."""
    maker = SLASH_MENUS.get(text)
    return maker() if maker else []


# ---------------------------------------------------------------- dialogs


def trust_dialog(cwd: str, cursor: int) -> list[str]:
    """The folder-trust dialog, a whole screen (``a_startup_trust/01``, ``/02`` after Down)."""
    name = (
        "a_startup_trust/01_trust_dialog"
        if cursor == 0
        else "a_startup_trust/02_trust_dialog_after_Down"
    )
    return cut(name, 0, 23, {capture_cwd(name): cwd})


@dataclass
class Styled:
    """Option text made of runs: ``""`` plain, ``"bold"`` or ``"grey"``."""

    runs: list[tuple[str, str]] = field(default_factory=list)

    def words(self) -> list[tuple[str, str]]:
        out = []
        for text, style in self.runs:
            out += [(w, style) for w in text.split(" ") if w]
        return out


def _render_words(words: list[tuple[str, str]], base: str) -> str:
    """Words joined by spaces, each run of one style drawn with that style."""
    runs: list[tuple[str, list[str]]] = []
    for word, style in words:
        if runs and runs[-1][0] == style:
            runs[-1][1].append(word)
        else:
            runs.append((style, [word]))
    parts = []
    for style, run in runs:
        text = " ".join(run)
        if style == "bold":
            parts.append(f"{BOLD}{base}{text}{RESET}{base or FG}{BG}")
        elif style == "grey":
            parts.append(f"{GREY}{text}{base or FG}")
        else:
            parts.append(text)
    return " ".join(parts)


def option_rows(number: int, label: Styled, selected: bool, indent: int = 0) -> list[str]:
    """A numbered choice as in the permission dialogs: ``❯ 1. Yes`` / ``  2. No``."""
    pad = " " * indent
    lines: list[list[tuple[str, str]]] = [[]]
    used = 0
    for word, style in label.words():
        w = width(word)
        if lines[-1] and used + 1 + w > WIDTH - indent - 6:
            lines.append([])
            used = 0
        used += w + (1 if lines[-1] else 0)
        lines[-1].append((word, style))
    base = ACCENT if selected else ""
    lead = (
        f"{pad} {ACCENT}❯{FG} {GREY}{number}. {ACCENT}"
        if selected
        else f"{pad}   {GREY}{number}. {FG}"
    )
    rows = [lead + _render_words(lines[0], base) + (FG if selected else "")]
    rows += [
        f"{pad}      {base}{_render_words(line, base)}{FG if selected else ''}"
        for line in lines[1:]
    ]
    return rows


def bash_dialog(
    cwd: str, command: str, description: str, cursor: int, amend: str | None
) -> list[str]:
    """The Bash permission dialog (``d_bash_permission/01``, ``/02``, ``/07``)."""
    name = "d_bash_permission/01_bash_dialog"
    head = cut(name, 7, 16)
    head[5] = f" {GREY}{description}"
    head[7] = f"{FG} {command}"
    labels = [
        Styled([("Yes", "")]),
        Styled([("Yes, and always allow access to", ""), (cwd, "bold"), ("from this project", "")]),
        Styled(
            [
                ("Yes, and switch to auto mode", ""),
                ("· auto mode handles these prompts for you", "grey"),
            ]
        ),
        Styled([("No", "")]),
    ]
    rows = head
    for n, label in enumerate(labels):
        if n == 0 and amend is not None:
            rows.append(_amend_row(amend))
            continue
        rows += option_rows(n + 1, label, n == cursor)
    hint = "Esc to cancel · Tab to amend" if cursor == 0 and amend is None else "Esc to cancel"
    return [*rows, "", f" {GREY}{hint}{FG}"]


def _amend_row(text: str) -> str:
    """Option 1 turned into a text field by Tab (``d_bash_permission/07``)."""
    lead = f" {ACCENT}❯{FG} {GREY}1. {ACCENT}Yes, "
    if not text:
        return f"{lead}{REVERSE}{FG}a{RESET}{DIM}{FG}{BG}nd tell Claude what to do next"
    return f"{lead}{text}{REVERSE}{FG} {RESET}"


def write_dialog(relpath: str, lines: list[str], cursor: int) -> list[str]:
    """The Create file dialog (``e_write_edit_permission/01``)."""
    name = "e_write_edit_permission/01_write_dialog"
    rows = cut(name, 10, 14)
    rows[3] = f"{RESET} {GREY}{relpath}"
    rows += [f"{FG} {DIM}{n:>2} {RESET}{line}" for n, line in enumerate(lines, 1)]
    rows += [DASHES + "╌" * WIDTH, f"{FG} Do you want to create {BOLD}{relpath}{RESET}?"]
    labels = [
        Styled([("Yes", "")]),
        Styled(
            [
                ("Yes, and switch to", ""),
                ("accept edits (auto-approve file edits and common file commands)", "bold"),
                ("for this session", ""),
                ("(shift+tab)", "bold"),
            ]
        ),
        Styled([("No", "")]),
    ]
    for n, label in enumerate(labels):
        rows += option_rows(n + 1, label, n == cursor)
    hint = "Esc to cancel · Tab to amend" if cursor == 0 else "Esc to cancel"
    return [*rows, "", f" {GREY}{hint}{FG}"]


def plan_dialog(cursor: int) -> list[str]:
    """Exit plan mode? (``g_plan_approval/02``, ``/03`` after Down); the plan itself is not drawn."""
    rows = cut("g_plan_approval/02_plan_dialog", 9, 21)
    labels = [
        Styled(
            [
                ("Yes, and switch to", ""),
                ("default (ask each time)", "bold"),
                ("for this session", ""),
            ]
        ),
        Styled([("No", "")]),
    ]
    for n, label in enumerate(labels):
        rows += option_rows(n + 1, label, n == cursor, indent=3)
    return rows


def plan_rejected(plan: str) -> list[str]:
    """``⎿  Rejected Claude's plan:`` and the plan in a box (``g_plan_approval/04``)."""
    lines = plan.split("\n")
    inner = max(width(line) for line in lines) + 2
    rows = [elbow("Rejected Claude's plan:"), f"{FG}     {TEAL}╭{'─' * inner}╮"]
    for n, line in enumerate(lines):
        text = f"{BOLD}\x1b[3m\x1b[4m{line}{RESET}" if n == 0 else line
        rows.append(f"{FG}     {TEAL}│{FG} {text}{' ' * (inner - 1 - width(line))}{TEAL}│")
    rows.append(f"     {TEAL}╰{'─' * inner}╯")
    return rows


# ---- AskUserQuestion


@dataclass
class Question:
    question: str
    header: str
    options: list[tuple[str, str]]
    multi: bool


def ask_tab_bar(questions: list[Question], answered: list[bool], active: int) -> str:
    """``←  ☐ Colour  ☐ Toppings  ✔ Submit  →`` with the active tab as a chip."""
    tabs = [
        f" {'☒' if done else '☐'} {q.header} " for q, done in zip(questions, answered, strict=True)
    ]
    tabs.append(" ✔ Submit ")
    out = f"{GREY}← " if active == 0 else f"{FG}← "
    for n, tab in enumerate(tabs):
        out += f"{CHIP}{tab}{FG}{BG}" if n == active else tab
    return out + " →"


def ask_question_rows(
    q: Question, cursor: int, ticked: set[int], text: str | None, single_card: bool
) -> list[str]:
    """One question of an AskUserQuestion card (``f_ask_question/01``, ``/05``, ``/07``)."""
    rows = ["", f"{BOLD}{WHITE}{q.question}", ""]
    for n, (label, desc) in enumerate(q.options):
        mark = f"{ACCENT}❯{FG} " if n == cursor else "  "
        if q.multi:
            box = f"{GREEN}[✔]{FG}" if n in ticked else "[ ]"
            name = f"{ACCENT}{label}{FG}" if n == cursor else label
            rows.append(f"{RESET}{mark}{GREY}{n + 1}.{FG} {box} {name}")
            rows.append(f"         {GREY}{desc}{FG}")
        else:
            name = f"{ACCENT}{label}" if n == cursor else label
            rows.append(f"{RESET}{mark}{GREY}{n + 1}.{FG} {name}")
            rows.append(f"     {GREY}{desc}{FG}")
    other = len(q.options)
    if text is not None:
        rows.append(f"{ACCENT}❯{FG} {GREY}{other + 1}.{FG} {ACCENT}{text}{REVERSE}{FG} {RESET}")
    elif q.multi:
        mark = f"{ACCENT}❯{FG} " if cursor == other else "  "
        rows.append(f"{FG}{mark}{GREY}{other + 1}. {FG}[ ] {GREY}Type something")
        sub = (
            f"   {ACCENT}❯ {BOLD}Submit{RESET}"
            if cursor == other + 1
            else f"{FG}     {BOLD}Submit{RESET}"
        )
        rows.append(sub)
    else:
        mark = f"{ACCENT}❯{FG} " if cursor == other else "  "
        rows.append(f"{mark}{GREY}{other + 1}. Type something.{FG}")
    rows += [rule(GREY), f"{FG}  {other + 2}. Chat about this", ""]
    if text is not None:
        rows.append(
            f"{GREY}Enter to select · ↑/↓ to navigate · ctrl+g to edit in Vim · Esc to cancel{FG}"
        )
    elif single_card:
        rows.append(f"{GREY}Enter to select · ↑/↓ to navigate · Esc to cancel{FG}")
    else:
        rows.append(f"{GREY}Enter to select · Tab/Arrow keys to navigate · Esc to cancel")
    return rows


def ask_dialog(
    questions: list[Question],
    active: int,
    cursor: int,
    ticked: list[set[int]],
    answers: list[str | None],
    text: str | None,
) -> list[str]:
    """The whole card: rule, tab bar or header chip, the question, footer."""
    rows = [rule(GREY)]
    if len(questions) == 1:
        mark = "☒" if answers[0] is not None else "☐"
        rows.append(f"{CHIP} {mark} {questions[0].header}")
        return rows + ask_question_rows(questions[0], cursor, ticked[0], text, single_card=True)
    answered = [a is not None or bool(t) for a, t in zip(answers, ticked, strict=True)]
    rows.append(ask_tab_bar(questions, answered, active))
    if active < len(questions):
        rows += ask_question_rows(
            questions[active], cursor, ticked[active], text, single_card=False
        )
        return rows
    return rows + ask_review_rows(questions, answers, cursor)


def ask_review_rows(questions: list[Question], answers: list[str | None], cursor: int) -> list[str]:
    """Composed: the ``Review your answers`` step was not captured at 80x24; its text as the real program words it."""
    rows = ["", f"{BOLD}{WHITE}Review your answers{RESET}", ""]
    for q, a in zip(questions, answers, strict=True):
        rows += [f" {GREY}●{FG} {q.question}", f"   {GREY}→ {FG}{a or ''}"]
    rows.append("")
    for n, label in enumerate(["Submit answers", "Cancel"]):
        rows.append(
            f"{ACCENT}❯{FG} {GREY}{n + 1}.{FG} {ACCENT}{label}{FG}"
            if n == cursor
            else f"  {GREY}{n + 1}.{FG} {label}"
        )
    return [*rows, "", f"{GREY}Enter to select · Tab/Arrow keys to navigate · Esc to cancel"]


def ask_answered(pairs: list[tuple[str, str]]) -> list[str]:
    """``● Answered Claude's questions:`` / ``⎿  · Q → A`` (``f_ask_question/03``)."""
    rows = [f"{GREY}●{FG} Answered Claude's questions:"]
    for n, (q, a) in enumerate(pairs):
        rows.append(elbow(f"· {q} → {a}") if n == 0 else f"{FG}     {GREY}· {q} → {a}")
    return rows


def ask_declined(questions: list[Question]) -> list[str]:
    """``● Declined to answer Claude's questions:`` and the list (``f_ask_question/11``)."""
    rows = [f"{GREY}●{FG} Declined to answer Claude's questions:"]
    for n, q in enumerate(questions):
        item = f"· {q.question} ({' / '.join(label for label, _ in q.options)})"
        rows.append(elbow(item) if n == 0 else f"{FG}     {GREY}{item}")
    return rows


# ---------------------------------------------------------------- the composer


def _wrap_paragraphs(text: str, columns: int) -> list[str]:
    out: list[str] = []
    for para in text.split("\n"):
        out += wrap(para, columns, columns)
    return out


class Screen:
    """The conversation blocks; ``compose`` turns them plus the live area into a frame."""

    def __init__(self, cwd_shown: str) -> None:
        self.cwd_shown = cwd_shown
        self.blocks: list[list[str]] = []
        self.reset()

    def reset(self) -> None:
        self.blocks = [banner(self.cwd_shown)]

    def add(self, rows: list[str]) -> int:
        """Append a block (drawn after a blank row); returns its index for ``replace``."""
        self.blocks.append(["", *rows])
        return len(self.blocks) - 1

    def replace(self, index: int, rows: list[str]) -> None:
        self.blocks[index] = ["", *rows]

    def extend(self, index: int, rows: list[str]) -> None:
        self.blocks[index] += rows

    def compose(
        self, live: list[str], bottom: list[str], height: int = HEIGHT, dialog: bool = False
    ) -> list[str]:
        """The frame: the prompt box sits on the last rows; an open dialog follows the conversation
        directly, leaving any spare rows below it (``f_ask_question/01``)."""
        content = [row for block in self.blocks for row in block] + live
        gap = [""] * max(height - len(content) - len(bottom), 0)
        rows = content + bottom + gap if dialog else content + gap + bottom
        return [truncate(row, WIDTH) for row in rows[-height:]]


def plain_rows(rows: list[str]) -> list[str]:
    """What ``tmux capture-pane -p`` shows for these rows."""
    return [plain(row).rstrip(" ") for row in rows]
