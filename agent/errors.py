"""The agent's errors, one tree (foreign errors are translated into it where they arise: tmux's in
agent/mux.py, the link's in agent/link.py over wire/client.py)::

    AgentError
     ├── MuxError        (also RuntimeError)     tmux refused a command or is not there
     │    └── PaneGone                           the session's pane no longer exists
     ├── ClaudeMissing   (also RuntimeError)     the claude command is not found or does not run
     ├── BadClaudeArgs   (also ValueError)       extra claude arguments the agent cannot pass
     ├── RegistryDamaged (also RuntimeError)     sessions.json could not be read
     ├── CommandFailed                           a command from the relay failed: code + message
     ├── DialogOpen                              a dialog on the screen takes keys: nothing typed
     ├── HttpError                               the hook server refuses a request with a status
     ├── NotLinked       (also ConnectionError)  the relay is not reachable right now
     └── BatchRefused                            the relay refused one batch of lines

The shared package's errors (wire/errors.py: ``ConfigError``, ``PolicyError``, ``LinkRefused`` …)
have their own root, ``WireError``.
"""

from __future__ import annotations

from http import HTTPStatus


class AgentError(Exception):
    """Root of every error raised by the agent."""


class MuxError(AgentError, RuntimeError):
    """tmux refused a command or is not there; the message says which and why."""


class PaneGone(MuxError):
    """The session's pane no longer exists (claude exited or the server was killed)."""


class ClaudeMissing(AgentError, RuntimeError):
    """The claude command was not found or does not run."""


class BadClaudeArgs(AgentError, ValueError):
    """Extra claude arguments the agent cannot pass; the message says which and why."""


class RegistryDamaged(AgentError, RuntimeError):
    """sessions.json could not be read; it was set aside and the agent started empty."""


class CommandFailed(AgentError):
    """A command from the relay failed; ``code`` and ``message`` go back in its result."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class DialogOpen(AgentError):
    """A dialog that takes keys is on the screen: a message's text or Esc must not go there.
    ``pasted``: the text was already in the prompt box when the dialog was seen."""

    def __init__(self, kind: str | None, pasted: bool = False) -> None:
        super().__init__(f"a {kind} dialog is open")
        self.kind = kind
        self.pasted = pasted


class HttpError(AgentError):
    """A hook request refused with ``status``; ``reason`` goes to the log and the response body."""

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(f"{status.value} {reason}")
        self.status = status
        self.reason = reason


class NotLinked(AgentError, ConnectionError):
    """The relay is not reachable right now; the work stays on the Mac and is sent later."""


class BatchRefused(AgentError):
    """The relay answered one batch with an error: the link is fine, those lines stay in the
    transcript and are sent again later, without holding up other sessions."""


ERROR_CHARS = 500  # a reason shown on the phone is cut to this


def reason(exc: BaseException) -> str:
    """What went wrong, for a person: a command's own message, else the error as raised."""
    text = exc.message if isinstance(exc, CommandFailed) else str(exc) or type(exc).__name__
    return text[:ERROR_CHARS]
