"""A broker's registration in ZooKeeper when start-up meets trouble: a real ZooKeeper server and a real broker
process. Found by a nemesis run: a broker restarted after kill -9 waits for its old session's znode to go; when
ZooKeeper stalled meanwhile (its sessions, the broker's new one too, expired at once) the broker exited with "the
broker could not start" and stayed down."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.nemesis import broker_epoch
from tests.cluster.waiting import wait_for

from samsa.cluster.local import LocalCluster
from samsa.cluster.zookeeper import ZooKeeperServer

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION_MS = 10_000  # time enough for the restarted broker to start while the old session lives


def test_a_broker_waiting_out_its_old_registration_survives_its_new_session_expiring(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    connect = f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=connect, session_timeout_ms=SESSION_MS)
    try:
        cluster.up(1)
        first = broker_epoch(connect, 1)
        cluster.kill(1)  # its session lives on for up to SESSION_MS
        before = len(cluster.output(1, limit=10**6))
        cluster.start_broker(1, wait=False)
        wait_for(
            "the restarted broker to wait for its old session",
            lambda: "waiting for it to expire" in cluster.output(1, limit=10**6)[before:],
        )
        zookeeper.pause()  # a stalled server: once resumed it expires every session, the new one's too
        time.sleep(SESSION_MS / 1000 + 3)
        zookeeper.resume()
        wait_for("broker 1 registered again", lambda: broker_epoch(connect, 1) not in (None, first), 60)
        log = cluster.output(1, limit=10**6)[before:]
        assert "could not start" not in log, log
        assert "registering again" in log, log  # the interruption was met, not missed by timing
    finally:
        cluster.down()


def test_a_restarted_broker_answers_metadata_before_the_controller_reached_it(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Found by a nemesis run: a broker restarted after kill -9 answered Metadata from its empty cache while it
    waited out its old registration (no brokers, the topic unknown), and librdkafka 2.16 dropped every broker it
    knew: the consumers that asked it stopped for minutes. Until the controller reaches it, it names the brokers
    ZooKeeper listed and the topic LEADER_NOT_AVAILABLE; after, its full answer."""
    connect = f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=connect, session_timeout_ms=SESSION_MS)
    try:
        cluster.up(2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("t", 2, 2)])["t"].result(60)
        wait_for(
            "leaders",
            lambda: all(p.leader >= 0 for p in admin.list_topics("t", 10).topics["t"].partitions.values()),
        )
        first = broker_epoch(connect, 2)
        cluster.kill(2)  # its session lives on for up to SESSION_MS
        before = len(cluster.output(2, limit=10**6))
        cluster.start_broker(2, wait=False)
        wait_for(
            "the restarted broker to wait for its old session",
            lambda: "waiting for it to expire" in cluster.output(2, limit=10**6)[before:],
        )
        alone = AdminClient({"bootstrap.servers": cluster.broker(2).address})
        waiting = alone.list_topics("t", timeout=10)
        assert broker_epoch(connect, 2) == first, "asked too late: broker 2 had registered again"
        assert sorted(waiting.brokers) == [1, 2]
        assert waiting.topics["t"].error is not None
        assert waiting.topics["t"].error.code() == KafkaError.LEADER_NOT_AVAILABLE
        wait_for("broker 2 registered again", lambda: broker_epoch(connect, 2) not in (None, first), 60)
        known = wait_for(
            "broker 2's full answer",
            lambda: (md := alone.list_topics("t", timeout=10)).topics["t"].error is None and md,
        )
        assert sorted(known.brokers) == [1, 2]
        assert sorted(known.topics["t"].partitions) == [0, 1]
    finally:
        cluster.down()
