"""Creating topics in cluster mode: any broker writes the new topic to ZooKeeper; the controller does the rest.

As Kafka's ZooKeeper admin client: Kafka's checks (:func:`topic_admin.check_new_topic`, against the live brokers
of the metadata cache), replicas placed by :func:`samsa.cluster.assignment.assign_replicas` (rack-aware when the
brokers have racks), a random topic id, the config znode before the assignment znode. The controller sees the new
topic, elects leaders and tells the replicas (LeaderAndIsr) and every broker (UpdateMetadata).
:func:`wait_for_leaders` lets CreateTopics answer once the partitions have leaders, up to the request's timeout.

Event-loop thread only; ZooKeeper calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from samsa.cluster.assignment import AssignmentError, assign_replicas
from samsa.cluster.zk_client import TopicZnodeExistsError
from samsa.cluster.znodes import TopicAssignment
from samsa.new_topic import NewTopic
from samsa.protocol import ErrorCode

from .topic_admin import (
    OK,
    AdminResult,
    already_exists,
    check_added_assignment,
    check_delete,
    check_new_topic,
    check_partition_count,
)

if TYPE_CHECKING:
    from samsa.clock import Clock
    from samsa.storage.log_manager import LogManager

    from .config import KafkaConfig
    from .zk_broker import ZkBroker

WAIT_STEP_S = 0.02
ZOOKEEPER_CALL_TIMEOUT_S = 5.0
# Metadata changes wait while ZooKeeper is away; the request is answered at once rather than held (a client's
# connection serves one request at a time, so a held admin request would stall its fetches too).
ZOOKEEPER_AWAY = AdminResult(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper is not reachable; try again")


async def create_topic(
    zk_broker: ZkBroker,
    config: KafkaConfig,
    log_manager: LogManager,
    clock: Clock,
    topic: NewTopic,
    *,
    validate_only: bool = False,
) -> AdminResult:
    """Write ``topic`` to ZooKeeper with Kafka's placement (or the request's own), or say why not (Kafka's error
    codes, checked against ``config``'s and ``log_manager``'s defaults); ``clock`` draws the placement and the
    topic id."""
    if zk_broker.metadata.partitions_of(topic.name):
        return already_exists(topic.name)
    alive = {node.broker_id: node.rack for node in zk_broker.metadata.alive_brokers()}
    # an explicit assignment may name brokers that are down (Kafka's ZooKeeper mode does not check them): the
    # replication factor is checked against the brokers it names, which are its own
    named = {b for replicas in (topic.assignments or {}).values() for b in replicas}
    checked, partitions, replication_factor = check_new_topic(
        config, log_manager, topic, brokers=len(alive) if topic.assignments is None else len(named)
    )
    if not checked.ok:
        return checked
    placement = _placement(clock, topic, alive, partitions, replication_factor)
    if isinstance(placement, AdminResult):
        return placement
    if validate_only:
        return OK
    if not zk_broker.zk.connected:
        return ZOOKEEPER_AWAY
    topic_id = base64.urlsafe_b64encode(uuid.UUID(int=clock.random().getrandbits(128)).bytes)
    assignment = TopicAssignment(
        {p: tuple(replicas) for p, replicas in placement.items()}, topic_id.decode().rstrip("=")
    )
    configs = {k: str(v) for k, v in topic.configs.items()}
    try:
        await asyncio.wait_for(
            asyncio.to_thread(zk_broker.zk.create_topic, topic.name, assignment, configs),
            ZOOKEEPER_CALL_TIMEOUT_S,
        )
    except TopicZnodeExistsError as exc:
        return AdminResult(ErrorCode.TOPIC_ALREADY_EXISTS, str(exc))
    except asyncio.TimeoutError:
        return ZOOKEEPER_AWAY
    return OK


def _placement(
    clock: Clock,
    topic: NewTopic,
    alive: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
) -> Mapping[int, Sequence[int]] | AdminResult:
    """The new topic's replicas (partition -> broker ids) over the ``alive`` brokers (id -> rack): the request's
    own placement once checked (``_check_placement``), else Kafka's; or why there is none."""
    if topic.assignments is not None:
        wrong = _check_placement(topic.assignments)
        if wrong is not None:
            return AdminResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT, wrong)
        return topic.assignments
    try:
        return assign_replicas(alive, partitions, replication_factor, rng=clock.random())
    except AssignmentError as exc:
        return AdminResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))


async def add_partitions(
    zk_broker: ZkBroker,
    clock: Clock,
    topic: str,
    total: int,
    assignments: Sequence[Sequence[int]] | None = None,
    *,
    validate_only: bool = False,
) -> AdminResult:
    """Grow ``topic`` to ``total`` partitions, the new ones on the brokers ``assignments`` names, or placed as
    Kafka places them (start index: where the topic's partition 0 leads, numbering on from the existing
    partitions)."""
    if not zk_broker.zk.connected:
        return ZOOKEEPER_AWAY
    current = await asyncio.to_thread(zk_broker.zk.topic_assignment, topic)
    count = len(current.partitions) if current is not None else 0
    checked = check_partition_count(topic, count, total)
    if current is None or not checked.ok:
        return checked
    alive = {node.broker_id: node.rack for node in zk_broker.metadata.alive_brokers()}
    replication = len(current.partitions[0])
    if assignments is not None:
        checked = check_added_assignment(count, total, replication, assignments, alive)
        if not checked.ok or validate_only:
            return checked
        placed = {count + i: tuple(replicas) for i, replicas in enumerate(assignments)}
        return await _grow(zk_broker, topic, current, placed, total)
    ordered = sorted(alive)
    first = current.partitions[0][0]
    start = ordered.index(first) if first in ordered else None
    try:
        added = assign_replicas(
            alive,
            total - count,
            replication,
            start_index=start,
            first_partition=count,
            rng=clock.random(),
        )
    except AssignmentError as exc:
        return AdminResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
    if validate_only:
        return OK
    return await _grow(zk_broker, topic, current, {p: tuple(r) for p, r in added.items()}, total)


async def _grow(
    zk_broker: ZkBroker,
    topic: str,
    current: TopicAssignment,
    added: Mapping[int, tuple[int, ...]],
    total: int,
) -> AdminResult:
    """Write the topic's assignment with the ``added`` partitions; wait (5 s at most) for the metadata."""
    partitions = {**current.partitions, **added}
    grown = TopicAssignment(partitions, current.topic_id, current.adding_replicas, current.removing_replicas)
    await asyncio.to_thread(zk_broker.zk.set_topic_assignment, topic, grown)
    await _wait(lambda: len(zk_broker.metadata.partitions_of(topic)) >= total, 5_000)
    return OK


async def delete_topic(zk_broker: ZkBroker, config: KafkaConfig, topic: str, timeout_ms: int) -> AdminResult:
    """Ask the controller to delete ``topic``; wait up to ``timeout_ms`` for this broker to see it gone."""
    checked = check_delete(config, exists=bool(zk_broker.metadata.partitions_of(topic)))
    if not checked.ok:
        return checked
    if not zk_broker.zk.connected:
        return ZOOKEEPER_AWAY
    await asyncio.to_thread(zk_broker.zk.mark_topic_for_deletion, topic)
    if not await _wait(lambda: not zk_broker.metadata.partitions_of(topic), timeout_ms):
        return AdminResult(ErrorCode.REQUEST_TIMED_OUT, f"Topic '{topic}' is being deleted.")
    return OK


def _check_placement(placement: Mapping[int, Sequence[int]]) -> str | None:
    """Why an explicit replica assignment cannot be used (None: it can). Brokers that are down, or not
    registered yet, may be named, as in Kafka: a partition is led once one of its replicas is live."""
    if sorted(placement) != list(range(len(placement))):
        return "Partitions of the replica assignment must be numbered 0 .. n-1."
    sizes = {len(replicas) for replicas in placement.values()}
    if len(sizes) != 1:
        return "All partitions must have the same number of replicas."
    for partition, replicas in placement.items():
        if len(set(replicas)) != len(replicas):
            return f"Duplicate brokers in the replica assignment of partition {partition}: {list(replicas)}."
        if min(replicas, default=0) < 0:
            return (
                f"Negative broker ids in the replica assignment of partition {partition}: {list(replicas)}."
            )
    return None


async def wait_for_leaders(zk_broker: ZkBroker, topic: str, timeout_ms: int) -> bool:
    """Whether every partition of ``topic`` has a leader in this broker's metadata within ``timeout_ms``."""

    def elected() -> bool:
        partitions = zk_broker.metadata.partitions_of(topic)
        return bool(partitions) and all(p.leader >= 0 for p in partitions)

    return await _wait(elected, timeout_ms)


async def _wait(done: Callable[[], bool], timeout_ms: int) -> bool:
    """Whether ``done()`` holds within ``timeout_ms`` (checked every few milliseconds on the event loop)."""
    deadline = asyncio.get_running_loop().time() + max(timeout_ms, 0) / 1000
    while not done():
        if asyncio.get_running_loop().time() >= deadline:
            return False
        await asyncio.sleep(WAIT_STEP_S)
    return True
