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
import logging
import uuid
from pathlib import Path

from samsa.clock import SYSTEM_CLOCK, Clock
from samsa.coordinator import CoordinatorConfig, GroupConfig, GroupCoordinator
from samsa.storage.cleaner import CleanerConfig
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager

from .config import KafkaConfig
from .dispatch import RequestDispatcher
from .network import Server
from .offsets_log import ReplicaOffsetsLog
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

SCHEDULER_TICK_S = 1.0


class KafkaServer:
    """A broker: the log manager, the replica manager, the request dispatcher and one server per listener."""

    def __init__(self, config: KafkaConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.cluster_id = config.get("cluster.id") or _stable_cluster_id(config.log_dirs)
        self.log_manager = LogManager(
            [Path(d) for d in config.log_dirs],
            LogConfig.from_properties(config.topic_defaults()),
            clock,
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            retention_check_interval_ms=int(config.get("log.retention.check.interval.ms")),
            flush_checkpoint_interval_ms=int(config.get("log.flush.offset.checkpoint.interval.ms")),
            flush_start_offset_checkpoint_interval_ms=int(
                config.get("log.flush.start.offset.checkpoint.interval.ms")
            ),
            high_watermark_checkpoint_interval_ms=int(
                config.get("replica.high.watermark.checkpoint.interval.ms")
            ),
            flush_scheduler_interval_ms=int(config.get("log.flush.scheduler.interval.ms")),
            cleaner_config=CleanerConfig(
                enable=bool(config.get("log.cleaner.enable")) and int(config.get("log.cleaner.threads")) > 0,
                backoff_ms=int(config.get("log.cleaner.backoff.ms")),
                dedupe_buffer_size=int(config.get("log.cleaner.dedupe.buffer.size")),
                io_buffer_load_factor=float(config.get("log.cleaner.io.buffer.load.factor")),
            ),
        )
        self.replica_manager = ReplicaManager(self.log_manager, self.node_id, clock)
        self.producer_ids = ProducerIdManager(Path(config.log_dirs[0]))
        self.group_coordinator = GroupCoordinator(
            ReplicaOffsetsLog(self.replica_manager, self.log_manager), clock, _coordinator_config(config)
        )
        self.dispatcher = RequestDispatcher(self)
        self._servers: list[Server] = []
        self.bound_addresses: list[tuple[str, str, int]] = []
        self._scheduler: asyncio.Task[None] | None = None
        self._started = False

    async def start(self) -> None:
        self.log_manager.startup()
        self._started = True
        self.replica_manager.startup()
        self.group_coordinator.startup()
        max_request = int(self.config.get("socket.request.max.bytes"))
        for name, host, port in self.config.listener_addresses:
            server = Server(self.dispatcher.handle, listener=name, max_request_size=max_request)
            bound_host, bound_port = await server.start(host, port)
            self._servers.append(server)
            self.bound_addresses.append((name, bound_host, bound_port))
        self._scheduler = asyncio.create_task(self._run_scheduler(), name="samsa-scheduler")

    def advertised(self) -> tuple[str, int]:
        """The host and port clients are told to use (advertised.listeners, else the bound listener)."""
        if self.config.get("advertised.listeners"):
            _, host, port = self.config.advertised_addresses[0]
            return host, port
        _, host, port = self.bound_addresses[0]
        return host or "127.0.0.1", port

    async def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            await asyncio.gather(self._scheduler, return_exceptions=True)
            self._scheduler = None
        self.group_coordinator.shutdown()
        for server in self._servers:
            await server.close()
        self._servers.clear()
        if self._started:
            self.log_manager.checkpoint_high_watermarks()
            self.log_manager.shutdown()
            self._started = False

    async def _run_scheduler(self) -> None:
        while True:
            await asyncio.sleep(SCHEDULER_TICK_S)
            try:
                self.log_manager.schedule_due(self.clock.milliseconds())
                self.group_coordinator.schedule_due(self.clock.milliseconds())
            except Exception:
                log.exception("periodic log maintenance failed")


def _coordinator_config(config: KafkaConfig) -> CoordinatorConfig:
    return CoordinatorConfig(
        offsets_topic_partitions=int(config.get("offsets.topic.num.partitions")),
        offsets_topic_segment_bytes=int(config.get("offsets.topic.segment.bytes")),
        offsets_retention_ms=int(config.get("offsets.retention.minutes")) * 60_000,
        offsets_retention_check_interval_ms=int(config.get("offsets.retention.check.interval.ms")),
        group=GroupConfig(
            min_session_timeout_ms=int(config.get("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(config.get("group.max.session.timeout.ms")),
            initial_rebalance_delay_ms=int(config.get("group.initial.rebalance.delay.ms")),
            max_size=int(config.get("group.max.size")),
            offset_metadata_max_bytes=int(config.get("offset.metadata.max.bytes")),
        ),
    )


def _stable_cluster_id(log_dirs: list[str]) -> str:
    """A cluster id derived from the first log dir, so a restarted single broker keeps its id."""
    digest = uuid.uuid5(uuid.NAMESPACE_URL, "samsa:" + str(Path(log_dirs[0]).resolve()))
    return base64.urlsafe_b64encode(digest.bytes).decode().rstrip("=")
