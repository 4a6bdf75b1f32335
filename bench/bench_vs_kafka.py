"""Samsa beside Apache Kafka on this machine, in one run, with the same clients (issue 32, item 6).

Run: ``.venv/bin/python bench/bench_vs_kafka.py`` (16 minutes here on 2 shared cores: 500,000 x 100 B and
200,000 x 1 KiB per phase on the single brokers, ``--cluster-scale`` 0.2 of that on the clusters; ``--quick`` runs a
few thousand records per phase, ``--only samsa`` leaves Kafka out, ``--deployments single`` the clusters,
``--repeat N`` runs every phase N times and reports the median round, ``--json FILE`` keeps every figure). Kafka's
jars come from ``make kafka-jars`` (``.cache/kafka/4.4.0`` and ``3.9.2``); ``rdkafka_performance`` is librdkafka's
C example built by ``bench/build_rdkafka_performance.sh`` (give it with ``--rdkafka-performance PATH``; Debian
serves no binary of it, and the phase is skipped without one).

Deployments, one at a time so that they do not compete for the cores:

- ``single``: Apache Kafka 4.4.0, one node in KRaft combined mode (broker and controller in one JVM), started as
  ``kafka-server-start.sh`` starts it: ``-Xmx1G -Xms1G`` and ``kafka-run-class.sh``'s G1 settings; and one
  ``samsa serve`` process with its default settings. Both get only their listener, their log dir (under
  ``/var/tmp``, on disk) and ``group.initial.rebalance.delay.ms=0`` (Kafka's shipped ``server.properties`` sets
  it; a single-node KRaft Kafka also needs its internal topics' replication factor 1).
- ``cluster``: three brokers of each over one ZooKeeper (the Debian package, as ``samsa.cluster.zookeeper`` runs
  it; each cluster under its own chroot): Apache Kafka 3.9.2 in ZooKeeper mode (same JVM settings per broker) and
  Samsa's ``LocalCluster`` (three ``samsa serve`` processes). Topics have replication factor 3.

Figures, per deployment:

- start-up: process spawn to the first ApiVersions response (a probe sends ApiVersions v0 every 5 ms), and for a
  cluster the time until every broker answers; Kafka's ``StorageTool format`` runs before and is not counted;
- idle RSS: the resident set summed over each broker's process tree (``/proc``), 3 s after start-up, no topics;
- throughput, for each client, value size (100 B, 1 KiB), partition count (1, 64): produce with acks=1 and with
  acks=all (each into a fresh topic), then consume the acks=1 topic from the beginning. Clients: confluent-kafka
  (``linger.ms=5``, ``batch.size=1048576``; the consumer assigns all partitions, no group), ``rdkafka_performance``
  (same producer settings, and ``sticky.partitioning.linger.ms=0`` so that its keyless records reach every
  partition; ``-G`` consumer; both librdkafka consumers with ``fetch.queue.backoff.ms=10``, see
  ``bench_broker.LIBRDKAFKA_CONSUMER``), and Kafka's ``ProducerPerformance`` / ``ConsumerPerformance``
  (``kafka-producer-perf-test`` / ``kafka-consumer-perf-test``, from the 4.4.0 jars, with their scripts'
  ``-Xmx512M``; producer defaults but ``acks``, consumer in a group). Each client reports its own rate: the
  confluent-kafka phases time the first ``produce()`` to ``flush()`` (and assign to last record); the two tools
  print theirs (``ConsumerPerformance``'s ``fetch.nMsg.sec``, after its group join: a new JVM's join took 1-3 s
  here, against either broker; the rate with the join is kept in the JSON).

At the end: one table of every figure, Kafka's and Samsa's, and the ratio Samsa / Kafka (for rates higher is better
for Samsa; for start-up and RSS lower is).

``--profile DIR`` runs the single Samsa broker under cProfile (``DIR/samsa-single.prof``, written at its shutdown).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_broker import LIBRDKAFKA_CONSUMER

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = Path(os.environ.get("SAMSA_KAFKA_CACHE", ROOT / ".cache" / "kafka"))
KAFKA_4 = "4.4.0"
KAFKA_3 = "3.9.2"
# kafka-server-start.sh's heap and kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS, as a user's broker runs
KAFKA_HEAP = ("-Xmx1G", "-Xms1G")
KAFKA_JVM = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
TOOL_HEAP = ("-Xmx512M",)  # kafka-producer-perf-test.sh / kafka-consumer-perf-test.sh
CK_PRODUCER: dict[str, Any] = {"linger.ms": 5, "batch.size": 1048576, "delivery.report.only.error": True}
SIZES = (100, 1024)
PARTITIONS = (1, 64)
CLIENTS = ("confluent", "rdkafka", "java")
CLIENT_LABEL = {"confluent": "confluent-kafka", "rdkafka": "rdkafka_performance", "java": "Kafka perf-test"}


# --- processes ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tree_pids(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc's children lists."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            pids += tree_pids(int(child))
    return pids


def rss_mib(pid: int) -> float:
    """VmRSS summed over a process tree, MiB."""
    total = 0
    for each in tree_pids(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def api_versions_answered(port: int) -> bool:
    """One ApiVersions v0 request (header v1: key 18, version 0, correlation id, client id); any reply counts."""
    client_id = b"bench"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = sock.recv(8)
            return len(head) >= 8 and struct.unpack(">ii", head)[1] == 7
    except OSError:
        return False


def wait_answered(ports: list[int], t0: float, alive: Callable[[], bool], timeout: float = 120.0) -> float:
    """Seconds from ``t0`` until every port has answered an ApiVersions request (probing every 5 ms)."""
    pending = set(ports)
    while pending:
        if time.perf_counter() - t0 > timeout or not alive():
            raise RuntimeError(f"ports {sorted(pending)} did not answer ApiVersions")
        for port in sorted(pending):
            if api_versions_answered(port):
                pending.discard(port)
        if pending:
            time.sleep(0.005)
    return time.perf_counter() - t0


def stop(process: subprocess.Popen[Any], timeout: float = 60.0) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def java_command(version: str, heap: tuple[str, ...], main_class: str, *args: str) -> list[str]:
    return ["java", *heap, *KAFKA_JVM, "-cp", f"{CACHE / version}/*", main_class, *args]


def write_properties(path: Path, properties: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


# --- deployments --------------------------------------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Deployment:
    """Brokers of one kind, started: their pids and ports, start-up seconds, idle RSS, and how to stop them."""

    name: str
    pids: list[int]
    ports: list[int]
    replication: int
    stop: Callable[[], None]
    startup_s: float = 0.0
    idle_rss_mib: float = 0.0

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def started(self, t0: float) -> None:
        """Wait for every broker's first ApiVersions answer (from ``t0``, the spawn), then 3 s, then read RSS."""
        try:
            self.startup_s = wait_answered(self.ports, t0, lambda: all(alive(p) for p in self.pids))
            time.sleep(3.0)
            self.idle_rss_mib = sum(rss_mib(p) for p in self.pids)
        except BaseException:
            self.stop()
            raise

    def cpu_s(self) -> float:
        """User + system CPU of every broker's process tree so far."""
        total = 0.0
        for pid in [each for p in self.pids for each in tree_pids(p)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total


def stopper(processes: list[subprocess.Popen[Any]]) -> Callable[[], None]:
    def stop_all() -> None:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            stop(process)

    return stop_all


def kafka_base_properties(port: int, log_dir: Path, replication: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(log_dir),
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min(2, replication)),
        "group.initial.rebalance.delay.ms": "0",
    }


def start_kafka_single(work: Path) -> Deployment:
    port, controller = free_port(), free_port()
    props = kafka_base_properties(port, work / "logs", 1)
    props.update(
        {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
    )
    path = write_properties(work / "server.properties", props)
    cluster_id = subprocess.run(
        java_command(KAFKA_4, ("-Xmx256M",), "kafka.tools.StorageTool", "random-uuid"),
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    subprocess.run(
        java_command(KAFKA_4, ("-Xmx256M",), "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(path)),
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    out = (work / "kafka.out").open("ab")
    t0 = time.perf_counter()
    process = subprocess.Popen(
        java_command(KAFKA_4, KAFKA_HEAP, "kafka.Kafka", str(path)), stdout=out, stderr=subprocess.STDOUT
    )
    deployment = Deployment("kafka", [process.pid], [port], 1, stopper([process]))
    deployment.started(t0)
    return deployment


def start_samsa_single(work: Path, profile: Path | None) -> Deployment:
    port = free_port()
    props = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(work / "data"),
        "group.initial.rebalance.delay.ms": "0",
    }
    path = write_properties(work / "server.properties", props)
    command = [sys.executable]
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        command += ["-m", "cProfile", "-o", str(profile / "samsa-single.prof")]
    command += ["-m", "samsa.cli", "serve", str(path)]
    out = (work / "samsa.out").open("ab")
    t0 = time.perf_counter()
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deployment = Deployment("samsa", [process.pid], [port], 1, stopper([process]))
    deployment.started(t0)
    return deployment


def start_zookeeper(work: Path) -> Any:
    from samsa.cluster.zookeeper import ZooKeeperServer

    return ZooKeeperServer(work / "zookeeper").start()


def start_kafka_cluster(work: Path, zookeeper: str) -> Deployment:
    ports = [free_port() for _ in range(3)]
    connect = f"{zookeeper}/kafka-{uuid.uuid4().hex[:8]}"
    paths = []
    for broker_id, port in enumerate(ports, start=1):
        props = kafka_base_properties(port, work / f"broker-{broker_id}" / "logs", 3)
        props.update({"broker.id": str(broker_id), "zookeeper.connect": connect})
        paths.append(write_properties(work / f"broker-{broker_id}" / "server.properties", props))
    processes: list[subprocess.Popen[Any]] = []
    t0 = time.perf_counter()
    for path in paths:
        out = (path.parent / "kafka.out").open("ab")
        command = java_command(KAFKA_3, KAFKA_HEAP, "kafka.Kafka", str(path))
        processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT))
    deployment = Deployment("kafka", [p.pid for p in processes], ports, 3, stopper(processes))
    deployment.started(t0)
    wait_brokers(deployment, 3)
    return deployment


def start_samsa_cluster(work: Path, zookeeper: str) -> Deployment:
    from samsa.cluster.launcher import LocalCluster

    cluster = LocalCluster(work, zookeeper=f"{zookeeper}/samsa-{uuid.uuid4().hex[:8]}")
    t0 = time.perf_counter()
    cluster.up(3)  # returns once every broker is registered in ZooKeeper
    pids = [cluster.running_pid(b.broker_id) for b in cluster.brokers]

    def down() -> None:
        cluster.down()

    deployment = Deployment("samsa", pids, [b.port for b in cluster.brokers], 3, down)
    deployment.started(t0)
    wait_brokers(deployment, 3)
    return deployment


def wait_brokers(deployment: Deployment, count: int, timeout: float = 60.0) -> None:
    """Until the metadata lists ``count`` brokers (the deployment is stopped if it never does)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": deployment.bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(admin.list_topics(timeout=5).brokers) >= count:
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.2)
    deployment.stop()
    raise RuntimeError(f"{count} brokers not in the metadata after {timeout} s")


# --- topics ---------------------------------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(topic, partitions, replication)], operation_timeout=60
    ).values():
        future.result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # every partition has a leader before the clock starts
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        found = {} if meta is None or meta.error is not None else meta.partitions
        if len(found) == partitions and all(
            p.leader >= 0 and len(p.isrs) >= replication for p in found.values()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} not ready")


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(topics, operation_timeout=60).values():
        try:
            future.result(60)
        except Exception as exc:  # cleanup only: the next topics have new names
            print(f"  (delete failed: {exc})", file=sys.stderr)


# --- clients --------------------------------------------------------------------------------------------------


def ck_produce(
    bootstrap: str, topic: str, partitions: int, records: int, size: int, acks: str
) -> dict[str, Any]:
    from confluent_kafka import KafkaException, Producer

    errors: list[Any] = []
    producer = Producer(
        {
            **CK_PRODUCER,
            "acks": acks,
            "bootstrap.servers": bootstrap,
            "on_delivery": lambda e, _m: errors.append(e),
        }
    )
    producer.list_topics(topic, timeout=10)
    payload = os.urandom(size)
    produce, poll = producer.produce, producer.poll
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                poll(0.005)
        if i % 20000 == 0:
            poll(0)
    left = producer.flush(300)
    seconds = time.perf_counter() - t0
    if left or errors:
        raise KafkaException(f"{left} undelivered, {len(errors)} errors, first {errors[:1]}")
    return {"records": records, "seconds": seconds}


def ck_consume(bootstrap: str, topic: str, partitions: int, records: int) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            **LIBRDKAFKA_CONSUMER,
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
        }
    )
    consumer.list_topics(topic, timeout=10)
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
    got, last, idle_since = 0, t0, t0
    while got < records and time.perf_counter() - idle_since < 10:
        batch = consumer.consume(num_messages=min(10000, records - got), timeout=0.5)
        if batch:
            got += sum(1 for m in batch if m.error() is None)
            last = idle_since = time.perf_counter()
    consumer.close()
    if got < records:
        raise RuntimeError(f"consumed {got} of {records}")
    return {"records": got, "seconds": last - t0}


def run_ck(*args: str) -> dict[str, Any]:
    """A confluent-kafka phase in its own process (this script with ``--client``), so that it has a core's GIL."""
    out = subprocess.run(
        [sys.executable, __file__, "--client", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"client {args} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def rk_rate(output: str) -> float:
    """The msgs/s of rdkafka_performance's summary line."""
    rates = re.findall(r"([0-9]+) msgs/s", output)
    if not rates:
        raise RuntimeError(f"no rate in rdkafka_performance's output:\n{output[-2000:]}")
    return float(rates[-1])


def rk_produce(
    binary: Path, bootstrap: str, topic: str, records: int, size: int, acks: str
) -> dict[str, Any]:
    args = [str(binary), "-P", "-t", topic, "-b", bootstrap, "-s", str(size), "-c", str(records)]
    args += ["-a", "-1" if acks == "all" else acks, "-X", "linger.ms=5", "-X", "batch.size=1000000", "-q"]
    # Its records have no key, and librdkafka's sticky partitioner then fills one partition at a time (here 2 of 64
    # got all 40,000). A consumer's first fetch to a broker can then name only empty partitions (the first whose
    # offsets came back) and wait out fetch.wait.max.ms (500 ms) at either broker: a 64-partition phase should
    # have data in all 64.
    args += ["-X", "sticky.partitioning.linger.ms=0"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    text = out.stdout + out.stderr
    if out.returncode != 0 or f"{records} delivered" not in text:
        raise RuntimeError(f"rdkafka_performance -P failed:\n{text[-3000:]}")
    return {"records": records, "seconds": records / rk_rate(text)}


def rk_consume(binary: Path, bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    args = [
        str(binary),
        "-C",
        "-G",
        f"rk-{uuid.uuid4().hex[:8]}",
        "-t",
        topic,
        "-b",
        bootstrap,
        "-c",
        str(records),
    ]
    args += ["-X", "auto.offset.reset=earliest", "-q"]
    args += [arg for key, value in LIBRDKAFKA_CONSUMER.items() for arg in ("-X", f"{key}={value}")]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        raise RuntimeError(f"rdkafka_performance -C failed:\n{text[-3000:]}")
    return {"records": records, "seconds": records / rk_rate(text)}


def java_produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> dict[str, Any]:
    args = ["--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1"]
    args += ["--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}"]
    command = java_command(KAFKA_4, TOOL_HEAP, "org.apache.kafka.tools.ProducerPerformance", *args)
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    found = re.findall(r"([0-9]+) records sent, ([0-9.]+) records/sec", out.stdout)
    if out.returncode != 0 or not found or int(found[-1][0]) != records:
        raise RuntimeError(f"ProducerPerformance failed:\n{(out.stdout + out.stderr)[-3000:]}")
    return {"records": records, "seconds": records / float(found[-1][1])}


def java_consume(bootstrap: str, topic: str, records: int) -> dict[str, Any]:
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records)]
    args += ["--group", f"perf-{uuid.uuid4().hex[:8]}", "--timeout", "60000"]
    command = java_command(KAFKA_4, TOOL_HEAP, "org.apache.kafka.tools.ConsumerPerformance", *args)
    out = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    rows = [
        line.split(",") for line in out.stdout.splitlines() if line.count(",") >= 9 and line[:1].isdigit()
    ]
    if out.returncode != 0 or not rows or int(rows[-1][4].strip()) < records:
        raise RuntimeError(f"ConsumerPerformance failed:\n{(out.stdout + out.stderr)[-3000:]}")
    # its columns: ..., nMsg.sec (from its start, the group join included), rebalance.time.ms, fetch.time.ms, ...,
    # fetch.nMsg.sec (after the join): the fetch rate is the figure, as the other consumers' rates exclude joining
    row = [cell.strip() for cell in rows[-1]]
    return {
        "records": records,
        "seconds": records / float(row[9]),
        "with_join_msgs_s": float(row[5]),
        "rebalance_ms": float(row[6]),
    }


# --- the matrix -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    client: str
    size: int
    partitions: int
    op: str  # "produce acks=1", "produce acks=all", "consume"

    @property
    def key(self) -> str:
        return f"{self.client}|{self.size}|{self.partitions}|{self.op}"


def run_phases(
    deployment: Deployment, clients: list[str], records: dict[int, int], rk: Path | None
) -> Iterator[tuple[Phase, dict[str, Any]]]:
    bs = deployment.bootstrap
    for client in clients:
        for size in records:
            for partitions in PARTITIONS:
                count = records[size]
                topics = {
                    acks: f"{client}-{size}-{partitions}-acks{acks}-{uuid.uuid4().hex[:6]}"
                    for acks in ("1", "all")
                }
                for acks, topic in topics.items():
                    create_topic(bs, topic, partitions, deployment.replication)
                    cpu0 = deployment.cpu_s()
                    if client == "confluent":
                        res = run_ck("produce", bs, topic, str(partitions), str(count), str(size), acks)
                    elif client == "rdkafka":
                        assert rk is not None
                        res = rk_produce(rk, bs, topic, count, size, acks)
                    else:
                        res = java_produce(bs, topic, count, size, acks)
                    res["broker_cpu_s"] = deployment.cpu_s() - cpu0
                    yield Phase(client, size, partitions, f"produce acks={acks}"), res
                cpu0 = deployment.cpu_s()
                if client == "confluent":
                    res = run_ck("consume", bs, topics["1"], str(partitions), str(count))
                elif client == "rdkafka":
                    assert rk is not None
                    res = rk_consume(rk, bs, topics["1"], count)
                else:
                    res = java_consume(bs, topics["1"], count)
                res["broker_cpu_s"] = deployment.cpu_s() - cpu0
                yield Phase(client, size, partitions, "consume"), res
                delete_topics(bs, list(topics.values()))


def warm_up(deployment: Deployment, records: int) -> None:
    """Not timed: produce and consume ``records`` x 100 B once, so that a JVM's JIT has compiled its hot paths."""
    topic = f"warm-up-{uuid.uuid4().hex[:6]}"
    create_topic(deployment.bootstrap, topic, 1, deployment.replication)
    run_ck("produce", deployment.bootstrap, topic, "1", str(records), "100", "1")
    run_ck("consume", deployment.bootstrap, topic, "1", str(records))
    delete_topics(deployment.bootstrap, [topic])


def measure(
    deployment: Deployment, clients: list[str], records: dict[int, int], rk: Path | None, repeat: int = 1
) -> dict[str, Any]:
    """Every phase ``repeat`` times (all phases once, then again: a slow spell of the machine falls on different
    phases each round); a phase's figure is the round with the median rate, every round's kept under "rounds"."""
    figures: dict[str, Any] = {"startup_s": deployment.startup_s, "idle_rss_mib": deployment.idle_rss_mib}
    print(
        f"  start-up {deployment.startup_s * 1000:.0f} ms, idle RSS {deployment.idle_rss_mib:.1f} MiB",
        flush=True,
    )
    rounds: dict[str, list[dict[str, Any]]] = {}
    for round_no in range(1, repeat + 1):
        for phase, res in run_phases(deployment, clients, records, rk):
            rate = res["records"] / res["seconds"]
            res["msgs_s"] = rate
            res["mb_s"] = rate * phase.size / 1e6
            rounds.setdefault(phase.key, []).append(res)
            label = (
                f"{CLIENT_LABEL[phase.client]:20} {phase.size:>5} B {phase.partitions:>3} p  {phase.op:17}"
            )
            print(
                f"  {f'[{round_no}/{repeat}] ' if repeat > 1 else ''}{label} "
                f"{rate:>11,.0f} msg/s {res['mb_s']:7.1f} MB/s  broker CPU {res['broker_cpu_s']:6.2f} s",
                flush=True,
            )
    for key, results in rounds.items():
        median = sorted(results, key=lambda r: r["msgs_s"])[(len(results) - 1) // 2]
        figures[key] = {**median, "rounds": results} if repeat > 1 else median
    return figures


def run_deployment(
    kind: str, name: str, work: Path, args: argparse.Namespace, clients: list[str], zookeeper: str | None
) -> dict[str, Any]:
    print(f"\n{kind} / {name}:", flush=True)
    if kind == "single":
        deployment = start_kafka_single(work) if name == "kafka" else start_samsa_single(work, args.profile)
    else:
        assert zookeeper is not None
        deployment = (
            start_kafka_cluster(work, zookeeper) if name == "kafka" else start_samsa_cluster(work, zookeeper)
        )
    records = records_per_size(args)
    if kind == "cluster" and not args.quick:
        records = {size: max(1000, int(count * args.cluster_scale)) for size, count in records.items()}
    try:
        return measure(deployment, clients, records, args.rdkafka_performance, args.repeat)
    finally:
        deployment.stop()


def records_per_size(args: argparse.Namespace) -> dict[int, int]:
    counts = {100: 20_000, 1024: 5_000} if args.quick else {100: args.records, 1024: args.records_1k}
    return {size: counts[size] for size in SIZES if str(size) in args.sizes.split(",")}


# --- the table ------------------------------------------------------------------------------------------------


def table(results: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    lines = []
    for kind, by_name in results.items():
        kafka, samsa = by_name.get("kafka", {}), by_name.get("samsa", {})
        lines.append(f"\n{kind}: Kafka / Samsa / Samsa÷Kafka")
        for key, unit, scale in (("startup_s", "ms", 1000.0), ("idle_rss_mib", "MiB", 1.0)):
            k, s = kafka.get(key), samsa.get(key)
            lines.append(f"  {key:46} {fmt(k, scale)} {unit:5} {fmt(s, scale)} {unit:5} {ratio(s, k)}")
        keys = [k for k in (samsa or kafka) if "|" in k]
        for key in keys:
            client, size, partitions, op = key.split("|")
            label = f"{CLIENT_LABEL[client]} {size} B {partitions} p {op}"
            k, s = kafka.get(key, {}).get("msgs_s"), samsa.get(key, {}).get("msgs_s")
            kmb, smb = kafka.get(key, {}).get("mb_s"), samsa.get(key, {}).get("mb_s")
            kcpu, scpu = kafka.get(key, {}).get("broker_cpu_s"), samsa.get(key, {}).get("broker_cpu_s")
            lines.append(
                f"  {label:46} {fmt(k, 1)} msg/s {fmt(kmb, 1, 6, 1)} MB/s  {fmt(s, 1)} msg/s {fmt(smb, 1, 6, 1)} MB/s"
                f"  {ratio(s, k):>7}  broker CPU s {fmt(kcpu, 1, 5, 2)} / {fmt(scpu, 1, 5, 2)}"
            )
    return lines


def fmt(value: float | None, scale: float, width: int = 10, digits: int = 0) -> str:
    return f"{'—':>{width}}" if value is None else f"{value * scale:>{width},.{digits}f}"


def ratio(samsa: float | None, kafka: float | None) -> str:
    return "—" if samsa is None or not kafka else f"{samsa / kafka:.2f}x"


# --- main -----------------------------------------------------------------------------------------------------


def available_clients(args: argparse.Namespace) -> list[str]:
    clients: list[str] = args.clients.split(",")
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise SystemExit(f"--clients: unknown {', '.join(unknown)}; choose from {', '.join(CLIENTS)}")
    if "rdkafka" in clients and (args.rdkafka_performance is None or not args.rdkafka_performance.exists()):
        print(
            "rdkafka_performance: none given (--rdkafka-performance; bench/build_rdkafka_performance.sh): skipped"
        )
        clients.remove("rdkafka")
    if "java" in clients and not (CACHE / KAFKA_4 / ".complete").exists():
        print(f"Kafka {KAFKA_4} jars not in {CACHE} (make kafka-jars): Kafka's perf-test tools skipped")
        clients.remove("java")
    return clients


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=500_000, help="records per phase at 100 B")
    ap.add_argument("--records-1k", type=int, default=200_000, help="records per phase at 1 KiB")
    ap.add_argument("--quick", action="store_true", help="20,000 / 5,000 records per phase")
    ap.add_argument(
        "--cluster-scale",
        type=float,
        default=0.2,
        help="the clusters' phases run this share of the records (Kafka 3.9's three JVMs produce to 64 partitions "
        "at a few thousand records/s on 2 shared cores)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run every phase this many times; the figure is the median round",
    )
    ap.add_argument("--only", choices=("samsa", "kafka"))
    ap.add_argument("--deployments", default="single,cluster")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--sizes", default="100,1024", help="value sizes to run, of 100,1024")
    ap.add_argument("--rdkafka-performance", type=Path, default=os.environ.get("RDKAFKA_PERFORMANCE"))
    ap.add_argument("--profile", type=Path, help="run the single Samsa broker under cProfile, into DIR")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--client", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        kind, *rest = args.client
        if kind == "produce":
            out = ck_produce(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]), rest[5])
        else:
            out = ck_consume(rest[0], rest[1], int(rest[2]), int(rest[3]))
        print(json.dumps(out))
        return

    import confluent_kafka

    found: Any = confluent_kafka.version()  # a str in 2.16, a (str, int) tuple in older releases
    clients = available_clients(args)
    names = [n for n in ("kafka", "samsa") if args.only in (None, n)]
    kinds = args.deployments.split(",")
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}, "
        f"confluent-kafka {found if isinstance(found, str) else found[0]}, librdkafka {confluent_kafka.libversion()[0]}, "
        f"Kafka {KAFKA_4} (KRaft) / {KAFKA_3} (ZooKeeper), clients {clients}, records {records_per_size(args)}",
        flush=True,
    )
    results: dict[str, dict[str, dict[str, Any]]] = {}
    started = time.perf_counter()
    for kind in kinds:
        results[kind] = {}
        zookeeper = None
        with tempfile.TemporaryDirectory(prefix=f"bench-vs-kafka-{kind}-", dir="/var/tmp") as tmp:
            work = Path(tmp)
            zk = start_zookeeper(work) if kind == "cluster" else None
            try:
                zookeeper = zk.connect_string if zk is not None else None
                for name in names:
                    results[kind][name] = run_deployment(kind, name, work / name, args, clients, zookeeper)
            finally:
                if zk is not None:
                    zk.stop()
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(table(results)))
    print(f"\nwhole run {time.perf_counter() - started:.0f} s, load average now {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
