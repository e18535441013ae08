"""The relay's commands to this Mac: one table, filled by the parts that answer them.

Each part of the agent lists its own commands with ``handlers()`` — (the args model, its
handler) pairs, the model named as wire/protocol.py's COMMAND_ARGS names it — and the daemon puts
every part's list in one :class:`CommandTable`. A command's args are read into its model before
anything is done (args that do not fit answer ``bad_args``), and every failure answers at once
with its code and reason: a phone never waits for a timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from agent.errors import CommandFailed, MuxError, PaneGone, reason
from wire.protocol import ArgsModel, Command, CommandName, CommandResult, args_problem

_log = logging.getLogger("agent")

A = TypeVar("A", bound=ArgsModel)

# What a part lists: the command's args model and what runs it (session id, args → data).
Handler = tuple[type[ArgsModel], Callable[[str, Any], Awaitable[dict[str, Any]]]]


@dataclass(frozen=True)
class CommandHandler(Generic[A]):
    """A command's handler: (session id, the command's args as its model) → the result's data.

    The args are read into ``model`` first: args that do not fit are answered ``bad_args`` with
    what is wrong, before anything is done."""

    model: type[A]
    run: Callable[[str, A], Awaitable[dict[str, Any]]]

    async def __call__(self, command: Command) -> dict[str, Any]:
        try:
            args = self.model.model_validate(command.args)
        except ValidationError as exc:
            raise CommandFailed("bad_args", args_problem(exc)) from None
        return await self.run(command.session_id, args)


class CommandTable(Mapping[CommandName, CommandHandler[Any]]):
    """Every command this agent answers, by name (the name of the args model it takes)."""

    def __init__(self, handlers: Iterable[Handler]) -> None:
        self.handlers: dict[CommandName, CommandHandler[Any]] = {}
        for model, run in handlers:
            if model.name in self.handlers:
                raise ValueError(f"two parts answer the command {model.name}")
            self.handlers[model.name] = CommandHandler(model, run)

    def __getitem__(self, name: CommandName) -> CommandHandler[Any]:
        return self.handlers[name]

    def __iter__(self) -> Iterator[CommandName]:
        return iter(self.handlers)

    def __len__(self) -> int:
        return len(self.handlers)

    async def run(self, command: Command) -> CommandResult:
        """Answer one command from the relay: its data, or why it failed."""
        handler = self.handlers.get(command.name)
        try:
            if handler is None:
                raise CommandFailed("not_supported", f"this agent does not know {command.name}")
            data = await handler(command)
        except CommandFailed as exc:
            return CommandResult(
                command_id=command.command_id, ok=False, code=exc.code, error=exc.message
            )
        except PaneGone as exc:
            return CommandResult(
                command_id=command.command_id, ok=False, code="pane_gone",
                error=f"the session's terminal is gone ({reason(exc)}): reopen the session",
            )  # fmt: skip
        except Exception as exc:
            # Any failure answers at once with its reason: a phone never waits for a timeout.
            if not isinstance(exc, (MuxError, OSError)):
                _log.exception("command %s for session %s failed", command.name, command.session_id)
            return CommandResult(
                command_id=command.command_id, ok=False, code="mac_error", error=reason(exc)
            )
        return CommandResult(command_id=command.command_id, ok=True, data=data or {})
