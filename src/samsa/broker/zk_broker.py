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

Leaders and ISRs then come from the controller (LeaderAndIsr to the replica manager, UpdateMetadata to the
metadata cache). A clean stop resigns and closes the session, so the controller sees this broker leave at once.

When the ZooKeeper session expires (the broker was cut off, or paused, for longer than
``zookeeper.session.timeout.ms``) its ephemeral znodes are gone: the other brokers' controller has already treated
it as dead. Once kazoo has a new session the broker registers again (a new broker epoch) and its controller module
resigns, if it was controller, and stands for election again, as Kafka's broker does on session expiry.

Event-loop thread only; ZooKeeper calls run in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from samsa.cluster.controller import Controller
from samsa.cluster.metadata_cache import MetadataCache
from samsa.cluster.zk_client import ZkClient
from samsa.cluster.znodes import BrokerRegistration, Endpoint

if TYPE_CHECKING:
    from .broker import KafkaServer

log = logging.getLogger(__name__)


class InconsistentClusterIdError(RuntimeError):
    """The log dirs were written by a broker of another cluster than the one ZooKeeper holds."""


class ZkBroker:
    """Cluster mode of one ``KafkaServer`` (module doc). Event-loop thread only."""

    def __init__(self, server: KafkaServer) -> None:
        config = server.config
        self.server = server
        session_timeout_ms = int(config.get("zookeeper.session.timeout.ms"))
        self.connection_timeout_s = (
            int(config.get("zookeeper.connection.timeout.ms") or session_timeout_ms) / 1000
        )
        self.zk = ZkClient(str(config.get("zookeeper.connect")), session_timeout_ms=session_timeout_ms)
        self.inter_broker_listener = str(
            config.get("inter.broker.listener.name") or config.listener_addresses[0][0]
        )
        self.metadata = MetadataCache()
        self.controller = Controller(self.zk, server.node_id, self.inter_broker_listener)
        self.broker_epoch = -1
        self._session_lost = False
        self._last_config_change = ""
        self._closing = False
        self._registration: BrokerRegistration | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._next_producer_id = 0
        self._producer_block_end = -1  # inclusive; -1: no block yet
        self._producer_block_lock = asyncio.Lock()

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
        return cluster_id

    async def register(self) -> None:
        """Register this broker's listeners (after they are bound) and join the controller election."""
        endpoints = tuple(
            Endpoint(name, host, port) for name, host, port in self.server.registered_addresses()
        )
        self._registration = BrokerRegistration(
            self.server.node_id, endpoints, self.server.config.get("broker.rack")
        )
        await self._register()
        loop = asyncio.get_running_loop()

        def on_change(state: str) -> None:
            loop.call_soon_threadsafe(self._session_state, state)

        self.zk.on_session_change(on_change)
        self._last_config_change = max(await asyncio.to_thread(self.zk.config_changes), default="")
        await self._config_changed()
        await self.controller.start()

    async def _register(self) -> None:
        assert self._registration is not None
        self.broker_epoch = await asyncio.to_thread(self.zk.register_broker, self._registration)
        log.info(
            "broker %d registered in ZooKeeper (broker epoch %d)", self.server.node_id, self.broker_epoch
        )

    def _session_state(self, state: str) -> None:
        """The session's state changes, on the event loop: lost (expired), suspended (disconnected), connected."""
        if self._closing:
            return
        if state == "lost":
            log.warning("ZooKeeper session of broker %d expired", self.server.node_id)
            self._session_lost = True
            self.controller.session_lost()
        elif state == "suspended":
            log.warning("ZooKeeper connection of broker %d lost; reconnecting", self.server.node_id)
        elif state == "connected" and self._session_lost:
            self._session_lost = False
            self._spawn(self._rejoin())

    async def _rejoin(self) -> None:
        try:
            await self._register()
        except Exception:
            log.exception("broker %d could not register again after its session expired", self.server.node_id)
            return
        self.controller.session_renewed()
        await self._config_changed()  # the watch went with the old session

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's overrides as ZooKeeper holds them (empty: none, or no such topic)."""
        return await asyncio.to_thread(self.zk.topic_config, topic)

    async def set_topic_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        """Store the topic's overrides for the cluster; this broker applies them at once, the others on the
        notification."""
        await asyncio.to_thread(self.zk.set_topic_config, topic, overrides)
        self._apply_overrides(topic, overrides)

    async def _config_changed(self) -> None:
        loop = asyncio.get_running_loop()

        def watch(_: object) -> None:  # kazoo's thread
            loop.call_soon_threadsafe(lambda: self._spawn(self._config_changed()))

        names = await asyncio.to_thread(self.zk.config_changes, watch)
        for name in names:
            if name <= self._last_config_change:
                continue
            self._last_config_change = name
            entity = await asyncio.to_thread(self.zk.config_change, name)
            if entity is not None and entity.startswith("topics/"):
                topic = entity.removeprefix("topics/")
                self._apply_overrides(topic, await self.topic_overrides(topic))

    def _apply_overrides(self, topic: str, overrides: dict[str, str]) -> None:
        manager = self.server.log_manager
        if manager.partitions_of(topic):
            manager.update_topic_config(topic, overrides)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def next_producer_id(self) -> int:
        """A producer id no other broker of the cluster hands out."""
        async with self._producer_block_lock:
            if self._next_producer_id > self._producer_block_end:
                block = await asyncio.to_thread(self.zk.allocate_producer_ids, self.server.node_id)
                self._next_producer_id, self._producer_block_end = block.block_start, block.block_end
            producer_id = self._next_producer_id
            self._next_producer_id += 1
            return producer_id

    async def stop(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await self.controller.stop()
        await asyncio.to_thread(self.zk.close)
