"""A broker in cluster mode: its ZooKeeper session, registration, metadata cache and controller module.

``zookeeper.connect`` in the broker's config turns this on; without it a broker is the single-broker default and
none of this exists. In order, as Kafka's broker starts:

1. connect to ZooKeeper (creating the chroot when one is given) and adopt the cluster id stored there (or store
   ours when this is the cluster's first broker); a log dir that belongs to another cluster refuses to start;
2. (the broker loads its logs and opens its listeners);
3. register ``/brokers/ids/<id>`` with the listeners' addresses; its czxid is this broker's epoch;
4. start the controller module, which takes part in the controller election.

Topic overrides are read from ``/config/topics/<topic>`` and written there with a ``/config/changes``
notification; every broker watches the notifications and applies a changed topic's overrides to the logs it holds.

Producer ids come from ``/latest_producer_id_block`` in blocks of 1000, unique across the cluster (each broker
takes its next block with a compare-and-set, as Kafka's brokers did before KIP-730 moved that into the controller;
the znode is the same).

Leaders and ISRs then come from the controller: LeaderAndIsr makes this broker lead or follow each of its
partitions (creating their logs with the topic's overrides), UpdateMetadata feeds the metadata cache, StopReplica
stops (and deletes) replicas. Followers copy their leaders through the replica fetchers; leaders send ISR changes
to the controller through the ISR channel and take lagging followers out of the ISR every half of
``replica.lag.time.max.ms``. A clean stop first asks the controller to move this broker's leaderships away
(ControlledShutdown, while the listeners still serve; ``controlled.shutdown.enable``, ``.max.retries``,
``.retry.backoff.ms``; from then on no follower fetcher starts), then resigns and closes the session, so the
controller sees this broker leave at once.

When the ZooKeeper session expires (the broker was cut off, or paused, for longer than
``zookeeper.session.timeout.ms``) its ephemeral znodes are gone: the other brokers' controller has already treated
it as dead. Once kazoo has a new session the broker registers again (a new broker epoch) and its controller module
resigns, if it was controller, and stands for election again, as Kafka's broker does on session expiry.

Event-loop thread only; ZooKeeper calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from samsa.client.connection import BrokerConnection
from samsa.client.errors import KafkaError
from samsa.clock import SYSTEM_CLOCK, Clock
from samsa.cluster.controller import Controller
from samsa.cluster.elections import ElectionConfig
from samsa.cluster.isr_channel import IsrChange, IsrChannel
from samsa.cluster.metadata_cache import BrokerNode, MetadataCache
from samsa.cluster.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from samsa.cluster.replication_quota import DEFAULT_BROKER, FOLLOWER_THROTTLED_RATE, LEADER_THROTTLED_RATE
from samsa.cluster.zk_client import (
    BrokerAlreadyRegisteredError,
    ZkClient,
    ZkSessionInterruptedError,
    is_session_interruption,
)
from samsa.cluster.znodes import BrokerRegistration, Endpoint, ProducerIdBlock
from samsa.log_throttle import LogThrottle
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from samsa.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from samsa.security.scram import ScramCredentialCache, credentials_of
from samsa.storage import StorageError
from samsa.topic_partition import TopicPartition

from .dynamic_config import DynamicBrokerConfig
from .producer_ids import ProducerIdsUnavailableError
from .quotas import QuotaManager, quotas_of
from .replica_manager import Partition, ReplicaManager, ReplicaState

if TYPE_CHECKING:
    from samsa.security.authorizer import AclAuthorizer
    from samsa.storage.log_manager import LogManager

    from .config import KafkaConfig
    from .zk_acls import ZkAclSync

log = logging.getLogger(__name__)


PRODUCER_ID_BLOCK_SIZE = 1000
PRODUCER_ID_PREFETCH = 0.9
PRODUCER_ID_WAIT_S = 5.0
# a broker whose disk is full asks the controller to move its leaderships this often
LOG_DIR_EVENT_INTERVAL_S = 10.0
# a LeaderAndIsr state a full disk kept from being applied is tried again this often
TRANSITION_RETRY_S = 5.0
# registering and the reads after it are tried again this often while ZooKeeper is away or an earlier
# registration of this broker is still live
ZK_RETRY_S = 0.5
SESSION_CLOSE_POLL_S = 0.05  # how often a stopping broker looks whether its ZooKeeper connection is back


def _fetcher_config(config: KafkaConfig) -> FetcherConfig:
    return FetcherConfig(
        max_bytes=int(config.get("replica.fetch.max.bytes")),
        response_max_bytes=int(config.get("replica.fetch.response.max.bytes")),
        wait_max_ms=int(config.get("replica.fetch.wait.max.ms")),
        min_bytes=int(config.get("replica.fetch.min.bytes")),
        backoff_ms=int(config.get("replica.fetch.backoff.ms")),
        socket_timeout_ms=int(config.get("replica.socket.timeout.ms")),
    )


class InconsistentClusterIdError(RuntimeError):
    """The log dirs were written by a broker of another cluster than the one ZooKeeper holds."""


class ZkBroker:
    """Cluster mode of one broker (module doc), with its collaborators by name: the broker's config, its replica
    manager and log manager, ``registered_addresses()`` (the listeners' (name, host, port) other brokers and
    clients are told, once bound), ``partitions_changed()`` (called when leadership of hosted partitions
    changed: the group coordinator follows) and the clock its replica fetchers hold and throttle on. Event-loop thread only."""

    def __init__(
        self,
        config: KafkaConfig,
        replica_manager: ReplicaManager,
        log_manager: LogManager,
        registered_addresses: Callable[[], list[tuple[str, str, int]]],
        partitions_changed: Callable[[], None],
        clock: Clock = SYSTEM_CLOCK,
        dynamic_config: DynamicBrokerConfig | None = None,
        quotas: QuotaManager | None = None,
        scram_credentials: ScramCredentialCache | None = None,
    ) -> None:
        self.config = config
        # the topic defaults' dynamic values and the client quotas, applied from ZooKeeper's /config
        self.dynamic_config = dynamic_config or DynamicBrokerConfig(config)
        self.quotas = quotas or QuotaManager()
        self.scram_credentials = (
            scram_credentials if scram_credentials is not None else ScramCredentialCache()
        )
        self.acl_sync: ZkAclSync | None = None  # the authorizer's bindings from ZooKeeper (use_authorizer)
        self.node_id = config.node_id
        self.replica_manager = replica_manager
        self.log_manager = log_manager
        self._registered_addresses = registered_addresses
        self._partitions_changed = partitions_changed
        self.cluster_id = ""  # the one ZooKeeper holds, from ``connect``
        session_timeout_ms = int(config.get("zookeeper.session.timeout.ms"))
        self._session_timeout_ms = session_timeout_ms
        self._waited_for_old_session = False
        self.connection_timeout_s = (
            int(config.get("zookeeper.connection.timeout.ms") or session_timeout_ms) / 1000
        )
        self.zk = ZkClient(str(config.get("zookeeper.connect")), session_timeout_ms=session_timeout_ms)
        self.inter_broker_listener = config.inter_broker_listener
        # how this broker reaches the others (controller channels, fetchers, ISR changes, controlled shutdown)
        self.inter_broker_security = config.inter_broker_security()
        self.metadata = MetadataCache()
        self.controller = Controller(
            self.zk, self.node_id, self.inter_broker_listener, self.inter_broker_security
        )
        self.controller.elections.config = ElectionConfig(
            auto_leader_rebalance_enable=bool(config.get("auto.leader.rebalance.enable")),
            leader_imbalance_per_broker_percentage=int(config.get("leader.imbalance.per.broker.percentage")),
            leader_imbalance_check_interval_s=float(config.get("leader.imbalance.check.interval.seconds")),
            unclean_leader_election_enable=bool(config.get("unclean.leader.election.enable")),
        )
        self.shutting_down = False  # a controlled shutdown began: no new fetchers
        self._zk_connected = True
        self._zk_away_since: float | None = None  # loop time the connection went, while it is away
        self.broker_epoch = -1
        # the epoch of an earlier process's registration this one waited out (``_register``): what the controller
        # still sends that process must not reach this one (-1: none seen)
        self._earlier_epoch = -1
        self._session_lost = False
        self._last_config_change = ""
        self._closing = False
        self._log_dir_events = LogThrottle(
            LOG_DIR_EVENT_INTERVAL_S
        )  # written by ``_disk_full``, in loop time
        # LeaderAndIsr states a storage failure kept from being applied (a full disk), tried again on a timer:
        # the controller does not send them again
        self._unapplied: dict[
            TopicPartition, tuple[LeaderAndIsrPartitionState, dict[int, tuple[str, int]]]
        ] = {}
        self._storage_failures = LogThrottle(60.0)
        self._registration: BrokerRegistration | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_producer_id = 0
        self._producer_block_start = 0
        self._producer_block_end = -1  # inclusive; -1: no block yet
        self._prefetched: ProducerIdBlock | None = None  # the next block, fetched ahead
        self._prefetch: asyncio.Task[None] | None = None
        self._producer_block_lock = asyncio.Lock()
        self.highest_controller_epoch = -1
        security = self.inter_broker_security
        self.fetchers = ReplicaFetcherManager(
            self.replica_manager,
            self.node_id,
            _fetcher_config(config),
            clock=clock,
            connect=lambda host, port, client_id, timeout_ms: BrokerConnection(
                host, port, client_id=client_id, request_timeout_ms=timeout_ms, security=security
            ),
        )
        self.isr_channel = IsrChannel(
            self.node_id,
            lambda: self.broker_epoch,
            self._controller_address,
            self.metadata.topic_ids.get,
            self.replica_manager.isr_change_answered,
            connect=lambda host, port, client_id: BrokerConnection(
                host, port, client_id=client_id, request_timeout_ms=30_000, security=security
            ),
        )
        self.metadata.on_new_controller = self.isr_channel.controller_changed
        self._attach(self.replica_manager, config)

    def _attach(self, replicas: ReplicaManager, config: KafkaConfig) -> None:
        """Give the replica manager what a cluster broker has: the live brokers and known partitions of the
        metadata cache, a channel for ISR changes, and the fetchers."""
        replicas.replica_lag_time_max_ms = int(config.get("replica.lag.time.max.ms"))
        replicas.is_alive = lambda broker_id: broker_id in self.metadata.brokers
        replicas.knows_partition = lambda tp: self.metadata.partition(tp) is not None
        replicas.isr_changes = self._submit_isr_change
        replicas.fetchers = self.fetchers
        replicas.disk_full = self._disk_full

    def _disk_full(self, tp: TopicPartition) -> None:
        """A leader append of ``tp`` found the disk full: ask the controller (a log dir event, as Kafka's broker
        writes for a failed log dir) to move this broker's leaderships to in-sync followers, so that producers
        carry on there; this broker follows them and rejoins their ISRs once it has space again. At most every
        ``LOG_DIR_EVENT_INTERVAL_S``: every refused append comes here."""
        if self._closing or self._log_dir_events.due(asyncio.get_running_loop().time()) is None:
            return
        log.warning(
            "broker %d: the disk of %s is full: asking the controller to move this broker's leaderships to "
            "in-sync followers",
            self.node_id,
            tp,
        )
        self._spawn(asyncio.to_thread(self.zk.notify_log_dir_event, self.node_id))

    async def connect(self, stored_cluster_id: str | None, proposed_cluster_id: str) -> str:
        """Open the session; the cluster's id (InconsistentClusterIdError when the log dirs hold another)."""
        await asyncio.to_thread(self.zk.start, self.connection_timeout_s)
        cluster_id = await asyncio.to_thread(
            self.zk.get_or_create_cluster_id, stored_cluster_id or proposed_cluster_id
        )
        if stored_cluster_id is not None and stored_cluster_id != cluster_id:
            await asyncio.to_thread(self.zk.close)
            raise InconsistentClusterIdError(
                f"the log dirs belong to cluster {stored_cluster_id}, but ZooKeeper at {self.zk.connect} holds "
                f"cluster {cluster_id}: wrong zookeeper.connect, or log dirs of another cluster"
            )
        self.cluster_id = cluster_id
        await self._read_provisional_catalog()
        return cluster_id

    async def _read_provisional_catalog(self) -> None:
        """The registered brokers and the topic names, which Metadata answers with until the controller's first
        UpdateMetadata (``MetadataCache.set_provisional``), read again each time the registered brokers change
        until then: a broker that registers after this one started (its session had expired) is named too, or
        librdkafka would drop it, failing the requests in flight to it as not written. A hint: if ZooKeeper fails
        here, the start goes on and those answers name the brokers read before (this broker alone at first)."""
        if self.metadata.known or self._closing:
            return
        changed = self._watch_running(self._read_provisional_catalog)
        try:
            registered, topics = await asyncio.to_thread(
                lambda: (self.zk.live_brokers(watch=changed), self.zk.topics())
            )
        except Exception as exc:  # a hint only (kazoo's errors, a malformed registration)
            log.warning("broker %d: could not read the registered brokers and topics: %s", self.node_id, exc)
            return
        self.metadata.set_provisional(
            [
                BrokerNode(broker_id, {e.listener: (e.host, e.port) for e in r.endpoints}, r.rack)
                for broker_id, (r, _) in sorted(registered.items())
            ],
            set(topics),
        )

    def _watch_running(self, again: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[object], None]:
        """A kazoo watch (it fires once, on kazoo's thread) that runs ``again()`` as a task of this broker on the
        current event loop, unless the loop has closed meanwhile."""
        loop = asyncio.get_running_loop()

        def fire(_: object) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: self._spawn(again()))

        return fire

    async def register(self) -> None:
        """Register this broker's listeners (after they are bound) and join the controller election."""
        endpoints = tuple(Endpoint(name, host, port) for name, host, port in self._registered_addresses())
        self._registration = BrokerRegistration(self.node_id, endpoints, self.config.get("broker.rack"))
        await self._register()
        loop = asyncio.get_running_loop()

        def on_change(state: str) -> None:
            loop.call_soon_threadsafe(self._session_state, state)

        self.zk.on_session_change(on_change)
        await self._read_configuration()
        await self.controller.start()
        self._spawn(self._shrink_isr_periodically())
        self._spawn(self._retry_transitions_periodically())
        self._prefetch = asyncio.get_running_loop().create_task(
            self._fetch_block()
        )  # ids before ZooKeeper is needed

    async def _read_configuration(self) -> None:
        """Dynamic configs, ACLs and quotas as ZooKeeper holds them, read once registered. ZooKeeper may go away
        meanwhile (a restart right after this broker registered: seen in the nemesis, where the broker then exited
        with "could not start: ConnectionLoss"): the reads are made again once it is back, up to
        zookeeper.connection.timeout.ms, as Kafka's client waits for its connection."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connection_timeout_s
        while True:
            try:
                self._last_config_change = max(await asyncio.to_thread(self.zk.config_changes), default="")
                await self._config_changed()
                if self.acl_sync is not None:
                    await self.acl_sync.start()
                await self._apply_broker_config()
                await self._apply_quotas()
                return
            except Exception as exc:
                if not is_session_interruption(exc) or loop.time() >= deadline or self._closing:
                    raise
                log.warning(
                    "broker %d: ZooKeeper went away while its configuration was read (%s); reading again",
                    self.node_id,
                    type(exc).__name__,
                )
                await asyncio.sleep(ZK_RETRY_S)

    async def _register(self) -> None:
        assert self._registration is not None
        # A broker restarted within zookeeper.session.timeout.ms of a crash finds its old session's znode still
        # there: wait for that session to expire (a duplicate broker.id keeps its session alive, and fails after).
        # Our own session may be cut meanwhile (ZooKeeper restarting or stalled): kazoo reconnects, with a new
        # session after an expiry, and the wait goes on, up to zookeeper.connection.timeout.ms more.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._session_timeout_ms * 1.5 / 1000 + 2
        interrupted = False  # logged once
        while True:
            try:
                self.broker_epoch = await asyncio.to_thread(self.zk.register_broker, self._registration)
                break
            except ZkSessionInterruptedError as exc:
                if loop.time() >= deadline + self.connection_timeout_s:
                    raise
                if not interrupted:
                    interrupted = True
                    log.warning("broker %d: %s; registering again", self.node_id, exc)
                await asyncio.sleep(ZK_RETRY_S)
            except BrokerAlreadyRegisteredError as exc:
                self._earlier_epoch = max(self._earlier_epoch, exc.epoch)
                if loop.time() >= deadline:
                    raise
                if not self._waited_for_old_session:
                    self._waited_for_old_session = True
                    log.warning(
                        "broker.id %d is still registered by an earlier session (a restart within "
                        "zookeeper.session.timeout.ms?): waiting for it to expire",
                        self.node_id,
                    )
                await asyncio.sleep(ZK_RETRY_S)
        log.info("broker %d registered in ZooKeeper (broker epoch %d)", self.node_id, self.broker_epoch)

    def _session_state(self, state: str) -> None:
        """The session's state changes, on the event loop: lost (expired), suspended (disconnected), connected."""
        if self._closing:
            return
        self._zk_connected = state == "connected"
        if state == "connected":
            self._zk_away_since = None
        elif self._zk_away_since is None:
            self._zk_away_since = asyncio.get_running_loop().time()
        if state == "lost":
            log.warning("ZooKeeper session of broker %d expired", self.node_id)
            self._session_lost = True
            self.controller.session_lost()
        elif state == "suspended":
            log.warning("ZooKeeper connection of broker %d lost; reconnecting", self.node_id)
        elif state == "connected" and self._session_lost:
            self._session_lost = False
            self._spawn(self._rejoin())

    async def _rejoin(self) -> None:
        while (
            True
        ):  # the new session may be cut in turn (ZooKeeper still unsteady): register again, one line a try
            try:
                await self._register()
                break
            except ZkSessionInterruptedError as exc:
                if self._closing:
                    return
                log.warning("broker %d: could not register again yet (%s); retrying", self.node_id, exc)
                await asyncio.sleep(1.0)
            except Exception:
                log.exception("broker %d could not register again after its session expired", self.node_id)
                return
        self.controller.session_renewed()
        await self._config_changed()  # the watch went with the old session
        if self.acl_sync is not None:
            await self.acl_sync.start()  # so did the ACL changes' watches; changes meanwhile are read again
        # so did the registered brokers' watch, if the controller has not reached us yet (else it returns at once)
        self._spawn(self._read_provisional_catalog())

    def use_authorizer(self, authorizer: AclAuthorizer) -> None:
        """Keep ``authorizer``'s bindings as ZooKeeper's ACL znodes hold them, from ``connect`` on."""
        from samsa.cluster.acl_znodes import AclZNodes

        from .zk_acls import ZkAclSync

        self.acl_sync = ZkAclSync(AclZNodes(self.zk.kazoo), authorizer, self._watch_running)

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's overrides as ZooKeeper holds them (empty: none, or no such topic)."""
        return await asyncio.to_thread(self.zk.topic_config, topic)

    async def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        """Store the topic's overrides for the cluster; this broker applies them at once, the others on the
        notification."""
        await asyncio.to_thread(self.zk.set_topic_config, topic, overrides)
        self._apply_overrides(topic, overrides)

    async def _config_changed(self) -> None:
        names = await asyncio.to_thread(self.zk.config_changes, self._watch_running(self._config_changed))
        for name in names:
            if name <= self._last_config_change:
                continue
            self._last_config_change = name
            entity = await asyncio.to_thread(self.zk.config_change, name)
            if entity is not None and entity.startswith("topics/"):
                topic = entity.removeprefix("topics/")
                self._apply_overrides(topic, await self.topic_overrides(topic))
                if self.controller.is_active:  # unclean election may be allowed now
                    self._spawn(self.controller.elections.topic_config_changed(topic))
            elif entity in (f"brokers/{self.node_id}", f"brokers/{DEFAULT_BROKER}"):
                await self._apply_broker_config()
            elif entity is not None and entity.startswith(("users/", "clients/")):
                await self._apply_quotas()

    async def broker_config(self, broker: str) -> dict[str, str]:
        """A broker's dynamic configs as ZooKeeper holds them (``broker`` an id, or ``<default>``)."""
        return await asyncio.to_thread(self.zk.broker_config, broker)

    async def set_broker_config(self, broker: str, config: dict[str, str]) -> None:
        """Store a broker's dynamic configs; the broker (every broker, for ``<default>``) applies them on the
        notification."""
        await asyncio.to_thread(self.zk.set_broker_config, broker, config)

    async def quota_configs(self) -> dict[str, dict[str, str]]:
        """Every client quota entity's configs in ZooKeeper, by path under ``/config``."""
        return await asyncio.to_thread(self.zk.quota_configs)

    async def set_entity_config(self, path: str, config: dict[str, str]) -> None:
        """Store the configs of the entity at ``/config/<path>``; every broker applies them on the notification."""
        await asyncio.to_thread(self.zk.set_entity_config, path, config)

    async def _apply_quotas(self) -> None:
        """The client quotas every broker enforces and the SCRAM credentials it authenticates against, as
        ZooKeeper's ``/config/users`` and ``/config/clients`` hold them (``samsa.broker.quotas``,
        ``samsa.security.scram``)."""
        raw = await self.quota_configs()
        self.quotas.replace(quotas_of(raw))
        self.scram_credentials.replace(credentials_of(raw))

    async def _apply_broker_config(self) -> None:
        """The dynamic configs this broker applies: the topic defaults (``dynamic_config``) and the replication
        throttle rates, the leader's and the follower's (:mod:`samsa.cluster.replication_quota`)."""
        default = await self.broker_config(DEFAULT_BROKER)
        own = await self.broker_config(str(self.node_id))
        config = {**default, **own}
        self.dynamic_config.update(default, own, self.log_manager)
        leader, follower = config.get(LEADER_THROTTLED_RATE), config.get(FOLLOWER_THROTTLED_RATE)
        self.replica_manager.leader_quota.rate = int(leader) if leader else None
        self.fetchers.quota.rate = int(follower) if follower else None
        log.info(
            "broker %d: replication throttle as leader %s, as follower %s",
            self.node_id,
            f"{leader} B/s" if leader else "off",
            f"{follower} B/s" if follower else "off",
        )

    def _apply_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        manager = self.log_manager
        if manager.partitions_of(topic):
            manager.update_topic_config(topic, overrides)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        """A background task's end: a failure is logged (asyncio would only say "never retrieved"), in one line
        when the ZooKeeper session was away, since ``_rejoin`` sets the watches again with the new session."""
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        if self._session_lost or not self._zk_connected:
            log.warning(
                "broker %d: %s stopped with the ZooKeeper session away (%s); it runs again with the next session",
                self.node_id,
                getattr(task.get_coro(), "__name__", task.get_name()),
                type(exc).__name__,
            )
        else:
            log.error("broker %d: %s failed", self.node_id, task.get_name(), exc_info=exc)

    async def next_producer_id(self) -> int:
        """A producer id no other broker of the cluster hands out. The next block is fetched in the background
        once 90% of the current one is used (and the first at registration), so producers still get ids while
        ZooKeeper is briefly away; with no id left and ZooKeeper unreachable, ProducerIdsUnavailableError."""
        async with self._producer_block_lock:
            if self._next_producer_id > self._producer_block_end:
                await self._take_next_block()
            producer_id = self._next_producer_id
            self._next_producer_id += 1
            used = self._next_producer_id - self._producer_block_start
            if self._prefetched is None and used >= PRODUCER_ID_PREFETCH * PRODUCER_ID_BLOCK_SIZE:
                self._prefetch = asyncio.get_running_loop().create_task(self._fetch_block())
            return producer_id

    async def _take_next_block(self) -> None:
        if self._prefetched is None:
            if self._prefetch is None or (self._prefetch.done() and self._prefetch.exception() is not None):
                self._prefetch = asyncio.get_running_loop().create_task(self._fetch_block())
            try:
                await asyncio.wait_for(asyncio.shield(self._prefetch), PRODUCER_ID_WAIT_S)
            except (asyncio.TimeoutError, Exception) as exc:
                raise ProducerIdsUnavailableError(f"no producer id block from ZooKeeper: {exc!r}") from None
        block, self._prefetched, self._prefetch = self._prefetched, None, None
        assert block is not None
        self._producer_block_start = self._next_producer_id = block.block_start
        self._producer_block_end = block.block_end

    async def _fetch_block(self) -> None:
        self._prefetched = await asyncio.to_thread(self.zk.allocate_producer_ids, self.node_id)

    async def controlled_shutdown(self) -> bool:
        """Ask the controller to move this broker's leaderships away before it stops (Kafka's controlled
        shutdown): up to ``controlled.shutdown.max.retries`` attempts, ``controlled.shutdown.retry.backoff.ms``
        apart, until the controller answers that this broker leads nothing more. True when it did."""
        config = self.config
        if not config.get("controlled.shutdown.enable") or self.broker_epoch < 0:
            return False  # disabled, or never registered: nothing to move
        if self._session_lost:  # the controller saw this broker leave and moved its leaderships already
            log.info("broker %d: controlled shutdown skipped: its ZooKeeper session expired", self.node_id)
            return False
        self.shutting_down = True
        if self._zk_connected:
            return await self._controlled_shutdown_attempts()
        # This broker's own connection is away, but its session may live on (ZooKeeper restarting, the client
        # between two tries) and the controller, on a connection of its own, can still move the leaderships: Kafka
        # asks it whatever its own connection. A broker that skipped it left its leaderships on a dead process
        # until its session expired (the nemesis, 2026-11-29: 37 partitions for 5 s, commits included). Past one
        # session timeout the session has expired (and the controller moves them itself) or ZooKeeper is still
        # down (and nobody can), so the wait ends there.
        timeout_s = self._session_timeout_ms / 1000
        try:
            return await asyncio.wait_for(self._controlled_shutdown_attempts(), timeout_s)
        except asyncio.TimeoutError:
            log.info(
                "broker %d: controlled shutdown: no answer within zookeeper.session.timeout.ms (%.0f s) with "
                "ZooKeeper away; stopping",
                self.node_id,
                timeout_s,
            )
            return False

    async def _controlled_shutdown_attempts(self) -> bool:
        config = self.config
        attempts = int(config.get("controlled.shutdown.max.retries"))
        backoff_s = int(config.get("controlled.shutdown.retry.backoff.ms")) / 1000
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(backoff_s)
            remaining = await self._ask_controlled_shutdown()
            if remaining is not None and not remaining:
                log.info("broker %d: controlled shutdown succeeded", self.node_id)
                return True
            if remaining and not any(self._other_replica_alive(tp) for tp in remaining):
                log.info(
                    "broker %d: controlled shutdown: no other replica of the %d partitions it leads is alive",
                    self.node_id,
                    len(remaining),
                )
                return False  # a retry cannot help (Kafka would retry anyway)
        log.warning(
            "broker %d: controlled shutdown incomplete after %d attempts; stopping anyway",
            self.node_id,
            attempts,
        )
        return False

    def _other_replica_alive(self, tp: TopicPartition) -> bool:
        info = self.metadata.partition(tp)
        node_id = self.node_id
        return info is None or any(r != node_id and r in self.metadata.brokers for r in info.replicas)

    async def _ask_controlled_shutdown(self) -> list[TopicPartition] | None:
        """One ControlledShutdown to the controller: the partitions this broker still leads (None: no answer,
        or an error)."""
        controller = self._controller_address()
        if controller is None:
            log.info("broker %d: controlled shutdown: no controller known", self.node_id)
            return None
        controller_id, host, port = controller
        connection = BrokerConnection(
            host,
            port,
            client_id=f"broker-{self.node_id}-controlled-shutdown",
            request_timeout_ms=int(self.config.get("controller.socket.timeout.ms")),
            security=self.inter_broker_security,
        )
        request = ControlledShutdownRequest(broker_id=self.node_id, broker_epoch=self.broker_epoch)
        try:
            await connection.open()
            response = await connection.request(request, ApiKey.CONTROLLED_SHUTDOWN)
        except KafkaError as exc:
            log.info(
                "broker %d: controlled shutdown request to %d failed: %s",
                self.node_id,
                controller_id,
                exc,
            )
            return None
        finally:
            await connection.close()
        if response.error_code != ErrorCode.NONE:
            log.info(
                "broker %d: controlled shutdown refused by %d: error %d",
                self.node_id,
                controller_id,
                response.error_code,
            )
            return None
        if response.remaining_partitions:
            names = ", ".join(
                f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions[:10]
            )
            log.info(
                "broker %d: controlled shutdown: still leading %d partitions (%s)",
                self.node_id,
                len(response.remaining_partitions),
                names,
            )
        return [TopicPartition(p.topic_name, p.partition_index) for p in response.remaining_partitions]

    async def stop(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        if self._prefetch is not None:
            self._prefetch.cancel()
        await self.fetchers.close()
        await self.isr_channel.close()
        await self.controller.stop()
        await self._await_connection_to_close_session()
        await asyncio.to_thread(self.zk.close)

    async def _await_connection_to_close_session(self) -> None:
        """Before closing the session, wait for a connection that is away to come back, for as long as the session
        may live without it (``zookeeper.session.timeout.ms`` from the loss): closing it then removes this broker's
        registration at once. kazoo gives up reconnecting when stopped, and the session, left to expire, kept the
        registration for a whole timeout; a restart in that time waited it out before it could register and
        serve, while clients that had been sent to it waited too (the nemesis, 2026-11-29: a clean restart right
        after ZooKeeper's, 6 s of commits)."""
        if self._session_lost or self.broker_epoch < 0 or self.zk.connected:
            return
        loop = asyncio.get_running_loop()
        away_since = self._zk_away_since if self._zk_away_since is not None else loop.time()
        deadline = away_since + self._session_timeout_ms / 1000
        while not self.zk.connected and loop.time() < deadline:
            await asyncio.sleep(SESSION_CLOSE_POLL_S)
        if not self.zk.connected:
            log.info("broker %d: ZooKeeper still away; its session is left to expire", self.node_id)

    # --- partitions: LeaderAndIsr, StopReplica, ISR changes ----------------------------------------------------

    def fence_controller_request(self, controller_epoch: int, broker_epoch: int) -> ErrorCode:
        """Kafka's checks on a request from a controller: STALE_BROKER_EPOCH for a request meant for an earlier
        registration of this broker, STALE_CONTROLLER_EPOCH for a controller older than one already heard.

        A broker restarted within its session waits out its earlier process's registration before it registers
        and serves (``Broker.start``). A controller that has not yet seen that process go keeps sending it
        requests, which reach this one once it serves: an UpdateMetadata of a few changed partitions became its
        first and only catalog, and it answered Metadata with a topic of 4 partitions out of 6, which made
        librdkafka's consumers rebalance (seen in the nemesis). A request carrying that earlier registration's
        epoch is refused, as Kafka refuses it."""
        if 0 <= broker_epoch < self.broker_epoch or 0 <= broker_epoch <= self._earlier_epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        if controller_epoch < self.highest_controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.highest_controller_epoch = controller_epoch
        return ErrorCode.NONE

    async def leader_and_isr(self, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        """Lead or follow each partition named (the handler checked the epochs of the request)."""
        leaders = {live.broker_id: (live.host_name, live.port) for live in request.live_leaders}
        answers: list[LeaderAndIsrTopicError] = []
        for topic in request.topic_states:
            errors = [
                LeaderAndIsrPartitionError(
                    topic.topic_name,
                    state.partition_index,
                    await self._one_partition(topic.topic_name, state, leaders),
                )
                for state in topic.partition_states
            ]
            answers.append(LeaderAndIsrTopicError(topic_id=topic.topic_id, partition_errors=errors))
        flat = [
            LeaderAndIsrPartitionError(
                s.topic_name, s.partition_index, await self._one_partition(s.topic_name, s, leaders)
            )
            for s in request.ungrouped_partition_states
        ]
        self._partitions_changed()
        return LeaderAndIsrResponse(error_code=ErrorCode.NONE, partition_errors=flat, topics=answers)

    async def _one_partition(
        self, topic: str, wire: LeaderAndIsrPartitionState, leaders: dict[int, tuple[str, int]]
    ) -> ErrorCode:
        tp = TopicPartition(topic, wire.partition_index)
        replicas = self.replica_manager
        current = replicas.partition(tp)
        if current is not None and wire.leader_epoch <= current.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        node_id = self.node_id
        if node_id not in wire.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        state = ReplicaState(
            wire.leader, wire.leader_epoch, tuple(wire.isr), tuple(wire.replicas), wire.partition_epoch
        )
        manager = self.log_manager
        try:
            plog = manager.get_log(tp)
            if plog is None:
                if not manager.partitions_of(topic):
                    overrides = await self.topic_overrides(topic)
                    if overrides:
                        manager.update_topic_config(topic, overrides)
                plog = manager.get_or_create_log(tp)
            if state.leader == node_id:
                replicas.make_leader(tp, plog, state)
            else:
                address = leaders.get(state.leader) or self._address_of(state.leader)
                replicas.make_follower(tp, plog, state, None if self.shutting_down else address)
        except (StorageError, OSError) as exc:
            self.log_storage_failure(tp, exc)
            self._unapplied[tp] = (wire, leaders)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if self._unapplied.pop(tp, None) is not None:
            log.info(
                "partition %s: leader %d, epoch %d, applied at last", tp, state.leader, state.leader_epoch
            )
        return ErrorCode.NONE

    async def _retry_transitions_periodically(self) -> None:
        """Apply again, every ``TRANSITION_RETRY_S``, the LeaderAndIsr states a storage failure kept back (a
        full disk: the new leader epoch's checkpoint could not be written), unless a newer state came since."""
        while True:
            await asyncio.sleep(TRANSITION_RETRY_S)
            replicas = self.replica_manager
            for tp, (wire, leaders) in list(self._unapplied.items()):
                current = replicas.partition(tp)
                if current is not None and wire.leader_epoch <= current.leader_epoch:
                    del self._unapplied[tp]  # a newer state was applied meanwhile
                elif await self._one_partition(tp.topic, wire, leaders) == ErrorCode.NONE:
                    self._partitions_changed()

    def replica_stopped(self, tp: TopicPartition, deleted: bool) -> None:
        """A StopReplica was applied (the coordinators drop what they held of ``tp``)."""
        self._partitions_changed()

    def log_storage_failure(self, tp: TopicPartition, exc: BaseException) -> None:
        since = self._storage_failures.due(asyncio.get_running_loop().time(), tp)
        if since is not None:
            more = LogThrottle.held_back(since)
            log.error("partition %s: storage failure: %s%s; said once a minute", tp, exc, more)

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        """Where ``broker_id`` listens for other brokers (its inter-broker listener), None when unknown."""
        return self._address_of(broker_id)

    def _address_of(self, broker_id: int) -> tuple[str, int] | None:
        node = self.metadata.brokers.get(broker_id)
        return node.address(self.inter_broker_listener) if node is not None else None

    def _controller_address(self) -> tuple[int, str, int] | None:
        controller = self.metadata.controller_id
        if controller is None or controller < 0:
            return None
        address = self._address_of(controller)
        return (controller, *address) if address is not None else None

    def _submit_isr_change(self, partition: Partition, new_isr: frozenset[int]) -> None:
        self.isr_channel.submit(
            IsrChange(partition.tp, partition.leader_epoch, partition.partition_epoch, new_isr)
        )

    async def _shrink_isr_periodically(self) -> None:
        interval = max(self.replica_manager.replica_lag_time_max_ms / 2000, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                self.replica_manager.maybe_shrink_isr()
            except Exception:
                log.exception("ISR check failed")
