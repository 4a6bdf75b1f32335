"""The services request handlers use, passed to them by name, as Kafka's ``KafkaApis`` takes its collaborators.

``BrokerServices`` holds the replica manager, the log manager (topic defaults), the group coordinator, the metadata
view (``MetadataStore``), the broker's config (static, and with its dynamic values: ``dynamic_config``), node id
and clock, and in cluster mode the broker's ZooKeeper side
as the handlers use it (``ZkSupport``: the controller module, the metadata cache, the fence on controller
requests). The ``KafkaServer`` builds it and the request dispatcher hands it to each handler in the
``RequestContext``; no handler sees the server.

Two services are made at their first use, through a provider (``Lazy``): the group coordinator (a broker without
groups never imports ``samsa.coordinator``) and the metadata store (its modules, and ``uuid``, wait for the first
request that needs the catalog).

Event-loop thread only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from samsa.clock import Clock
    from samsa.cluster.controller import Controller
    from samsa.cluster.metadata_cache import MetadataCache
    from samsa.coordinator import GroupCoordinator
    from samsa.metrics.broker_metrics import BrokerMetrics
    from samsa.protocol import ErrorCode
    from samsa.protocol.messages.leader_and_isr import LeaderAndIsrRequest, LeaderAndIsrResponse
    from samsa.security.authorizer import AclAuthorizer
    from samsa.security.scram import ScramCredentialCache
    from samsa.storage.log_manager import LogManager
    from samsa.topic_partition import TopicPartition
    from samsa.transaction.coordinator import TransactionCoordinator

    from .config import KafkaConfig
    from .dynamic_config import DynamicBrokerConfig
    from .fetch_sessions import FetchSessions
    from .metadata_store import MetadataStore
    from .quotas import QuotaManager
    from .replica_manager import ReplicaManager

    TransactionVerifier = Callable[
        [str, int, int, list[tuple[str, int]]], Awaitable[dict[tuple[str, int], ErrorCode]]
    ]

__all__ = ["BrokerServices", "Lazy", "LazyGroupCoordinator", "ZkSupport"]

_T = TypeVar("_T")


class ZkSupport(Protocol):
    """What request handlers use of a cluster broker's ZooKeeper side (Kafka's ``ZkSupport``);
    ``zk_broker.ZkBroker`` is the implementation."""

    @property
    def controller(self) -> Controller:
        """This broker's controller module (active or not)."""
        ...

    @property
    def metadata(self) -> MetadataCache:
        """The metadata cache the controller feeds with UpdateMetadata."""
        ...

    def fence_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """Kafka's checks of a request from a controller (NONE: serve it)."""
        ...

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        """Lead or follow each partition a fenced LeaderAndIsr names."""
        ...

    def replica_stopped(self, tp: TopicPartition, deleted: bool) -> None:
        """A StopReplica was applied to ``tp``."""
        ...

    def log_storage_failure(self, tp: TopicPartition, exc: BaseException) -> None:
        """Log (throttled) a storage failure of ``tp``."""
        ...

    async def broker_config(self, broker: str) -> dict[str, str]:
        """A broker's dynamic configs (``broker``: an id, or ``<default>``)."""
        ...

    async def set_broker_config(self, broker: str, config: dict[str, str]) -> None:
        """Store a broker's dynamic configs for the cluster."""
        ...

    async def quota_configs(self) -> dict[str, dict[str, str]]:
        """Every client quota entity's configs in ZooKeeper, by path under ``/config``."""
        ...

    async def set_entity_config(self, path: str, config: dict[str, str]) -> None:
        """Store the configs of the entity at ``/config/<path>`` for the cluster (client quotas)."""
        ...


class Lazy(Generic[_T]):
    """A provider: calling it makes its service the first time (``make()``) and returns that one after.
    Event-loop thread only."""

    def __init__(self, make: Callable[[], _T]) -> None:
        self._make = make
        self.made: _T | None = None

    def __call__(self) -> _T:
        if self.made is None:
            self.made = self._make()
        return self.made


class LazyGroupCoordinator(Lazy["GroupCoordinator"]):
    """The group coordinator's provider: made (and ``samsa.coordinator`` imported) when first needed, at the
    broker's start when ``__consumer_offsets`` exists, else at the first group request; started at once when made
    while the broker runs."""

    def __init__(self, make: Callable[[], GroupCoordinator]) -> None:
        super().__init__(make)
        self.running = False

    def __call__(self) -> GroupCoordinator:
        if self.made is None:
            self.made = self._make()
            if self.running:
                self.made.startup()
        return self.made

    def start(self, needed: bool) -> None:
        """The broker starts: make the coordinator now if ``needed`` (stored groups to rebuild), start it if
        made, and start the ones made from now on."""
        if self.made is None and needed:
            self.made = self._make()
        if self.made is not None:
            self.made.startup()
        self.running = True


@dataclass(frozen=True, slots=True)
class BrokerServices:
    """What the handlers use (module doc). Frozen: a handler cannot swap a service."""

    node_id: int
    config: KafkaConfig
    clock: Clock
    replica_manager: ReplicaManager
    log_manager: LogManager
    zk_support: ZkSupport | None  # None: the single-broker default, no controller
    group_coordinator_provider: Callable[[], GroupCoordinator]
    metadata_store_provider: Callable[[], MetadataStore]
    dynamic_config: DynamicBrokerConfig  # the broker's config with its dynamic values over it
    quotas: QuotaManager  # the client quotas and the rates measured against them
    metrics: BrokerMetrics | None = None  # None: metrics.prometheus.port is not set, nothing is measured
    # made at the first transactional request (``samsa.transaction`` imported then); None: not offered
    transaction_coordinator_provider: Callable[[], TransactionCoordinator] | None = None
    authorizer: AclAuthorizer | None = None  # None: authorizer.class.name unset, every request is allowed
    # the SCRAM credentials SASL listeners authenticate against (None: a broker built without them, e.g. in tests)
    scram_credentials: ScramCredentialCache | None = None
    # KIP-890: (transactional id, producer id, epoch, partitions) -> per partition NONE when it is in the producer's
    # open transaction, as its coordinator says; None: transaction.partition.verification.enable=false
    verify_transaction: TransactionVerifier | None = None
    # the leader's incremental fetch sessions (KIP-227), for followers
    fetch_sessions: FetchSessions = field(kw_only=True)

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self.group_coordinator_provider()

    @property
    def group_coordinator_made(self) -> GroupCoordinator | None:
        """The group coordinator when it has been made (None: no group was asked for yet)."""
        provider = self.group_coordinator_provider
        return provider.made if isinstance(provider, Lazy) else provider()

    @property
    def transaction_coordinator(self) -> TransactionCoordinator | None:
        """The transaction coordinator (None where the broker offers none)."""
        provider = self.transaction_coordinator_provider
        return provider() if provider is not None else None

    @property
    def metadata_store(self) -> MetadataStore:
        """The catalog handlers answer from: ZooKeeper's in cluster mode, this broker's own alone."""
        return self.metadata_store_provider()
