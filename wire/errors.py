"""The errors of the shared package, one tree (foreign errors are translated into it once, where
they arise: websockets' in ``wire.client.map_websockets_errors``)::

    WireError
     ├── ConfigError     (also ValueError)       a setting with an unknown name or a wrong value
     ├── PolicyError     (also ValueError)       a permission policy in JSON form that is not valid
     └── LinkFailure                             the link to the relay did not do its job
          ├── LinkRefused (also RuntimeError)    the relay refused the link or one batch
          └── LinkLost    (also ConnectionError) the link could not be opened, or it dropped

``LinkRefused.token_refused`` says the relay refused the device token (close code
``wire.protocol.CLOSE_UNAUTHORIZED``, read from the close frame): the Mac must be paired again.
"""

from __future__ import annotations

from wire.protocol import CLOSE_UNAUTHORIZED


class WireError(Exception):
    """Root of every error raised by the shared package."""


class ConfigError(WireError, ValueError):
    """A setting has an unknown name or a value of the wrong type."""


class PolicyError(WireError, ValueError):
    """A policy in JSON form that is not valid; the message says what is wrong."""


class LinkFailure(WireError):
    """The link to the relay failed; ``close_code`` is the relay's close code when it sent one."""

    def __init__(self, message: str, *, close_code: int | None = None) -> None:
        super().__init__(message)
        self.close_code = close_code


class LinkRefused(LinkFailure, RuntimeError):
    """The relay refused the link or a batch (bad token, protocol error)."""

    def __init__(
        self, message: str, *, close_code: int | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, close_code=close_code)
        self.status = status  # the HTTP status when the upgrade itself was refused

    @property
    def token_refused(self) -> bool:
        return self.close_code == CLOSE_UNAUTHORIZED


class LinkLost(LinkFailure, ConnectionError):
    """The link could not be opened or dropped: the work is sent again once it is back."""
