"""What the controller's helpers see of it: its state, its ZooKeeper access, its event queue, and the requests it
sends to brokers (Kafka keeps the first in ``ControllerContext`` and the last in ``ControllerBrokerRequestBatch``).

The helpers (:mod:`.elections`, :mod:`.reassignment`, :mod:`.topic_deletion`) take a :class:`ControllerContext`;
:class:`.controller.Controller` is the one implementation. They import this module, never the controller's, so
the controller can import them.

The state, as the active controller holds it (empty while this broker is not the controller):

============== ===========================================================================================
``live``       broker id -> (its registration, its broker epoch = the czxid of ``/brokers/ids/<id>``)
``topics``     topic -> its assignment as ``/brokers/topics/<topic>`` holds it (replicas, adding, removing)
``partitions`` partition -> :class:`PartitionEntry`: its replicas, its state znode and that znode's version
``fence``      the controller epoch and the epoch znode's version every write is fenced on (None: not active)
============== ===========================================================================================

Event-loop thread only: every member is used from inside a controller event (the controller's one queue).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from samsa.topic_partition import TopicPartition

from .zk_client import ControllerEpoch, ZkClient
from .znodes import BrokerRegistration, PartitionState, TopicAssignment

__all__ = ["ControllerContext", "LiveBrokers", "OnAnswer", "PartitionEntry", "Partitions"]

_T = TypeVar("_T")


@dataclass(slots=True)
class PartitionEntry:
    """One partition as the controller holds it: its replicas (assignment order), its leader and ISR as its state
    znode holds them (None: never elected), and that znode's version, the partition epoch AlterPartition is
    checked against (-1: no znode)."""

    replicas: tuple[int, ...]
    state: PartitionState | None = None
    partition_epoch: int = -1


Partitions = dict[TopicPartition, PartitionEntry]
LiveBrokers = dict[int, tuple[BrokerRegistration, int]]
OnAnswer = Callable[[Any], None] | None
"""Called with a broker's response to a request the controller sent (on the channel's task)."""


class ControllerContext(Protocol):
    """The controller as its helpers use it (module doc)."""

    zk: ZkClient
    fence: ControllerEpoch | None
    live: LiveBrokers
    topics: dict[str, TopicAssignment]
    partitions: Partitions

    @property
    def is_active(self) -> bool:
        """Whether this broker is the controller now."""
        ...

    @property
    def epoch(self) -> int:
        """The controller epoch (-1: not active)."""
        ...

    # --- ZooKeeper and the event queue ---------------------------------------------------------------------

    async def zk_call(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``call(*args, **kwargs)`` in a worker thread, retried while the connection to ZooKeeper is away (not
        after the session expired)."""
        ...

    def put_event(self, event: Callable[[], Any]) -> None:
        """Queue ``event`` (a coroutine function) behind the controller's other events."""
        ...

    async def run_event(self, name: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` as one controller event named ``name`` and return its result (or raise its error)."""
        ...

    def watch(self, event: Callable[[], Any]) -> Callable[[object], None]:
        """A kazoo watch that queues ``event`` when it fires."""
        ...

    # --- partition state ---------------------------------------------------------------------------------------

    async def write_state(self, tp: TopicPartition, entry: PartitionEntry, state: PartitionState) -> None:
        """Write ``tp``'s new state znode (fenced on the controller epoch, expecting ``entry``'s partition epoch)
        and keep it in ``entry``."""
        ...

    async def write_states(
        self, changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]]
    ) -> None:
        """Write many partitions' new states, batched in ZooKeeper transactions, each kept in its entry."""
        ...

    async def elect_offline(self, partitions: Partitions) -> Partitions:
        """Elect a leader for each of ``partitions`` that has no live one; the partitions whose state changed."""
        ...

    # --- requests to brokers -----------------------------------------------------------------------------------

    def send_leader_and_isr(
        self, partitions: Partitions, *, is_new: bool, only: set[int] | None = None
    ) -> None:
        """LeaderAndIsr to each live replica of ``partitions`` (``only``: to those brokers)."""
        ...

    def send_update_metadata(self, to: LiveBrokers, partitions: Partitions) -> None:
        """UpdateMetadata with every live broker and ``partitions``' states to each broker in ``to``."""
        ...

    def send_stop_replica(
        self,
        partitions: Partitions,
        *,
        to: set[int] | None = None,
        delete: bool = True,
        leader_epoch: int | None = None,
        on_answer: OnAnswer = None,
    ) -> None:
        """StopReplica to every live replica of ``partitions`` (``to``: to those brokers), deleting their logs
        with ``delete``."""
        ...
