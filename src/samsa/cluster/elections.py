"""Leader elections beyond failover: controlled shutdown, a broker's full disk, ElectLeaders (preferred and
unclean), the automatic leader rebalance, and unclean election of offline partitions.

As Kafka's ZooKeeper-mode controller does (facts in replication.md §4 and §12):

- **Strategies** (pure functions below, each scanning the assignment in order). "Eligible" means registered and
  not shutting down. *Preferred*: the first assigned replica, when eligible and in the ISR; ISR unchanged.
  *Controlled shutdown*: the first replica that is registered (shutting down or not), in the ISR and not shutting
  down; ISR minus the shutting-down brokers. *Offline*: the first eligible ISR member; with unclean election
  allowed and none, the first eligible replica, alone in the ISR.
- **Controlled shutdown** (ControlledShutdown from a stopping broker): the broker joins the shutting-down set
  (keyed by its broker epoch, so a restarted broker is not shutting down any more); for its partitions with more
  than one replica, those it leads get a controlled-shutdown election, those it follows get StopReplica (no
  delete) and leave the ISR (leader epoch + 1, never the last member). The answer lists the partitions it still
  leads. A shutting-down broker still receives requests and appears alive in metadata.
- **ElectLeaders**: per partition, UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (already preferred, or a live
  leader for unclean), PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE, or the new leader.
- **Automatic rebalance** (``auto.leader.rebalance.enable``): 5 s after failover, then every
  ``leader.imbalance.check.interval.seconds``; a broker whose share of partitions it prefers but does not lead is
  above ``leader.imbalance.per.broker.percentage`` gets a preferred election for those whose preferred replica
  is eligible and in the ISR.
- **Unclean election** (``unclean.leader.election.enable``, the topic's override else the controller's broker
  default): records the new leader lacks are lost; the controller logs a WARN with the partition, the old and the
  new leader and epochs (it does not know offsets: the returning replicas log the range they truncate).

Concurrency: everything that reads or changes the controller's state runs as a controller event (the controller's
one queue, event-loop thread); the public coroutines queue an event and await its result.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.server_defaults import default
from samsa.topic_partition import TopicPartition

from .metadata_cache import NO_LEADER
from .znodes import PartitionState

if TYPE_CHECKING:
    from .controller_context import ControllerContext, PartitionEntry

__all__ = [
    "ElectionConfig",
    "ElectionType",
    "Elections",
    "controlled_shutdown_leader",
    "imbalanced_partitions",
    "offline_leader",
    "preferred_leader",
]

log = logging.getLogger(__name__)

FIRST_REBALANCE_DELAY_S = 5.0


class ElectionType(IntEnum):
    """ElectLeaders' ``ElectionType``."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(slots=True)
class ElectionConfig:
    """The controller's election settings, from the broker's config (Kafka's keys and defaults)."""

    auto_leader_rebalance_enable: bool = default("auto.leader.rebalance.enable")
    leader_imbalance_per_broker_percentage: int = default("leader.imbalance.per.broker.percentage")
    leader_imbalance_check_interval_s: float = float(default("leader.imbalance.check.interval.seconds"))
    unclean_leader_election_enable: bool = default("unclean.leader.election.enable")


# --- strategies (pure) ---------------------------------------------------------------------------------------


def offline_leader(
    replicas: Iterable[int], isr: Iterable[int], eligible: Callable[[int], bool], unclean: bool
) -> tuple[int, tuple[int, ...]] | None:
    """Leader and ISR for a partition without a live leader; None when nobody may lead."""
    order = tuple(replicas)
    live_isr = tuple(r for r in isr if eligible(r))
    if live_isr:
        return next(r for r in order if r in live_isr), live_isr
    if unclean:
        leader = next((r for r in order if eligible(r)), None)
        if leader is not None:
            return leader, (leader,)
    return None


def preferred_leader(
    replicas: tuple[int, ...], isr: Iterable[int], eligible: Callable[[int], bool]
) -> int | None:
    """The first assigned replica, when it may lead (eligible and in the ISR)."""
    if not replicas:
        return None
    preferred = replicas[0]
    return preferred if eligible(preferred) and preferred in set(isr) else None


def controlled_shutdown_leader(
    replicas: Iterable[int], isr: Iterable[int], registered: Iterable[int], shutting_down: Iterable[int]
) -> tuple[int, tuple[int, ...]] | None:
    """Leader and ISR moving leadership off shutting-down brokers; None when no ISR member can take it."""
    in_isr, alive, leaving = tuple(isr), set(registered), set(shutting_down)
    leader = next((r for r in replicas if r in alive and r in in_isr and r not in leaving), None)
    if leader is None:
        return None
    return leader, tuple(r for r in in_isr if r not in leaving)


def imbalanced_partitions(
    states: Mapping[TopicPartition, tuple[tuple[int, ...], int, tuple[int, ...]]],
    eligible: Callable[[int], bool],
    percentage: int,
) -> list[TopicPartition]:
    """Partitions to hand back to their preferred replica: ``states`` maps a partition to (replicas, leader,
    ISR). Per eligible preferred broker B, when the share of B's preferred partitions it does not lead is above
    ``percentage``, those whose leader is not B and where B may lead (in the ISR)."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp, (replicas, _, _) in states.items():
        if replicas:
            by_preferred.setdefault(replicas[0], []).append(tp)
    chosen: list[TopicPartition] = []
    for broker, tps in sorted(by_preferred.items()):
        if not eligible(broker):
            continue
        not_led = [tp for tp in tps if states[tp][1] != broker]
        if len(not_led) * 100 > percentage * len(tps):
            chosen += [tp for tp in not_led if broker in states[tp][2]]
    return sorted(chosen)


# --- the controller's side ---------------------------------------------------------------------------------


class Elections:
    """The election logic of one controller (module doc). Event-loop thread only; state changes run as
    controller events."""

    def __init__(self, controller: ControllerContext) -> None:
        self.controller = controller
        self.config = ElectionConfig()
        self.shutting_down: dict[int, int] = {}  # broker id -> broker epoch of the registration shutting down
        self._rebalance: asyncio.Task[None] | None = None

    # --- who may lead -------------------------------------------------------------------------------------

    def is_shutting_down(self, broker_id: int) -> bool:
        epoch = self.shutting_down.get(broker_id)
        known = self.controller.live.get(broker_id)
        return epoch is not None and known is not None and known[1] == epoch

    def eligible(self, broker_id: int) -> bool:
        """Registered and not shutting down: may lead or join an ISR."""
        return broker_id in self.controller.live and not self.is_shutting_down(broker_id)

    # --- events ---------------------------------------------------------------------------------------------

    # --- unclean election of offline partitions ---------------------------------------------------------

    async def unclean_allowed(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable``, else this controller's broker default."""
        overrides = await self.controller.zk_call(self.controller.zk.topic_config, topic)
        value = overrides.get("unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return value.strip().lower() == "true"

    async def elect_unclean(self, tp: TopicPartition, entry: PartitionEntry) -> PartitionState | None:
        """The state of an offline partition with no eligible ISR member when unclean election is allowed (and
        an eligible replica exists), else None. Logs the loss."""
        state = entry.state
        if state is None or not any(self.eligible(r) for r in entry.replicas):
            return None
        if not await self.unclean_allowed(tp.topic):
            return None
        return self._unclean_state(tp, entry, state)

    def _unclean_state(
        self, tp: TopicPartition, entry: PartitionEntry, state: PartitionState
    ) -> PartitionState | None:
        chosen = offline_leader(entry.replicas, (), self.eligible, unclean=True)
        if chosen is None:
            return None
        leader, isr = chosen
        epoch = state.leader_epoch + 1
        log.warning(
            "controller: unclean leader election for %s: broker %d leads at epoch %d, though it was not in the "
            "ISR %s (old leader %d, epoch %d); records of earlier epochs it lacks are lost (each returning "
            "replica logs the offsets it truncates)",
            tp,
            leader,
            epoch,
            list(state.isr),
            state.leader if state.leader >= 0 else (state.isr[0] if state.isr else NO_LEADER),
            state.leader_epoch,
        )
        return PartitionState(leader, epoch, isr, self.controller.epoch)

    async def topic_config_changed(self, topic: str) -> None:
        """A topic's overrides changed: offline partitions of it are elected again (unclean may be on now)."""

        async def work() -> None:
            controller = self.controller
            if not controller.is_active:
                return
            mine = {tp: e for tp, e in controller.partitions.items() if tp.topic == topic}
            changed = await controller.elect_offline(mine)
            controller.send_leader_and_isr(changed, is_new=False)
            controller.send_update_metadata(controller.live, changed)

        if self.controller.is_active:
            await self.controller.run_event("topic_config_changed", work)

    # --- controlled shutdown ------------------------------------------------------------------------------

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        """ControlledShutdown from ``broker_id``: the error and the partitions it still leads."""
        return await self.controller.run_event(
            "controlled_shutdown", lambda: self._controlled_shutdown(broker_id, broker_epoch)
        )

    async def _controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        controller = self.controller
        if not controller.is_active:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        known = controller.live.get(broker_id)
        if known is None:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        if broker_epoch != -1 and broker_epoch < known[1]:
            return ErrorCode.STALE_BROKER_EPOCH, []
        started = time.monotonic()
        self.shutting_down[broker_id] = known[1]
        led: dict[TopicPartition, PartitionEntry] = {}
        followed: dict[TopicPartition, PartitionEntry] = {}
        for tp, entry in controller.partitions.items():
            state = entry.state
            if state is None or len(entry.replicas) <= 1 or broker_id not in entry.replicas:
                continue
            (led if state.leader == broker_id else followed)[tp] = entry
        moved = await self._move_leaders(led, [b for b in controller.live if self.is_shutting_down(b)])
        controller.send_leader_and_isr(moved, is_new=False)
        controller.send_update_metadata(controller.live, moved)
        self._stop_replicas(broker_id, followed)
        shrunk = await self._remove_from_isr(broker_id, followed)
        controller.send_leader_and_isr(shrunk, is_new=False)
        controller.send_update_metadata(controller.live, shrunk)
        remaining = sorted(
            tp
            for tp, entry in controller.partitions.items()
            if entry.state is not None and entry.state.leader == broker_id and len(entry.replicas) > 1
        )
        log.info(
            "controller: controlled shutdown of broker %d: %d leaderships moved, %d ISRs shrunk, %d partitions "
            "still led, in %.0f ms",
            broker_id,
            len(moved),
            len(shrunk),
            len(remaining),
            (time.monotonic() - started) * 1000,
        )
        return ErrorCode.NONE, remaining

    async def _move_leaders(
        self, led: dict[TopicPartition, PartitionEntry], leaving: Iterable[int]
    ) -> dict[TopicPartition, PartitionEntry]:
        """The controlled-shutdown election for the partitions ``led`` by brokers ``leaving``: the partitions
        whose leadership moved (their new states written)."""
        controller = self.controller
        changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        leaving = tuple(leaving)
        for tp, entry in led.items():
            state = entry.state
            assert state is not None
            chosen = controlled_shutdown_leader(entry.replicas, state.isr, controller.live, leaving)
            if chosen is not None:
                leader, isr = chosen
                changes[tp] = entry, PartitionState(leader, state.leader_epoch + 1, isr, controller.epoch)
        await self.controller.write_states(changes)
        return {tp: entry for tp, (entry, _) in changes.items()}

    async def _remove_from_isr(
        self, broker_id: int, followed: dict[TopicPartition, PartitionEntry]
    ) -> dict[TopicPartition, PartitionEntry]:
        """OfflineReplica for ``broker_id`` on partitions it follows: out of the ISR (unless the last member),
        leader epoch + 1."""
        controller = self.controller
        changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        for tp, entry in followed.items():
            state = entry.state
            assert state is not None
            if broker_id in state.isr and len(state.isr) > 1:
                isr = tuple(r for r in state.isr if r != broker_id)
                changes[tp] = (
                    entry,
                    PartitionState(state.leader, state.leader_epoch + 1, isr, controller.epoch),
                )
        await self.controller.write_states(changes)
        return {tp: entry for tp, (entry, _) in changes.items()}

    def _stop_replicas(self, broker_id: int, partitions: dict[TopicPartition, PartitionEntry]) -> None:
        """StopReplica without delete to ``broker_id`` for ``partitions`` (its fetchers stop)."""
        self.controller.send_stop_replica(partitions, to={broker_id}, delete=False)

    # --- a broker's full disk -----------------------------------------------------------------------------

    async def log_dir_failed(self, brokers: set[int]) -> None:
        """``brokers`` found a log dir full as leaders (a log dir event): each partition one of them leads moves
        to the first in-sync replica of another live broker, in assignment order, and the ISR loses them (the
        controlled-shutdown election with them as the ones leaving); a partition with no such replica keeps its
        leader. Called as a controller event."""
        controller = self.controller
        led = {
            tp: entry
            for tp, entry in controller.partitions.items()
            if entry.state is not None and entry.state.leader in brokers and len(entry.replicas) > 1
        }
        moved = await self._move_leaders(led, brokers)
        controller.send_leader_and_isr(moved, is_new=False)
        controller.send_update_metadata(controller.live, moved)
        log.warning(
            "controller: a log dir of broker(s) %s is full: %d leaderships moved to in-sync followers, %d kept "
            "(no other replica in sync)",
            ",".join(str(b) for b in sorted(brokers)),
            len(moved),
            len(led) - len(moved),
        )

    # --- ElectLeaders ---------------------------------------------------------------------------------------

    async def elect_leaders(
        self, election_type: ElectionType, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[ErrorCode, int]]:
        """Elect as asked; per partition the error and the leader elected (-1 on error). ``partitions`` None:
        every partition, and ELECTION_NOT_NEEDED ones are left out."""
        return await self.controller.run_event(
            "elect_leaders", lambda: self._elect_leaders(election_type, partitions)
        )

    async def _elect_leaders(
        self, election_type: ElectionType, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, tuple[ErrorCode, int]]:
        controller = self.controller
        asked = sorted(controller.partitions) if partitions is None else partitions
        if not controller.is_active:
            return {tp: (ErrorCode.NOT_CONTROLLER, NO_LEADER) for tp in asked}
        answers: dict[TopicPartition, tuple[ErrorCode, int]] = {}
        changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        for tp in asked:
            entry = controller.partitions.get(tp)
            if entry is None or entry.state is None:
                answers[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_LEADER)
                continue
            if election_type is ElectionType.PREFERRED:
                error, new = self._preferred(entry)
            else:
                error, new = self._unclean(tp, entry)
            if new is not None:
                changes[tp] = entry, new
                answers[tp] = (ErrorCode.NONE, new.leader)
            elif not (partitions is None and error is ErrorCode.ELECTION_NOT_NEEDED):
                answers[tp] = (error, NO_LEADER)
        await self.controller.write_states(changes)
        changed = {tp: entry for tp, (entry, _) in changes.items()}
        controller.send_leader_and_isr(changed, is_new=False)
        controller.send_update_metadata(controller.live, changed)
        if changed:
            log.info("controller: %s election moved %d leaderships", election_type.name.lower(), len(changed))
        return answers

    def _preferred(self, entry: PartitionEntry) -> tuple[ErrorCode, PartitionState | None]:
        state = entry.state
        assert state is not None
        if entry.replicas and state.leader == entry.replicas[0]:
            return ErrorCode.ELECTION_NOT_NEEDED, None
        leader = preferred_leader(entry.replicas, state.isr, self.eligible)
        if leader is None:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.NONE, PartitionState(
            leader, state.leader_epoch + 1, state.isr, self.controller.epoch
        )

    def _unclean(self, tp: TopicPartition, entry: PartitionEntry) -> tuple[ErrorCode, PartitionState | None]:
        state = entry.state
        assert state is not None
        if self.eligible(state.leader):
            return ErrorCode.ELECTION_NOT_NEEDED, None
        clean = offline_leader(entry.replicas, state.isr, self.eligible, unclean=False)
        if clean is not None:
            leader, isr = clean
            return ErrorCode.NONE, PartitionState(leader, state.leader_epoch + 1, isr, self.controller.epoch)
        new = self._unclean_state(tp, entry, state)
        if new is None:
            return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
        return ErrorCode.NONE, new

    # --- automatic rebalance --------------------------------------------------------------------------------

    def became_active(self) -> None:
        """Failover done: the automatic rebalance starts (first check in 5 s)."""
        self.shutting_down.clear()
        if self._rebalance is None and self.config.auto_leader_rebalance_enable:
            self._rebalance = asyncio.get_running_loop().create_task(
                self._rebalance_periodically(), name="samsa-leader-rebalance"
            )

    def resigned(self) -> None:
        self.shutting_down.clear()
        if self._rebalance is not None:
            self._rebalance.cancel()
            self._rebalance = None

    async def _rebalance_periodically(self) -> None:
        await asyncio.sleep(FIRST_REBALANCE_DELAY_S)
        while True:
            try:
                await self.controller.run_event("auto_leader_rebalance", self._rebalance_once)
            except asyncio.CancelledError:
                raise
            except Exception:
                # the controller's event loop said it: one INFO line when the ZooKeeper session was away (the next
                # check runs with the session back), an ERROR with the traceback otherwise
                pass
            await asyncio.sleep(self.config.leader_imbalance_check_interval_s)

    async def _rebalance_once(self) -> None:
        controller = self.controller
        if not controller.is_active:
            return
        states = {
            tp: (e.replicas, e.state.leader, e.state.isr)
            for tp, e in controller.partitions.items()
            if e.state is not None
        }
        chosen = imbalanced_partitions(
            states, self.eligible, self.config.leader_imbalance_per_broker_percentage
        )
        if chosen:
            log.info("controller: leaders imbalanced, preferred election for %d partitions", len(chosen))
            await self._elect_leaders(ElectionType.PREFERRED, chosen)
