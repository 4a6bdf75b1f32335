"""The group coordinator on a real 3-broker cluster (ZooKeeper and ``samsa serve`` processes), spoken to over raw
sockets with Samsa's protocol classes so each answer is seen exactly as the broker sent it.

What it shows: OffsetFetch sent to a broker that does not lead the group's ``__consumer_offsets`` partition
answers NOT_COORDINATOR (v2-7 at the top level, v8+ per group) rather than "nothing committed"; and a commit whose
records the other replicas of that partition never take (both followers paused) is answered with Kafka's error
and is not shown by OffsetFetch, which goes on returning the commit before it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from tests.badinput.wire import Connection
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.protocol import ErrorCode
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from samsa.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from samsa.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]

TOPIC = "positions"
GROUP = "coordinated"
COMMIT_TIMEOUT_MS = 1500


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("coordinator") / "cluster",
        broker_config={
            "offsets.topic.num.partitions": "3",
            "offsets.commit.timeout.ms": str(COMMIT_TIMEOUT_MS),
        },
    )
    local.up(3)
    try:
        admin = AdminClient({"bootstrap.servers": local.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(60)
        yield local
    finally:
        local.down()


def connect(cluster: LocalCluster, broker_id: int) -> Connection:
    return Connection(cluster.broker(broker_id).port)


def coordinator_of(cluster: LocalCluster) -> int:
    """The broker FindCoordinator names for GROUP (the first asks create __consumer_offsets)."""

    def found() -> int | None:
        with connect(cluster, 1) as conn:
            answer = conn.request(10, 1, FindCoordinatorRequest(key=GROUP, key_type=0))
        return answer.node_id if answer.error_code == ErrorCode.NONE else None

    return int(wait_for("a coordinator for the group", found, timeout=60))


def commit(conn: Connection, offset: int) -> int:
    """A standalone commit (no generation) of ``offset`` for partition 0; its error code."""
    request = OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(TOPIC, [OffsetCommitRequestPartition(0, offset)])],
    )
    [topic] = conn.request(8, 7, request).topics
    return int(topic.partitions[0].error_code)


def fetch_v7(conn: Connection) -> tuple[int, int | None]:
    """(top-level error, committed offset of partition 0) by OffsetFetch v7."""
    answer = conn.request(
        9, 7, OffsetFetchRequest(group_id=GROUP, topics=[OffsetFetchRequestTopic(TOPIC, [0])])
    )
    offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
    return answer.error_code, (offsets[0] if offsets else None)


def fetch_v8(conn: Connection) -> tuple[int, int | None]:
    """(the group's error, committed offset of partition 0) by OffsetFetch v8 (groups)."""
    group = OffsetFetchRequestGroup(group_id=GROUP, topics=[OffsetFetchRequestTopics(TOPIC, [0])])
    [answer] = conn.request(9, 8, OffsetFetchRequest(groups=[group])).groups
    offsets = [p.committed_offset for t in answer.topics for p in t.partitions]
    return answer.error_code, (offsets[0] if offsets else None)


def offsets_replicas(cluster: LocalCluster, coordinator: int) -> list[int]:
    """The replicas of every __consumer_offsets partition, as the coordinator's metadata says."""
    with connect(cluster, coordinator) as conn:
        answer = conn.request(3, 9, MetadataRequest(topics=[MetadataRequestTopic(name="__consumer_offsets")]))
    return sorted({r for t in answer.topics for p in t.partitions for r in p.replica_nodes})


def test_offset_fetch_to_another_broker_answers_not_coordinator(cluster: LocalCluster) -> None:
    coordinator = coordinator_of(cluster)
    with connect(cluster, coordinator) as conn:
        assert wait_for("the first commit", lambda: commit(conn, 10) == ErrorCode.NONE, timeout=60)
        assert fetch_v7(conn) == (ErrorCode.NONE, 10)
        assert fetch_v8(conn) == (ErrorCode.NONE, 10)
    for other in {1, 2, 3} - {coordinator}:
        with connect(cluster, other) as conn:
            assert fetch_v7(conn) == (ErrorCode.NOT_COORDINATOR, None)
            assert fetch_v8(conn) == (ErrorCode.NOT_COORDINATOR, None)
            assert commit(conn, 11) == ErrorCode.NOT_COORDINATOR


def test_a_commit_the_followers_never_take_is_not_fetched(cluster: LocalCluster) -> None:
    coordinator = coordinator_of(cluster)
    assert offsets_replicas(cluster, coordinator) == [1, 2, 3]
    with connect(cluster, coordinator) as conn:
        assert wait_for("a commit", lambda: commit(conn, 20) == ErrorCode.NONE, timeout=60)
        followers = sorted({1, 2, 3} - {coordinator})
        for follower in followers:
            cluster.pause(follower)
        try:
            # in the ISR still (replica.lag.time.max.ms 30 s), so the append is taken and waits for them
            assert commit(conn, 21) == ErrorCode.REQUEST_TIMED_OUT
            assert fetch_v7(conn) == (ErrorCode.NONE, 20)
            assert fetch_v8(conn) == (ErrorCode.NONE, 20)
        finally:
            for follower in followers:
                cluster.resume(follower)
        assert wait_for("a commit once they are back", lambda: commit(conn, 22) == ErrorCode.NONE, timeout=60)
        assert fetch_v7(conn) == (ErrorCode.NONE, 22)
