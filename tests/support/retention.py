"""Helpers for the retention tests: a clock the test moves, a Mac that answers every command."""

from __future__ import annotations

import time
from typing import Any

import httpx

from relay.features.retention import DAY, Retention
from tests.support.relay import RelayServer
from wire.client import MemoryArchive
from wire.protocol import Command, CommandResult

FAST = {"retention_retry_interval": 0.1}


class Clock:
    def __init__(self) -> None:
        self.start = time.time()
        self.now = self.start

    def __call__(self) -> float:
        return self.now

    def days(self, days: float) -> None:
        self.now = self.start + days * DAY


class Mac:
    """A scripted Mac: answers every command ok and drops deleted sessions from its archive."""

    def __init__(self, archive: MemoryArchive | None = None) -> None:
        self.commands: list[Command] = []
        self.archive = archive if archive is not None else MemoryArchive()

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.name == "delete_history":
            self.archive.pop(command.session_id, None)
            self.archive.epochs.pop(command.session_id, None)
        return CommandResult(command_id=command.command_id, ok=True, data={"done": command.name})

    def deleted(self) -> list[str]:
        return [c.session_id for c in self.commands if c.name == "delete_history"]


def retention_of(server: RelayServer) -> Retention:
    found: Retention = server.app.state.retention
    return found


def run(client: httpx.Client) -> dict[str, Any]:
    answer = client.post("/api/retention/run")
    assert answer.status_code == 200, answer.text
    report: dict[str, Any] = answer.json()["report"]
    return report
