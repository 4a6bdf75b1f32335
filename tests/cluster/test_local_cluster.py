"""`samsa cluster up|status|down` and the brokers' life in a cluster: a killed broker's leadership moves after its
session times out, a paused broker rejoins with a new epoch, a restarted broker is back in the metadata."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zk_client import ZkClient

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow, pytest.mark.clients]


def samsa_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "samsa.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    try:
        yield directory
    finally:
        if (directory / "cluster.json").exists():
            LocalCluster.find(directory).down()


def leaders(client: AdminClient, topic: str) -> dict[int, tuple[int, list[int]]]:
    found = client.list_topics(topic, timeout=10).topics[topic]
    return (
        {p.id: (p.leader, sorted(p.isrs)) for p in found.partitions.values()} if found.error is None else {}
    )


def test_up_status_kill_pause_down(cluster_dir: Path) -> None:
    up = samsa_cli("cluster", "up", "--brokers", "3", "--port", "0", "--dir", str(cluster_dir))
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.splitlines()[-1].removeprefix("bootstrap servers: ")
    assert len(bootstrap.split(",")) == 3
    local = LocalCluster.find(cluster_dir)
    client = AdminClient({"bootstrap.servers": bootstrap})
    client.create_topics([NewTopic("spread", num_partitions=3, replication_factor=3)])["spread"].result(30)
    before = wait_for("leaders", lambda: (s := leaders(client, "spread")) and len(s) == 3 and s)
    assert sorted(leader for leader, _ in before.values()) == [1, 2, 3]

    status = samsa_cli("cluster", "status", "--dir", str(cluster_dir))
    assert status.returncode == 0, status.stderr
    assert "every partition has its full ISR" in status.stdout and status.stdout.count(" up") == 3

    # kill -9 the leader of partition 0: after its session times out, the others take over
    victim = before[0][0]
    local.kill(victim)
    killed_at = time.monotonic()
    after = wait_for(
        "leadership off the killed broker",
        lambda: (
            (s := leaders(client, "spread"))
            and all(ld not in (-1, victim) and victim not in i for ld, i in s.values())
            and s
        ),
    )
    assert time.monotonic() - killed_at < 20  # session 6 s, then an election
    assert set(after) == {0, 1, 2}
    status = samsa_cli("cluster", "status", "--dir", str(cluster_dir))
    assert f"broker {victim}: " in status.stdout and "Partition: " in status.stdout  # under-replicated listed

    # restarted on its log dir, it registers again and is back in the metadata
    local.start_broker(victim)
    wait_for("three brokers again", lambda: len(client.list_topics(timeout=10).brokers) == 3)

    # paused past its session: it leaves; resumed, it re-registers with a new broker epoch
    paused = next(b for b in (1, 2, 3) if b != victim)
    zk = ZkClient(local.zookeeper_connect)
    zk.start()
    try:
        epoch = zk.live_brokers()[paused][1]
        local.pause(paused)
        wait_for("the paused broker's session to expire", lambda: paused not in zk.live_brokers(), timeout=30)
        local.resume(paused)
        wait_for(
            "the paused broker back",
            lambda: paused in (live := zk.live_brokers()) and live[paused][1] > epoch,
        )
    finally:
        zk.close()

    # one stopped from outside (its pid still in the state file): down does not count it as stopped by itself
    gone = LocalCluster.find(cluster_dir).broker(paused).pid
    os.kill(gone, signal.SIGTERM)
    wait_for("the broker stopped from outside", lambda: not running(gone))
    down = samsa_cli("cluster", "down", "--dir", str(cluster_dir))
    assert down.returncode == 0 and "stopped 2 brokers (1 had stopped already) and ZooKeeper" in down.stdout
    assert not (cluster_dir / "cluster.json").exists()
    for broker in local.brokers:  # gone (a zombie child of this test counts as gone)
        assert not broker.pid or not running(broker.pid)


def test_up_refuses_a_second_cluster_in_one_dir(cluster_dir: Path) -> None:
    assert (
        samsa_cli("cluster", "up", "--brokers", "1", "--port", "0", "--dir", str(cluster_dir)).returncode == 0
    )
    again = samsa_cli("cluster", "up", "--brokers", "1", "--port", "0", "--dir", str(cluster_dir))
    assert again.returncode == 1 and "already up" in again.stderr


@pytest.mark.parametrize("when", ["zookeeper starting", "brokers starting"])
def test_ctrl_c_during_up_leaves_nothing_running(
    cluster_dir: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Ctrl-C during `cluster up` left ZooKeeper running in a session of its own, with no state file for
    `cluster down` to find it by."""
    from samsa.cluster import zookeeper

    started: list[int] = []
    if when == "zookeeper starting":
        real_is_ok = zookeeper.ZooKeeperServer.is_ok

        def interrupted(self: zookeeper.ZooKeeperServer) -> bool:
            if real_is_ok(self):
                started.append(self.pid or 0)
                raise KeyboardInterrupt
            return False

        monkeypatch.setattr(zookeeper.ZooKeeperServer, "is_ok", interrupted)
    else:

        def interrupted_wait(self: LocalCluster, ids: list[int]) -> None:
            started.append(self._state.zookeeper_pid)
            started.extend(b.pid for b in self._state.brokers)
            raise KeyboardInterrupt

        monkeypatch.setattr(LocalCluster, "wait_registered", interrupted_wait)
    try:
        with pytest.raises(KeyboardInterrupt):
            LocalCluster(cluster_dir).up(2)
        assert started and all(pid > 0 for pid in started)
        wait_for("every process stopped", lambda: not any(running(pid) for pid in started), timeout=20)
        assert not (cluster_dir / "cluster.json").exists()
    finally:  # whatever the outcome, nothing of this test keeps running
        for pid in started:
            if pid > 0 and running(pid):
                os.killpg(pid, signal.SIGKILL)


def test_a_crashed_broker_is_started_again_and_down_stops_one_started_by_hand(cluster_dir: Path) -> None:
    """`cluster up` refused to run again with one broker crashed, and `cluster down` left a broker started by hand
    on its server.properties running ("2 had stopped already")."""
    assert (
        samsa_cli("cluster", "up", "--brokers", "2", "--port", "0", "--dir", str(cluster_dir)).returncode == 0
    )
    local = LocalCluster.find(cluster_dir)
    local.kill(2)
    started = samsa_cli("cluster", "start", "--broker", "2", "--dir", str(cluster_dir))
    assert started.returncode == 0, started.stderr
    assert started.stdout.startswith("broker 2: 127.0.0.1:")
    again = samsa_cli("cluster", "start", "--broker", "2", "--dir", str(cluster_dir))
    assert again.returncode == 1 and "broker 2 is running" in again.stderr

    # broker 2 crashes; an operator starts it by hand from its directory, on its relative server.properties
    LocalCluster.find(cluster_dir).kill(2)
    by_hand = subprocess.Popen(
        [sys.executable, "-m", "samsa.cli", "serve", "server.properties"],
        cwd=cluster_dir / "broker-2",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        LocalCluster.find(cluster_dir).wait_registered([2])
        restarted = samsa_cli("cluster", "restart", "--broker", "1", "--dir", str(cluster_dir))
        assert restarted.returncode == 0, restarted.stderr
        assert restarted.stdout.startswith("stopped broker 1 (pid ")
        assert LocalCluster.find(cluster_dir).running_pid(2) == by_hand.pid
        down = samsa_cli("cluster", "down", "--dir", str(cluster_dir))
        assert down.returncode == 0 and "stopped 2 brokers and ZooKeeper" in down.stdout, down.stdout
        assert by_hand.wait(30) == 0  # a clean stop
    finally:
        if by_hand.poll() is None:
            by_hand.kill()
            by_hand.wait()


def test_a_group_in_a_cluster_too_small_for_the_offsets_topic_is_told_why(cluster_dir: Path) -> None:
    """With one of three brokers down before the first group, __consumer_offsets (replication factor 3) cannot be
    made: consumer-groups said only COORDINATOR_NOT_AVAILABLE (15) and no broker logged why."""
    assert (
        samsa_cli("cluster", "up", "--brokers", "3", "--port", "0", "--dir", str(cluster_dir)).returncode == 0
    )
    local = LocalCluster.find(cluster_dir)
    local.stop_broker(3)
    first = local.broker(1).address
    reason = (
        "Number of alive brokers '2' does not meet the required replication factor '3' for the offsets topic "
        "(configured via 'offsets.topic.replication.factor')"
    )

    def describe() -> subprocess.CompletedProcess[str]:
        return samsa_cli("consumer-groups", "--bootstrap-server", first, "--describe", "--group", "billing")

    wait_for("the reason in the tool's answer", lambda: reason in describe().stderr, timeout=60)
    answered = describe()
    assert (
        answered.returncode == 1
        and "COORDINATOR_NOT_AVAILABLE" in answered.stderr
        and reason in answered.stderr
    )
    logged = [line for line in local.output(1, limit=1_000_000).splitlines() if reason in line]
    assert len(logged) == 1 and " ERROR " in logged[0], logged  # once a minute, not once per request


def test_configs_alters_and_describes_broker_dynamic_configs(cluster_dir: Path) -> None:
    assert (
        samsa_cli("cluster", "up", "--brokers", "1", "--port", "0", "--dir", str(cluster_dir)).returncode == 0
    )
    bootstrap = LocalCluster.find(cluster_dir).bootstrap_servers
    configs = ("configs", "--bootstrap-server", bootstrap, "--entity-type", "brokers")
    rate = "leader.replication.throttled.rate"
    one = samsa_cli(*configs, "--entity-name", "1", "--alter", "--add-config", f"{rate}=1000")
    assert one.stdout == "Completed updating config for broker 1.\n", one.stderr
    every = samsa_cli(*configs, "--entity-default", "--alter", "--add-config", f"{rate}=500")
    assert every.stdout == "Completed updating default config for brokers in the cluster.\n", every.stderr
    described = samsa_cli(*configs, "--describe")
    assert described.stdout.splitlines() == [
        "Dynamic configs for broker 1 are:",
        f"  {rate}=1000 sensitive=false synonyms={{DYNAMIC_BROKER_CONFIG:{rate}=1000, "
        f"DYNAMIC_DEFAULT_BROKER_CONFIG:{rate}=500}}",
        "Default configs for brokers in the cluster are:",
        f"  {rate}=500 sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{rate}=500}}",
    ], described.stderr
    refused = samsa_cli(*configs, "--entity-name", "1", "--alter", "--add-config", "log.dirs=/elsewhere")
    assert refused.returncode == 1 and "log.dirs cannot be altered while the broker runs" in refused.stderr
    # a topic default set for every broker reaches the topics through ZooKeeper's change notification
    topics = ("topics", "--bootstrap-server", bootstrap)
    created = samsa_cli(
        *topics, "--create", "--topic", "dyn", "--partitions", "1", "--replication-factor", "1"
    )
    assert created.returncode == 0, created.stderr
    every = samsa_cli(*configs, "--entity-default", "--alter", "--add-config", "log.retention.ms=90000")
    assert every.returncode == 0, every.stderr

    def topic_retention() -> str:
        all_configs = samsa_cli(
            "configs", "--bootstrap-server", bootstrap, "--topic", "dyn", "--describe", "--all"
        )
        lines = [line.strip() for line in all_configs.stdout.splitlines()]
        return next((line for line in lines if line.startswith("retention.ms=")), "")

    wait_for(
        "the dynamic default retention applied to the topic",
        lambda: topic_retention().startswith(
            "retention.ms=90000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=90000"
        ),
        timeout=10,
    )
    # client quotas live in ZooKeeper as Kafka keeps them, and every broker applies them on the notification
    quota = samsa_cli(
        "configs", "--bootstrap-server", bootstrap, "--client", "metered", "--alter", "--add-config",
        "producer_byte_rate=1000",
    )  # fmt: skip
    assert quota.returncode == 0, quota.stderr
    zk = ZkClient(LocalCluster.find(cluster_dir).zookeeper_connect)
    zk.start()
    try:
        data, _ = zk.kazoo.get("/config/clients/metered")
    finally:
        zk.close()
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "1000"}}
    throttles: list[float] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "metered",
            "batch.size": 1000,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    for _ in range(30):
        producer.produce("dyn", b"x" * 900)
        producer.flush(10)
        if throttles:
            break
    assert throttles and max(throttles) > 0, "the quota set through ZooKeeper was not applied"
