"""A fake ``claude`` (Claude Code 2.1.328) for fast integration tests of claude-bridge.

It draws the screens, writes the transcripts, runs the hooks and keeps the status file the
way the real program was seen to (everything it reads at run time is in ``tests/fixtures``).

Run::

    tests/fakeclaude/claude [--settings FILE|JSON] [--session-id UUID] [--resume UUID] [--continue]
                            [--permission-mode manual|plan|acceptEdits|auto|bypassPermissions]
                            [--model M] [--version]

inside a terminal (tmux). HOME decides where ``.claude.json`` (folder trust),
``.claude/projects/<slug>/<id>.jsonl``, ``.claude/sessions/<pid>.json`` and
``.claude/history.jsonl`` are. With no ``--permission-mode`` the mode is ``auto``, as in 2.1.328.
Unknown flags are ignored. The wrapper uses ``$FAKECLAUDE_PYTHON``, else the project's
``.venv/bin/python``, else ``python3`` (standard library only).

Environment knobs (seconds): ``FAKECLAUDE_STARTUP_DEAF`` (0.5) keys dropped after the first
frame; ``FAKECLAUDE_DIALOG_DEAF`` (0.01) keys dropped after a dialog appears;
``FAKECLAUDE_SLOW_SECONDS`` (5) length of a SLOW answer; ``FAKECLAUDE_THINK_SECONDS`` (0.3)
time before an answer; ``FAKECLAUDE_NOTIFY_SECONDS`` (6) Notification hook for an unanswered
dialog; ``FAKECLAUDE_HINT_SECONDS`` (10) how long ``← for agents`` and the effort line show;
``FAKECLAUDE_SPLIT_WRITES`` (``assistant``; ``all`` / ``off``) which transcript lines are
written in two pieces, ``FAKECLAUDE_SPLIT_DELAY`` (0.05) the pause between the pieces;
``FAKECLAUDE_LOAD_SECONDS`` (0) a blank screen before anything starts (a cold start);
``FAKECLAUDE_START_EXIT`` a file: while it exists, its text is printed and the fake exits at once
with ``FAKECLAUDE_START_EXIT_STATUS`` (1), as the real one refuses to start (no login, a bad flag).

Prompts are matched by keyword (``scenarios.py``): RUN_BASH, WRITE_FILE, ASK_ME, ASK_TWO,
MAKE_PLAN, SLOW, SUBAGENT, anything else; plus ``/clear``, ``/compact``, ``/exit``.
``claude auth status`` prints 2.1.332's JSON from the environment (ANTHROPIC_API_KEY,
ANTHROPIC_AUTH_TOKEN, else logged out, exit 1).

Screens not captured at 80x24, composed from captured pieces in the captured colours: the
AskUserQuestion review step, the "Type something" text field, the dialog cursor on options the
captures never selected (Bash 3 and 4, Write 2 and 3, the Submit row), the Write rejection,
``● Exited plan mode`` after a plan approval, a PermissionRequest hook's deny, the ``/exit``
menu row, ``Press Ctrl-C again to exit``, footers for auto / bypassPermissions / dontAsk and
for plan or accept-edits mode while busy, the trust refusal message.
"""
