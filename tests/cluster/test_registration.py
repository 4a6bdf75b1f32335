"""A broker's registration in ZooKeeper when start-up meets trouble: a real ZooKeeper server and a real broker
process. Found by a nemesis run: a broker restarted after kill -9 waits for its old session's znode to go; when
ZooKeeper stalled meanwhile (its sessions, the broker's new one too, expired at once) the broker exited with "the
broker could not start" and stayed down."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
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
