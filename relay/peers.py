"""What the relay asks of the other relay nodes it shares a database with.

On PostgreSQL the relay is one node of a cluster (relay/cluster.py ``Cluster`` is this); on
SQLite there is none (``RelayState.cluster`` is None). The core (the link, the state) and the
features (the outbox, moves) go through these methods only; what travels between the nodes is
relay/cluster.py's business (its typed bus messages, relay/nodebus.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from relay.live import DeviceLink
    from wire.protocol import SessionInfo


class Peers(Protocol):
    """This node's part in a cluster of relay nodes."""

    @property
    def node_id(self) -> str:
        """This node's name among the others (also what drives a move, relay/features/moves.py)."""
        ...

    async def linked(self, link: DeviceLink) -> None:
        """A Mac linked to this node: it holds the Mac now (an older link elsewhere ends)."""

    async def unlinked(self, link: DeviceLink) -> bool:
        """A Mac's link here ended; answers whether this node still held it."""
        ...

    def share_live(self, account_id: str, device_id: str, info: SessionInfo, keep: bool) -> None:
        """A session's live side changed here: the other nodes' snapshots show it too."""

    def nudge(self, topic: str, session_id: str) -> None:
        """Tell the other nodes' feature of ``topic`` that the session has news for it."""

    async def check_rate(self, bucket: str, limit: int, window: float) -> None:
        """A sliding window counted by every node together; TooManyRequests past ``limit``."""

    async def live_nodes(self) -> set[str]:
        """The nodes whose lease still runs, this one among them."""
        ...

    async def close(self) -> None:
        """Leave the cluster (the Macs linked here may link elsewhere at once)."""
