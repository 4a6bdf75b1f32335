"""The cluster's catalog as request handlers see it, behind one interface with two implementations.

What handlers read: the live brokers (their addresses on the listener a request came in on), the controller, the
topics with their ids and config overrides, and each partition's leader, leader epoch, replicas and ISR. What they
ask to change: create, grow and delete topics, replace a topic's overrides; take a producer id.

- ``LocalMetadataStore``, the single-broker default (no ``zookeeper.connect``): this broker is the whole cluster
  and its controller; the catalog is the partitions it hosts, each led by it alone; changes are made at once on its
  own log manager (``topic_admin``), topic ids are derived from names, producer ids come from its own file.
- ``ZkMetadataStore``, cluster mode: reads come from the metadata cache the controller feeds with UpdateMetadata,
  so every broker tells clients the same leaders; changes are written to ZooKeeper in Kafka's layout
  (``cluster_admin``) and the controller carries them out (a created topic has no leader until it elected one).

Handlers hold no ``if cluster`` branches for these: Metadata, DescribeCluster, FindCoordinator, CreateTopics,
CreatePartitions, DeleteTopics, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and InitProducerId answer
through the store. Produce, Fetch and ListOffsets answer from the replica
manager, which knows from the same store what this broker leads (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH).

Event-loop thread only.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from samsa.cluster.metadata_cache import BrokerNode, PartitionInfo
from samsa.new_topic import NewTopic
from samsa.protocol import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition, is_internal

from . import topic_admin
from .topic_admin import AdminResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from samsa.clock import Clock
    from samsa.coordinator import GroupCoordinator
    from samsa.storage.log_manager import LogManager

    from .config import KafkaConfig
    from .producer_ids import ProducerIdManager
    from .replica_manager import ReplicaManager
    from .zk_broker import ZkBroker

__all__ = ["LocalMetadataStore", "MetadataStore", "Node", "ZkMetadataStore"]


@dataclass(frozen=True, slots=True)
class Node:
    """A live broker as a client reaches it on one listener."""

    broker_id: int
    host: str
    port: int
    rack: str | None = None


class MetadataStore(Protocol):
    """The catalog and its changes (module doc)."""

    def cluster_id(self) -> str:
        """The cluster's id (cluster mode: the one ZooKeeper holds)."""
        ...

    def controller_id(self) -> int: ...

    def catalog_known(self) -> bool:
        """Whether leaders are known (cluster mode: the controller's first UpdateMetadata since this broker
        started). Before, ``alive_brokers`` and ``topics`` give what ZooKeeper holds (``set_provisional``), and
        handlers answer every topic LEADER_NOT_AVAILABLE: retriable, and no client drops what it knew for it."""
        ...

    async def wait_for_catalog(self, timeout_s: float) -> bool:
        """``catalog_known``, waiting up to ``timeout_s`` for it."""
        ...

    def alive_brokers(self, listener: str) -> list[Node]: ...

    def is_alive(self, broker_id: int) -> bool: ...

    def topics(self) -> set[str]: ...

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions in partition order (empty: unknown, or not yet led anywhere)."""
        ...

    def topic_id(self, topic: str) -> uuid.UUID: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic whose id is ``topic_id`` (None: none here), for requests that name topics by id (Fetch
        v13+, as Kafka's followers send it)."""
        ...

    async def create_topic(
        self, topic: NewTopic, *, validate_only: bool = False, timeout_ms: int = 30_000
    ) -> AdminResult:
        """Create ``topic`` (or only check it); answers once its partitions have leaders, up to ``timeout_ms``."""
        ...

    async def auto_create_topic(self, topic: str) -> AdminResult:
        """Create a topic a client named (``auto.create.topics.enable``), with the broker's defaults."""
        ...

    async def create_partitions(
        self,
        topic: str,
        total: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> AdminResult:
        """Grow ``topic`` to ``total`` partitions, the new ones on the brokers ``assignments`` names (one list per
        new partition; None: placed by the broker)."""
        ...

    async def delete_topic(self, topic: str, timeout_ms: int) -> AdminResult: ...

    async def next_producer_id(self) -> int: ...

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's own config overrides (empty: none)."""
        ...

    async def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        """Replace the topic's overrides; every broker holding the topic applies them."""
        ...

    async def ensure_offsets_topic(self) -> ErrorCode:
        """``__consumer_offsets`` exists and is led (NONE), or is being created (COORDINATOR_NOT_AVAILABLE)."""
        ...

    async def ensure_transaction_topic(self) -> ErrorCode:
        """``__transaction_state`` exists and is led (NONE), or is being created (COORDINATOR_NOT_AVAILABLE)."""
        ...


class LocalMetadataStore:
    """The single-broker default's catalog: this broker's own partitions (module doc). ``advertised()`` is the
    host and port clients are told; ``group_coordinator()`` and ``transaction_coordinator()`` provide the
    coordinators, made at their first use."""

    def __init__(
        self,
        cluster_id: str,
        config: KafkaConfig,
        advertised: Callable[[str], tuple[str, int]],
        replica_manager: ReplicaManager,
        log_manager: LogManager,
        producer_ids: ProducerIdManager,
        group_coordinator: Callable[[], GroupCoordinator],
        transaction_coordinator: Callable[[], object] = lambda: None,
    ) -> None:
        self._transaction_coordinator = transaction_coordinator
        self._cluster_id = cluster_id
        self._node_id = config.node_id
        self._config = config
        self._advertised = advertised
        self._replica_manager = replica_manager
        self._log_manager = log_manager
        self._producer_ids = producer_ids
        self._group_coordinator = group_coordinator
        self._names_by_id: dict[uuid.UUID, str] = {}

    def cluster_id(self) -> str:
        return self._cluster_id

    def controller_id(self) -> int:
        return self._node_id

    def catalog_known(self) -> bool:
        return True

    async def wait_for_catalog(self, timeout_s: float) -> bool:
        return True

    def alive_brokers(self, listener: str) -> list[Node]:
        host, port = self._advertised(listener)
        return [Node(self._node_id, host, port, self._config.get("broker.rack"))]

    def is_alive(self, broker_id: int) -> bool:
        return broker_id == self._node_id

    def topics(self) -> set[str]:
        return self._replica_manager.topics()

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        manager = self._replica_manager
        infos = []
        for tp in manager.partitions_of(topic):
            partition = manager.partition(tp)
            if partition is not None:
                infos.append(
                    PartitionInfo(
                        tp,
                        partition.leader_id,
                        partition.leader_epoch,
                        partition.replicas,
                        tuple(sorted(partition.isr)),
                    )
                )
        return infos

    def topic_id(self, topic: str) -> uuid.UUID:
        return topic_admin.topic_id(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return _name_of(self, self._names_by_id, topic_id)

    async def create_topic(
        self, topic: NewTopic, *, validate_only: bool = False, timeout_ms: int = 30_000
    ) -> AdminResult:
        return topic_admin.create_topic(
            self._config, self._log_manager, self._replica_manager, topic, validate_only=validate_only
        )

    async def auto_create_topic(self, topic: str) -> AdminResult:
        return topic_admin.auto_create_topic(self._config, self._log_manager, self._replica_manager, topic)

    async def create_partitions(
        self,
        topic: str,
        total: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> AdminResult:
        return topic_admin.add_partitions(
            self._log_manager, self._replica_manager, topic, total, assignments, validate_only=validate_only
        )

    async def delete_topic(self, topic: str, timeout_ms: int) -> AdminResult:
        return topic_admin.delete_topic(self._config, self._log_manager, self._replica_manager, topic)

    async def next_producer_id(self) -> int:
        return self._producer_ids.next_id()

    async def ensure_offsets_topic(self) -> ErrorCode:
        return self._group_coordinator().ensure_offsets_topic()

    async def ensure_transaction_topic(self) -> ErrorCode:
        # a broker alone creates and loads it with its transaction coordinator, made on first use
        return (
            ErrorCode.NONE
            if self._transaction_coordinator() is not None
            else ErrorCode.COORDINATOR_NOT_AVAILABLE
        )

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        return self._log_manager.topic_overrides(topic)

    async def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        self._log_manager.update_topic_config(topic, overrides)


class ZkMetadataStore:
    """Cluster mode's catalog: the controller-fed metadata cache, changes through ZooKeeper (module doc).
    ``registered_addresses()`` are this broker's (listener, host, port) as other brokers and clients are told;
    ``config`` and ``log_manager`` give the defaults a new topic is checked against, ``clock`` draws its
    placement and id."""

    def __init__(
        self,
        zk_broker: ZkBroker,
        config: KafkaConfig,
        log_manager: LogManager,
        clock: Clock,
        registered_addresses: Callable[[], list[tuple[str, str, int]]],
    ) -> None:
        self._zk_broker = zk_broker
        self._cache = zk_broker.metadata
        self._config = config
        self._log_manager = log_manager
        self._clock = clock
        self._registered_addresses = registered_addresses
        self._names_by_id: dict[uuid.UUID, str] = {}

    def cluster_id(self) -> str:
        return self._zk_broker.cluster_id

    def controller_id(self) -> int:
        controller = self._cache.controller_id
        return controller if controller is not None else -1

    def catalog_known(self) -> bool:
        return self._cache.known

    async def wait_for_catalog(self, timeout_s: float) -> bool:
        return await self._cache.wait_known(timeout_s)

    def alive_brokers(self, listener: str) -> list[Node]:
        if self._cache.known:
            known = self._cache.alive_brokers()
        else:  # the brokers registered in ZooKeeper, this one as it listens now (its old registration may linger)
            me = self._config.node_id
            here = {name: (host, port) for name, host, port in self._registered_addresses()}
            known = [b for b in self._cache.provisional_brokers if b.broker_id != me]
            known.append(BrokerNode(me, here, self._config.get("broker.rack")))
            known.sort(key=lambda b: b.broker_id)
        nodes = []
        for node in known:
            address = node.address(listener)
            if address is not None:
                nodes.append(Node(node.broker_id, address[0], address[1], node.rack))
        return nodes

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self._cache.brokers

    def topics(self) -> set[str]:
        return self._cache.topics() if self._cache.known else set(self._cache.provisional_topics)

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        return self._cache.partitions_of(topic)

    def topic_id(self, topic: str) -> uuid.UUID:
        return self._cache.topic_ids.get(topic, uuid.UUID(int=0))

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return _name_of(self, self._names_by_id, topic_id)

    async def create_topic(
        self, topic: NewTopic, *, validate_only: bool = False, timeout_ms: int = 30_000
    ) -> AdminResult:
        from . import cluster_admin

        outcome = await cluster_admin.create_topic(
            self._zk_broker, self._config, self._log_manager, self._clock, topic, validate_only=validate_only
        )
        waited = outcome.ok and not validate_only
        if waited and not await cluster_admin.wait_for_leaders(self._zk_broker, topic.name, timeout_ms):
            return AdminResult(ErrorCode.REQUEST_TIMED_OUT, "Leaders were not elected in time.")
        return outcome

    async def auto_create_topic(self, topic: str) -> AdminResult:
        from . import cluster_admin

        if not self._config.get("auto.create.topics.enable") or is_internal(topic):
            return AdminResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        created = await cluster_admin.create_topic(
            self._zk_broker, self._config, self._log_manager, self._clock, NewTopic(topic)
        )
        if created.error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            return AdminResult(ErrorCode.LEADER_NOT_AVAILABLE)  # until the controller elected its leaders
        return created

    async def create_partitions(
        self,
        topic: str,
        total: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> AdminResult:
        from . import cluster_admin

        return await cluster_admin.add_partitions(
            self._zk_broker, self._clock, topic, total, assignments, validate_only=validate_only
        )

    async def delete_topic(self, topic: str, timeout_ms: int) -> AdminResult:
        from . import cluster_admin

        return await cluster_admin.delete_topic(self._zk_broker, self._config, topic, timeout_ms)

    async def next_producer_id(self) -> int:
        return await self._zk_broker.next_producer_id()

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        return await self._zk_broker.topic_overrides(topic)

    async def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        await self._zk_broker.set_topic_overrides(topic, overrides)

    async def ensure_offsets_topic(self) -> ErrorCode:
        """Create the topic through ZooKeeper on first use, as Kafka does (with ``offsets.topic.replication.factor``
        replicas: more than the live brokers leaves it uncreated, as in Kafka)."""
        from . import cluster_admin

        if self._cache.partitions_of(CONSUMER_OFFSETS_TOPIC):
            return ErrorCode.NONE
        if not self._cache.known:  # it may well exist: the controller has not said yet
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        config = self._config
        offsets_topic = NewTopic(
            CONSUMER_OFFSETS_TOPIC,
            int(config.get("offsets.topic.num.partitions")),
            int(config.get("offsets.topic.replication.factor")),
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.get("offsets.topic.segment.bytes")),
            },
        )
        await cluster_admin.create_topic(
            self._zk_broker, self._config, self._log_manager, self._clock, offsets_topic
        )
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    async def ensure_transaction_topic(self) -> ErrorCode:
        """Create ``__transaction_state`` through ZooKeeper on first use, as Kafka does (with
        ``transaction.state.log.replication.factor`` replicas and ``transaction.state.log.min.isr``)."""
        from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC

        from . import cluster_admin

        if self._cache.partitions_of(TRANSACTION_STATE_TOPIC):
            return ErrorCode.NONE
        if not self._cache.known:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        config = self._config
        state_topic = NewTopic(
            TRANSACTION_STATE_TOPIC,
            int(config.get("transaction.state.log.num.partitions")),
            int(config.get("transaction.state.log.replication.factor")),
            {
                "cleanup.policy": "compact",
                "compression.type": "uncompressed",
                "min.insync.replicas": str(config.get("transaction.state.log.min.isr")),
                "segment.bytes": str(config.get("transaction.state.log.segment.bytes")),
                "unclean.leader.election.enable": "false",
            },
        )
        await cluster_admin.create_topic(
            self._zk_broker, self._config, self._log_manager, self._clock, state_topic
        )
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


def leader_of(store: MetadataStore, tp: TopicPartition, listener: str) -> Node | None:
    """The live broker leading ``tp`` as reached on ``listener`` (None: unknown, no leader, or it is down)."""
    info = next((p for p in store.partitions_of(tp.topic) if p.tp == tp), None)
    if info is None or not store.is_alive(info.leader):
        return None
    return next((n for n in store.alive_brokers(listener) if n.broker_id == info.leader), None)


def _name_of(store: MetadataStore, names: dict[uuid.UUID, str], topic_id: uuid.UUID) -> str | None:
    """``topic_id``'s topic from ``names`` (a store's memo, checked against the store, so a topic deleted or
    created again under a new id is never answered by its old id), rebuilt from the store's topics on a miss."""
    name = names.get(topic_id)
    if name is not None and store.topic_id(name) == topic_id:
        return name
    if topic_id.int == 0:
        return None
    names.clear()
    names.update((store.topic_id(topic), topic) for topic in store.topics())
    return names.get(topic_id)
