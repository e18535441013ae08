"""A terminal joined to a session: ``claude-bridge attach`` and the ``claude`` drop-in.

claude-bridge attach SESSION
    Join this terminal to the session's terminal on this Mac (its pane in the agent's tmux or
    zeropty server, ``cb-<id>`` on the agent's socket): the person types into the same claude
    the phone drives, and the phone keeps working. The multiplexer's detach key (Ctrl-b d)
    leaves it running. SESSION is an id, a unique start of one, a title, or -1, -2 … (with a
    phone token, CB_TOKEN; without one, only ids and starts of ids of this Mac's sessions). A
    stopped session is reopened first (with a phone token).

claude-bridge claude [claude args…]
    A drop-in for ``claude``: starts the session through this Mac's agent in the current folder,
    so it is on the phone too, then attaches this terminal to it. Understood (CLAUDE_ARGS):
    a prompt, --model, --permission-mode, --dangerously-skip-permissions (bypassPermissions),
    --session-id, -n/--name (the title), -w/--worktree [NAME], -r/--resume [SESSION or
    conversation id], -c/--continue (the latest session in this folder), --fork-session (with
    --resume/--continue: a fork). Run by the real claude as they are, since they start no session
    to watch: -p/--print, -v/--version, -h/--help and claude's commands (mcp, doctor, update …).
    Refused, with what to do: every other flag (for every session, give it to the agent:
    ``claude-bridge agent --claude-arg``). It reads CB_RELAY and CB_TOKEN (a phone token) like
    the session commands; on the relay's own machine no token is needed (the relay keeps one
    for its user, cli/common.py ``phone_token``).

Exit status: 0 when the terminal detached (the session runs on) or claude exited; 2 with a
message when the session could not be found, started or attached; the multiplexer's own status
when it failed.

The parsing (:func:`plan_claude`, :func:`latest_here`, :func:`attach_argv`) is pure, and so is
naming a session (cli/references.py); the rest runs the multiplexer and calls the relay.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cli.arguments import Subcommands
from cli.client import CommandError, RelayClient, SessionSnapshot
from cli.common import NO_TOKEN_HINT, guarded, local_relay_url, phone_token
from cli.display import is_running, trouble_lines
from cli.references import mac_name, resolve

SESSION_PREFIX = "cb-"  # agent/mux.py: a session's terminal is cb-<session id>
DEFAULT_SOCKET = "claude-bridge"
MUX_FILE = "mux.json"  # written by the agent: its multiplexer and socket
SCREEN = (120, 40)  # agent/sessions.py SCREEN_WIDTH × SCREEN_HEIGHT: the size given back on detach
DETACH_HINT = "Ctrl-b d"
STOP_REPORT_SECONDS = 3.0  # how long the drop-in waits for the relay to hear why claude ended
STOP_REPORT_POLL = 0.1  # seconds between its looks

# -- the drop-in's arguments (pure) ------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.split()


# claude 2.1.332's flags and how many values each takes: 0, 1, "?" (an optional value) or "*"
# (values up to the next flag), to tell a flag's value from the prompt.
FLAGS: dict[str, int | str] = {
    **dict.fromkeys(
        _words(
            "--allow-dangerously-skip-permissions --ax-screen-reader --bg --background --bare "
            "--brief --chrome --no-chrome -c --continue --dangerously-skip-permissions "
            "--disable-slash-commands --exclude-dynamic-system-prompt-sections --fork-session "
            "--forward-subagent-text -h --help --ide --include-hook-events "
            "--include-partial-messages --no-session-persistence -p --print "
            "--replay-user-messages --restricted --safe-mode --strict-mcp-config --verbose -v "
            "--version --desktop"
        ),
        0,
    ),
    **dict.fromkeys(
        _words(
            "--agent --agents --append-system-prompt --autocompact --debug-file --effort "
            "--environment --fallback-model --input-format --json-schema --max-budget-usd "
            "--model -n --name --output-format --permission-mode --permission-prompts "
            "--plugin-url --plugin-dir --remote-control-session-name-prefix --session-id "
            "--setting-sources --settings --system-prompt --system-prompt-snapshot"
        ),
        1,
    ),
    **dict.fromkeys(
        _words(
            "--cloud -d --debug --from-pr --prompt-suggestions --remote-control -r --resume "
            "--teleport --tmux -w --worktree"
        ),
        "?",
    ),
    **dict.fromkeys(
        _words(
            "--add-dir --allowedTools --allowed-tools --betas --disallowedTools "
            "--disallowed-tools --file --mcp-config --tools"
        ),
        "*",
    ),
}
# claude's own commands: run by the real claude.
CLAUDE_COMMANDS = frozenset(
    _words(
        "agents attach auth auto-mode doctor gateway import install logs mcp plugin plugins "
        "purge respawn rm setup-token stop kill ultrareview update upgrade"
    )
)
NOT_A_SESSION = frozenset({"-p", "--print", "-h", "--help", "-v", "--version"})
ALIASES = {
    "-c": "--continue",
    "-r": "--resume",
    "-w": "--worktree",
    "-n": "--name",
}
PASS_HINT = (
    "claude-bridge claude takes a prompt, --model, --permission-mode, --resume, --continue, "
    "--fork-session, --worktree, --session-id and --name; give other flags to every session "
    "with `claude-bridge agent --claude-arg …`, or run the real claude (`command claude …`)"
)


@dataclass
class ClaudePlan:
    """What ``claude-bridge claude ARGS`` does."""

    action: Literal["run", "new", "resume", "continue"]
    argv: list[str] = field(default_factory=list)  # "run": the real claude's arguments
    prompt: str | None = None
    model: str | None = None
    permission_mode: str | None = None
    session_id: str | None = None
    title: str | None = None
    worktree: bool | str | None = None
    resume: str | None = None  # "resume": the session or conversation named
    fork: bool = False


def _split(args: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``args`` as (flag, values) pairs, a positional as ("", [it]); ``--flag=value`` split.
    Pure; CommandError for a flag claude does not have."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            out.extend(("", [rest]) for rest in args[i:])
            break
        if not arg.startswith("-") or arg == "-":
            out.append(("", [arg]))
            continue
        flag, eq, inline = arg.partition("=")
        arity = FLAGS.get(flag)
        if arity is None:
            raise CommandError(f"claude has no flag {flag!r} (Claude Code 2.1.332)", PASS_HINT)
        values = [inline] if eq else []
        if not eq and arity == 1:
            if i >= len(args):
                raise CommandError(f"{flag} needs a value")
            values, i = [args[i]], i + 1
        elif not eq and arity == "?":
            if i < len(args) and not args[i].startswith("-"):
                values, i = [args[i]], i + 1
        elif not eq and arity == "*":
            while i < len(args) and not args[i].startswith("-"):
                values.append(args[i])
                i += 1
        out.append((ALIASES.get(flag, flag), values))
    return out


def plan_claude(args: Sequence[str]) -> ClaudePlan:
    """What the drop-in does with claude's arguments (see the module's docstring). Pure."""
    if not args:
        return ClaudePlan("new")
    if args[0] in CLAUDE_COMMANDS or any(a.split("=", 1)[0] in NOT_A_SESSION for a in args):
        return ClaudePlan("run", argv=list(args))
    plan = ClaudePlan("new")
    words: list[str] = []
    for flag, values in _split(args):
        value = values[0] if values else None
        if flag == "":
            words.extend(values)
        elif flag == "--model":
            plan.model = value
        elif flag == "--permission-mode":
            plan.permission_mode = value
        elif flag == "--dangerously-skip-permissions":
            plan.permission_mode = "bypassPermissions"
        elif flag == "--session-id":
            plan.session_id = value
        elif flag == "--name":
            plan.title = value
        elif flag == "--worktree":
            plan.worktree = value if value else True
        elif flag == "--resume":
            if not value:
                raise CommandError(
                    "--resume needs a session here (claude's picker is not offered)",
                    "`claude-bridge sessions` lists them; or --continue for this folder's latest",
                )
            plan.action, plan.resume = "resume", value
        elif flag == "--continue":
            plan.action = "continue"
        elif flag == "--fork-session":
            plan.fork = True
        else:
            raise CommandError(f"claude-bridge claude does not pass {flag} on", PASS_HINT)
    if words:
        plan.prompt = " ".join(words)
    if plan.fork and plan.action == "new":
        raise CommandError("--fork-session forks a session: give --resume SESSION or --continue")
    if plan.action != "new" and (plan.worktree or plan.session_id):
        raise CommandError(
            "--worktree and --session-id start a new session; they do not go with "
            "--resume or --continue"
        )
    return plan


# -- this folder's latest session (pure) -------------------------------------------------------


def latest_here(sessions: Sequence[SessionSnapshot], device_id: str, cwd: str) -> SessionSnapshot:
    """The session of this Mac in this folder that was active last (``--continue``). Pure."""
    here = [s for s in sessions if s.get("device_id") == device_id and s.get("cwd") == cwd]
    if not here:
        raise CommandError(
            f"no session of this Mac in {cwd} yet",
            "start one with `claude-bridge claude` (or drop --continue)",
        )
    return max(here, key=lambda s: (s.get("updated_at") or "", s.get("created_at") or ""))


def attach_argv(program: str, socket: str, session_id: str) -> list[str]:
    """The multiplexer's command that joins this terminal to the session's terminal. Pure."""
    return [program, "-L", socket, "attach-session", "-t", f"={SESSION_PREFIX}{session_id}"]


# -- this Mac ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalAgent:
    """This Mac's agent as its data folder says: its device id and its multiplexer."""

    folder: Path
    device_id: str | None
    program: str
    socket: str

    @classmethod
    def read(cls, folder: Path | None = None) -> LocalAgent:
        from agent.cli import data_dir

        where = folder or data_dir(None)
        try:
            device_id: str | None = (where / "device-id").read_text().strip() or None
        except OSError:
            device_id = None
        try:
            mux = json.loads((where / MUX_FILE).read_text())
            program, socket = str(mux["program"]), str(mux["socket"])
        except (OSError, ValueError, KeyError, TypeError):
            program, socket = shutil.which("zeropty") or "tmux", DEFAULT_SOCKET
        return cls(where, device_id, program, socket)

    def records(self) -> list[SessionSnapshot]:
        """This Mac's sessions from the agent's registry (ids, folders; no titles)."""
        try:
            raw = json.loads((self.folder / "sessions.json").read_text())
        except (OSError, ValueError):
            return []
        found: list[SessionSnapshot] = []
        for item in raw.get("sessions", []):
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                created = time.strftime(
                    "%Y-%m-%dT%H:%M:%S", time.gmtime(float(item.get("created_at") or 0))
                )
                found.append(
                    SessionSnapshot(
                        id=item["id"],
                        cwd=item.get("cwd"),
                        device_id=self.device_id,
                        created_at=created,
                        title=None,
                    )
                )
        return found

    def mux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.program, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=False,
            env=_outside_tmux(),
        )

    def running(self, session_id: str) -> bool:
        target = f"={SESSION_PREFIX}{session_id}"
        if self.mux("has-session", "-t", target).returncode != 0:
            return False
        dead = self.mux("display-message", "-p", "-t", target, "#{pane_dead}")
        return dead.returncode == 0 and dead.stdout.strip() != "1"

    def attach(self, session_id: str) -> int:
        """Join this terminal to the session until it detaches or claude exits."""
        target = f"={SESSION_PREFIX}{session_id}"
        # The window follows this terminal's size while it is attached, then goes back to
        # the size the agent reads screens at.
        self.mux("set-option", "-w", "-t", target, "window-size", "latest")
        try:
            return subprocess.run(
                attach_argv(self.program, self.socket, session_id), env=_outside_tmux(), check=False
            ).returncode
        finally:
            if self.running(session_id):
                self.mux("resize-window", "-t", target, "-x", str(SCREEN[0]), "-y", str(SCREEN[1]))


def _outside_tmux() -> dict[str, str]:
    """This environment without the person's own tmux: the agent's server is another one."""
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


# -- the commands ------------------------------------------------------------------------------


def _relay(token_needed: bool) -> RelayClient | None:
    """The relay the session commands use (CB_RELAY, CB_TOKEN), or None without a token."""
    url = os.environ.get("CB_RELAY") or local_relay_url()
    token = phone_token(None, url)  # CB_TOKEN, else this machine's relay's own
    if not token:
        if token_needed:
            raise CommandError("no phone token: set CB_TOKEN", NO_TOKEN_HINT)
        return None
    return RelayClient(url, token, read_only=False)


def join(local: LocalAgent, relay: RelayClient | None, session: SessionSnapshot) -> int:
    """Attach this terminal to ``session``, which must run on this Mac (reopened if stopped)."""
    session_id = session["id"]
    if local.device_id is None and relay is not None:
        raise CommandError(
            "this machine's agent has not linked to a relay yet",
            "start it (`claude-bridge up` or `claude-bridge agent`), then run this again",
        )
    if relay is not None and session.get("device_id") != local.device_id:
        raise CommandError(
            f"session {session_id} runs on the Mac {mac_name(relay, session.get('device_id'))!r}, "
            "not on this one",
            "run `claude-bridge attach` there, or open it on the phone's page",
        )
    if not local.running(session_id):
        if relay is None:
            raise CommandError(
                f"session {session_id} is not running on this Mac",
                "set CB_TOKEN to have it reopened, or reopen it from the phone",
            )
        relay.reopen(session_id)
        deadline = time.monotonic() + 30
        while not local.running(session_id):
            if time.monotonic() > deadline:
                raise CommandError(f"session {session_id} did not come back within 30 s")
            time.sleep(0.2)
    title = f' "{session["title"]}"' if session.get("title") else ""
    print(
        f"claude-bridge: attached to session {session_id}{title} in {session.get('cwd') or '?'};"
        f" the phone sees it too. Detach with {DETACH_HINT} (inside your own tmux: Ctrl-b Ctrl-b d);"
        " the session keeps running.",
        flush=True,
    )
    code = local.attach(session_id)
    if local.running(session_id):
        print(
            f"claude-bridge: detached; session {session_id} runs on "
            f"(`claude-bridge attach {session_id[:8]}` comes back).",
            flush=True,
        )
        return 0 if code in (0, None) else code
    print(f"claude-bridge: claude exited; session {session_id} is stopped.", flush=True)
    ended = stopped_as_told(relay, session_id) if relay is not None else None
    trouble = trouble_lines(ended or {}, indent="claude-bridge: ")
    if trouble:
        print("\n".join(trouble), file=sys.stderr, flush=True)
    failure = (ended or {}).get("failure")
    if failure:  # it never ran: as claude itself would, the drop-in ends in failure
        status = failure.get("status")
        return status if isinstance(status, int) and status > 0 else 1
    return 0


def stopped_as_told(
    relay: RelayClient, session_id: str, wait: float = STOP_REPORT_SECONDS
) -> SessionSnapshot | None:
    """The session once the relay has heard it stopped (with why, when claude never started),
    or as it is after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        found = relay.session(session_id)
        if found is None or not is_running(found) or time.monotonic() >= deadline:
            return found
        time.sleep(STOP_REPORT_POLL)


def cmd_attach(args: argparse.Namespace) -> int:
    local = LocalAgent.read()
    relay = _relay(token_needed=False)
    try:
        sessions = relay.sessions() if relay is not None else local.records()
        session = resolve(sessions, args.session)
        return join(local, relay, session)
    finally:
        if relay is not None:
            relay.close()


def run_claude(args: Sequence[str]) -> int:
    """``claude-bridge claude ARGS`` (see the module's docstring)."""
    plan = plan_claude(args)
    if plan.action == "run":
        from agent.launch import ClaudeMissing, find_claude

        try:
            claude = find_claude()
        except ClaudeMissing as exc:
            raise CommandError(str(exc)) from None
        os.execv(claude, [claude, *plan.argv])
    local = LocalAgent.read()
    relay = _relay(token_needed=True)
    assert relay is not None
    try:
        if local.device_id is None:
            raise CommandError(
                "this machine's agent has not linked to the relay yet",
                "start it (`claude-bridge up` or `claude-bridge agent`), then run this again",
            )
        cwd = os.path.realpath(os.getcwd())
        if plan.action == "new":
            session = relay.create_session(
                local.device_id,
                cwd,
                plan.session_id,
                prompt=plan.prompt,
                permission_mode=plan.permission_mode,
                model=plan.model,
                worktree=plan.worktree,
            )
        else:
            listed = relay.sessions()
            if plan.action == "continue":
                session = latest_here(listed, local.device_id, cwd)
            else:
                assert plan.resume is not None
                session = resolve(listed, plan.resume)
            if plan.fork:
                session = relay.fork(
                    session["id"],
                    prompt=plan.prompt,
                    permission_mode=plan.permission_mode,
                    model=plan.model,
                )
            elif plan.prompt:
                relay.send(session["id"], plan.prompt)  # reopens a stopped one
        if plan.title:
            relay.rename(session["id"], plan.title)
        found = relay.session(session["id"]) or session
        return join(local, relay, found)
    finally:
        relay.close()


def main_claude(args: Sequence[str]) -> int:
    try:
        return run_claude(args)
    except CommandError as exc:
        print(f"claude-bridge: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  → {exc.hint}", file=sys.stderr)
        return 2


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``attach`` and ``claude`` (whose arguments ``cli/main.py`` hands over whole)."""
    attaching = sub.add_parser(
        "attach",
        help="join this terminal to a session running on this Mac (Ctrl-b d detaches)",
        description="Join this terminal to a session's terminal on this Mac: type into the "
        "same claude the phone drives (the phone keeps working). Ctrl-b d detaches and leaves "
        "it running. A stopped session is reopened first (with a phone token in CB_TOKEN).",
    )
    attaching.add_argument(
        "session",
        metavar="SESSION",
        help="an id, a unique start of one, a title, or -1, -2 … (newest created first)",
    )
    attaching.set_defaults(func=guarded(cmd_attach))
    dropin = sub.add_parser(
        "claude",
        help="a drop-in for claude: the session starts through this Mac's agent, so the phone "
        "sees it, and this terminal attaches",
        description="Start claude as a session of this Mac's agent in the current folder and "
        "attach this terminal to it (alias claude='claude-bridge claude'). Understood: a "
        "prompt, --model, --permission-mode, --dangerously-skip-permissions, --session-id, "
        "-n/--name, -w/--worktree [NAME], -r/--resume SESSION, -c/--continue, --fork-session; "
        "-p, --version, --help and claude's commands run the real claude; other flags are "
        "refused. Reads CB_RELAY and CB_TOKEN.",
    )
    dropin.add_argument(
        "claude_args", nargs="*", metavar="CLAUDE_ARGS", help="claude's own arguments"
    )
    dropin.set_defaults(func=lambda args: main_claude(args.claude_args))
