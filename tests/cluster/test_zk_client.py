"""Kafka's ZooKeeper operations against a real ZooKeeper server: what brokers and the controller rely on."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError

from samsa.cluster.zk_client import (
    BrokerAlreadyRegisteredError,
    ControllerMovedError,
    TopicZnodeExistsError,
    ZkClient,
)
from samsa.cluster.znodes import (
    ADMIN_REASSIGN_PARTITIONS,
    BrokerRegistration,
    Endpoint,
    PartitionState,
    ReassignPartitions,
    TopicAssignment,
)
from samsa.cluster.zookeeper import ZooKeeperServer
from samsa.topic_partition import TopicPartition

pytestmark = pytest.mark.timeout(120)


@contextmanager
def session(connect: str) -> Iterator[ZkClient]:
    client = ZkClient(connect, session_timeout_ms=6000)
    client.start()
    try:
        yield client
    finally:
        client.close()


def registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "127.0.0.1", port),))


def test_server_answers_on_loopback(zookeeper: ZooKeeperServer) -> None:
    assert zookeeper.is_ok()
    assert "Zookeeper version: 3." in zookeeper.four_letter_word("srvr")


def test_start_makes_kafkas_paths_and_chroot(zk_connect: str, zookeeper: ZooKeeperServer) -> None:
    with session(zk_connect):
        pass
    raw = KazooClient(zookeeper.connect_string)
    raw.start()
    try:
        chroot = zk_connect.split("/", 1)[1]
        assert {"brokers", "config", "admin", "latest_producer_id_block"} <= set(
            raw.get_children(f"/{chroot}")
        )
        assert set(raw.get_children(f"/{chroot}/brokers")) == {"ids", "topics", "seqid"}
    finally:
        raw.stop()


def test_broker_registration_epochs_and_duplicates(zk_connect: str) -> None:
    with session(zk_connect) as first, session(zk_connect) as second:
        epoch = first.register_broker(registration(1))
        with pytest.raises(BrokerAlreadyRegisteredError, match=r"broker\.id 1"):
            second.register_broker(registration(1, 9093))
        assert first.register_broker(registration(1)) == epoch  # same session: kept
        second.register_broker(registration(2, 9093))
        brokers = first.live_brokers()
        assert sorted(brokers) == [1, 2] and brokers[1][1] == epoch
        assert brokers[2][0].endpoints == (Endpoint("PLAINTEXT", "127.0.0.1", 9093),)
        first.close()  # a clean stop is seen at once, not after the session timeout
        assert sorted(second.live_brokers()) == [2]
        with session(zk_connect) as again:
            assert again.register_broker(registration(1)) > epoch  # a new registration, a new broker epoch


def test_cluster_id_first_broker_wins(zk_connect: str) -> None:
    with session(zk_connect) as first, session(zk_connect) as second:
        assert first.get_or_create_cluster_id("AAAAAAAAAAAAAAAAAAAAAA") == "AAAAAAAAAAAAAAAAAAAAAA"
        assert second.get_or_create_cluster_id("BBBBBBBBBBBBBBBBBBBBBB") == "AAAAAAAAAAAAAAAAAAAAAA"


def test_topic_config_then_assignment(zk_connect: str) -> None:
    with session(zk_connect) as zk:
        zk.create_topic(
            "t",
            TopicAssignment({0: (1, 2), 1: (2, 1)}, "dGVzdHRvcGljaWQxMjM0NQ"),
            {"cleanup.policy": "compact"},
        )
        with pytest.raises(TopicZnodeExistsError):
            zk.create_topic("t", TopicAssignment({0: (1,)}), {})
        assert zk.topics() == ["t"]
        assert zk.topic_assignment("t") == TopicAssignment({0: (1, 2), 1: (2, 1)}, "dGVzdHRvcGljaWQxMjM0NQ")
        assert zk.topic_config("t") == {"cleanup.policy": "compact"}
        data, _ = zk.kazoo.get("/brokers/topics/t")
        assert json.loads(data)["partitions"] == {"0": [1, 2], "1": [2, 1]}
        assert zk.topic_assignment("missing") is None and zk.topic_config("missing") == {}


def test_controller_election_and_fencing(zk_connect: str) -> None:
    with session(zk_connect) as a, session(zk_connect) as b:
        won_a, won_b = a.try_become_controller(1), b.try_become_controller(2)
        assert won_a is not None and won_a.epoch == 1 and won_b is None
        assert b.controller() == 1
        state = PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=1)
        assert a.write_partition_state(won_a, "t", 0, state, None) == 0
        a.close()
        moved = threading.Event()
        assert b.controller(watch=lambda event: moved.set()) is None or moved.wait(10)
        won_b = b.try_become_controller(2)
        assert won_b is not None and won_b.epoch == 2
        # the old controller's fence no longer holds
        with session(zk_connect) as stale, pytest.raises(ControllerMovedError):
            stale.write_partition_state(won_a, "t", 0, state, 0)
        newer = PartitionState(leader=2, leader_epoch=1, isr=(2,), controller_epoch=2)
        assert b.write_partition_state(won_b, "t", 0, newer, 0) == 1
        with pytest.raises(BadVersionError):
            b.write_partition_state(won_b, "t", 0, newer, 0)  # partition epoch 0 is stale now
        assert b.partition_state("t", 0) == (newer, 1)


def test_legacy_reassignment_watched_shrunk_and_deleted(zk_connect: str) -> None:
    t0, t1, t2 = (TopicPartition("t", p) for p in range(3))
    with session(zk_connect) as zk, session(zk_connect) as tool:
        fence = zk.try_become_controller(1)
        assert fence is not None
        changed = threading.Event()
        assert zk.reassign_partitions(watch=lambda event: changed.set()) is None
        moves = ReassignPartitions({t0: (1, 2), t1: (2,), t2: (3,)})
        tool.kazoo.create(ADMIN_REASSIGN_PARTITIONS, moves.to_json())
        assert changed.wait(10)  # the creation fires the watch
        assert zk.reassign_partitions() == moves
        zk.remove_reassignments(fence, [t1, TopicPartition("other", 0)])
        assert zk.reassign_partitions() == ReassignPartitions({t0: (1, 2), t2: (3,)})
        zk.remove_reassignments(fence, [t0, t2])  # the last moves: the znode goes
        assert tool.kazoo.exists(ADMIN_REASSIGN_PARTITIONS) is None
        zk.remove_reassignments(fence, [t0])  # nothing left to remove: no error
        tool.kazoo.create(ADMIN_REASSIGN_PARTITIONS, b"{broken")
        zk.remove_reassignments(fence, None)
        assert tool.kazoo.exists(ADMIN_REASSIGN_PARTITIONS) is None
        # a stale controller cannot touch it
        tool.kazoo.create(ADMIN_REASSIGN_PARTITIONS, moves.to_json())
        tool.kazoo.set("/controller_epoch", b"5")
        with pytest.raises(ControllerMovedError):
            zk.remove_reassignments(fence, [t0])
        assert zk.reassign_partitions() == moves


def test_producer_id_blocks_unique_across_brokers(zk_connect: str) -> None:
    blocks: list[tuple[int, int]] = []
    lock = threading.Lock()

    def take(broker_id: int) -> None:
        with session(zk_connect) as zk:
            for _ in range(10):
                block = zk.allocate_producer_ids(broker_id)
                with lock:
                    blocks.append((block.block_start, block.block_end))

    threads = [threading.Thread(target=take, args=(broker_id,)) for broker_id in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(blocks) == [(1000 * i, 1000 * i + 999) for i in range(30)]


def test_data_survives_a_zookeeper_restart(
    tmp_path: object, zk_connect: str, zookeeper: ZooKeeperServer
) -> None:
    with session(zk_connect) as zk:
        zk.create_topic("kept", TopicAssignment({0: (1,)}), {})
    zookeeper.stop()
    zookeeper.start()
    with session(zk_connect) as zk:
        assert zk.topic_assignment("kept") == TopicAssignment({0: (1,)})


def test_log_dir_events_in_kafkas_format_are_taken_once(zk_connect: str) -> None:
    with session(zk_connect) as broker, session(zk_connect) as controller:
        fired = threading.Event()
        assert controller.take_log_dir_events(watch=lambda _: fired.set()) == []
        broker.notify_log_dir_event(3)
        assert fired.wait(10)
        names = broker.kazoo.get_children("/log_dir_event_notification")
        assert [n[: len("log_dir_event_")] for n in names] == ["log_dir_event_"]
        data, _ = broker.kazoo.get(f"/log_dir_event_notification/{names[0]}")
        assert json.loads(data) == {"version": 1, "broker": 3, "event": 1}  # as Kafka's broker writes it
        broker.kazoo.create("/log_dir_event_notification/log_dir_event_", b"not json", sequence=True)
        broker.notify_log_dir_event(2)
        assert controller.take_log_dir_events() == [3, 2]  # oldest first; the unreadable one dropped
        assert broker.kazoo.get_children("/log_dir_event_notification") == []
