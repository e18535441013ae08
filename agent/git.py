"""Every git the agent runs goes through :func:`run`: nothing in a repository — its config, the
files that config includes, its attributes, a repository planted in a moved folder — can make
git start a program, and git never takes for a repository a folder the person did not make.

A folder's files may come from another Mac (a move) and a repository's config may name programs
(``core.fsmonitor``, a filter's ``smudge``, ``diff.<driver>.command`` …) that git would run for a
mere ``git status``. So each run:

* gets a **minimal environment**: none of the agent's own ``GIT_*`` variables; no system or
  global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``) nor system attributes;
  no prompt, askpass, editor or pager; no optional locks (a ``git status`` from the phone never
  blocks Claude Code's own git); no transport at all (``GIT_ALLOW_PROTOCOL`` empty: the agent
  only reads bundles from files, with ``git bundle``); literal pathspecs; C messages;
* gets **config that turns every program off** (:func:`neutralising`), handed to git in
  ``GIT_CONFIG_PARAMETERS`` — the command line's scope, which outranks every file and which git
  hands on to the git processes it starts, a submodule's included: the keys that always name a
  program (:data:`ALWAYS`), and, for the keys named after a driver or a hook
  (``filter.<x>.*``, ``diff.<x>.*``, ``merge.<x>.*``, ``hook.<x>.*`` …), every name the
  repository's config defines, read first with ``git config --list`` (its includes followed);
* gets ``safe.bareRepository=explicit`` (git 2.38+) and, first, a check of the folder and each
  folder above it up to its ``.git`` (:func:`planted`): a folder laid out like git's own
  (``HEAD`` beside ``objects/`` and ``refs/``, or a ``commondir``) outside a ``.git`` would be
  taken by git as a bare repository, whose config is whatever was planted: git is not run there
  (``unsafe_repository``);
* gets flags of its subcommand that keep programs out (:func:`hardened`): ``diff`` runs with
  ``--no-ext-diff --no-textconv``, ``diff`` and ``status`` with ``--ignore-submodules=dirty``
  (a submodule's own config is not read here, so git is not sent into it);
* is bounded: ``timeout`` seconds (the config listing included), at most ``limit`` bytes of
  output (git is stopped past them and ``cut`` says so), and stopped with all it started when
  the caller is cancelled.

What is left out on purpose: the person's global config (``~/.gitconfig``) is not read either,
so their own filters (git-lfs) do not run in the agent's git; the global ignore file
(``$XDG_CONFIG_HOME/git/ignore``) still applies, as ``HOME`` is the person's.

Errors are ``CommandFailed``: ``git_missing``, ``git_timeout``, ``unsafe_repository``,
``not_found`` (no such folder); git's own failures are its exit code and words in the
:class:`GitResult`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import unicodedata
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.errors import CommandFailed

KEPT_ENVIRONMENT = ("PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "XDG_CONFIG_HOME")
OUTPUT_BYTES = 64 * 1024 * 1024  # most bytes of git's output kept, unless the caller says
CONFIG_LIST_BYTES = 4 * 1024 * 1024  # most bytes of a repository's config listing read
ERR_BYTES = 64 * 1024  # most bytes of git's stderr kept (the rest is read and dropped)
READ_CHUNK = 65536

# Keys that name a program (or let one be found), whatever the repository: each set to a value
# that runs nothing. An empty program is never started (git execs "" and fails).
ALWAYS: tuple[tuple[str, str], ...] = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.sshCommand", ""),
    ("core.askPass", ""),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.pager", "cat"),
    ("core.alternateRefsCommand", ""),
    ("diff.external", ""),
    ("credential.helper", ""),  # an empty helper clears the list
    ("gpg.program", ""),
    ("gpg.openpgp.program", ""),
    ("gpg.x509.program", ""),
    ("gpg.ssh.program", ""),
    ("gpg.ssh.defaultKeyCommand", ""),
    ("uploadpack.packObjectsHook", ""),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("log.showSignature", "false"),
    ("core.protectHFS", "true"),
    ("core.protectNTFS", "true"),
    ("core.quotePath", "false"),
    ("color.ui", "never"),
)

# Keys named after a driver, a hook or a tool (``<section>.<name>.<key>``): for each name the
# repository's config defines in the section, these keys are set so that nothing runs.
PER_NAME: dict[str, tuple[tuple[str, str], ...]] = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("command", ""), ("textconv", "")),
    "merge": (("driver", ""),),
    "hook": (("enabled", "false"), ("event", ""), ("command", "")),  # config hooks, git 2.54+
    "remote": (("uploadpack", ""), ("receivepack", "")),
    "credential": (("helper", ""),),
    "gpg": (("program", ""),),
    "submodule": (("update", "none"),),
    "trailer": (("command", ""), ("cmd", "")),
    "difftool": (("cmd", ""),),
    "mergetool": (("cmd", ""),),
    "man": (("cmd", ""),),
    "browser": (("cmd", ""),),
    "guitool": (("cmd", ""),),
}

_HFS_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)  # code points macOS drops from names: ".g\u200cit" is ".git" there
_DIFFS = ("diff",)
_SUBMODULE_READERS = ("diff", "status")


@dataclass(frozen=True)
class GitResult:
    code: int
    out: bytes
    err: str
    cut: bool  # stdout passed the byte limit and git was stopped (its exit code is then 0)


class Deadline:
    """One timeout for several git commands: what is left of it for the next."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise CommandFailed("git_timeout", f"git took longer than {self.seconds:g} s")
        return left


# -- pure ---------------------------------------------------------------------------------------


def quote(text: str) -> str:
    """``text`` single-quoted as git's ``sq_quote`` writes it (for GIT_CONFIG_PARAMETERS). Pure."""
    return "'" + text.replace("'", "'\\''").replace("!", "'\\!'") + "'"


def parameters(pairs: Iterable[tuple[str, str]]) -> str:
    """``GIT_CONFIG_PARAMETERS`` for ``pairs``: ``'key'='value'`` each, so a name holding ``=``,
    a quote or a space is still one key. Pure."""
    return " ".join(f"{quote(key)}={quote(value)}" for key, value in pairs)


def config_keys(listing: bytes) -> list[str]:
    """The keys of ``git config --list -z`` output (``key\\nvalue\\0`` each). Pure."""
    keys = []
    for item in listing.split(b"\x00"):
        key = item.split(b"\n", 1)[0]
        if key:
            keys.append(key.decode("utf-8", "surrogateescape"))
    return keys


def neutralising(keys: Iterable[str]) -> list[tuple[str, str]]:
    """The config that turns off every program ``keys`` (a repository's config) could start:
    :data:`ALWAYS`, then for each ``<section>.<name>.<key>`` of a section in :data:`PER_NAME`
    that section's keys for that name. Pure."""
    pairs = list(ALWAYS)
    seen: set[tuple[str, str]] = set()
    for key in keys:
        section, dot, rest = key.partition(".")
        name, dot2, _ = rest.rpartition(".")
        section = section.lower()
        if not dot or not dot2 or section not in PER_NAME or (section, name) in seen:
            continue
        seen.add((section, name))
        pairs.extend((f"{section}.{name}.{k}", v) for k, v in PER_NAME[section])
    return pairs


def hardened(args: Sequence[str]) -> list[str]:
    """``args`` with the flags of its subcommand that keep programs out (see the module). Pure."""
    if not args:
        return []
    command, rest = args[0], list(args[1:])
    added = []
    if command in _DIFFS:
        added += ["--no-ext-diff", "--no-textconv"]
    if command in _SUBMODULE_READERS:
        if any(a.startswith("--ignore-submodules") for a in rest if a != "--"):
            raise ValueError("the agent's git sets --ignore-submodules itself")
        added.append("--ignore-submodules=dirty")
    return [command, *added, *rest]


def is_dotgit(name: str) -> bool:
    """``name`` is ``.git`` as macOS's file system sees it (any case, ignorable code points
    dropped, trailing dots and spaces too). Pure."""
    return fold(name).rstrip(". ") == ".git"


def fold(name: str) -> str:
    """``name`` as macOS's file system compares it: ignorable code points dropped, NFC, any
    case. Pure."""
    return unicodedata.normalize("NFC", name.translate(_HFS_IGNORED)).casefold()


def looks_like_git_dir(names: Iterable[str]) -> bool:
    """A folder holding ``names`` would be taken by git for a repository's own folder (or could
    pass for one): ``HEAD`` with ``objects``, ``refs``, ``commondir`` or ``config`` beside it.
    Names are compared as macOS compares them (:func:`fold`). Pure."""
    folded = {fold(n) for n in names}
    return "head" in folded and bool(folded & {"objects", "refs", "commondir", "config"})


def environment(ceiling: Path | None = None) -> dict[str, str]:
    """git's environment (see the module); the repository's own neutralising config is added by
    :func:`run`. ``ceiling``: git looks for a repository no higher than the folder below it."""
    env = {k: os.environ[k] for k in KEPT_ENVIRONMENT if k in os.environ}
    env.setdefault("HOME", os.path.expanduser("~"))
    env.setdefault("PATH", os.defpath)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        GIT_EDITOR=":",
        GIT_SEQUENCE_EDITOR=":",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_OPTIONAL_LOCKS="0",
        GIT_ALLOW_PROTOCOL="",
        GIT_PROTOCOL_FROM_USER="0",
        GIT_NO_LAZY_FETCH="1",
        GIT_LITERAL_PATHSPECS="1",
        GIT_CONFIG_PARAMETERS=parameters(ALWAYS),
        LC_ALL="C",
        LANG="C",
    )
    if ceiling is not None:
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    return env


# -- the folder git would take ------------------------------------------------------------------


def planted(cwd: Path, ceiling: Path | None = None) -> Path | None:
    """The folder git would take for a bare repository when run in ``cwd`` — ``cwd`` or a folder
    above it, up to the first one holding a ``.git`` (or up to ``ceiling``) — that looks like a
    repository's own folder (:func:`looks_like_git_dir`); None when there is none."""
    folder = Path(os.path.realpath(cwd))  # git walks up from where it really is
    stop = Path(os.path.realpath(ceiling)) if ceiling is not None else None
    while True:
        if stop is not None and folder == stop:
            return None
        if os.path.lexists(folder / ".git"):
            return None
        if os.path.lexists(folder / "HEAD") and _git_dir_at(folder):
            return folder
        if folder.parent == folder:
            return None
        folder = folder.parent


def _git_dir_at(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return looks_like_git_dir(e.name for e in entries)
    except OSError:
        return False


# -- running it ---------------------------------------------------------------------------------


async def run(
    cwd: Path,
    args: Sequence[str],
    *,
    timeout: float,
    limit: int = OUTPUT_BYTES,
    stdin: bytes | None = None,
    ceiling: Path | None = None,
) -> GitResult:
    """``git args`` in ``cwd``, made safe as the module says. A failing git is a result (its
    code and stderr); ``CommandFailed`` only for ``git_missing``, ``git_timeout``,
    ``unsafe_repository`` and ``not_found``."""
    if not args or args[0].startswith("-"):
        raise ValueError("git's arguments start with its subcommand")
    found = planted(cwd, ceiling)
    if found is not None:
        raise CommandFailed(
            "unsafe_repository",
            f"{found} is laid out like a git repository's own folder (HEAD, objects, refs) "
            "outside a .git folder: git would take its config, which can run programs, so git "
            "is not run there. Remove those files if you did not put them there.",
        )
    deadline = time.monotonic() + timeout
    env = environment(ceiling)
    listing = await _exec(
        cwd, ["config", "--list", "-z"], env, deadline, timeout, CONFIG_LIST_BYTES, None
    )
    if listing.code != 0 or listing.cut:
        # The repository's config cannot be read whole: nothing is run against it.
        return GitResult(
            listing.code or 128, b"", listing.err or "git config cannot be read", False
        )
    env["GIT_CONFIG_PARAMETERS"] = parameters(neutralising(config_keys(listing.out)))
    return await _exec(cwd, hardened(args), env, deadline, timeout, limit, stdin)


async def _exec(
    cwd: Path,
    args: Sequence[str],
    env: dict[str, str],
    deadline: float,
    timeout: float,
    limit: int,
    stdin: bytes | None,
) -> GitResult:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "--no-pager", *args, cwd=cwd, env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its children (pack-objects …) are stopped with it
        )  # fmt: skip
    except FileNotFoundError:
        if not os.path.isdir(cwd):
            raise CommandFailed("not_found", f"the folder {cwd} is not there") from None
        raise CommandFailed("git_missing", "git is not installed on this Mac") from None
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = proc.stdout, proc.stderr

    async def feed() -> None:
        assert proc.stdin is not None and stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        proc.stdin.close()

    async def collect() -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        while chunk := await stdout.read(READ_CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                _stop(proc)
                return b"".join(chunks)[:limit], True
        return b"".join(chunks), False

    async def errors() -> bytes:
        kept = bytearray()
        while chunk := await stderr.read(READ_CHUNK):
            kept += chunk[: max(0, ERR_BYTES - len(kept))]
        return bytes(kept)

    try:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        feeding = feed() if stdin is not None else None
        (out, cut), err, code = await asyncio.wait_for(
            _all(collect(), errors(), proc.wait(), feeding), left
        )
    except TimeoutError:
        _stop(proc)
        await proc.wait()
        raise CommandFailed(
            "git_timeout", f"git {args[0]} took longer than {timeout:g} s in {cwd}"
        ) from None
    except BaseException:  # cancelled: git must not go on with nobody waiting for it
        _stop(proc)
        await asyncio.shield(proc.wait())
        raise
    return GitResult(0 if cut else code, out, err.decode("utf-8", "replace").strip(), cut)


async def _all(
    output: Awaitable[tuple[bytes, bool]],
    errors: Awaitable[bytes],
    exit_code: Awaitable[int],
    feeding: Awaitable[None] | None,
) -> tuple[tuple[bytes, bool], bytes, int]:
    """The output, the errors and the exit code of a git, read together (and its input fed)."""
    if feeding is None:
        return await asyncio.gather(output, errors, exit_code)
    out, err, code, _ = await asyncio.gather(output, errors, exit_code, feeding)
    return out, err, code


def _stop(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


__all__ = [
    "ALWAYS",
    "PER_NAME",
    "Deadline",
    "GitResult",
    "config_keys",
    "environment",
    "fold",
    "hardened",
    "is_dotgit",
    "looks_like_git_dir",
    "neutralising",
    "parameters",
    "planted",
    "quote",
    "run",
]
