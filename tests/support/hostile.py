"""A hostile source Mac: the tests that attack a move from the Mac the session starts on.

The rule a move lives by (issue 20): the target Mac and the relay treat all that comes from the
source as untrusted data — the session's record, the folder's archive, the transcripts, the event
archive, the held messages' attachments, every name in them. These tests prove it against real
processes: the relay is real (uvicorn on 127.0.0.1), the target is a real agent process with its
own HOME, data folder and tmux socket (tests/support/macs.py ``agent_process``; its ``claude`` is
the fake one, tests/fakeclaude), the phone starts the move through the real HTTP API — and the
source is this module's :class:`HostileSource`: a real device token of the account speaking the
link protocol (wire/client.py ``MacLink``) with whatever the test crafted.

How a move runs (relay/features/moves.py drives it; agent/moving.py is the honest Mac's side):
the relay asks the target ``move_probe``, the source ``move_export`` (answered here ``ready`` at
once, with the cargo's folder manifest and list of files), the target ``move_accept``, then
carries each file in chunks (``move_read`` here, ``move_write`` on the target), asks the target
``move_place`` (it checks, unpacks, places and resumes), commits in its store and tells both
Macs ``move_finish``. The source never runs anything: it only says what it packed.

What a test crafts, a :class:`Cargo` (each file by its name in the move):

- ``record`` — the session's record, ``session.json`` (``record()`` makes an honest one, a
  test then changes any field: ids, paths, mode, model, policy, held messages, offsets …);
- ``folder`` / ``manifest`` — the folder's archive, ``folder.bin``, and what it says it holds:
  ``folder_archive()`` packs any tar members (``file``, ``folder``, ``symlink``, ``hardlink``,
  ``special``, or a raw ``tarfile.TarInfo``) as a plain folder; ``packed_folder()`` runs the
  real packer (agent/foldersync.py) on a real folder, for an archive that must fit a repository
  the target has (then change the manifest or the bytes as the attack needs);
- ``transcripts`` — ``transcripts/<conversation>.jsonl`` and ``transcripts/<conversation>/…``
  by the name after ``transcripts/`` (``transcript()`` writes lines as Claude Code does);
- ``events`` — the event archive, ``events.jsonl`` (``event()`` and ``events_file()``: any seq,
  epoch, order);
- ``attachments`` — ``attachments/<id><extension>`` by the name after ``attachments/``
  (``PNG`` is a real image);
- ``extra`` — any other file by its full name.

:class:`HostileSource` answers each session's move with that session's cargo, and serves no
chunk of the folder of a session it was told to ``hold`` until ``release``: a test can keep a
move in the middle of its transfer (``wait_reading``) and start another meanwhile. It can also
stall where a Mac may: answer ``move_export`` with ``packing`` forever (``packing``), or take
``read_delay`` seconds over each chunk.

:func:`hostile_world` gives one relay, the phone, the hostile source and the target
(:class:`AgentMac`: its agent process, restartable; its registry; the argv its session's claude
was started with; its tmux server). ``World.report`` makes the source report a session of its
own (transcript lines and an idle update, as any Mac does); ``World.move`` starts the move from
the phone and ``World.outcome`` waits until it is over, both Macs told.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from agent.foldersync import ENTRY_BYTES, FILES, pack
from agent.registry import SessionRecord
from tests.support.bridge import FAKE, Bridge, seed_home
from tests.support.macs import agent_process, wait_online
from tests.support.relay import Account, RelayServer
from tests.support.waits import wait_for
from tests.support.web import LoopThread
from wire.client import MacLink
from wire.moved import ATTACHMENTS, EVENTS_FILE, FOLDER_FILE, RECORD_FILE, TRANSCRIPTS
from wire.protocol import Command, CommandResult, DeviceInfo, LineRecord, SessionInfo

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x03\x00\x08\xfc\x02\xfe\xa7\x9a\xa0"
    b"\xa0\x00\x00\x00\x00IEND\xaeB`\x82"
)  # one transparent pixel
MOVE_OVER = 90.0  # seconds a move may take in these tests (a resume included)


# -- what a move carries -----------------------------------------------------------------------


@dataclass
class Cargo:
    """The files a hostile source says it packed, by their names in the move."""

    record: dict[str, Any]
    folder: bytes = b""
    manifest: dict[str, Any] = field(default_factory=dict)
    transcripts: dict[str, bytes] = field(default_factory=dict)
    events: bytes | None = None
    attachments: dict[str, bytes] = field(default_factory=dict)
    extra: dict[str, bytes] = field(default_factory=dict)

    def files(self) -> dict[str, bytes]:
        files = {FOLDER_FILE: self.folder, RECORD_FILE: json.dumps(self.record).encode()}
        files.update({f"{TRANSCRIPTS}/{n}": b for n, b in self.transcripts.items()})
        if self.events is not None:
            files[EVENTS_FILE] = self.events
        files.update({f"{ATTACHMENTS}/{n}": b for n, b in self.attachments.items()})
        files.update(self.extra)
        return files


def record(session_id: str, cwd: str, conversation_id: str, **fields: Any) -> dict[str, Any]:
    """The record an honest source sends for a session resuming ``conversation_id``, with
    ``fields`` changed (any of agent/registry.py ``SessionRecord``'s, or one it does not know)."""
    honest = SessionRecord(
        id=session_id,
        cwd=cwd,
        created_at=time.time() - 60,
        conversation_id=conversation_id,
        conversation_ids=[conversation_id],
        secret="the-source-secret",
        last_alive_at=time.time(),
    ).to_json()
    honest.update(fields)
    return honest


def transcript(conversation_id: str, cwd: str, turns: list[tuple[str, str]]) -> bytes:
    """A conversation's transcript as Claude Code writes it: for each (prompt, answer) a user
    line and an assistant line, chained by ``parentUuid``."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for prompt, answer in turns:
        for kind, content in (
            ("user", prompt),
            ("assistant", [{"type": "text", "text": answer}]),
        ):
            line_id = str(uuid.uuid4())
            message: dict[str, Any] = {"role": kind, "content": content}
            if kind == "assistant":
                message.update(id="msg_" + line_id[:8], model="claude-opus-5-5", type="message")
            lines.append(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "type": kind,
                    "message": message,
                    "uuid": line_id,
                    "timestamp": "2026-11-29T21:32:37.225Z",
                    "userType": "external",
                    "cwd": cwd,
                    "sessionId": conversation_id,
                    "version": "2.1.332",
                }
            )
            parent = line_id
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def event(session_id: str, seq: int, epoch: str, text: str, **fields: Any) -> dict[str, Any]:
    """A numbered event as a Mac's archive holds it (agent/archive.py), any seq and epoch."""
    return {
        "kind": "user", "text": text, "session_id": session_id, "seq": seq, "epoch": epoch,
        **fields,
    }  # fmt: skip


def events_file(events: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


# -- a folder's archive ------------------------------------------------------------------------


def file(name: str, data: bytes = b"", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, int(time.time())
    return info, data


def folder(name: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info, b""


def symlink(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, target
    return info, b""


def hardlink(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.LNKTYPE, target
    return info, b""


def special(name: str, kind: bytes = tarfile.FIFOTYPE) -> tuple[tarfile.TarInfo, bytes]:
    """A member that is no file, folder or link (a FIFO, a device …)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    return info, b""


def folder_archive(
    members: list[tuple[tarfile.TarInfo, bytes]], **manifest: Any
) -> tuple[bytes, dict[str, Any]]:
    """A plain folder's archive as agent/foldersync.py lays it out (a tar holding ``files.tgz``,
    a gzip'd tar of the members, in this order) and its manifest, counted from the members as
    the packer counts them (files, folders, bytes with ENTRY_BYTES each); ``manifest`` changes
    any of its fields."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w:", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo(FILES)
        info.size, info.mode = len(inner.getvalue()), 0o600
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    data = outer.getvalue()
    folders: set[str] = set()  # named, or made for a member's path (as the packer counts them)
    for info, _ in members:
        parts = [p for p in info.name.split("/") if p not in ("", ".")]
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if info.isdir():
            folders.add("/".join(parts))
    entries = sum(not info.isdir() for info, _ in members)
    sizes = sum(
        info.size if info.isreg() else len(info.linkname.encode()) if info.issym() else 0
        for info, _ in members
    )
    said: dict[str, Any] = {
        "kind": "plain",
        "branch": None,
        "head": None,
        "files": entries,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "content_bytes": sizes + ENTRY_BYTES * (entries + len(folders)),
        "folders": len(folders),
        "changes": "",
    }
    said.update(manifest)
    return data, said


def packed_folder(root: Path, have: tuple[str, ...] = ()) -> tuple[bytes, dict[str, Any]]:
    """The real packer's archive of ``root`` and its manifest (``have``: commits the target has)."""
    out = root.parent / f".{root.name}.packed"
    out.unlink(missing_ok=True)
    manifest = asyncio.run(pack(root, out, limit=1 << 30, have=have))
    data = out.read_bytes()
    out.unlink()
    return data, manifest.to_json()


# -- the hostile source -------------------------------------------------------------------------


@dataclass
class HostileSource:
    """A Mac of the account on the real link that answers a move's source steps with a cargo."""

    relay_url: str
    token: str
    loop: LoopThread
    name: str = "Evil Mac"
    cargos: dict[str, Cargo] = field(default_factory=dict)  # by session id
    commands: list[Command] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # sessions whose chunks are not served yet
    packing: set[str] = field(default_factory=set)  # sessions whose export says "packing" forever
    read_delay: float = 0.0  # seconds each chunk takes (a source that sends, but slowly)
    offsets: dict[str, int] = field(default_factory=dict)
    link: MacLink | None = None

    def connect(self) -> HostileSource:
        self.link = MacLink(
            self.relay_url,
            self.token,
            DeviceInfo(name=self.name, agent_version="0.1.0", claude_version="2.1.332"),
            on_command=self._on_command,
        )
        self.loop.run(self.link.connect())
        return self

    def close(self) -> None:
        if self.link is not None:
            self.loop.run(self.link.close())

    def report(self, session_id: str, cwd: str, conversation_id: str, lines: list[bytes]) -> int:
        """Report a session of this Mac: its transcript lines (stored and numbered by the relay),
        then an idle update. Answers the last seq the relay gave."""
        assert self.link is not None
        at = self.offsets.get(conversation_id, 0)
        records = []
        for raw in lines:
            text = raw.rstrip(b"\n").decode()
            line_id = json.loads(text).get("uuid")
            records.append(LineRecord(offset=at, text=text, uuid=line_id))
            at += len(raw if raw.endswith(b"\n") else raw + b"\n")
        self.offsets[conversation_id] = at
        ack = self.loop.run(self.link.send_lines(session_id, conversation_id, records, cwd=cwd))
        self.loop.run(
            self.link.update(
                SessionInfo(
                    session_id=session_id, cwd=cwd, conversation_id=conversation_id, state="idle"
                )
            )
        )
        return ack.last_seq

    def finishes(self, session_id: str) -> list[str]:
        return [
            str(c.args["outcome"])
            for c in self.commands
            if c.name == "move_finish" and c.session_id == session_id
        ]

    def hold(self, session_id: str) -> None:
        """Serve no chunk of the session's folder until :meth:`release`: its move stays in its
        transfer (the target accepted it, the folder is on its way)."""
        self.held.add(session_id)

    def release(self, session_id: str) -> None:
        self.held.discard(session_id)

    def wait_reading(self, session_id: str, timeout: float = 30) -> None:
        """Wait until the relay asks for a chunk of the session's folder (it is on its way)."""
        wait_for(
            lambda: any(
                c.name == "move_read"
                and c.session_id == session_id
                and c.args["file"] == FOLDER_FILE
                for c in self.commands
            ),
            timeout,
            "a chunk asked for",
        )

    async def _on_command(self, command: Command) -> CommandResult:
        self.commands.append(command)
        cargo = self.cargos.get(command.session_id)
        data: dict[str, Any] = {}
        if command.name == "move_export" and command.session_id in self.packing:
            data = {"status": "packing"}
        elif command.name == "move_export":
            assert cargo is not None, "give the source a cargo before the move"
            files = cargo.files()
            data = {
                "status": "ready",
                "manifest": cargo.manifest,
                "files": [
                    {"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                    for n, b in files.items()
                ],
            }
        elif command.name == "move_read":
            while command.session_id in self.held and command.args["file"] == FOLDER_FILE:
                await asyncio.sleep(0.05)
            await asyncio.sleep(self.read_delay)
            assert cargo is not None
            body = cargo.files()[command.args["file"]]
            offset, length = command.args["offset"], command.args["length"]
            data = {"data": base64.b64encode(body[offset : offset + length]).decode()}
        elif command.name == "move_finish":
            data = {"done": True, "known": True}
        return CommandResult(command_id=command.command_id, ok=True, data=data)


# -- the target -------------------------------------------------------------------------------


class FakeClaudeMac(Bridge):
    """A Mac whose ``claude`` is the fake one (tests/fakeclaude), its turns quick."""

    def env(self) -> dict[str, str]:
        return {**super().env(), "FAKECLAUDE_SLOW_SECONDS": "8", "FAKECLAUDE_DIALOG_DEAF": "0.05"}


@dataclass
class AgentMac:
    """A Mac as a real agent process with its own HOME, data folder and tmux socket (the move's
    target here; an honest source too, where a test needs one)."""

    mac: Bridge
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = agent_process(self.mac, self.mac.relay.url, self.mac.account.device_token)

    def stop(self) -> None:
        """Stop the agent as a crash would (its tmux server stays)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def device_id(self) -> str:
        return self.mac.account.device_id

    @property
    def home(self) -> Path:
        return self.mac.home

    @property
    def data(self) -> Path:
        return self.mac.data

    def folder(self, name: str) -> str:
        """A folder on this Mac that its Claude Code trusts (not made yet)."""
        made = self.mac.folder(name)
        os.rmdir(made)
        return made

    def registry(self) -> dict[str, dict[str, Any]]:
        """The agent's sessions.json, by session id."""
        path = self.mac.data / "sessions.json"
        if not path.exists():
            return {}
        return {s["id"]: s for s in json.loads(path.read_text())["sessions"]}

    def claude_argv(self, session_id: str) -> list[str]:
        """The command line the session's claude runs with here ([] when none runs)."""
        out = subprocess.run(
            ["tmux", "-L", self.mac.socket, "list-panes", "-t", f"cb-{session_id}", "-F",
             "#{pane_pid}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if out.returncode != 0 or not out.stdout.strip():
            return []
        pid = out.stdout.split()[0]
        with contextlib.suppress(OSError):
            return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        return []

    def log(self) -> str:
        path = self.mac.root / "agent.log"
        return path.read_text(errors="replace") if path.exists() else ""


# -- the world --------------------------------------------------------------------------------


@dataclass
class World:
    relay: RelayServer
    account: Account
    phone: httpx.Client
    source: HostileSource
    target: AgentMac

    def report(self, session_id: str, cwd: str, conversation_id: str, turns: int = 1) -> int:
        """The hostile source reports a session of its own with ``turns`` prompts and answers;
        answers the relay's last seq for it."""
        raw = transcript(
            conversation_id, cwd, [(f"prompt {n}", f"answer {n}") for n in range(1, turns + 1)]
        )
        return self.source.report(session_id, cwd, conversation_id, raw.splitlines(True))

    def move(self, session_id: str, cwd: str, cargo: Cargo) -> dict[str, Any]:
        """Start the move from the phone, the source answering with ``cargo``."""
        self.source.cargos[session_id] = cargo
        response = self.phone.post(
            f"/api/sessions/{session_id}/move",
            json={"device_id": self.target.device_id, "cwd": cwd, "when": "idle"},
        )
        assert response.status_code == 202, response.text
        return dict(response.json()["move"])

    def outcome(self, session_id: str, timeout: float = MOVE_OVER) -> dict[str, Any]:
        """The session's latest move once it is over and both Macs were told."""
        return dict(
            wait_for(
                lambda: (
                    (m := self.phone.get(f"/api/sessions/{session_id}/move").json()["move"])[
                        "phase"
                    ]
                    in ("done", "failed")
                    and m
                ),
                timeout,
                "the move over",
            )
        )

    def events(self, session_id: str) -> list[dict[str, Any]]:
        page = self.phone.get(f"/api/sessions/{session_id}/events", params={"after": 0})
        assert page.status_code == 200, page.text
        return list(page.json()["events"])

    def snapshot(self, session_id: str) -> dict[str, Any]:
        response = self.phone.get(f"/api/sessions/{session_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())


def agent_mac(
    relay: RelayServer,
    account: Account,
    root: Path,
    name: str,
    claude: str = FAKE,
    api_url: str = "http://127.0.0.1:9",
) -> AgentMac:
    """A new Mac ``name`` of the account, its agent (not started yet) and folders under
    ``root``; its claude the fake one, or ``claude`` against the fake API at ``api_url``."""
    token, _, device_id = relay.state.store.create_token(account.account_id, "device", name)
    account = replace(account, device_token=token, device_id=device_id)
    mac = (FakeClaudeMac if claude == FAKE else Bridge)(relay, account, root, claude, api_url)
    seed_home(mac.home, [])
    return AgentMac(mac)


@contextlib.contextmanager
def hostile_world(relay: RelayServer, root: Path, **claude: str) -> Iterator[World]:
    """One account on ``relay`` with a phone, the hostile source (the account's first Mac) and
    a target Mac (its second) running its own agent process under ``root`` (``claude`` and
    ``api_url``: the real claude against the fake API, for tests/e2e)."""
    account = relay.account()
    target = agent_mac(relay, account, root / "target", "Target", **claude)
    mac = target.mac
    device_id = target.device_id
    loop = LoopThread()
    source = HostileSource(relay.url, account.device_token, loop)
    phone = httpx.Client(
        base_url=relay.url,
        headers={"Authorization": f"Bearer {account.phone_token}"},
        timeout=30,
    )
    try:
        source.connect()
        target.start()
        wait_online(phone, device_id)
        yield World(relay, account, phone, source, target)
    finally:
        phone.close()
        source.close()
        target.stop()
        mac.kill_tmux()
        loop.stop()
