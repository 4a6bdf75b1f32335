"""A broker's registration in ZooKeeper when start-up meets trouble: a real ZooKeeper server and a real broker
process. Found by a nemesis run: a broker restarted after kill -9 waits for its old session's znode to go; when
ZooKeeper stalled meanwhile (its sessions, the broker's new one too, expired at once) the broker exited with "the
broker could not start" and stayed down."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.nemesis import broker_epoch
from tests.cluster.waiting import wait_for

from samsa.client.connection import BrokerConnection
from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient
from samsa.cluster.zookeeper import ZooKeeperServer
from samsa.protocol import ErrorCode
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from samsa.protocol.messages.update_metadata import (
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

SESSION_MS = 10_000  # time enough for the restarted broker to start while the old session lives


def _restart_within_its_session(cluster: LocalCluster, connect: str, broker: int) -> tuple[int | None, int]:
    """kill -9 ``broker`` and start it again at once; returns once it waits for its old session to expire (it
    lives on for up to SESSION_MS), with its broker epoch before and where its output then began."""
    first = broker_epoch(connect, broker)
    cluster.kill(broker)
    before = len(cluster.output(broker, limit=10**6))
    cluster.start_broker(broker, wait=False)
    wait_for(
        "the restarted broker to wait for its old session",
        lambda: "waiting for it to expire" in cluster.output(broker, limit=10**6)[before:],
    )
    return first, before


def test_a_broker_waiting_out_its_old_registration_survives_its_new_session_expiring(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    connect = f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=connect, session_timeout_ms=SESSION_MS)
    try:
        cluster.up(1)
        first, before = _restart_within_its_session(cluster, connect, 1)
        zookeeper.pause()  # a stalled server: once resumed it expires every session, the new one's too
        time.sleep(SESSION_MS / 1000 + 3)
        zookeeper.resume()
        wait_for("broker 1 registered again", lambda: broker_epoch(connect, 1) not in (None, first), 60)
        log = cluster.output(1, limit=10**6)[before:]
        assert "could not start" not in log, log
        assert "registering again" in log, log  # the interruption was met, not missed by timing
    finally:
        cluster.down()


def _request_from(port: int, message: Any, api_key: int, client_id: str = "t") -> Any:
    """The answer of the broker at ``port`` to one request, over a connection of its own; a starting broker may
    hold a Metadata request for a while."""

    async def send() -> Any:
        connection = BrokerConnection("127.0.0.1", port, client_id=client_id, request_timeout_ms=40_000)
        await connection.open()
        try:
            return await connection.request(message, api_key)
        finally:
            await connection.close()

    return asyncio.run(send())


def _metadata_from(port: int, topic: str) -> Any:
    """Broker at ``port``'s own answer to a Metadata request for ``topic`` (a client library would send its
    request to whichever broker it likes once it knows several)."""
    request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
    return _request_from(port, request, MetadataRequest.API_KEY)


@contextlib.contextmanager
def _two_brokers_with_topic_t(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> Iterator[tuple[LocalCluster, str]]:
    """Two brokers (sessions of SESSION_MS) on a chroot of their own, with topic ``t`` (2 partitions, 2 replicas)
    created; stopped after."""
    connect = f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=connect, session_timeout_ms=SESSION_MS)
    try:
        cluster.up(2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("t", 2, 2)])["t"].result(60)
        yield cluster, connect
    finally:
        cluster.down()


def test_a_restarted_broker_holds_metadata_until_the_controller_reached_it(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Found by nemesis runs: a broker restarted after kill -9 answered Metadata while it waited out its old
    registration. From its empty cache (no brokers, the topic unknown) librdkafka 2.16 dropped every broker it
    knew; with each topic LEADER_NOT_AVAILABLE and no partitions, its consumer groups took the topic for gone and
    rebalanced. As Kafka serves nothing before it has registered, the request is held until the controller's
    first UpdateMetadata, and then answered in full."""
    with _two_brokers_with_topic_t(zookeeper, tmp_path) as (cluster, connect):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        wait_for(
            "leaders",
            lambda: all(p.leader >= 0 for p in admin.list_topics("t", 10).topics["t"].partitions.values()),
        )
        first, _ = _restart_within_its_session(cluster, connect, 2)
        port = cluster.broker(2).port
        asked = time.monotonic()
        answer = _metadata_from(port, "t")
        held = time.monotonic() - asked
        assert broker_epoch(connect, 2) not in (None, first), "answered before broker 2 registered again"
        assert held > 1.0, f"answered after {held:.1f} s: not held"
        assert sorted(b.node_id for b in answer.brokers) == [1, 2]
        assert [(t.name, t.error_code) for t in answer.topics] == [("t", ErrorCode.NONE)]
        assert sorted(p.partition_index for p in answer.topics[0].partitions) == [0, 1]
        # the UpdateMetadata that released it is in the broker's log, with the live brokers it named
        log = (cluster.directory / "broker-2" / "broker.out").read_text(errors="replace")
        assert re.search(
            r"metadata from controller \d+ \(epoch \d+\): live brokers \[1, 2\], \d+ partition", log
        )


def test_a_restarted_broker_serves_nothing_before_it_has_registered(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Found by the nemesis (seed 7, 2026-11-29): a broker restarted after kill -9 answered ApiVersions, and so
    looked usable to librdkafka, while it waited out its earlier registration. Both consumers of a group sent it
    their FindCoordinator, behind a Metadata request it held, and the group waited 8 s beyond the writes. As
    Kafka's broker does in ZooKeeper mode, it now listens (the connection is made) but serves nothing until it is
    registered."""
    with _two_brokers_with_topic_t(zookeeper, tmp_path) as (cluster, connect):
        first, _ = _restart_within_its_session(cluster, connect, 2)
        port = cluster.broker(2).port
        asked = time.monotonic()
        answer = _request_from(port, ApiVersionsRequest(), ApiVersionsRequest.API_KEY)
        waited = time.monotonic() - asked
        assert broker_epoch(connect, 2) not in (None, first), (
            f"answered after {waited:.1f} s, before registering"
        )
        assert answer.error_code == ErrorCode.NONE


def _send_update_metadata(port: int, broker_epoch: int, topic: str) -> Any:
    """An UpdateMetadata naming partition 0 of ``topic`` only, led by broker 1, as a controller sends the changed
    partitions, for the registration of epoch ``broker_epoch``."""
    state = UpdateMetadataPartitionState(
        partition_index=0, controller_epoch=99, leader=1, leader_epoch=99, isr=[1], replicas=[1]
    )
    request = UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=99,
        broker_epoch=broker_epoch,
        topic_states=[UpdateMetadataTopicState(topic_name=topic, partition_states=[state])],
        live_brokers=[],
    )
    return _request_from(port, request, UpdateMetadataRequest.API_KEY, client_id="controller")


def test_a_restarted_broker_refuses_what_the_controller_sends_its_earlier_process(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Found by the nemesis (2026-11-28): a broker restarted after kill -9 serves while it waits out its earlier
    process's registration, and a controller that has not seen that process go keeps sending it requests. Broker 2
    took an UpdateMetadata of the changed partitions meant for its earlier process as its whole catalog, answered
    Metadata with 4 of a topic's 6 partitions, and librdkafka's consumers rebalanced on the change. A request
    carrying the earlier registration's epoch is refused with STALE_BROKER_EPOCH."""
    with _two_brokers_with_topic_t(zookeeper, tmp_path) as (cluster, connect):
        first, _ = _restart_within_its_session(cluster, connect, 2)
        assert first is not None
        port = cluster.broker(2).port
        assert broker_epoch(connect, 2) == first, "asked too late: broker 2 had registered again"
        # sent while it waits; served once it has registered (it serves nothing before), and refused then
        answer = _send_update_metadata(port, first, "t")
        assert answer.error_code == ErrorCode.STALE_BROKER_EPOCH
        # Metadata is held until the controller reached the new process, then answered in full (not from the
        # one partition the refused request named)
        known = _metadata_from(port, "t")
        assert sorted(p.partition_index for p in known.topics[0].partitions) == [0, 1]


def test_a_waiting_broker_names_a_broker_that_registered_after_it_started(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Found by the nemesis (seed 20261125, 2026-11-27): broker 3, the controller, was killed and restarted; while it
    waited out its old registration, broker 2's session expired (ZooKeeper had restarted) and broker 2 registered
    again just after broker 3 had read the registered brokers. Broker 3 answered Metadata without broker 2 until the
    controller reached it, and librdkafka 2.16 dropped broker 2, the leader of two partitions, failing the five
    produce requests in flight to it as not written ("Broker handle destroyed"), written or not. Until the
    controller's first UpdateMetadata the answer follows the brokers ZooKeeper has registered, not only those it
    had at start."""
    connect = f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=connect, session_timeout_ms=SESSION_MS)
    try:
        cluster.up(2)
        controller = wait_for("a controller", lambda: _controller_of(connect))
        other = 3 - controller
        cluster.stop_broker(other)  # clean: its registration goes at once
        # the controller restarted within its session: nobody sends it UpdateMetadata while it waits
        first, _ = _restart_within_its_session(cluster, connect, controller)
        cluster.start_broker(other)
        wait_for(f"broker {other} registered", lambda: broker_epoch(connect, other) is not None)
        port = cluster.broker(controller).port
        named = wait_for(
            f"broker {controller} to name broker {other}, or to register again",
            lambda: _names_or_registered(port, other, connect, controller, first),
            30,
        )
        assert named == "named", f"broker {controller} named only itself while it waited out its registration"
    finally:
        cluster.down()


def _controller_of(connect: str) -> int | None:
    zk = ZkClient(connect)
    zk.start(5)
    try:
        return zk.controller()
    finally:
        zk.close()


def _names_or_registered(port: int, other: int, connect: str, waiting: int, first: int | None) -> str | None:
    """What happened first: the broker at ``port`` named ``other`` in its Metadata answer ("named"), or
    ``waiting`` (that broker) has a registration other than ``first`` ("registered again"); None: neither yet."""
    if other in {b.node_id for b in _metadata_from(port, "t").brokers}:
        return "named"
    return "registered again" if broker_epoch(connect, waiting) != first else None
