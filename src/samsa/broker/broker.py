"""``KafkaServer``: one Samsa broker in this process — storage, partitions, request handling and listeners.

    broker = KafkaServer(KafkaConfig.from_properties({...}))
    await broker.start()          # loads the logs (recovering after an unclean stop), then listens
    ...
    await broker.stop()           # stops listening, flushes, checkpoints, writes .kafka_cleanshutdown

Periodic work (retention, flushes, checkpoints, deletion of ``.deleted`` files, log compaction) runs on a timer
task that calls ``LogManager.schedule_due``; compaction's heavy part runs on the log cleaner's worker thread. Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from samsa.clock import SYSTEM_CLOCK, Clock
from samsa.log_throttle import LogThrottle
from samsa.security.scram import ScramCredentialCache
from samsa.storage import StorageError
from samsa.storage.config import LogConfig
from samsa.storage.log_cleaner import CleanerConfig
from samsa.storage.log_manager import TASK_FAILURE_LOG_INTERVAL_MS, LogManager
from samsa.storage.meta import read_meta_properties
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

from .broker_configs import load_dynamic_config, load_quotas
from .config import ConfigError, KafkaConfig
from .dispatch import RequestDispatcher
from .dynamic_config import DynamicBrokerConfig
from .fetch_sessions import FetchSessions
from .network import ConnectionLimits, Server
from .producer_ids import ProducerIdManager
from .quotas import QuotaManager
from .replica_manager import ReplicaManager
from .replica_offsets_log import ReplicaOffsetsLog
from .services import BrokerServices, Lazy, LazyGroupCoordinator

if TYPE_CHECKING:
    from samsa.coordinator import CoordinatorConfig, GroupCoordinator
    from samsa.metrics.broker_metrics import BrokerMetrics
    from samsa.metrics.http import MetricsServer
    from samsa.security.authorizer import AclAuthorizer
    from samsa.transaction.coordinator import TransactionCoordinator

    from .metadata_store import MetadataStore
    from .replica_transaction_log import RemoteMarkerClient, TransactionVerifier
    from .zk_broker import ZkBroker

log = logging.getLogger(__name__)

SCHEDULER_TICK_S = 1.0


class KafkaServer:
    """A broker: the log manager, the replica manager, the request dispatcher and one server per listener. It
    builds the services the handlers use (``services.BrokerServices``) and hands each its collaborators by name;
    nothing below it sees it."""

    def __init__(self, config: KafkaConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.cluster_id = config.get("cluster.id") or _stored_cluster_id(config.log_dirs) or _new_cluster_id()
        self.log_manager = _log_manager(config, clock, self.cluster_id)
        self.replica_manager = ReplicaManager(
            self.log_manager,
            self.node_id,
            clock,
            replica_lag_time_max_ms=int(config.get("replica.lag.time.max.ms")),
        )
        self.producer_ids = ProducerIdManager([Path(d) for d in config.log_dirs], self._highest_producer_id)
        self._group_coordinator = LazyGroupCoordinator(self._create_group_coordinator)
        self.zk_broker: ZkBroker | None = None
        dynamic_config = DynamicBrokerConfig(config)
        self.quotas = QuotaManager(
            int(config.get("quota.window.num")), int(config.get("quota.window.size.seconds")) * 1000
        )
        self.scram_credentials = ScramCredentialCache()
        if config.get("zookeeper.connect"):
            from .zk_broker import ZkBroker  # cluster mode only: the single broker never imports kazoo

            self.zk_broker = ZkBroker(
                config,
                self.replica_manager,
                self.log_manager,
                self.registered_addresses,
                self.partitions_changed,
                clock,
                dynamic_config,
                self.quotas,
                self.scram_credentials,
            )
        self._metadata_store: Lazy[MetadataStore] = Lazy(self._create_metadata_store)
        self._transaction_coordinator: Lazy[TransactionCoordinator] = Lazy(
            self._create_transaction_coordinator
        )
        self._transaction_tasks: list[asyncio.Task[None]] = []
        self._marker_clients: list[RemoteMarkerClient] = []  # connections to other brokers for markers
        self._verifier: TransactionVerifier | None = None  # made at the first transactional produce
        self.services = BrokerServices(
            node_id=self.node_id,
            config=config,
            clock=clock,
            replica_manager=self.replica_manager,
            log_manager=self.log_manager,
            zk_support=self.zk_broker,
            group_coordinator_provider=self._group_coordinator,
            metadata_store_provider=self._metadata_store,
            dynamic_config=dynamic_config,
            quotas=self.quotas,
            metrics=self._make_metrics(config),
            transaction_coordinator_provider=self._transaction_coordinator,
            authorizer=_create_authorizer(config, clock, self.zk_broker),
            scram_credentials=self.scram_credentials,
            verify_transaction=self._transaction_verifier(config),
            fetch_sessions=FetchSessions(int(config.get("max.incremental.fetch.session.cache.slots"))),
        )
        dynamic_config.listeners.append(self._apply_connection_limits)
        dynamic_config.listeners.append(self._apply_cleaner_config)
        self.dispatcher = RequestDispatcher(self.services)
        self._servers: list[Server] = []
        self._metrics_server: MetricsServer | None = None
        self._limits = ConnectionLimits(
            max_idle_ms=int(config.get("connections.max.idle.ms")),
            max_connections=int(config.get("max.connections")),
            max_per_ip=int(config.get("max.connections.per.ip")),
            per_ip_overrides=ConnectionLimits.parse_overrides(
                str(config.get("max.connections.per.ip.overrides"))
            ),
            backlog=int(config.get("socket.listen.backlog.size")),
        )
        self.bound_addresses: list[tuple[str, str, int]] = []
        self._scheduler: asyncio.Task[None] | None = None
        self._started = False
        self._coordinator_failures = LogThrottle(TASK_FAILURE_LOG_INTERVAL_MS)

    async def start(self) -> None:
        if self.zk_broker is not None:
            stored = _stored_cluster_id(self.config.log_dirs)
            self.cluster_id = await self.zk_broker.connect(
                stored, self.config.get("cluster.id") or self.cluster_id
            )
            self.log_manager.cluster_id = self.cluster_id
        else:  # alone, its dynamic configs are kept in its log dirs: the logs open with the defaults they give
            await load_dynamic_config(self.services)
            await load_quotas(self.services)
        self.log_manager.startup()
        self._started = True
        if self.zk_broker is None:
            self.replica_manager.startup()  # alone: lead every partition on disk; in a cluster the controller says
        # made now when __consumer_offsets exists, to rebuild the groups stored there
        self._group_coordinator.start(needed=bool(self.log_manager.partitions_of(CONSUMER_OFFSETS_TOPIC)))
        max_request = int(self.config.get("socket.request.max.bytes"))
        ssl_listeners = set(self.config.ssl_listeners)
        sasl_listeners = set(self.config.sasl_listeners)
        for name, host, port in self.config.listener_addresses:
            server = Server(
                self.dispatcher.handle,
                listener=name,
                max_request_size=max_request,
                limits=self._limits,
                tls=self.config.tls_context(name) if name in ssl_listeners else None,
                principal_rules=str(self.config.listener_setting(name, "ssl.principal.mapping.rules")),
                sasl=self.config.sasl_settings(name) if name in sasl_listeners else None,
            )
            # in a cluster, connections are taken only once registered (below)
            bound_host, bound_port = await server.start(host, port, accepting=self.zk_broker is None)
            self._servers.append(server)
            self.bound_addresses.append((name, bound_host, bound_port))
        await self._start_metrics()
        self._scheduler = asyncio.create_task(self._run_scheduler(), name="samsa-scheduler")
        if self.zk_broker is not None:
            # Kafka's broker in ZooKeeper mode binds its listeners, registers, and only then processes requests.
            # Serving before registration (while a restarted broker waits out its earlier session, up to 1.5
            # sessions) let clients take it for usable: seen in the nemesis, librdkafka's consumers sent it their
            # FindCoordinator behind a Metadata request it held, and waited 8 s for it.
            await self.zk_broker.register()
            for server in self._servers:
                server.accept_connections()

    def _make_metrics(self, config: KafkaConfig) -> BrokerMetrics | None:
        """The broker's metrics when ``metrics.prometheus.port`` is set (``samsa.metrics``; imported only then)."""
        if config.get("metrics.prometheus.port") is None:
            return None
        from samsa.metrics.broker_metrics import BrokerMetrics

        from . import metric_gauges

        sources = (
            metric_gauges.replica_gauges,
            metric_gauges.log_gauges,
            metric_gauges.controller_gauges,
            metric_gauges.consumer_lag,
            metric_gauges.fetcher_lag,
            metric_gauges.group_coordinator_gauges,
        )
        # read at scrape time, when the services exist
        return BrokerMetrics([functools.partial(lambda source: source(self.services), s) for s in sources])

    async def _start_metrics(self) -> None:
        """Serve ``GET /metrics`` on the first listener's host and ``metrics.prometheus.port``."""
        metrics = self.services.metrics
        if metrics is None:
            return
        from prometheus_client import CollectorRegistry, generate_latest

        from samsa.metrics.http import MetricsServer

        registry = CollectorRegistry(auto_describe=False)
        registry.register(metrics)
        self._metrics_server = MetricsServer(lambda: generate_latest(registry))
        host = self.config.listener_addresses[0][1]
        bound = await self._metrics_server.start(host, int(self.config.get("metrics.prometheus.port")))
        log.info("metrics for Prometheus at http://%s:%d/metrics", *bound)

    def _apply_cleaner_config(self, config: KafkaConfig) -> None:
        """Take the cleaner settings of the config with its dynamic values (the next cleaning pass reads them)."""
        self.log_manager.cleaner.config = cleaner_config(config)

    def _apply_connection_limits(self, config: KafkaConfig) -> None:
        """Take the connection limits of the config with its dynamic values (new connections meet them; open
        ones stay, as in Kafka)."""
        self._limits.max_connections = int(config.get("max.connections"))
        self._limits.max_per_ip = int(config.get("max.connections.per.ip"))
        self._limits.per_ip_overrides = ConnectionLimits.parse_overrides(
            str(config.get("max.connections.per.ip.overrides"))
        )

    def _highest_producer_id(self) -> int:
        """The highest producer id any partition's producer state holds, -1 for none (``ProducerIdManager``)."""
        return max(
            (pid for log in self.log_manager.all_logs().values() for pid in log.producer_state.producers),
            default=-1,
        )

    def _create_metadata_store(self) -> MetadataStore:
        """The catalog handlers answer from: ZooKeeper's in cluster mode, this broker's own alone (made at the
        first request that needs it, through ``services.metadata_store``)."""
        from .metadata_store import LocalMetadataStore, ZkMetadataStore

        if self.zk_broker is not None:
            return ZkMetadataStore(
                self.zk_broker, self.config, self.log_manager, self.clock, self.registered_addresses
            )
        return LocalMetadataStore(
            self.cluster_id,
            self.config,
            self.advertised,
            self.replica_manager,
            self.log_manager,
            self.producer_ids,
            self._group_coordinator,
            self._transaction_coordinator,
        )

    def _transaction_verifier(self, config: KafkaConfig) -> Callable[..., Awaitable[Any]] | None:
        """KIP-890's check of a transaction's first batch on a partition (``TransactionVerifier``), made at the first
        transactional produce; None when ``transaction.partition.verification.enable`` is false."""
        if not config.get("transaction.partition.verification.enable"):
            return None

        async def verify(tid: str, pid: int, epoch: int, partitions: list[tuple[str, int]]) -> Any:
            if self._verifier is None:
                self._verifier = self._make_verifier()
            return await self._verifier(tid, pid, epoch, partitions)

        return verify

    def _make_verifier(self) -> TransactionVerifier:
        from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC, partition_for

        from .replica_transaction_log import TransactionVerifier

        zk = self.zk_broker
        if zk is None:
            return TransactionVerifier(self._transaction_coordinator, node_id=self.node_id)
        count = int(self.config.get("transaction.state.log.num.partitions"))

        def leader_of(transactional_id: str) -> int | None:
            info = zk.metadata.partition(
                TopicPartition(TRANSACTION_STATE_TOPIC, partition_for(transactional_id, count))
            )
            return info.leader if info is not None and info.leader >= 0 else None

        return TransactionVerifier(
            self._transaction_coordinator,
            leader_of,
            zk.broker_address,
            self.node_id,
            f"samsa-verify-{self.node_id}",
            zk.inter_broker_security,
        )

    def partitions_changed(self) -> None:
        """Leadership of hosted partitions changed (cluster mode): the group coordinator loads the groups of the
        ``__consumer_offsets`` partitions this broker now leads and drops the others'; the transaction coordinator
        (made when this broker first leads a ``__transaction_state`` partition) does the same for its ids."""
        if self._group_coordinator.made is not None:
            self._group_coordinator.made.leadership_changed()
        from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC

        led = {
            tp.partition: partition.leader_epoch
            for tp, partition in self.replica_manager.partitions.items()
            if tp.topic == TRANSACTION_STATE_TOPIC and partition.leader_id == self.node_id
        }
        if led or self._transaction_coordinator.made is not None:
            self._sync_transaction_partitions(self._transaction_coordinator(), led)

    def _sync_transaction_partitions(self, coordinator: TransactionCoordinator, led: dict[int, int]) -> None:
        """Load the ``__transaction_state`` partitions this broker now leads (coordinator epoch: the partition's
        leader epoch), unload those it no longer leads."""
        from .replica_transaction_log import ReplicaTransactionStateLog

        state_log = ReplicaTransactionStateLog(
            self.replica_manager, self.log_manager, self.clock.milliseconds
        )
        for partition in coordinator.loaded_partitions():
            if partition not in led:
                coordinator.unload(partition)
        for partition, epoch in sorted(led.items()):
            if coordinator.coordinator_epoch(partition) != epoch:
                coordinator.begin_load(partition, epoch)
                coordinator.load(partition, state_log.records(partition))

    @property
    def group_coordinator(self) -> GroupCoordinator:
        """The group coordinator, created (and ``samsa.coordinator`` imported) when first needed: at start when
        ``__consumer_offsets`` exists, else at the first group request, so a broker without groups never pays
        for it. Started at once when the broker is running."""
        return self._group_coordinator()

    def _create_group_coordinator(self) -> GroupCoordinator:
        from samsa.coordinator import GroupCoordinator

        return GroupCoordinator(
            ReplicaOffsetsLog(self.replica_manager, self.log_manager, clustered=self.zk_broker is not None),
            self.clock,
            _coordinator_config(self.config),
        )

    def _create_transaction_coordinator(self) -> TransactionCoordinator:
        """Made at the first transactional request; a broker alone creates ``__transaction_state`` and loads
        every partition of it (``replica_transaction_log``'s doc says what a cluster lacks yet)."""
        from samsa.transaction.coordinator import TransactionConfig, TransactionCoordinator

        from .replica_transaction_log import LocalMarkerSender, RemoteMarkerClient, ReplicaTransactionStateLog

        state_log = ReplicaTransactionStateLog(
            self.replica_manager, self.log_manager, self.clock.milliseconds
        )
        config = TransactionConfig(
            num_partitions=int(self.config.get("transaction.state.log.num.partitions")),
            max_timeout_ms=int(self.config.get("transaction.max.timeout.ms")),
            abort_timed_out_interval_ms=int(
                self.config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")
            ),
            id_expiration_ms=int(self.config.get("transactional.id.expiration.ms")),
        )

        async def next_producer_id() -> int:
            return await self._metadata_store().next_producer_id()

        def offsets_marker(producer_id: int, commit: bool) -> None:
            if self._group_coordinator.made is not None:
                self._group_coordinator.made.complete_txn_offsets(producer_id, commit)

        zk = self.zk_broker
        if zk is None:
            markers = LocalMarkerSender(self.replica_manager, offsets_marker)
        else:

            def leader_of(tp: TopicPartition) -> int | None:
                info = zk.metadata.partition(tp)
                return info.leader if info is not None and info.leader >= 0 else None

            remote = RemoteMarkerClient(
                zk.broker_address, f"samsa-txn-markers-{self.node_id}", zk.inter_broker_security
            )
            self._marker_clients.append(remote)
            markers = LocalMarkerSender(self.replica_manager, offsets_marker, leader_of, remote)
        coordinator = TransactionCoordinator(state_log, markers, next_producer_id, self.clock, config)
        if self.zk_broker is None:
            for partition in state_log.ensure_topic(config.num_partitions):
                coordinator.begin_load(partition, 0)
                coordinator.load(partition, state_log.records(partition))
        self._transaction_tasks.append(
            asyncio.create_task(coordinator.run_periodic(), name="samsa-transaction-coordinator")
        )
        return coordinator

    def advertised(self, listener: str | None = None) -> tuple[str, int]:
        """The host and port clients of ``listener`` are told to use (advertised.listeners, else what is bound);
        the first listener's without one, or when ``listener`` has none of its own."""
        addresses = self.registered_addresses()
        for name, host, port in addresses:
            if name == listener:
                return host, port
        _, host, port = addresses[0]
        return host, port

    def registered_addresses(self) -> list[tuple[str, str, int]]:
        """(listener, host, port) other brokers and clients are told: advertised.listeners, else what is bound
        (a wildcard host as 127.0.0.1)."""
        if self.config.get("advertised.listeners"):
            return self.config.advertised_addresses
        return [
            (name, host if host not in ("", "0.0.0.0", "::") else "127.0.0.1", port)
            for name, host, port in self.bound_addresses
        ]

    async def stop(self) -> list[str]:
        """Stop listening, then flush, checkpoint and close every log. Returns what could not be made durable
        (empty: a clean shutdown, ``.kafka_cleanshutdown`` written); never raises for a failing disk."""
        if self._scheduler is not None:
            self._scheduler.cancel()
            await asyncio.gather(self._scheduler, return_exceptions=True)
            self._scheduler = None
        if self._transaction_coordinator.made is not None:
            self._transaction_coordinator.made.close()
        for task in self._transaction_tasks:
            task.cancel()
        await asyncio.gather(*self._transaction_tasks, return_exceptions=True)
        self._transaction_tasks.clear()
        for client in self._marker_clients:
            await client.close()
        self._marker_clients.clear()
        if self._verifier is not None:
            await self._verifier.close()
        problems: list[str] = []
        if self.zk_broker is not None:
            try:
                await self.zk_broker.controlled_shutdown()  # leaderships move while this broker still serves
            except Exception as exc:
                log.warning("controlled shutdown failed: %s", exc)
            try:
                await self.zk_broker.stop()  # the controller sees this broker leave at once
            except Exception as exc:  # a lost ZooKeeper must not keep the logs from closing cleanly
                log.warning("leaving ZooKeeper failed: %s", exc)
        try:
            if self._group_coordinator.made is not None:
                self._group_coordinator.made.shutdown()
        except (StorageError, OSError) as exc:
            problems.append(f"group coordinator: {exc}")
        for server in self._servers:
            await server.close()
        self._servers.clear()
        if self._metrics_server is not None:
            await self._metrics_server.close()
            self._metrics_server = None
        if self._started:
            problems += self.log_manager.shutdown()
            self._started = False
            self._group_coordinator.running = False
        return problems

    async def _run_scheduler(self) -> None:
        while True:
            await asyncio.sleep(SCHEDULER_TICK_S)
            self.log_manager.schedule_due(self.clock.milliseconds())  # logs its own I/O failures
            try:
                if self._group_coordinator.made is not None:
                    self._group_coordinator.made.schedule_due(self.clock.milliseconds())
            except (StorageError, OSError) as exc:
                if self._coordinator_failures.due(self.clock.milliseconds()) is not None:
                    log.warning("group maintenance failed: %s (retried on schedule)", exc)
            except Exception:
                log.exception("group maintenance failed")


def _log_manager(config: KafkaConfig, clock: Clock, cluster_id: str) -> LogManager:
    """The broker's log manager with its Kafka settings (log dirs, topic defaults, checkpoint and flush
    intervals, the cleaner)."""
    return LogManager(
        [Path(d) for d in config.log_dirs],
        LogConfig.from_properties(config.topic_defaults()),
        clock,
        node_id=config.node_id,
        cluster_id=cluster_id,
        replicated=bool(config.get("zookeeper.connect")),
        retention_check_interval_ms=int(config.get("log.retention.check.interval.ms")),
        flush_checkpoint_interval_ms=int(config.get("log.flush.offset.checkpoint.interval.ms")),
        flush_start_offset_checkpoint_interval_ms=int(
            config.get("log.flush.start.offset.checkpoint.interval.ms")
        ),
        high_watermark_checkpoint_interval_ms=int(
            config.get("replica.high.watermark.checkpoint.interval.ms")
        ),
        flush_scheduler_interval_ms=int(config.get("log.flush.scheduler.interval.ms")),
        cleaner_config=cleaner_config(config),
    )


def cleaner_config(config: KafkaConfig) -> CleanerConfig:
    """The cleaner's settings of a config (``log.cleaner.*``; dynamic ones applied again on a change)."""
    return CleanerConfig(
        enable=bool(config.get("log.cleaner.enable")) and int(config.get("log.cleaner.threads")) > 0,
        backoff_ms=int(config.get("log.cleaner.backoff.ms")),
        dedupe_buffer_size=int(config.get("log.cleaner.dedupe.buffer.size")),
        io_buffer_load_factor=float(config.get("log.cleaner.io.buffer.load.factor")),
    )


def _coordinator_config(config: KafkaConfig) -> CoordinatorConfig:
    from samsa.coordinator import CoordinatorConfig, GroupConfig

    return CoordinatorConfig(
        offsets_topic_partitions=int(config.get("offsets.topic.num.partitions")),
        offsets_topic_segment_bytes=int(config.get("offsets.topic.segment.bytes")),
        offsets_retention_ms=int(config.get("offsets.retention.minutes")) * 60_000,
        offsets_retention_check_interval_ms=int(config.get("offsets.retention.check.interval.ms")),
        offsets_commit_timeout_ms=int(config.get("offsets.commit.timeout.ms")),
        group=GroupConfig(
            min_session_timeout_ms=int(config.get("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(config.get("group.max.session.timeout.ms")),
            initial_rebalance_delay_ms=int(config.get("group.initial.rebalance.delay.ms")),
            max_size=int(config.get("group.max.size")),
            offset_metadata_max_bytes=int(config.get("offset.metadata.max.bytes")),
        ),
    )


def _stored_cluster_id(log_dirs: list[str]) -> str | None:
    """The cluster id a log dir's ``meta.properties`` holds, so a log dir keeps its id wherever it is moved."""
    for item in log_dirs:
        meta = read_meta_properties(Path(item))
        if meta is not None and meta.cluster_id:
            return meta.cluster_id
    return None


def _new_cluster_id() -> str:
    """A random id in Kafka's form (a UUID as unpadded URL-safe base64), written once to meta.properties."""
    # A version-4 UUID's bytes, made here rather than with `uuid` (which imports `platform`) to keep it out of start-up.
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _create_authorizer(config: KafkaConfig, clock: Clock, zk_broker: ZkBroker | None) -> AclAuthorizer | None:
    """The ACL authorizer when ``authorizer.class.name`` names Kafka's (None: authorization off, as in Kafka);
    its bindings in the first log dir's ``acls.json`` alone, in ZooKeeper's ACL znodes in a cluster."""
    name = str(config.get("authorizer.class.name") or "")
    if not name:
        return None
    from samsa.security.authorizer import AUTHORIZER_CLASS_NAMES, AclAuthorizer, AclStore, FileAclStore

    if name not in AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"authorizer.class.name={name}: Samsa implements {sorted(AUTHORIZER_CLASS_NAMES)}")
    store: AclStore = FileAclStore(Path(config.log_dirs[0]) / "acls.json")
    if zk_broker is not None:
        from samsa.cluster.acl_znodes import AclZNodes

        from .zk_acls import ZkAclStore

        store = ZkAclStore(AclZNodes(zk_broker.zk.kazoo))
    authorizer = AclAuthorizer(
        store,
        super_users=[u.strip() for u in str(config.get("super.users")).split(";") if u.strip()],
        allow_everyone_if_no_acl_found=bool(config.get("allow.everyone.if.no.acl.found")),
        now_ms=clock.monotonic_ms,
    )
    if zk_broker is not None:
        zk_broker.use_authorizer(authorizer)
    return authorizer
