"""A mixed cluster: Apache Kafka 3.9 (ZooKeeper mode, ``inter.broker.protocol.version=3.9``) and Samsa brokers on one
ZooKeeper, as a user of ZooKeeper-mode Kafka would migrate (issue 32, item 7).

One ZooKeeper, one Kafka broker (id 1) and one Samsa broker (id 2) per module. Each side reads the other's znodes;
either is controller (the controller is killed, the other takes over); a topic replicated on both keeps both in its
ISR whichever kind leads (Kafka's followers fetch from Samsa with Fetch v17 and topic ids, Samsa's from Kafka);
leadership moves both ways by failover and by Kafka's ``kafka-leader-election``; and a rolling replacement under
acks=all load swaps the Kafka broker for a Samsa broker with the same id on the same log dir and port, and back,
with every acknowledged record read at the end at the offset it was acknowledged at.

The tests leave the cluster as they found it (both brokers up), so each can run alone. Marked ``slow``: they start
JVMs and wait out failovers (about three minutes together here, in one process).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from samsa.cluster import znodes
from samsa.cluster.zookeeper import ZooKeeperServer
from tests.clients.harness import BrokerProcess, create_topic_answered

from .jars import KafkaJars
from .kafka_zk_broker import KafkaZkBroker

# one worker, in order: the tests share one cluster (the module fixture) and each leaves it as the next expects
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.xdist_group("kafka")]

ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
KAFKA_ID, SAMSA_ID = 1, 2
COMMON = {  # both kinds: no automatic rebalance (the tests move leaders), a lagging follower leaves in 10 s
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "10000",
}


def samsa_broker(directory: Path, connect: str, broker_id: int, port: int = 0) -> BrokerProcess:
    return BrokerProcess(
        data_dir=directory,
        node_id=broker_id,
        port=port,
        overrides={
            "zookeeper.connect": connect,
            "zookeeper.session.timeout.ms": "6000",
            "offsets.topic.replication.factor": "1",
            **COMMON,
        },
    )


@dataclass
class Mixed:
    """The module's cluster: ``kafka`` (id 1) and ``samsa`` (id 2) on ``zk``'s chroot ``connect``."""

    jars: KafkaJars
    connect: str
    kafka: KafkaZkBroker
    samsa: BrokerProcess
    zk: KazooClient

    @property
    def bootstrap(self) -> str:
        return f"{self.kafka.bootstrap},{self.samsa.bootstrap}"

    def controller(self) -> int:
        data, _ = self.zk.get(znodes.CONTROLLER)
        return znodes.ControllerRegistration.from_json(data).broker_id

    def live(self) -> set[int]:
        return {int(child) for child in self.zk.get_children(znodes.BROKER_IDS)}

    def state(self, topic: str, partition: int) -> znodes.PartitionState:
        data, _ = self.zk.get(znodes.partition_state_path(topic, partition))
        return znodes.PartitionState.from_json(topic, partition, data)

    def leaders(self, topic: str, partitions: int) -> list[int]:
        return [self.state(topic, p).leader for p in range(partitions)]

    def in_sync(self, topic: str, partitions: int, brokers: set[int]) -> bool:
        return all(set(self.state(topic, p).isr) == brokers for p in range(partitions))

    def both_up(self) -> None:
        """Start whichever broker is down (a test that failed midway leaves the next one a whole cluster)."""
        if self.kafka.process is None:
            self.kafka.start()
        if self.samsa.process is None:
            self.samsa.start(timeout=30)
        wait_for(lambda: self.live() == {KAFKA_ID, SAMSA_ID}, 30, "both brokers registered")

    def make_controller(self, broker_id: int) -> None:
        """Make ``broker_id`` the controller, restarting the other broker if it is."""
        if self.controller() != broker_id:
            other: KafkaZkBroker | BrokerProcess = self.kafka if broker_id == SAMSA_ID else self.samsa
            other.stop()
            wait_for(
                lambda: self.controller() == broker_id, 30, f"broker {broker_id} took over as controller"
            )
            self.both_up()

    def create_topic(self, topic: str, assignment: list[list[int]]) -> None:
        create_topic_answered(
            self.bootstrap, NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
        )
        wait_for(
            lambda: all(set(self.state(topic, p).isr) == set(r) for p, r in enumerate(assignment)),
            30,
            f"{topic}'s ISRs are {assignment}",
        )

    def elect_preferred(self, topic: str) -> str:
        return self.jars.run(
            ELECTION, "--bootstrap-server", self.bootstrap, "--election-type", "preferred",
            "--topic", topic, "--partition", "0",
        ).stdout  # fmt: skip


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if condition():
                return
        except Exception:  # a znode between writes, a broker between lives: ask again
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def mixed(kafka3: KafkaJars, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mixed]:
    base = tmp_path_factory.mktemp("mixed")
    server = ZooKeeperServer(base / "zookeeper")
    server.start()
    connect = f"{server.connect_string}/mixed"
    kafka = KafkaZkBroker(
        kafka3, base / "kafka-1", connect, KAFKA_ID, base / "kafka-1" / "logs", settings=COMMON
    )
    samsa = samsa_broker(base / "samsa-2", connect, SAMSA_ID)
    zk = KazooClient(connect)
    try:
        kafka.start()  # first, so Kafka is the first controller
        samsa.start(timeout=30)
        zk.start(timeout=15)
        cluster = Mixed(kafka3, connect, kafka, samsa, zk)
        wait_for(lambda: cluster.live() == {KAFKA_ID, SAMSA_ID}, 30, "both brokers registered")
        yield cluster
    finally:
        zk.stop()
        kafka.stop()  # first: its controlled shutdown then has a broker to move leaderships to (no 10 s of retries)
        samsa.stop()
        server.stop()


# --- producing and reading --------------------------------------------------------------------------------------


@dataclass
class Load:
    """acks=all records keyed 0, 1, 2, ... sent from a thread until ``stop``; ``acked`` maps each acknowledged key
    to its (partition, offset)."""

    bootstrap: str
    topic: str
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Load:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(90)

    def _run(self) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "message.timeout.ms": 60000,
                "linger.ms": 5,
            }
        )

        def delivered(err: object, msg: object) -> None:
            if err is not None:
                self.failed.append(str(err))
            else:
                self.acked[msg.key()] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

        key = 0
        while not self._stop.is_set():
            producer.produce(self.topic, key=str(key).encode(), value=b"v%d" % key, on_delivery=delivered)
            key += 1
            producer.poll(0.01)
        assert producer.flush(60) == 0

    def wait_acked(self, more: int, seconds: float = 30) -> None:
        target = len(self.acked) + more
        wait_for(lambda: len(self.acked) >= target, seconds, f"{more} more records acknowledged")


def read_all(bootstrap: str, topic: str, partitions: int) -> dict[bytes, tuple[int, int]]:
    """Every record of ``topic`` up to each partition's high watermark: key -> (partition, offset)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False}
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: dict[bytes, tuple[int, int]] = {}
        positions = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + 60
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for message in consumer.consume(500, 1.0):
                if message.error() is not None:
                    continue
                seen[message.key()] = (message.partition(), message.offset())
                positions[message.partition()] = message.offset() + 1
        assert positions == ends, f"read to {positions}, high watermarks {ends}"
        return seen
    finally:
        consumer.close()


def produce_and_check(cluster: Mixed, topic: str, partitions: int, count: int = 200) -> None:
    """``count`` acks=all records across the partitions, all acknowledged, and then all read back."""
    with Load(cluster.bootstrap, topic) as load:
        load.wait_acked(count)
    assert load.failed == []
    seen = read_all(cluster.bootstrap, topic, partitions)
    assert {k: seen.get(k) for k in load.acked} == load.acked


# --- the tests ----------------------------------------------------------------------------------------------------


def test_each_kind_reads_the_others_registration_and_takes_over_as_controller(mixed: Mixed) -> None:
    mixed.both_up()
    kafka = znodes.BrokerRegistration.from_json(KAFKA_ID, mixed.zk.get(znodes.broker_path(KAFKA_ID))[0])
    samsa = znodes.BrokerRegistration.from_json(SAMSA_ID, mixed.zk.get(znodes.broker_path(SAMSA_ID))[0])
    assert [e.port for e in kafka.endpoints] == [mixed.kafka.port]
    assert [e.port for e in samsa.endpoints] == [mixed.samsa.port]
    # each broker's metadata names both, learnt from the controller's UpdateMetadata
    for bootstrap in (mixed.kafka.bootstrap, mixed.samsa.bootstrap):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wait_for(
            lambda a=admin: set(a.list_topics(timeout=5).brokers) == {KAFKA_ID, SAMSA_ID}, 30, "both known"
        )

    first = mixed.controller()
    if first == KAFKA_ID:
        mixed.kafka.kill()
        wait_for(lambda: mixed.controller() == SAMSA_ID, 30, "Samsa took over as controller")
        mixed.kafka.start()
    else:
        mixed.samsa.kill()
        wait_for(lambda: mixed.controller() == KAFKA_ID, 30, "Kafka took over as controller")
        mixed.samsa.start(timeout=30)
    wait_for(lambda: mixed.live() == {KAFKA_ID, SAMSA_ID}, 30, "the killed broker back")
    # the other kind as controller now; a topic made under it has both in its ISR
    mixed.create_topic("under-the-other", [[KAFKA_ID, SAMSA_ID], [SAMSA_ID, KAFKA_ID]])
    produce_and_check(mixed, "under-the-other", 2, count=100)
    assert mixed.in_sync(
        "under-the-other", 2, {KAFKA_ID, SAMSA_ID}
    )  # acks=all did not wait for one to drop out


def test_replicas_of_both_kinds_follow_each_other_and_leadership_moves_both_ways(mixed: Mixed) -> None:
    mixed.both_up()
    topic = "both-ways"
    mixed.create_topic(topic, [[KAFKA_ID, SAMSA_ID], [SAMSA_ID, KAFKA_ID]])
    assert mixed.leaders(topic, 2) == [KAFKA_ID, SAMSA_ID]
    produce_and_check(mixed, topic, 2)
    assert mixed.in_sync(topic, 2, {KAFKA_ID, SAMSA_ID})

    # Kafka leaves: its partition's leadership moves to Samsa; back in sync, the preferred election returns it
    mixed.kafka.kill()
    wait_for(lambda: mixed.leaders(topic, 2) == [SAMSA_ID, SAMSA_ID], 30, "Samsa leads both")
    mixed.kafka.start()
    wait_for(lambda: mixed.in_sync(topic, 2, {KAFKA_ID, SAMSA_ID}), 60, "Kafka back in both ISRs")
    mixed.elect_preferred(topic)
    wait_for(lambda: mixed.leaders(topic, 2) == [KAFKA_ID, SAMSA_ID], 30, "partition 0 led by Kafka again")

    # Samsa leaves: its partition moves to Kafka; back in sync, the preferred election returns it
    mixed.samsa.kill()
    wait_for(lambda: mixed.leaders(topic, 2) == [KAFKA_ID, KAFKA_ID], 30, "Kafka leads both")
    mixed.samsa.start(timeout=30)
    wait_for(lambda: mixed.in_sync(topic, 2, {KAFKA_ID, SAMSA_ID}), 60, "Samsa back in both ISRs")
    out = mixed.jars.run(
        ELECTION, "--bootstrap-server", mixed.bootstrap, "--election-type", "preferred", "--all-topic-partitions"
    ).stdout  # fmt: skip
    wait_for(
        lambda: mixed.leaders(topic, 2) == [KAFKA_ID, SAMSA_ID], 30, f"partition 1 led by Samsa again: {out}"
    )
    produce_and_check(mixed, topic, 2)


@pytest.mark.parametrize("stop", ["clean", "kill -9"])
def test_rolling_replacement_of_the_kafka_broker_by_samsa_on_its_log_dir_and_back_loses_no_acked_record(
    mixed: Mixed, stop: str
) -> None:
    """``clean``: each broker stops with SIGTERM (controlled shutdown through the Samsa controller, which moves the
    stopping broker's leaderships first; a clean-shutdown marker); ``kill -9``: with SIGKILL, so each kind recovers
    the other's unflushed log dir."""
    mixed.both_up()
    mixed.make_controller(SAMSA_ID)
    topic = f"rolling-{'clean' if stop == 'clean' else 'killed'}"
    sig = signal.SIGTERM if stop == "clean" else signal.SIGKILL
    mixed.create_topic(topic, [[KAFKA_ID, SAMSA_ID], [SAMSA_ID, KAFKA_ID], [KAFKA_ID, SAMSA_ID]])
    both = {KAFKA_ID, SAMSA_ID}
    with Load(mixed.bootstrap, topic) as load:
        load.wait_acked(300)
        # Kafka 1 stops; a Samsa broker 1 starts on its log dir and port
        mixed.kafka.stop(sig)
        if (
            stop == "clean"
        ):  # Kafka's ControlledShutdown to the Samsa controller moved its leaderships before it left
            assert mixed.leaders(topic, 3) == [SAMSA_ID] * 3
        stand_in = samsa_broker(mixed.kafka.log_dir, mixed.connect, KAFKA_ID, port=mixed.kafka.port)
        load.wait_acked(200)
        stand_in.start(timeout=60)
        try:
            wait_for(lambda: mixed.in_sync(topic, 3, both), 60, "Samsa broker 1 in every ISR")
            load.wait_acked(300)
            mixed.elect_preferred(topic)
            wait_for(lambda: mixed.leaders(topic, 3)[0] == KAFKA_ID, 30, "Samsa broker 1 leads partition 0")
            load.wait_acked(300)
        finally:
            stand_in.stop(sig)
        # and back: Kafka 1 on the log dir Samsa wrote last
        load.wait_acked(200)
        mixed.kafka.start()
        wait_for(lambda: mixed.in_sync(topic, 3, both), 60, "Kafka broker 1 back in every ISR")
        load.wait_acked(300)
    assert load.failed == []
    seen = read_all(mixed.bootstrap, topic, 3)
    lost = {k: v for k, v in load.acked.items() if seen.get(k) != v}
    assert lost == {}, f"{len(lost)} of {len(load.acked)} acknowledged records not read where acknowledged"


def is_live(directory: Path, topic: str) -> bool:
    """A partition directory of ``topic`` not yet renamed for deletion (``<tp>.<uuid>-delete``, which both kinds
    remove after ``file.delete.delay.ms``)."""
    return directory.name.startswith(f"{topic}-") and not directory.name.endswith("-delete")


def test_a_topic_on_both_kinds_is_deleted_under_either_controller(mixed: Mixed) -> None:
    """StopReplica with deletion from a Kafka controller to Samsa and from a Samsa controller to Kafka: the topic's
    znodes go and so do its partition directories on both brokers."""
    mixed.both_up()
    for round_ in range(2):
        topic = f"deleted-{round_}"
        mixed.create_topic(topic, [[KAFKA_ID, SAMSA_ID], [SAMSA_ID, KAFKA_ID]])
        produce_and_check(mixed, topic, 2, count=50)
        admin = AdminClient({"bootstrap.servers": mixed.bootstrap})
        admin.delete_topics([topic])[topic].result(30)
        wait_for(lambda t=topic: not mixed.zk.exists(znodes.topic_path(t)), 30, f"{topic}'s znode gone")
        wait_for(lambda: mixed.zk.get_children(znodes.ADMIN_DELETE_TOPICS) == [], 30, "no deletion pending")
        for log_dir in (mixed.kafka.log_dir, mixed.samsa.data_dir):
            wait_for(
                lambda d=log_dir, t=topic: not [live_dir for live_dir in d.iterdir() if is_live(live_dir, t)],
                30,
                f"{topic}'s partition directories gone from {log_dir}",
            )
        # the other kind as controller for the second round
        if mixed.controller() == KAFKA_ID:
            mixed.kafka.kill()
            wait_for(lambda: mixed.controller() == SAMSA_ID, 30, "Samsa took over as controller")
        else:
            mixed.samsa.kill()
            wait_for(lambda: mixed.controller() == KAFKA_ID, 30, "Kafka took over as controller")
        mixed.both_up()


@pytest.mark.parametrize("controller", [KAFKA_ID, SAMSA_ID], ids=["kafka-controller", "samsa-controller"])
def test_kafka_reassign_partitions_moves_replicas_from_one_kind_to_the_other(
    mixed: Mixed, tmp_path: Path, controller: int
) -> None:
    """Kafka 3.9's ``kafka-reassign-partitions`` moves a partition from the Kafka broker alone to the Samsa broker
    alone and another the other way (the new replica catches up from the other kind's leader, joins the ISR and
    takes the leadership; the old one is stopped and deleted), under either kind of controller, and every record
    is still read."""
    mixed.both_up()
    mixed.make_controller(controller)
    topic = f"moved-{controller}"
    mixed.create_topic(topic, [[KAFKA_ID], [SAMSA_ID]])
    with Load(mixed.bootstrap, topic) as load:
        load.wait_acked(500)
    plan = tmp_path / "plan.json"
    plan.write_text(
        '{"version": 1, "partitions": ['
        f'{{"topic": "{topic}", "partition": 0, "replicas": [{SAMSA_ID}]}}, '
        f'{{"topic": "{topic}", "partition": 1, "replicas": [{KAFKA_ID}]}}]}}'
    )
    tool = ["--bootstrap-server", mixed.bootstrap, "--reassignment-json-file", str(plan)]
    mixed.jars.run(REASSIGN, *tool, "--execute")

    def done() -> bool:
        return mixed.jars.run(REASSIGN, *tool, "--verify").stdout.count("is completed") == 2

    wait_for(
        lambda: mixed.leaders(topic, 2) == [SAMSA_ID, KAFKA_ID], 60, "each partition led by the other kind"
    )
    wait_for(done, 60, "kafka-reassign-partitions --verify reports both moves complete")
    seen = read_all(mixed.bootstrap, topic, 2)
    assert {k: seen.get(k) for k in load.acked} == load.acked
