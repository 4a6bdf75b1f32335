"""Kafka 4.4's operator tools and Java admin client against a 3-broker Samsa cluster on ZooKeeper:
``kafka-reassign-partitions`` (--generate, --execute with --throttle, --verify which removes the throttle),
``kafka-leader-election`` (preferred and unclean), ``kafka-producer-perf-test`` and ``kafka-consumer-perf-test``, and
the admin client's describeCluster and describeTopics (``AdminProbe.java``, run as a single-file program).

Where the output does not depend on how many brokers there are, the same steps run against Apache Kafka 4.4 (KRaft,
one node, node id 1) on a topic whose replicas are all on broker 1 of the Samsa cluster, and the outputs are
compared with only the log dir paths, topic ids, addresses and figures taken out: the reassignment of a partition
onto its own broker (generate, execute with a throttle and the throttle configs it sets, verify and the configs it
clears), the leader elections a healthy partition needs none of, the admin client's answers (authorized operations
included), and the perf tools' report lines. The moves and elections that need three brokers are checked against
what the cluster then says.

One cluster and one Kafka node for the module: about 60 s here, most of it JVM start-ups (each tool run is one).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from samsa.cluster.launcher import LocalCluster

from .jars import CONFIGS, PRODUCER_PERF, TOPICS, KafkaJars
from .kafka_broker import KafkaBroker

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
ADMIN_PROBE = Path(__file__).with_name("AdminProbe.java")
THROTTLE = "50000000"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(
        tmp_path_factory.mktemp("samsa-cluster"),
        # no automatic preferred elections: the election test runs them itself (a rebalance first made its
        # preferred election answer "Valid replica already elected")
        broker_config={"replica.lag.time.max.ms": "2000", "auto.leader.rebalance.enable": "false"},
    )
    local.up(3)
    try:
        yield local
    finally:
        local.down()


@pytest.fixture(scope="module")
def kafka(kafka4: KafkaJars, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(kafka4, tmp_path_factory.mktemp("kafka-node"))
    broker.start()
    yield broker
    broker.stop()


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.5)


def describe(jars: KafkaJars, bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr) as ``kafka-topics --describe`` prints them (-1: no leader)."""
    out = jars.run(TOPICS, "--bootstrap-server", bootstrap, "--describe", "--topic", topic).stdout
    found = {}
    for m in re.finditer(r"Partition: (\d+)\tLeader: (\S+)\tReplicas: (\S+)\tIsr: (\S*)", out):
        leader = -1 if m[2] == "none" else int(m[2])
        isr = sorted(int(i) for i in m[4].split(",") if i)
        found[int(m[1])] = (leader, [int(i) for i in m[3].split(",")], isr)
    return found


def produce(jars: KafkaJars, bootstrap: str, topic: str, records: int) -> str:
    """``kafka-producer-perf-test`` with acks=all and idempotence: its report line."""
    done = jars.run(
        PRODUCER_PERF, "--topic", topic, "--num-records", str(records), "--record-size", "100",
        "--throughput", "-1", "--command-property", f"bootstrap.servers={bootstrap}", "acks=all",
        "enable.idempotence=true",
    )  # fmt: skip
    return done.stdout


def consume(jars: KafkaJars, bootstrap: str, topic: str, records: int) -> str:
    """``kafka-consumer-perf-test`` reading ``records`` records of ``topic``: its header and report lines."""
    done = jars.run(
        CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
        "--timeout", "30000",
    )  # fmt: skip
    return done.stdout


def probe(jars: KafkaJars, bootstrap: str, *topics: str) -> str:
    return jars.run(
        str(ADMIN_PROBE), bootstrap, *topics, timeout=120
    ).stdout  # a source file: java compiles it


def configs(jars: KafkaJars, bootstrap: str, entity_type: str, name: str) -> str:
    args = [
        "--bootstrap-server",
        bootstrap,
        "--describe",
        "--entity-type",
        entity_type,
        "--entity-name",
        name,
    ]
    return jars.run(CONFIGS, *args).stdout


def write_plan(path: Path, topic: str, moves: dict[int, list[int]]) -> Path:
    partitions = [
        {"topic": topic, "partition": p, "replicas": replicas, "log_dirs": ["any"] * len(replicas)}
        for p, replicas in sorted(moves.items())
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path


# --- the same steps against Samsa and Kafka ------------------------------------------------------------------


def one_node_steps(jars: KafkaJars, bootstrap: str, log_dirs: list[Path], work: Path) -> dict[str, str]:
    """Tool steps on topic ``same`` (3 partitions, all on broker 1) whose output does not depend on the broker
    count: step -> output with the address, log dirs, topic id and figures made equal."""
    b = ["--bootstrap-server", bootstrap]
    out: dict[str, str] = {}

    def normalized(text: str) -> str:
        text = text.replace(bootstrap, "<broker>")
        for log_dir in log_dirs:
            text = text.replace(str(log_dir), "<log dir>")
        text = re.sub(r"(TopicId: | id )\S+", r"\1<id>", text)
        text = re.sub(r"clusterId \S+", "clusterId <id>", text)
        text = re.sub(r"throttles on brokers? [\d,]+", "throttles on <every broker>", text)
        return re.sub(r"127\.0\.0\.1:\d+", "<address>", text)

    def step(name: str, main_class: str, *args: str, check: bool = True) -> None:
        done = jars.run(main_class, *b, *args, check=check)
        out[name] = normalized(done.stdout + (done.stderr if not check else ""))

    move = work / "topics.json"
    move.write_text(json.dumps({"version": 1, "topics": [{"topic": "same"}]}))
    plan = write_plan(work / "plan.json", "same", {0: [1]})
    step("generate", REASSIGN, "--topics-to-move-json-file", str(move), "--broker-list", "1", "--generate")
    step("execute", REASSIGN, "--reassignment-json-file", str(plan), "--execute", "--throttle", THROTTLE)
    out["throttled broker"] = configs(jars, bootstrap, "brokers", "1")
    out["throttled topic"] = configs(jars, bootstrap, "topics", "same")
    step("verify", REASSIGN, "--reassignment-json-file", str(plan), "--verify")
    out["unthrottled broker"] = configs(jars, bootstrap, "brokers", "1")
    out["unthrottled topic"] = configs(jars, bootstrap, "topics", "same")
    step("list", REASSIGN, "--list")
    partitions = work / "elect.json"
    partitions.write_text(json.dumps({"partitions": [{"topic": "same", "partition": p} for p in (0, 1, 2)]}))
    step("preferred", ELECTION, "--election-type", "preferred", "--path-to-json-file", str(partitions))
    step("unclean", ELECTION, "--election-type", "unclean", "--topic", "same", "--partition", "1")
    step(
        "unknown",
        ELECTION,
        "--election-type",
        "preferred",
        "--topic",
        "nothing",
        "--partition",
        "0",
        check=False,
    )
    out["admin"] = normalized(probe(jars, bootstrap, "same"))
    report = produce(jars, bootstrap, "same", 2000)
    out["producer-perf"] = re.sub(
        r"\d+(\.\d+)?", "N", report.replace("2000 records sent", "<all> records sent")
    )
    header, line = consume(jars, bootstrap, "same", 2000).strip().splitlines()[-2:]
    out["consumer-perf header"] = header
    out["consumer-perf fields"] = str(len(line.split(", ")))
    out["consumer-perf records"] = line.split(", ")[4]
    return out


def test_tools_print_what_they_print_against_kafka(
    kafka4: KafkaJars, cluster: LocalCluster, kafka: KafkaBroker, tmp_path: Path
) -> None:
    samsa = cluster.broker(1).address
    kafka4.run(
        TOPICS, "--bootstrap-server", samsa, "--create", "--topic", "same", "--replica-assignment", "1,1,1"
    )
    kafka4.run(
        TOPICS, "--bootstrap-server", kafka.bootstrap, "--create", "--topic", "same", "--partitions", "3"
    )
    samsa_dirs = [cluster.directory / f"broker-{i}" / "data" for i in (1, 2, 3)]
    (tmp_path / "samsa").mkdir()
    (tmp_path / "kafka").mkdir()
    ours = one_node_steps(kafka4, samsa, samsa_dirs, tmp_path / "samsa")
    theirs = one_node_steps(kafka4, kafka.bootstrap, [kafka.log_dir], tmp_path / "kafka")
    # the admin client: the cluster's three nodes against Kafka's one, the rest line for line
    assert [
        line for line in ours.pop("admin").splitlines() if not line.startswith(("node", "controller"))
    ] == [line for line in theirs.pop("admin").splitlines() if not line.startswith(("node", "controller"))]
    assert ours == theirs
    assert theirs["consumer-perf records"] == "2000"
    assert "Clearing topic-level throttles on topic same\n" in theirs["verify"]


# --- what needs three brokers ------------------------------------------------------------------------------


def test_reassignment_moves_every_partition_under_a_throttle_verify_removes_it(
    kafka4: KafkaJars, cluster: LocalCluster, tmp_path: Path
) -> None:
    b = cluster.bootstrap_servers
    kafka4.run(TOPICS, "--bootstrap-server", b, "--create", "--topic", "moves", "--partitions", "3",
               "--replication-factor", "2")  # fmt: skip
    wait_for("leaders", lambda: all(v[0] > 0 for v in describe(kafka4, b, "moves").values()))
    produce(kafka4, b, "moves", 3000)
    before = describe(kafka4, b, "moves")

    move = tmp_path / "topics.json"
    move.write_text(json.dumps({"version": 1, "topics": [{"topic": "moves"}]}))
    generated = kafka4.run(REASSIGN, "--bootstrap-server", b, "--topics-to-move-json-file", str(move),
                           "--broker-list", "1,2,3", "--generate").stdout  # fmt: skip
    current, proposed = [json.loads(line) for line in generated.splitlines() if line.startswith("{")]
    assert {p["partition"]: p["replicas"] for p in current["partitions"]} == {
        p: replicas for p, (_, replicas, _) in before.items()
    }
    assert all(len(set(p["replicas"])) == 2 <= 3 for p in proposed["partitions"])

    # every partition onto the broker it lacks, keeping its second replica
    moves = {
        p: [next(i for i in (1, 2, 3) if i not in replicas), replicas[1]]
        for p, (_, replicas, _) in before.items()
    }
    plan = write_plan(tmp_path / "plan.json", "moves", moves)
    executed = kafka4.run(REASSIGN, "--bootstrap-server", b, "--reassignment-json-file", str(plan), "--execute",
                          "--throttle", THROTTLE).stdout  # fmt: skip
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s" in executed
    assert "Successfully started partition reassignments for moves-0,moves-1,moves-2" in executed
    throttled = configs(kafka4, b, "topics", "moves")
    leader_side = re.search(r"leader\.replication\.throttled\.replicas=(\S+)", throttled)
    follower_side = re.search(r"follower\.replication\.throttled\.replicas=(\S+)", throttled)
    assert leader_side and follower_side, throttled
    assert set(leader_side[1].split(",")) == {f"{p}:{r}" for p, (_, rs, _) in before.items() for r in rs}
    assert set(follower_side[1].split(",")) == {f"{p}:{moves[p][0]}" for p in moves}
    for broker in ("1", "2", "3"):
        assert f"leader.replication.throttled.rate={THROTTLE}" in configs(kafka4, b, "brokers", broker)

    def verified() -> bool:
        out = kafka4.run(
            REASSIGN, "--bootstrap-server", b, "--reassignment-json-file", str(plan), "--verify"
        ).stdout
        verified.last = out  # type: ignore[attr-defined]
        return "is still in progress" not in out

    wait_for("the moves to complete", verified)
    out = verified.last  # type: ignore[attr-defined]
    assert all(f"Reassignment of partition moves-{p} is completed." in out for p in moves), out
    assert "Clearing broker-level throttles on brokers 1,2,3" in out
    assert "Clearing topic-level throttles on topic moves" in out
    assert "throttled" not in configs(kafka4, b, "topics", "moves")
    assert all("throttled" not in configs(kafka4, b, "brokers", i) for i in ("1", "2", "3"))
    wait_for("the new replicas in sync", lambda: all(
        r == moves[p] and sorted(isr) == sorted(moves[p]) for p, (_, r, isr) in describe(kafka4, b, "moves").items()
    ))  # fmt: skip
    # every record is still there, read by the Java consumer from the moved replicas
    assert consume(kafka4, b, "moves", 3000).strip().splitlines()[-1].split(", ")[4] == "3000"


def test_leader_election_preferred_then_unclean(kafka4: KafkaJars, cluster: LocalCluster) -> None:
    b = cluster.bootstrap_servers
    kafka4.run(TOPICS, "--bootstrap-server", b, "--create", "--topic", "elect", "--replica-assignment", "1:2")
    wait_for("a leader", lambda: describe(kafka4, b, "elect")[0][0] == 1)
    produce(kafka4, b, "elect", 100)

    cluster.stop_broker(1)  # leadership moves to 2; 1 comes back as a follower
    wait_for("leader 2", lambda: describe(kafka4, cluster.broker(2).address, "elect")[0][0] == 2)
    cluster.start_broker(1)
    wait_for("1 back in the ISR", lambda: describe(kafka4, b, "elect")[0] == (2, [1, 2], [1, 2]))
    elected = kafka4.run(ELECTION, "--bootstrap-server", b, "--election-type", "preferred",
                         "--topic", "elect", "--partition", "0").stdout  # fmt: skip
    assert elected == "Successfully completed leader election (PREFERRED) for partitions elect-0\n"
    wait_for("leader 1", lambda: describe(kafka4, b, "elect")[0][0] == 1)

    # 2 falls out of the ISR, then 1 (the last in sync) stops: no leader until an unclean election picks 2
    cluster.stop_broker(2)
    wait_for("ISR [1]", lambda: describe(kafka4, cluster.broker(1).address, "elect")[0][2] == [1])
    cluster.stop_broker(1)
    cluster.start_broker(2)
    at = cluster.broker(2).address
    wait_for("no leader", lambda: describe(kafka4, at, "elect")[0][0] == -1)
    refused = kafka4.run(ELECTION, "--bootstrap-server", at, "--election-type", "preferred",
                         "--topic", "elect", "--partition", "0", check=False)  # fmt: skip
    assert refused.returncode == 1
    assert "PreferredLeaderNotAvailableException: The preferred leader was not available." in refused.stdout
    elected = kafka4.run(ELECTION, "--bootstrap-server", at, "--election-type", "unclean",
                         "--topic", "elect", "--partition", "0").stdout  # fmt: skip
    assert elected == "Successfully completed leader election (UNCLEAN) for partitions elect-0\n"
    wait_for("leader 2", lambda: describe(kafka4, at, "elect")[0][:2] == (2, [1, 2]))
    cluster.start_broker(1)
    wait_for("1 back in the ISR", lambda: describe(kafka4, b, "elect")[0][2] == [1, 2])
    # broker 2 was in sync when it stopped: the unclean leader lost nothing
    assert consume(kafka4, b, "elect", 100).strip().splitlines()[-1].split(", ")[4] == "100"


def test_the_admin_client_describes_the_cluster_and_its_topics(
    kafka4: KafkaJars, cluster: LocalCluster
) -> None:
    b = cluster.bootstrap_servers
    kafka4.run(TOPICS, "--bootstrap-server", b, "--create", "--topic", "spread", "--partitions", "3",
               "--replication-factor", "3")  # fmt: skip
    wait_for("leaders", lambda: all(v[0] > 0 for v in describe(kafka4, b, "spread").values()))
    lines = probe(kafka4, b, "spread").splitlines()
    assert [line.split()[1:3] for line in lines if line.startswith("node ")] == [
        [str(broker.broker_id), broker.address] for broker in cluster.brokers
    ]
    controller = next(line.split()[1] for line in lines if line.startswith("controller "))
    assert controller in {"1", "2", "3"}
    described = describe(kafka4, b, "spread")
    partitions = [line.split() for line in lines if line.startswith("  partition ")]
    assert {int(p[1]): (int(p[3]), sorted(json.loads(" ".join(p[5:8])))) for p in partitions} == {
        p: (leader, sorted(replicas)) for p, (leader, replicas, _) in described.items()
    }
