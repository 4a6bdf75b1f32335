"""What ZooKeeper says of a cluster: live brokers, the controller, partitions missing ISR members, partitions being
moved and topics being deleted."""

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
    # (partition, adding, removing) for each partition being moved
    reassigning: list[tuple[TopicPartition, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    deleting: list[str] = field(default_factory=list)  # topics whose deletion waits for replicas to answer


def cluster_status(zookeeper_connect: str) -> ClusterStatus:
    zk = ZkClient(zookeeper_connect)
    zk.start()
    try:
        status = ClusterStatus(sorted(zk.live_brokers()), zk.controller())
        status.deleting = zk.topics_to_delete()
        for topic in zk.topics():
            assignment = zk.topic_assignment(topic)
            if assignment is None:
                continue
            status.topics += 1
            for partition, replicas in sorted(assignment.partitions.items()):
                status.partitions += 1
                found = zk.partition_state(topic, partition)
                leader, isr = (found[0].leader, found[0].isr) if found else (-1, ())
                tp = TopicPartition(topic, partition)
                if len(isr) < len(replicas) or leader not in status.live:
                    status.under_replicated.append((tp, leader, replicas, isr))
                adding = assignment.adding_replicas.get(partition, ())
                removing = assignment.removing_replicas.get(partition, ())
                if adding or removing:
                    status.reassigning.append((tp, adding, removing))
        return status
    finally:
        zk.close()
