"""The gauges of a broker's metrics (``samsa.metrics``), read from its services when scraped: the replica
manager's partition counts, each log's size, segments and offsets, the controller's (on the active controller),
and the consumer lag of the groups this broker coordinates.

Names as the JMX exporter gives Kafka's MBeans:

    kafka_server_replicamanager_partitioncount, _leadercount, _underreplicatedpartitions,
        _underminisrpartitioncount, _isrshrinks_total, _isrexpands_total   ReplicaManager
    kafka_log_log_size{topic,partition}, _numlogsegments, _logendoffset, _logstartoffset          Log
    kafka_controller_kafkacontroller_activecontrollercount, _offlinepartitionscount    KafkaController
    kafka_consumergroup_lag{consumergroup,topic,partition}  (kafka-exporter's name) the partition's high
        watermark minus the group's committed offset, for the partitions this broker leads
    kafka_server_fetcherlagmetrics_consumerlag{clientId,topic,partition}   FetcherLagMetrics (a follower: the
        leader's high watermark minus its log end; clientId ReplicaFetcherThread-0-<leader id>, as Kafka's)
    kafka_coordinator_group_groupmetadatamanager_numgroups, _numgroupsstable, _numgroupspreparingrebalance,
        _numgroupscompletingrebalance, _numgroupsempty, _numgroupsdead, _numoffsets     GroupMetadataManager

Event-loop thread only (the scrape runs there).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from samsa.metrics.broker_metrics import Gauge

if TYPE_CHECKING:
    from .services import BrokerServices

__all__ = [
    "consumer_lag",
    "controller_gauges",
    "fetcher_lag",
    "group_coordinator_gauges",
    "log_gauges",
    "replica_gauges",
]


def replica_gauges(services: BrokerServices) -> Iterator[Gauge]:
    node = services.node_id
    partitions = services.replica_manager.partitions.values()
    led = [p for p in partitions if p.leader_id == node]
    yield Gauge("kafka_server_replicamanager_partitioncount", "Partitions hosted", len(partitions))
    yield Gauge("kafka_server_replicamanager_leadercount", "Partitions led", len(led))
    yield Gauge(
        "kafka_server_replicamanager_underreplicatedpartitions",
        "Led partitions whose ISR is smaller than their replicas",
        sum(1 for p in led if len(p.isr) < len(p.replicas)),
    )
    yield Gauge(
        "kafka_server_replicamanager_underminisrpartitioncount",
        "Led partitions whose ISR is under min.insync.replicas",
        sum(1 for p in led if len(p.isr) < p.effective_min_isr()),
    )
    manager = services.replica_manager
    yield Gauge(
        "kafka_server_replicamanager_isrshrinks", "ISR shrinks committed", manager.isr_shrinks, counter=True
    )
    yield Gauge(
        "kafka_server_replicamanager_isrexpands", "ISR expands committed", manager.isr_expands, counter=True
    )


def log_gauges(services: BrokerServices) -> Iterator[Gauge]:
    for tp, log in sorted(services.log_manager.all_logs().items()):
        labels = {"topic": tp.topic, "partition": str(tp.partition)}
        yield Gauge("kafka_log_log_size", "Bytes of the partition's segments", log.size, labels)
        yield Gauge("kafka_log_log_numlogsegments", "Segments", len(log.segments), labels)
        yield Gauge("kafka_log_log_logendoffset", "Log end offset", log.log_end_offset, labels)
        yield Gauge("kafka_log_log_logstartoffset", "Log start offset", log.log_start_offset, labels)


def controller_gauges(services: BrokerServices) -> Iterator[Gauge]:
    zk = services.zk_support
    active = zk is not None and zk.controller.is_active
    yield Gauge(
        "kafka_controller_kafkacontroller_activecontrollercount", "1 on the active controller", int(active)
    )
    if zk is not None and active:
        metadata = zk.metadata
        offline = sum(1 for topic in metadata.topics() for p in metadata.partitions_of(topic) if p.leader < 0)
        yield Gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader", offline
        )


def consumer_lag(services: BrokerServices) -> Iterator[Gauge]:
    coordinator = services.group_coordinator_made
    if coordinator is None:
        return
    hosted = services.replica_manager.partitions
    for group_id, group in sorted(coordinator.groups.items()):
        for tp, committed in sorted(group.offsets.items()):
            partition = hosted.get(tp)
            if partition is None or partition.leader_id != services.node_id:
                continue
            yield Gauge(
                "kafka_consumergroup_lag",
                "The partition's high watermark minus the group's committed offset",
                max(partition.log.high_watermark - committed.offset, 0),
                {"consumergroup": group_id, "topic": tp.topic, "partition": str(tp.partition)},
            )


def fetcher_lag(services: BrokerServices) -> Iterator[Gauge]:
    fetchers = services.replica_manager.fetchers
    if fetchers is None:
        return
    for leader, tp, lag in sorted(fetchers.lags(), key=lambda item: (item[1].topic, item[1].partition)):
        yield Gauge(
            "kafka_server_fetcherlagmetrics_consumerlag",
            "The leader's high watermark minus this follower's log end offset",
            lag,
            {
                "clientId": f"ReplicaFetcherThread-0-{leader}",
                "topic": tp.topic,
                "partition": str(tp.partition),
            },
        )


_GROUP_STATES = {
    "stable": "Stable",
    "preparingrebalance": "PreparingRebalance",
    "completingrebalance": "CompletingRebalance",
    "empty": "Empty",
    "dead": "Dead",
}


def group_coordinator_gauges(services: BrokerServices) -> Iterator[Gauge]:
    coordinator = services.group_coordinator_made
    groups = list(coordinator.groups.values()) if coordinator is not None else []
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    yield Gauge(prefix + "numgroups", "Groups this broker coordinates", len(groups))
    states = [group.state.value for group in groups]
    for suffix, name in _GROUP_STATES.items():
        yield Gauge(prefix + "numgroups" + suffix, f"Groups in state {name}", states.count(name))
    yield Gauge(prefix + "numoffsets", "Committed offsets held", sum(len(g.offsets) for g in groups))
