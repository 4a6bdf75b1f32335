"""What ZooKeeper says of a cluster: live brokers, the controller, and partitions missing ISR members."""

from __future__ import annotations

from dataclasses import dataclass, field

from samsa.topic_partition import TopicPartition

from .zk_client import ZkClient

__all__ = ["ClusterStatus", "cluster_status"]


@dataclass(slots=True)
class ClusterStatus:
    live: list[int]
    controller: int | None
    topics: int = 0
    partitions: int = 0
    # (partition, leader, replicas, isr) for each partition whose ISR is smaller than its replica set
    under_replicated: list[tuple[TopicPartition, int, tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=list
    )


def cluster_status(zookeeper_connect: str) -> ClusterStatus:
    zk = ZkClient(zookeeper_connect)
    zk.start()
    try:
        status = ClusterStatus(sorted(zk.live_brokers()), zk.controller())
        for topic in zk.topics():
            assignment = zk.topic_assignment(topic)
            if assignment is None:
                continue
            status.topics += 1
            for partition, replicas in sorted(assignment.partitions.items()):
                status.partitions += 1
                found = zk.partition_state(topic, partition)
                leader, isr = (found[0].leader, found[0].isr) if found else (-1, ())
                if len(isr) < len(replicas) or leader not in status.live:
                    status.under_replicated.append((TopicPartition(topic, partition), leader, replicas, isr))
        return status
    finally:
        zk.close()
