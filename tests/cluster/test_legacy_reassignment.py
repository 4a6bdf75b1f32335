"""Moves asked for the pre-KIP-455 way, by writing ``/admin/reassign_partitions`` as an old tool did: the controller
makes them, shrinks the znode as they end (at once for the moves it refuses) and deletes it with the last one; a
move outlives the controller that started it, the znode with it.

Real ZooKeeper (the znode written with kazoo directly), real ``samsa serve`` brokers, real confluent-kafka clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from test_reassignment import current_controller, reassign, replica_dirs
from test_replication import Acked, controller_of, partitions, read_all, wait_for

from samsa.client.sync import SyncClient
from samsa.cluster.launcher import LocalCluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.clients]

ZNODE = "/admin/reassign_partitions"
BROKER_RESOURCE = 4


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path / "cluster", broker_config={"replica.lag.time.max.ms": "5000"})
    local.up(3)
    try:
        yield local
    finally:
        local.down()


@pytest.fixture
def kazoo(cluster: LocalCluster) -> Iterator[KazooClient]:
    """A plain ZooKeeper session in the cluster's chroot, as an old tool opened one."""
    client = KazooClient(hosts=cluster.zookeeper_connect)
    client.start(15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def legacy(*moves: tuple[str, int, list[int]]) -> bytes:
    partitions = [{"topic": t, "partition": p, "replicas": r} for t, p, r in moves]
    return json.dumps({"version": 1, "partitions": partitions}).encode()


def listed(kazoo: KazooClient) -> list[tuple[str, int, list[int]]] | None:
    """The moves the znode still lists (None: it is gone)."""
    try:
        data, _ = kazoo.get(ZNODE)
    except NoNodeError:  # gone (it may go between any check and the read)
        return None
    return sorted((e["topic"], e["partition"], e["replicas"]) for e in json.loads(data)["partitions"])


def test_legacy_znode_moves_are_made_and_leave_it(cluster: LocalCluster, kazoo: KazooClient) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assignment = [[1, 2], [2, 3], [3, 1]]
    admin.create_topics([NewTopic("old", num_partitions=3, replica_assignment=assignment)])["old"].result(30)
    wait_for("old's leaders", lambda: (p := partitions(admin, "old")) and all(v[0] >= 0 for v in p.values()))
    producer = Acked(cluster.bootstrap_servers, "old")
    producer.send(600)
    producer.flush()

    kazoo.create(
        ZNODE,
        legacy(
            ("old", 0, [3, 1]),  # a move: 3 in, 2 out
            ("old", 1, [9]),  # onto a broker that does not exist: refused
            ("old", 2, [3, 1]),  # where it is already: done
            ("nosuch", 0, [1]),  # no such topic: refused
        ),
    )
    wait_for("the znode gone", lambda: listed(kazoo) is None)
    wait_for("old-0 on its new replicas", lambda: partitions(admin, "old")[0][1:] == ([3, 1], [1, 3]))
    assert {p: v[1] for p, v in partitions(admin, "old").items()} == {0: [3, 1], 1: [2, 3], 2: [3, 1]}
    wait_for("old-0's replica on broker 2 deleted", lambda: replica_dirs(cluster, 2, "old") == ["old-1"])
    code, out, _ = reassign(cluster, "--list")
    assert code == 0 and out.strip() == "No partition reassignments found."
    got = read_all(cluster.bootstrap_servers, "old", 600)
    assert {p: got.get(p, []) for p in producer.acked} == producer.acked

    # a znode that is not a reassignment is deleted, and nothing moves
    kazoo.create(ZNODE, b'{"version":1,"partitions":[{"topic":"old","replicas":[2]}]}')
    wait_for("the damaged znode deleted", lambda: kazoo.exists(ZNODE) is None)
    assert {p: v[1] for p, v in partitions(admin, "old").items()} == {0: [3, 1], 1: [2, 3], 2: [3, 1]}


def test_legacy_move_outlives_its_controller(cluster: LocalCluster, kazoo: KazooClient) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    controller = controller_of(cluster)
    x, y = sorted({1, 2, 3} - {controller})
    admin.create_topics([NewTopic("slow", num_partitions=1, replica_assignment=[[x]])])["slow"].result(30)
    wait_for("slow's leader", lambda: (p := partitions(admin, "slow")) and p[0][0] == x)
    filler = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for _ in range(2000):  # 2 MB: past the first 1 MB fetch, at 20 kB/s the copy runs until the throttle goes
        filler.produce("slow", b"f" * 1000)
    assert filler.flush(60) == 0
    with SyncClient(cluster.bootstrap_servers) as client:
        throttle = {"slow": {"follower.replication.throttled.replicas": f"0:{y}"}}
        assert not any(client.incremental_alter_configs(throttle).values())
        rate = {str(y): {"follower.replication.throttled.rate": "20000"}}
        assert not any(client.incremental_alter_configs(rate, resource_type=BROKER_RESOURCE).values())
    out = cluster.directory / f"broker-{y}" / "broker.out"
    wait_for(f"broker {y} throttled", lambda: "as follower 20000 B/s" in out.read_text())

    kazoo.create(ZNODE, legacy(("slow", 0, [x, y])))
    expected = [f"slow-0: replicas: {x},{y}. adding: {y}. removing: ."]
    wait_for("the move started", lambda: reassign(cluster, "--list")[1].splitlines()[1:] == expected)
    time.sleep(1)
    assert listed(kazoo) == [("slow", 0, [x, y])]  # still copying: still listed
    cluster.kill(controller)
    wait_for("a new controller", lambda: current_controller(cluster) not in (controller, None))
    wait_for(
        "the new controller to list the move",
        lambda: reassign(cluster, "--list", via=x)[1].splitlines()[1:] == expected,
    )
    assert listed(kazoo) == [("slow", 0, [x, y])]
    with SyncClient(cluster.broker(x).address) as client:
        rate = {str(y): {"follower.replication.throttled.rate": None}}
        assert not any(client.incremental_alter_configs(rate, resource_type=BROKER_RESOURCE).values())
    wait_for("the znode gone", lambda: listed(kazoo) is None, timeout=60)
    assert partitions(admin, "slow")[0][1:] == ([x, y], sorted([x, y]))


def test_moves_of_a_deleted_topic_or_cancelled_leave_the_znode(
    cluster: LocalCluster, kazoo: KazooClient, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for topic in ("gone", "kept"):
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[topic].result(30)
        wait_for(f"{topic}'s leader", lambda t=topic: (p := partitions(admin, t)) and p[0][0] == 1)
    filler = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for _ in range(2000):  # 2 MB each: both copies outlast the test at 20 kB/s
        filler.produce("gone", b"g" * 1000)
        filler.produce("kept", b"k" * 1000)
    assert filler.flush(60) == 0
    with SyncClient(cluster.bootstrap_servers) as client:
        throttle = {t: {"follower.replication.throttled.replicas": "0:2"} for t in ("gone", "kept")}
        assert not any(client.incremental_alter_configs(throttle).values())
        rate = {"2": {"follower.replication.throttled.rate": "20000"}}
        assert not any(client.incremental_alter_configs(rate, resource_type=BROKER_RESOURCE).values())
    out = cluster.directory / "broker-2" / "broker.out"
    wait_for("broker 2 throttled", lambda: "as follower 20000 B/s" in out.read_text())
    kazoo.create(ZNODE, legacy(("gone", 0, [1, 2]), ("kept", 0, [1, 2])))
    wait_for("both moves started", lambda: len(reassign(cluster, "--list")[1].splitlines()) == 3)
    admin.delete_topics(["gone"])["gone"].result(30)
    wait_for("gone's move out of the znode", lambda: listed(kazoo) == [("kept", 0, [1, 2])])
    assert reassign(cluster, "--list")[1].splitlines()[1:] == [
        "kept-0: replicas: 1,2. adding: 2. removing: ."
    ]
    # a cancel through the API supersedes the znode's move
    plan = tmp_path / "plan.json"
    plan.write_text(legacy(("kept", 0, [1, 2])).decode())
    code, _, err = reassign(cluster, "--cancel", "--reassignment-json-file", str(plan))
    assert code == 0, err
    wait_for("the znode gone", lambda: listed(kazoo) is None)
    assert partitions(admin, "kept")[0][1] == [1]
