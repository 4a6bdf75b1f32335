"""Partition reassignment on the controller (KIP-455): moving a partition's replicas to a target set of brokers.

The sets, for a partition whose replica set RS is being moved from its origin replicas to ``target``:

============  =============================================================================================
``RS``        distinct(target + origin): every replica while the move runs (``partitions`` in the topic znode)
``adding``    RS - origin: the new replicas, copying the log from the leader
``removing``  RS - target: the replicas that go once the new ones are in sync
origin        RS - adding (so a controller that takes over recovers origin and target from the znode alone)
============  =============================================================================================

The steps, as Kafka's ZooKeeper-mode controller takes them:

1. **Start.** RS, adding and removing are written to ``/brokers/topics/<topic>`` (fenced on the controller epoch);
   the leader epoch goes up by one (leader and ISR unchanged) and LeaderAndIsr goes to every replica of RS, so the
   leader tracks the adding replicas and they start fetching.
2. **Complete?** when every target replica is in the ISR as ZooKeeper holds it. Checked at the start, after each
   accepted AlterPartition, when brokers start, and at failover: a reassignment lives in ZooKeeper and outlives the
   controller that started it.
3. **Finish.** If the leader is not in the target (or is dead) the first live target replica in the ISR leads; the
   ISR loses the removed replicas; the epoch goes up. LeaderAndIsr to the target replicas, StopReplica with delete
   to the removed ones (not waiting for their answers), then RS = target with empty adding/removing is written and
   every broker gets UpdateMetadata.

A cancel (replicas = null) is a reassignment back to the origin replicas. A new reassignment of a partition that is
already moving replaces it: adding replicas that are no longer wanted are stopped and deleted.

**The legacy znode.** Tools older than KIP-455 ask for moves by creating ``/admin/reassign_partitions``
(:class:`.znodes.ReassignPartitions`), which Kafka's ZooKeeper-mode controller still honours, and so does this one:
it watches the znode (from failover on, before it resumes the other moves) and starts each move listed there as
AlterPartitionReassignments would. A move that is refused (no such partition, a topic being deleted, an invalid
replica list) leaves the znode at once, with a warning; one already under way to the same target is left to run; a
partition already on its target leaves it as done. Each move leaves the znode when it finishes, or when an
AlterPartitionReassignments request replaces or cancels it, or when its topic is deleted; the znode is deleted with
its last move, and at once when it is not the JSON above. Deleting the znode cancels nothing.

Concurrency: every method runs as, or inside, an event of the controller's queue (event-loop thread only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from samsa.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from samsa.topic_partition import TopicPartition

from .metadata_cache import NO_LEADER
from .zk_client import ControllerMovedError, is_session_interruption
from .znodes import ADMIN_REASSIGN_PARTITIONS, PartitionState, TopicAssignment, ZNodeFormatError

if TYPE_CHECKING:
    from .controller_context import ControllerContext

__all__ = ["Reassignments", "ReplicaSets", "replica_sets"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReplicaSets:
    """A partition's replica sets while it moves (module doc), each in assignment order."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def origin(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def moving(self) -> bool:
        return bool(self.adding or self.removing)


def replica_sets(target: Iterable[int], origin: Iterable[int]) -> ReplicaSets:
    """RS, adding and removing for a move from ``origin`` to ``target`` (target first, in its order)."""
    target, origin = tuple(target), tuple(origin)
    full = tuple(dict.fromkeys((*target, *origin)))
    return ReplicaSets(
        full, tuple(r for r in full if r not in origin), tuple(r for r in full if r not in target)
    )


class Reassignments:
    """The controller's reassignment work (module doc). The sets are in the controller's topic assignments, as
    ZooKeeper holds them; the only state of its own is which moves came from the legacy znode, re-read at
    failover. Event-loop thread only."""

    def __init__(self, controller: ControllerContext, is_deleting: Callable[[str], bool]) -> None:
        self.controller = controller
        self._is_deleting = is_deleting  # whether a topic is being deleted (``TopicDeletions.is_deleting``)
        self.from_zk: set[TopicPartition] = set()  # the moves listed in /admin/reassign_partitions

    def resigned(self) -> None:
        self.from_zk.clear()

    # --- requests --------------------------------------------------------------------------------------------

    async def alter(self, request: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
        """AlterPartitionReassignments: start, replace or cancel moves; the answer means *started*."""
        if not self.controller.is_active:
            return AlterPartitionReassignmentsResponse(
                error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is not the controller."
            )
        deleting = set(await self.controller.zk_call(self.controller.zk.topics_to_delete))
        responses = []
        for topic in request.topics:
            answers = []
            for partition in topic.partitions:
                tp = TopicPartition(topic.name, partition.partition_index)
                message: str | None
                if topic.name in deleting:
                    error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is being deleted"
                else:
                    error, message = await self.reassign(tp, partition.replicas)
                    if error == ErrorCode.NONE and tp in self.from_zk:  # the API supersedes the znode
                        await self._remove_from_zk([tp])
                answers.append(ReassignablePartitionResponse(partition.partition_index, error, message))
            responses.append(ReassignableTopicResponse(topic.name, answers))
        return AlterPartitionReassignmentsResponse(responses=responses)

    def listed(self, request: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
        """ListPartitionReassignments: the moving partitions (of the topics named, or all)."""
        if not self.controller.is_active:
            return ListPartitionReassignmentsResponse(
                error_code=ErrorCode.NOT_CONTROLLER, error_message="This broker is not the controller."
            )
        wanted: set[TopicPartition] | None = None
        if request.topics is not None:
            wanted = {TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes}
        by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
        for tp in sorted(self.moving()):
            if wanted is not None and tp not in wanted:
                continue
            sets = self.sets(tp)
            by_topic.setdefault(tp.topic, []).append(
                OngoingPartitionReassignment(
                    tp.partition, list(sets.replicas), list(sets.adding), list(sets.removing)
                )
            )
        return ListPartitionReassignmentsResponse(
            topics=[OngoingTopicReassignment(t, ps) for t, ps in by_topic.items()]
        )

    # --- the sets --------------------------------------------------------------------------------------------

    def sets(self, tp: TopicPartition) -> ReplicaSets:
        assignment = self.controller.topics[tp.topic]
        return ReplicaSets(
            assignment.partitions.get(tp.partition, ()),
            assignment.adding_replicas.get(tp.partition, ()),
            assignment.removing_replicas.get(tp.partition, ()),
        )

    def moving(self) -> list[TopicPartition]:
        """The partitions being moved (a topic being deleted no longer moves: its replicas are going)."""
        return [
            TopicPartition(topic, p)
            for topic, a in self.controller.topics.items()
            if not self._is_deleting(topic)
            for p in sorted({*a.adding_replicas, *a.removing_replicas})
            if p in a.partitions
        ]

    async def _write_sets(self, tp: TopicPartition, sets: ReplicaSets) -> None:
        controller = self.controller
        assert controller.fence is not None
        old = controller.topics[tp.topic]
        adding, removing = dict(old.adding_replicas), dict(old.removing_replicas)
        adding.pop(tp.partition, None)
        removing.pop(tp.partition, None)
        if sets.adding:
            adding[tp.partition] = sets.adding
        if sets.removing:
            removing[tp.partition] = sets.removing
        new = TopicAssignment({**old.partitions, tp.partition: sets.replicas}, old.topic_id, adding, removing)
        await controller.zk_call(controller.zk.write_topic_assignment, controller.fence, tp.topic, new)
        controller.topics[tp.topic] = new
        controller.partitions[tp].replicas = sets.replicas

    # --- the steps -------------------------------------------------------------------------------------------

    async def reassign(self, tp: TopicPartition, target: list[int] | None) -> tuple[ErrorCode, str | None]:
        """Start (or replace, or with ``target`` None cancel) the move of one partition."""
        controller = self.controller
        entry = controller.partitions.get(tp)
        if entry is None or tp.topic not in controller.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {tp}"
        current = self.sets(tp)
        if target is None:
            if not current.moving:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"No reassignment in progress for {tp}"
            target = list(current.origin)
        problem = self._invalid(target, current.origin)
        if problem is not None:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
        new = replica_sets(target, current.origin)
        dropped = [r for r in current.adding if r not in new.replicas]
        log.info(
            "controller: reassigning %s from %s to %s (adding %s, removing %s)",
            tp,
            list(current.origin),
            target,
            list(new.adding),
            list(new.removing),
        )
        await self._write_sets(tp, new)
        if dropped:
            await self._drop_from_isr(tp, dropped)
            controller.send_stop_replica({tp: entry}, to=set(dropped))
        await self._advance(tp, started=True)
        return ErrorCode.NONE, None

    def _invalid(self, target: list[int], origin: tuple[int, ...]) -> str | None:
        if not target:
            return "The replica list is empty."
        if len(set(target)) != len(target):
            return f"The replica list {target} has duplicates."
        if any(r < 0 for r in target):
            return f"The replica list {target} has negative broker ids."
        absent = [r for r in target if r not in origin and r not in self.controller.live]
        if absent:
            return f"The proposed assignment contains brokers that are not alive: {absent}."
        return None

    async def check(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Finish the moves among ``partitions`` (default: all moving ones) whose target is in the ISR."""
        moving = set(self.moving())
        for tp in sorted(moving if partitions is None else moving.intersection(partitions)):
            try:
                await self._advance(tp, started=False)
            except ControllerMovedError:
                raise
            except (
                Exception
            ) as exc:  # one partition's failure (re-tried at the next check) must not stop the others
                if is_session_interruption(exc):
                    raise  # the controller's event loop says it in one line; the check runs again with the session
                log.exception("controller: reassignment of %s could not advance", tp)

    async def _advance(self, tp: TopicPartition, *, started: bool) -> None:
        controller = self.controller
        entry = controller.partitions[tp]
        found = await controller.zk_call(controller.zk.partition_state, tp.topic, tp.partition)
        if found is not None:
            entry.state, entry.partition_epoch = found
        sets = self.sets(tp)
        state = entry.state
        if state is None:
            return  # no leader ever elected: the new assignment is taken as it is at the first election
        if all(r in state.isr for r in sets.target):
            await self._finish(tp, sets)
        elif started:
            await controller.write_state(
                tp, entry, PartitionState(state.leader, state.leader_epoch + 1, state.isr, controller.epoch)
            )
            controller.send_leader_and_isr({tp: entry}, is_new=False)
            controller.send_update_metadata(controller.live, {tp: entry})

    async def _finish(self, tp: TopicPartition, sets: ReplicaSets) -> None:
        controller = self.controller
        entry = controller.partitions[tp]
        state = entry.state
        assert state is not None
        target = sets.target
        isr = tuple(r for r in state.isr if r in target)
        leader = state.leader
        if leader not in target or leader not in controller.live:
            leader = next((r for r in target if r in isr and r in controller.live), NO_LEADER)
        removed = set(sets.removing)
        await controller.write_state(  # a new epoch, so the replicas take the new replica set
            tp, entry, PartitionState(leader, state.leader_epoch + 1, isr, controller.epoch)
        )
        await self._write_sets(tp, ReplicaSets(target, (), ()))
        controller.send_leader_and_isr({tp: entry}, is_new=False)
        if removed:
            controller.send_stop_replica({tp: entry}, to=removed)
        controller.send_update_metadata(controller.live, {tp: entry})
        log.info("controller: reassignment of %s done, replicas %s, leader %d", tp, list(target), leader)
        if tp in self.from_zk:
            await self._remove_from_zk([tp])

    async def _drop_from_isr(self, tp: TopicPartition, dropped: list[int]) -> None:
        """Adding replicas a new reassignment no longer wants leave the ISR (never its last member)."""
        controller = self.controller
        entry = controller.partitions[tp]
        state = entry.state
        if state is None or not set(dropped) & set(state.isr):
            return
        isr = tuple(r for r in state.isr if r not in dropped) or state.isr[:1]
        leader = (
            state.leader
            if state.leader in isr
            else next((r for r in entry.replicas if r in isr and r in controller.live), NO_LEADER)
        )
        await controller.write_state(
            tp, entry, PartitionState(leader, state.leader_epoch + 1, isr, controller.epoch)
        )

    # --- the legacy znode ------------------------------------------------------------------------------------

    async def zk_requested(self) -> None:
        """``/admin/reassign_partitions`` appeared or changed (or failover): start the moves it lists (module
        doc); the refused ones leave it. Re-sets its watch while this broker is controller."""
        controller = self.controller
        if not controller.is_active:
            return
        try:
            found = await controller.zk_call(
                controller.zk.reassign_partitions, controller.watch(self.zk_requested)
            )
        except ZNodeFormatError as exc:
            log.warning("controller: deleting %s, not a reassignment: %s", ADMIN_REASSIGN_PARTITIONS, exc)
            await self._remove_from_zk(None)
            return
        if found is None:
            self.from_zk.clear()
            return
        deleting = set(await controller.zk_call(controller.zk.topics_to_delete))
        leaving = []
        for tp, target in sorted(found.partitions.items()):
            if await self._start_from_zk(tp, target, deleting):
                leaving.append(tp)
        if leaving:
            await self._remove_from_zk(leaving)

    async def _start_from_zk(self, tp: TopicPartition, target: tuple[int, ...], deleting: set[str]) -> bool:
        """Start one move the znode lists; True when it is to leave the znode now (refused, or done before)."""
        controller = self.controller
        what = ADMIN_REASSIGN_PARTITIONS
        if tp not in controller.partitions or tp.topic not in controller.topics or tp.topic in deleting:
            log.warning("controller: %s asks to move %s, which is unknown or being deleted", what, tp)
            return True
        current = self.sets(tp)
        if current.moving and current.target == target:
            self.from_zk.add(tp)  # under way already (a failover, or our own write of the znode)
            return False
        if not current.moving and current.replicas == target:
            log.info("controller: %s asks to move %s onto the replicas it has", what, tp)
            return True
        self.from_zk.add(tp)  # before the start, which may finish the move at once (and leave the znode)
        error, message = await self.reassign(tp, list(target))
        if error != ErrorCode.NONE:
            self.from_zk.discard(tp)
            log.warning("controller: %s asks to move %s: refused, %s", what, tp, message)
            return True
        return False

    async def topic_deleted(self, topic: str) -> None:
        """A deleted topic's moves can never finish: they leave the legacy znode."""
        gone = [tp for tp in self.from_zk if tp.topic == topic]
        if gone:
            await self._remove_from_zk(gone)

    async def _remove_from_zk(self, partitions: list[TopicPartition] | None) -> None:
        """Take moves out of the legacy znode (None: delete it whole)."""
        controller = self.controller
        assert controller.fence is not None
        if partitions is None:
            self.from_zk.clear()
        else:
            self.from_zk.difference_update(partitions)
        await controller.zk_call(controller.zk.remove_reassignments, controller.fence, partitions)
