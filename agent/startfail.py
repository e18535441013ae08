"""Why Claude Code could not work: an exit before its session was live, or a refusal on screen.

Pure: text in, a typed reason out; no I/O, no clock. The captures are those of the real 2.1.332
(tests/fixtures/claude/2.1.332/startup/, FINDINGS.md §2; ``[binary]`` texts from the program).

:func:`explain_exit` reads a pane whose claude ended before its session was ever live:

* ``screen``: the pane's last screen (``capture-pane -p``), ``history``: the same with its
  scrollback (``capture-pane -p -S -``). Both are needed: when the pane dies tmux writes ``Pane
  is dead (status N, <date>)`` by scrolling the screen up one line, so a one-line error (``error:
  unknown option '--bogus-flag'``) is only in the history (FINDINGS §0.3).
* ``status``: ``#{pane_dead_status}`` as tmux gave it; tmux 3.3a may leave it empty for a process
  that ended within half a second, so it may be missing (``None`` or ``""``). Then the ``Pane is
  dead (status N …)`` line of the text is read instead, if there is one.
* ``width``: the pane's width. A line exactly this wide was cut by the terminal, not by the
  program: it is joined to the next (a long path in an error message).

It returns a :class:`StartFailure`: a ``code`` (the first rule whose words the text holds, in the
order of ``RULES``; ``claude_exited`` when none does), ``lines`` (the message itself: from the
first line the rule matched, cleaned of box drawing, the logo, blank lines and a dialog's options
and footers; for ``claude_exited`` the last meaningful lines; at most ``MAX_LINES`` of at most
``MAX_LINE_CHARS`` characters, no control character), ``action`` (one sentence a person can act
on, naming the Mac) and the exit ``status`` / ``signal`` when known.

:func:`refusal_on_screen` reads a live screen for the refusals that never end claude: after a
message Claude Code draws ``⎿  Invalid API key · Fix external API key`` or ``⎿  Not logged in ·
Please run /login`` (and the prompt's placeholder becomes ``Once fixed, resend your message``),
then waits at its prompt. It reports one only when that row answers the latest message: the last
thing above the prompt box, below the last ``❯`` message (right-aligned hints aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CODES",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "StartFailCode",
    "StartFailure",
    "explain_exit",
    "refusal_on_screen",
]

StartFailCode = Literal[
    "claude_not_logged_in",
    "claude_key_declined",
    "claude_invalid_key",
    "claude_no_credit",
    "claude_bad_flag",
    "claude_no_conversation",
    "claude_session_in_use",
    "claude_settings_missing",
    "claude_config_error",
    "claude_offline",
    "claude_root_bypass",
    "claude_folder_untrusted",
    "claude_version_refused",
    "claude_exited",
]

MAX_LINES = 8  # lines of the message kept
MAX_LINE_CHARS = 300  # characters of one line kept (a longer one ends with "…")
MAX_SCAN_LINES = 2000  # lines of history read (the last ones)
MAX_MAC_CHARS = 80  # of the Mac's name in an action
HINT_INDENT = 16  # a row indented this much above the prompt box is a right-aligned hint
DEFAULT_MAC = "this Mac"

LOGIN = "Run `claude` once in a terminal on {mac} and log in (/login)."


@dataclass(frozen=True)
class _Rule:
    code: StartFailCode
    pattern: re.Pattern[str]
    action: str


def _rule(code: StartFailCode, pattern: str, action: str) -> _Rule:
    return _Rule(code, re.compile(pattern), action)


# The refusals of Claude Code's sign-in family (one table in the program), first: a more
# particular line (the declined key's second line) before the general one.
AUTH_RULES = (
    _rule(
        "claude_key_declined",
        r"ANTHROPIC_API_KEY not used here",
        "Claude Code on {mac} was once told not to use this API key: run `claude` in a terminal "
        'there, open /config and turn on "Use custom API key" (or log in with /login).',
    ),
    _rule(
        "claude_not_logged_in",
        r"^(?:Not logged in|OAuth token revoked|Login expired|Login reached its time limit)"
        r" · Please run /login|^Authentication required · Sign in again",
        LOGIN,
    ),
    _rule(
        "claude_invalid_key",
        r"^Invalid API key · |^Invalid auth token · ",
        "The API refuses the key Claude Code uses on {mac}: set a valid ANTHROPIC_API_KEY (or "
        "ANTHROPIC_AUTH_TOKEN) for the agent there, or remove it and log in with `claude` (/login).",
    ),
    _rule(
        "claude_invalid_key",
        r"^Your organization has disabled API key authentication",
        "Your organization allows no API key: remove ANTHROPIC_API_KEY from the agent's "
        "environment on {mac} and log in with `claude` (/login) with your organization's account.",
    ),
    _rule(
        "claude_no_credit",
        r"^Credit balance is too low",
        "The Anthropic Console account of this API key has no credit left: add some, or log in "
        "with a Claude subscription (`claude`, /login) on {mac}.",
    ),
)

EXIT_RULES = (
    *AUTH_RULES,
    _rule(
        "claude_no_conversation",
        r"^No conversation found with session ID",
        "The conversation was never saved on {mac}: start the session afresh with the same id "
        "(`--session-id`), not `--resume`.",
    ),
    _rule(
        "claude_session_in_use",
        r"^Error: Session ID \S+ is already in use",
        "A conversation with this id already exists on {mac}: resume it (`--resume`) instead of "
        "starting it again with `--session-id`.",
    ),
    _rule(
        "claude_settings_missing",
        r"^Error: Settings file not found",
        "The session's settings file is gone: restart the claude-bridge agent on {mac}, which "
        "writes it again, then start the session again.",
    ),
    _rule(
        "claude_bad_flag",
        r"^error: (?:unknown option|option '|missing required argument|too many arguments)",
        "Claude Code on {mac} refused its command line: fix or remove that option in the "
        "session's claude arguments (`claude --help` lists them; an older Claude Code may not "
        "know it yet: `claude update`).",
    ),
    _rule(
        "claude_bad_flag",
        r"^Error: Invalid session ID",
        "Claude Code on {mac} refused the session's id (not a UUID): start a new session.",
    ),
    _rule(
        "claude_root_bypass",
        r"cannot be used with root/sudo privileges",
        "Bypass mode is refused to root: run the agent on {mac} as an ordinary user, or start "
        "the session in another permission mode.",
    ),
    _rule(
        "claude_config_error",
        r"^Claude configuration file at .* is corrupted|^Configuration error$"
        r"|isn't valid JSON\.?$|^Error: .*[Ss]ettings.* (?:invalid|not valid)",
        "A Claude Code configuration file on {mac} is damaged: fix or remove the file named "
        "above (Claude Code kept a copy in ~/.claude/backups), then start the session again.",
    ),
    _rule(
        "claude_offline",
        r"^Unable to connect to Anthropic services|^Failed to connect to api\.anthropic\.com",
        "Claude Code on {mac} could not reach Anthropic on its first start: connect {mac} to the "
        "internet and run `claude` once in a terminal there to finish its setup.",
    ),
    _rule(
        "claude_folder_untrusted",
        r"didn't start because this folder isn't trusted",
        "Claude Code was told not to trust the session's folder on {mac}: start the session "
        "again and trust the folder, or pick another folder.",
    ),
    _rule(
        "claude_version_refused",
        r"is (?:older than the minimum|newer than the maximum) version "
        r"(?:required|allowed) by your organization",
        "Your organization requires another Claude Code version: update Claude Code on {mac} "
        "the way your organization says, then start the session again.",
    ),
)

CODES: tuple[StartFailCode, ...] = (*dict.fromkeys(r.code for r in EXIT_RULES), "claude_exited")
EXITED_ACTION = (
    "Claude Code stopped before the session started: run `claude` in a terminal on {mac}, in "
    "the session's folder, to see why."
)
EXITED_CLEANLY_ACTION = (
    "Claude Code ended by itself before the session started: start the session again, or run "
    "`claude` in a terminal on {mac} to see why."
)

_DEAD_RE = re.compile(r"^Pane is dead \((?:status (\d{1,3})|signal (\d{1,3}))\b")
_RULE_CHARS = frozenset("─━═▔▁╌╍-_ ")
_ART_CHARS = frozenset("█▓▒░▐▛▜▝▘▌▄▀▗▖▙▟*. ")
_BOX_RE = re.compile(r"[│┃║╭╮╰╯┌┐└┘├┤]")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_OPTION_RE = re.compile(r"^(?:❯\s*)?\d{1,2}\.\s")
_FOOTER_RE = re.compile(r"\b(?:Enter|Esc) to (?:confirm|cancel|select|continue)\b")
_ANSI_RE = re.compile(r"\x1b\[[0-9;:?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


@dataclass(frozen=True)
class StartFailure:
    """What went wrong, in Claude Code's words (``lines``), and what a person does about it."""

    code: StartFailCode
    lines: tuple[str, ...]
    action: str
    status: int | None = None
    signal: int | None = None

    @property
    def message(self) -> str:
        return "\n".join(self.lines)


def _mac(mac: str) -> str:
    name = " ".join(_CONTROL_RE.sub(" ", mac).split())[:MAX_MAC_CHARS]
    return name or DEFAULT_MAC


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _rows(text: str, width: int) -> list[str]:
    """The text's rows, terminal-wrapped ones joined back, the last ``MAX_SCAN_LINES`` only."""
    text = _ANSI_RE.sub("", text.replace("\r\n", "\n").replace("\xa0", " "))
    raw = text.split("\n")[-MAX_SCAN_LINES:]
    rows: list[str] = []
    joined = False
    for row in raw:
        row = _CONTROL_RE.sub("", row).rstrip()
        if joined and rows:
            rows[-1] += row
        else:
            rows.append(row)
        # a full-width row of text was cut by the terminal (a rule or a border is that wide too)
        joined = width > 0 and len(row) == width and not set(row) <= _RULE_CHARS | _ART_CHARS
    return rows


def _meaningful(row: str) -> str | None:
    """A row as message text, or None for chrome: blank, rules, the logo, box borders."""
    text = _BOX_RE.sub(" ", row).strip().removeprefix("⎿").strip()
    if not text or set(text) <= _RULE_CHARS or set(text) <= _ART_CHARS:
        return None
    if _DEAD_RE.match(text):
        return None
    return " ".join(text.split())


def _exit_numbers(status: int | str | None, rows: list[str]) -> tuple[int | None, int | None]:
    code: int | None = None
    if isinstance(status, int) and not isinstance(status, bool):
        code = status
    elif isinstance(status, str) and status.strip().isdigit():
        code = int(status.strip())
    signal: int | None = None
    for row in reversed(rows):
        dead = _DEAD_RE.match(row.strip())
        if dead is None:
            continue
        if code is None and dead.group(1) is not None:
            code = int(dead.group(1))
        if dead.group(2) is not None:
            signal = int(dead.group(2))
        break
    return code, signal


def _message_from(lines: list[str], start: int) -> tuple[str, ...]:
    """The message from line ``start`` on, without a dialog's options and footer."""
    kept = [
        line for line in lines[start:] if not _OPTION_RE.match(line) and not _FOOTER_RE.search(line)
    ]
    return tuple(_cut(line) for line in kept[:MAX_LINES])


def _match(rules: tuple[_Rule, ...], lines: list[str]) -> tuple[_Rule, int] | None:
    """The first rule (in rule order) that one of ``lines`` matches, with its first such line."""
    for rule in rules:
        for at, line in enumerate(lines):
            if rule.pattern.search(line):
                return rule, at
    return None


def explain_exit(
    screen: str,
    history: str = "",
    status: int | str | None = None,
    *,
    mac: str = DEFAULT_MAC,
    width: int = 0,
) -> StartFailure:
    """Why claude ended before its session was live (see the module's docstring)."""
    text = history if history.strip() else screen
    rows = _rows(text, width)
    code, signal = _exit_numbers(status, rows)
    lines = [line for row in rows if (line := _meaningful(row)) is not None]
    name = _mac(mac)
    found = _match(EXIT_RULES, lines)
    if found is not None:
        rule, at = found
        # the declined key's line comes under 'Not logged in · Please run /login': keep both
        start = at - 1 if rule.code == "claude_key_declined" and at > 0 else at
        return StartFailure(
            rule.code, _message_from(lines, start), rule.action.format(mac=name), code, signal
        )
    tail = tuple(_cut(line) for line in lines[-MAX_LINES:])
    action = EXITED_CLEANLY_ACTION if code == 0 and signal is None else EXITED_ACTION
    return StartFailure("claude_exited", tail, action.format(mac=name), code, signal)


def _is_rule_row(row: str) -> bool:
    s = row.strip()
    return len(s) >= 8 and set(s) == {"─"}


def _prompt_top(rows: list[str]) -> int:
    """Row of the rule above Claude Code's input box (the lowest rule followed by ``❯``), or the
    number of rows when none is drawn."""
    for i in range(len(rows) - 2, -1, -1):
        if _is_rule_row(rows[i]) and rows[i + 1].startswith("❯"):
            return i
    return len(rows)


def refusal_on_screen(
    screen: str, *, mac: str = DEFAULT_MAC, width: int = 0
) -> StartFailure | None:
    """A sign-in refusal answering the latest message on a live screen, or None (see the
    module's docstring)."""
    rows = _rows(screen, width)
    top = _prompt_top(rows)
    block: list[str] = []
    for row in reversed(rows[:top]):
        if not row.strip() or len(row) - len(row.lstrip(" ")) >= HINT_INDENT:
            continue  # blank, or a right-aligned hint ('◐ medium · /effort', 'Not logged in · …')
        if row.startswith("❯") or row.startswith("●"):
            break  # the message (or an answer) above: no refusal below it
        block.insert(0, row)
        if row.lstrip().startswith("⎿"):
            break
    if not block or not block[0].lstrip().startswith("⎿"):
        return None
    lines = [line for row in block if (line := _meaningful(row)) is not None]
    found = _match(AUTH_RULES, lines)
    if found is None:
        return None
    rule, _ = found
    return StartFailure(rule.code, _message_from(lines, 0), rule.action.format(mac=_mac(mac)))
