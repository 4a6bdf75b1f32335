"""Controlled shutdown, preferred and unclean leader elections on a real cluster: ZooKeeper and three ``samsa
serve`` processes on loopback, real confluent-kafka clients, the ``samsa leader-election`` tool.

What each test shows: a rolling restart with controlled shutdown under idempotent acks=all load loses and
duplicates nothing and gives the producer no delivery error, and leaves the leaders unbalanced until the preferred
election (the tool) puts each back on its first replica; the automatic rebalance does the same by itself;
ElectLeaders answers each partition with Kafka's error; with ``unclean.leader.election.enable`` off a partition
whose ISR is gone stays offline, with it on (at creation, or turned on later) the first live replica leads and the
records it lacked are lost (reported in the logs).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from resends import read_without_resent
from test_replication import Acked, controller_of, partitions, read_all, running_cluster, wait_for
from tests.clients.harness import create_topic_answered

from samsa.client import KafkaClient, TopicPartition
from samsa.cluster.launcher import LocalCluster
from samsa.protocol import ErrorCode
from samsa.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow, pytest.mark.clients]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", 3, getattr(request, "param", {})) as local:
        yield local


class Background:
    """An :class:`Acked` producer sending one record every ``pause`` seconds on a thread until stopped."""

    def __init__(self, producer: Acked, pause: float = 0.002) -> None:
        self.producer = producer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(pause,), daemon=True)
        self._thread.start()

    def _run(self, pause: float) -> None:
        while not self._stop.is_set():
            self.producer.send(1)
            time.sleep(pause)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush()


def create_topic(cluster: LocalCluster, topic: NewTopic) -> None:
    """Create ``topic`` (``create_topic_answered``) and wait for its leaders."""
    create_topic_answered(cluster.bootstrap_servers, topic)

    def led() -> bool:
        state = partitions(AdminClient({"bootstrap.servers": cluster.bootstrap_servers}), topic.topic)
        return bool(state) and all(leader >= 0 for leader, _, _ in state.values())

    wait_for(f"a leader for every partition of {topic.topic}", led)


def leader_counts(admin: AdminClient, topic: str) -> Counter[int]:
    return Counter(leader for leader, _, _ in partitions(admin, topic).values())


def full_isrs(admin: AdminClient, topic: str) -> bool:
    state = partitions(admin, topic)
    return bool(state) and all(isr == [1, 2, 3] for _, _, isr in state.values())


def preferred_everywhere(admin: AdminClient, topic: str) -> bool:
    state = partitions(admin, topic)
    return bool(state) and all(leader == replicas[0] for leader, replicas, _ in state.values())


def read_partition(cluster: LocalCluster, topic: str, timeout: float = 20.0) -> list[bytes]:
    """Partition 0 of ``topic`` from the start, without a group (the offsets topic may have no leader)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused"})
    consumer.assign([KafkaTopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    idle_until = time.monotonic() + timeout
    try:
        while time.monotonic() < idle_until:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
                idle_until = min(idle_until, time.monotonic() + 2)
    finally:
        consumer.close()
    return values


def leader_election(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "samsa.cli",
            "leader-election",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )


def elect(
    cluster: LocalCluster, election_type: int, tps: list[TopicPartition] | None
) -> dict[TopicPartition, int]:
    async def run() -> dict[TopicPartition, int]:
        async with KafkaClient(cluster.bootstrap_servers) as client:
            return await client.elect_leaders(election_type, tps, timeout_ms=10_000)

    return asyncio.run(run())


@pytest.mark.parametrize("cluster", [{"auto.leader.rebalance.enable": "false"}], indirect=True)
def test_rolling_restart_with_controlled_shutdown_loses_nothing_and_the_preferred_election_rebalances(
    cluster: LocalCluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create_topic(cluster, NewTopic("rolling", 6, 3, config={"min.insync.replicas": "2"}))
    wait_for("full ISRs", lambda: full_isrs(admin, "rolling"))
    assert leader_counts(admin, "rolling") == {1: 2, 2: 2, 3: 2}
    load = Background(Acked(cluster.bootstrap_servers, "rolling"))
    for broker in (1, 2, 3):
        time.sleep(1)  # records flow between restarts
        assert cluster.stop_broker(broker) == 0
        assert "controlled shutdown succeeded" in cluster.output(broker, 20_000)
        assert broker not in leader_counts(admin, "rolling")  # it led nothing once it stopped
        cluster.start_broker(broker)
        wait_for(f"broker {broker} back in every ISR", lambda: full_isrs(admin, "rolling"), timeout=60)
    time.sleep(1)
    load.stop()
    producer = load.producer
    assert not producer.errors, producer.errors[:5]  # retriable errors were retried; none reached delivery
    acked = sum(len(v) for v in producer.acked.values())
    assert acked == producer.sent and acked > 500
    got, _ = read_without_resent(cluster, "rolling", read_all(cluster.bootstrap_servers, "rolling", acked))
    for partition, values in producer.acked.items():
        assert got.get(partition) == values, f"partition {partition}: lost, duplicated or reordered records"

    assert 3 not in leader_counts(admin, "rolling")  # restarted last: leads nothing until the election
    done = leader_election(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert done.returncode == 0, done.stderr
    assert "Successfully completed leader election (PREFERRED) for partitions" in done.stdout
    assert preferred_everywhere(admin, "rolling")
    assert leader_counts(admin, "rolling") == {1: 2, 2: 2, 3: 2}
    again = leader_election(cluster, "--election-type", "PREFERRED", "--topic", "rolling", "--partition", "0")
    assert again.returncode == 0 and "Valid replica already elected for partitions rolling-0" in again.stdout


@pytest.mark.parametrize("cluster", [{"leader.imbalance.check.interval.seconds": "1"}], indirect=True)
def test_the_automatic_rebalance_gives_leadership_back_to_preferred_replicas(cluster: LocalCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create_topic(cluster, NewTopic("auto", 6, 3))
    wait_for("full ISRs", lambda: full_isrs(admin, "auto"))
    assert cluster.stop_broker(2) == 0
    assert 2 not in leader_counts(admin, "auto")
    cluster.start_broker(2)
    wait_for("the preferred leaders back", lambda: preferred_everywhere(admin, "auto"), timeout=60)
    assert leader_counts(admin, "auto") == {1: 2, 2: 2, 3: 2}
    logs = "".join(cluster.output(b, 50_000) for b in (1, 2, 3))
    assert "leaders imbalanced, preferred election" in logs


@pytest.mark.parametrize("cluster", [{"auto.leader.rebalance.enable": "false"}], indirect=True)
def test_no_broker_names_a_new_leader_before_it_leads(cluster: LocalCluster) -> None:
    """The controller sends UpdateMetadata only once the new leader has answered its LeaderAndIsr. Without that, a
    client told of the leader by another broker sends it a produce it refuses (not leader yet) and the next one
    after (leader now), which fails on the gap: librdkafka then bumps its epoch and writes again what the log had
    (seen in the nemesis suite). Here the new leader is paused through the election: no broker may name it."""
    controller = controller_of(cluster)
    new, watcher = [b for b in (1, 2, 3) if b != controller]
    create_topic(
        cluster,
        NewTopic(
            "moving", num_partitions=1, replication_factor=-1, replica_assignment=[[controller, new, watcher]]
        ),
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    wait_for("a full ISR", lambda: full_isrs(admin, "moving"))
    tp = TopicPartition("moving", 0)

    async def leader_seen_by(broker: int) -> int:
        async with KafkaClient(cluster.broker(broker).address) as client:  # asks that broker alone
            return (await client.metadata(["moving"])).topics["moving"].partitions[0].leader

    async def reorder() -> None:
        async with KafkaClient(cluster.bootstrap_servers) as client:
            assert await client.alter_partition_reassignments({tp: [new, controller, watcher]}) == {tp: None}

    asyncio.run(reorder())
    wait_for("the new order", lambda: partitions(admin, "moving")[0][1] == [new, controller, watcher])
    assert asyncio.run(leader_seen_by(watcher)) == controller

    async def elect_preferred() -> dict[TopicPartition, int]:
        async with KafkaClient(cluster.broker(controller).address) as client:  # not through the paused broker
            return await client.elect_leaders(0, [tp], timeout_ms=10_000)

    answers: list[dict[TopicPartition, int]] = []
    cluster.pause(new)
    try:  # the election goes on (ElectLeaders answers once the metadata shows it) while the watcher is asked
        election = threading.Thread(target=lambda: answers.append(asyncio.run(elect_preferred())))
        election.start()
        seen = set()
        until = time.monotonic() + 2.5
        while time.monotonic() < until:
            seen.add(asyncio.run(leader_seen_by(watcher)))
            time.sleep(0.05)
    finally:
        cluster.resume(new)
    election.join(30)
    assert answers == [{tp: ErrorCode.NONE}]
    assert new not in seen, f"broker {watcher} named broker {new} leader while it was paused: {seen}"
    wait_for("the new leader named", lambda: asyncio.run(leader_seen_by(watcher)) == new)


@pytest.mark.parametrize("cluster", [{"auto.leader.rebalance.enable": "false"}], indirect=True)
def test_elect_leaders_answers_each_partition_with_kafkas_error(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    create_topic(cluster, NewTopic("errs", 3, 3))
    create_topic(
        cluster, NewTopic("alone", num_partitions=1, replication_factor=-1, replica_assignment=[[3]])
    )
    wait_for("full ISRs", lambda: full_isrs(admin, "errs"))
    wait_for("a leader for alone", lambda: partitions(admin, "alone").get(0, (-1,))[0] == 3)
    tp = TopicPartition
    controller = controller_of(cluster)
    other = next(b for b in (1, 2, 3) if b != controller)

    async def ask_other() -> list[int]:
        async with KafkaClient(cluster.bootstrap_servers) as client:
            response = await client.send(
                ElectLeadersRequest(election_type=0, topic_partitions=[TopicPartitions("errs", [0])]),
                api_key=ElectLeadersRequest.API_KEY,
                node_id=other,
            )
        return [p.error_code for r in response.replica_election_results for p in r.partition_result]

    assert asyncio.run(ask_other()) == [ErrorCode.NOT_CONTROLLER]  # only the controller elects
    answers = elect(cluster, 0, [tp("errs", 0), tp("errs", 9), tp("nowhere", 0)])
    assert answers == {
        tp("errs", 0): ErrorCode.ELECTION_NOT_NEEDED,
        tp("errs", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        tp("nowhere", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert elect(cluster, 0, None) == {}  # all partitions: those needing nothing are left out
    assert elect(cluster, 1, [tp("errs", 1)]) == {tp("errs", 1): ErrorCode.ELECTION_NOT_NEEDED}

    preferred_one = next(p for p, (_, replicas, _) in partitions(admin, "errs").items() if replicas[0] == 1)
    assert cluster.stop_broker(1) == 0
    assert elect(cluster, 0, [tp("errs", preferred_one)]) == {
        tp("errs", preferred_one): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    }
    assert cluster.stop_broker(3) == 0  # "alone" has no live replica now
    assert elect(cluster, 1, [tp("alone", 0)]) == {tp("alone", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
    listed = tmp_path / "partitions.json"
    listed.write_text(json.dumps({"partitions": [{"topic": "alone", "partition": 0}]}))
    failed = leader_election(cluster, "--election-type", "unclean", "--path-to-json-file", str(listed))
    assert failed.returncode == 1
    assert "for partition: alone-0: EligibleLeadersNotAvailableException" in failed.stdout
    # an explicit assignment may name brokers that are down, as in Kafka: a live replica leads
    create_topic(
        cluster, NewTopic("later", num_partitions=1, replication_factor=-1, replica_assignment=[[3, 1, 2]])
    )
    wait_for("a leader for later", lambda: partitions(admin, "later").get(0, (-1,))[0] == 2)
    wrong = leader_election(cluster, "--election-type", "preferred", "--all-topic-partitions", "--topic", "x")
    assert wrong.returncode != 0 and "exactly one of" in wrong.stderr


@pytest.mark.parametrize("cluster", [{"replica.high.watermark.checkpoint.interval.ms": "100"}], indirect=True)
def test_unclean_leader_election_off_keeps_the_partition_offline_and_on_elects_and_reports_the_loss(
    cluster: LocalCluster,
) -> None:
    def state(topic: str) -> tuple[int, list[int], list[int]]:
        """Partition 0 of ``topic``; a fresh client each time (brokers are killed under it)."""
        try:
            found = partitions(AdminClient({"bootstrap.servers": cluster.bootstrap_servers}), topic)
        except KafkaException:
            return (-9, [], [])
        return found.get(0, (-9, [], []))

    for topic, unclean in (("clean", "false"), ("dirty", "true")):
        create_topic(
            cluster,
            NewTopic(
                topic,
                num_partitions=1,
                replication_factor=-1,
                replica_assignment=[[1, 2]],
                config={"unclean.leader.election.enable": unclean},
            ),
        )
    for topic in ("clean", "dirty"):
        wait_for(f"{topic} in sync", lambda t=topic: state(t)[2] == [1, 2])
    producers = {t: Acked(cluster.bootstrap_servers, t) for t in ("clean", "dirty")}
    for producer in producers.values():
        producer.send(100)
        producer.flush()
    cluster.kill(2)  # the follower goes; the leader takes it out of the ISR and goes on alone
    for topic in ("clean", "dirty"):
        wait_for(f"{topic} ISR [1]", lambda t=topic: state(t)[2] == [1], timeout=40)
    for producer in producers.values():
        producer.send(100)  # only broker 1 has these
        producer.flush()
        assert not producer.errors
    time.sleep(1)  # broker 1's high watermark checkpointed: it knows these records were committed
    cluster.kill(1)
    wait_for("both offline", lambda: all(state(t)[0] == -1 for t in ("clean", "dirty")), timeout=40)
    cluster.start_broker(2)
    wait_for("dirty led by broker 2", lambda: state("dirty")[:3:2] == (2, [2]), timeout=30)
    time.sleep(2)
    assert state("clean")[0] == -1  # unclean off: offline until an ISR member returns
    controller = controller_of(cluster)
    assert "unclean leader election for dirty-0: broker 2 leads" in cluster.output(controller, 100_000)
    assert "unclean leader election for clean-0" not in cluster.output(controller, 100_000)
    assert (
        read_partition(cluster, "dirty") == producers["dirty"].acked[0][:100]
    )  # the other 100 acked are lost
    allow = ConfigResource("topic", "clean", set_config={"unclean.leader.election.enable": "true"})
    fresh = AdminClient(
        {"bootstrap.servers": cluster.broker(2).address}
    )  # the first one waits on dead brokers
    fresh.alter_configs([allow])[allow].result(30)  # turning it on elects at once
    wait_for("clean led by broker 2 once allowed", lambda: state("clean")[:3:2] == (2, [2]), timeout=30)

    cluster.start_broker(1)  # the old leader truncates what the new leader lacks, and says so
    wait_for("broker 1 back in dirty's ISR", lambda: state("dirty")[2] == [1, 2], timeout=60)
    assert "dirty-0: records 100 to" in cluster.output(1, 100_000)
    assert read_partition(cluster, "dirty") == producers["dirty"].acked[0][:100]
    wait_for("broker 1 back in clean's ISR", lambda: state("clean")[2] == [1, 2], timeout=60)
    assert "clean-0: records 100 to" in cluster.output(1, 100_000)
