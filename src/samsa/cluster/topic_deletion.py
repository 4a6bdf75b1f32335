"""Topic deletion on the controller: every replica's log goes, on every broker, even one that was down.

A topic named under ``/admin/delete_topics`` stays there, with its ``/brokers/topics/<topic>`` znode, until every
replica of every partition has answered StopReplica with delete, as Kafka's controller keeps it:

1. its partitions' leader becomes -2 (deleted) in the controller's memory, and every broker is told so
   (UpdateMetadata), which drops the partitions from their metadata;
2. StopReplica(delete, leader epoch -2) goes to every live replica; each answer without error ticks that replica off;
3. a replica on a broker that is down is ticked off when the broker comes back and answers its StopReplica;
4. when none is left, the topic's znodes and its deletion request go, and the controller forgets the topic (and
   takes its moves out of the legacy ``/admin/reassign_partitions``, :mod:`.reassignment`).

A controller that takes over finds the request still in ZooKeeper and starts again from step 1 (StopReplica is
idempotent: a broker without the log answers without error).

Concurrency: every method runs as, or inside, an event of the controller's queue (event-loop thread only); the
channels' answers come back as events.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from samsa.protocol import ErrorCode
from samsa.topic_partition import TopicPartition

from .metadata_cache import LEADER_DELETED
from .znodes import PartitionState

if TYPE_CHECKING:
    from .controller_context import ControllerContext

__all__ = ["DELETION_EPOCH", "TopicDeletions"]

log = logging.getLogger(__name__)

DELETION_EPOCH = -2  # StopReplica's leader epoch for a topic being deleted: brokers skip the epoch check


class TopicDeletions:
    """The topics being deleted and, per topic, the (broker, partition) replicas that have not answered yet
    (module doc). Event-loop thread only."""

    def __init__(self, controller: ControllerContext, deleted: Callable[[str], Awaitable[None]]) -> None:
        self.controller = controller
        self._deleted = deleted  # told each topic whose deletion completed (its moves leave the legacy znode)
        self.pending: dict[str, set[tuple[int, int]]] = {}

    def is_deleting(self, topic: str) -> bool:
        return topic in self.pending

    def clear(self) -> None:
        """The controller resigned: its successor starts the deletions again."""
        self.pending.clear()

    async def requested(self, names: Iterable[str]) -> None:
        """Topics named under ``/admin/delete_topics`` (some perhaps already being deleted)."""
        controller = self.controller
        for topic in names:
            if topic in self.pending:
                continue
            if topic not in controller.topics:  # no such topic (any more): just drop the request
                await self._complete(topic)
                continue
            doomed = {tp: e for tp, e in controller.partitions.items() if tp.topic == topic}
            self.pending[topic] = {(r, tp.partition) for tp, e in doomed.items() for r in e.replicas}
            for entry in doomed.values():
                epoch = entry.state.leader_epoch if entry.state is not None else -1
                entry.state = PartitionState(LEADER_DELETED, epoch, (), controller.epoch)
            controller.send_update_metadata(controller.live, doomed)
            log.info("controller: deleting topic %s (%d replicas)", topic, len(self.pending[topic]))
            self._stop(topic, set(controller.live))
            if not self.pending[topic]:
                await self._complete(topic)

    def brokers_started(self, brokers: Iterable[int]) -> None:
        """Brokers came (back): their replicas of topics being deleted are stopped and deleted now."""
        started = set(brokers)
        for topic in list(self.pending):
            self._stop(topic, started)

    def _stop(self, topic: str, brokers: set[int]) -> None:
        controller = self.controller
        by_broker: dict[int, list[int]] = {}
        for broker, partition in sorted(self.pending[topic]):
            if broker in brokers and broker in controller.live:
                by_broker.setdefault(broker, []).append(partition)
        for broker, partitions in by_broker.items():
            controller.send_stop_replica(
                {
                    TopicPartition(topic, p): controller.partitions[TopicPartition(topic, p)]
                    for p in partitions
                },
                to={broker},
                leader_epoch=DELETION_EPOCH,
                on_answer=self._answer_event(topic, broker),
            )

    def _answer_event(self, topic: str, broker: int) -> Any:
        def on_answer(response: Any) -> None:  # the channel's task: queue the answer as an event
            async def stop_replica_answered() -> None:
                await self._answered(topic, broker, response)

            self.controller.put_event(stop_replica_answered)

        return on_answer

    async def _answered(self, topic: str, broker: int, response: Any) -> None:
        pending = self.pending.get(topic)
        if pending is None or not self.controller.is_active or response.error_code != ErrorCode.NONE:
            return
        for answer in response.partition_errors:
            if answer.topic_name == topic and answer.error_code == ErrorCode.NONE:
                pending.discard((broker, answer.partition_index))
        if not pending:
            await self._complete(topic)

    async def _complete(self, topic: str) -> None:
        controller = self.controller
        assert controller.fence is not None
        await controller.zk_call(controller.zk.delete_topic_znodes, controller.fence, topic)
        doomed = [tp for tp in controller.partitions if tp.topic == topic]
        for tp in doomed:
            del controller.partitions[tp]
        controller.topics.pop(topic, None)
        self.pending.pop(topic, None)
        await self._deleted(topic)
        log.info("controller: topic %s deleted (%d partitions)", topic, len(doomed))
