"""A replicated cluster against the single broker, with the same confluent-kafka client, in one run.

Run: ``.venv/bin/python bench/bench_cluster.py`` (about 6 minutes; ``--records``, ``--kills``, ``--rounds``,
``--latency-runs`` and ``--round-requests`` scale it; ``--phases latency`` runs only the latency phase, about 2
minutes, ``--phases rounds`` only the replication rounds, about 30 s). Every broker is its own ``samsa serve``
process on loopback, all on this one machine; the clients run in this process.

Phases:

1. **Throughput, as a ratio.** N x 100 B into one partition (``linger.ms=5``, ``batch.size=1048576``): acks=1 on a
   single broker (no ZooKeeper, the embedded default's code path) and acks=all with replication factor 3 on a
   3-broker cluster over a real ZooKeeper, alternated for ``--rounds`` rounds. Kafka's own 2014 figure for this
   pair on three machines was 421,823 / 821,557 records/s = 0.51.
2. **acks=all latency** at a fixed, moderate rate (``--rate``, 200 records/s; ``linger.ms=0``, an idempotent
   producer, Kafka's default since 3.0): ``produce()`` to delivery report, p50/p99, in ``--latency-runs`` runs, each
   on a topic created for it: the records sent in the first ``--first-seconds`` (5 s) after its ISR is full (the
   producer has its producer id before: see ``started_producer``), and
   the steady state (``--steady-seconds`` after ``--warmup-seconds``); then the median and range over runs, with
   the machine's load average. The same producer on the single broker gives the floor.
3. **CPU per replication round** (``rounds``): one 100 B record at a time (``produce`` then ``flush``, so every
   request is one replication round: the leader's append wakes both followers' fetches, they append and fetch
   again, the high watermark moves, the producer is answered), ``--round-requests`` of them, acks=all into a topic
   of 1 and of 64 partitions (replication factor 3; with 64, each follower's fetch session holds about 21 of the
   leader's partitions, all but one with nothing new), and acks=1 on the single broker as the floor. Printed: the
   brokers' CPU per request (user + system of every broker process, from ``/proc``) and the wall time per request.
4. **Failover**, ``--kills`` times: ``kill -9`` of the partition's leader, then one idempotent acks=all record
   every 20 ms until the first is acknowledged; the time from the kill to the metadata naming a new leader (the
   broker side: session expiry, election, UpdateMetadata) and to that acknowledgement (plus the client finding the
   new leader), with ``zookeeper.session.timeout.ms=6000`` (the session must expire before the controller moves
   leadership). The killed broker is restarted and back in the ISR before the next kill.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench_broker import cpu_seconds
from samsa.cluster.launcher import LocalCluster

PAYLOAD = b"x" * 100
THROUGHPUT_CONF: dict[str, Any] = {"linger.ms": 5, "batch.size": 1048576, "delivery.report.only.error": True}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = admin.list_topics(topic, timeout=10).topics[topic]
        if found.error is None and all(
            p.leader >= 0 and len(p.isrs) == rf for p in found.partitions.values()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{topic} has no full ISR")


def leader_of(bootstrap: str, topic: str) -> tuple[int, list[int]]:
    found = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    partition = found.partitions[0]
    return partition.leader, sorted(partition.isrs)


def produce_rate(bootstrap: str, topic: str, records: int, acks: str) -> float:
    errors: list[str] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": acks, **THROUGHPUT_CONF},
    )
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, PAYLOAD, on_delivery=lambda e, m: e and errors.append(str(e)))
                break
            except BufferError:
                producer.poll(0.001)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} records failed: {errors[:3]}")
    return records / elapsed


IDEMPOTENT_ACKS_ALL: dict[str, Any] = {"acks": "all", "enable.idempotence": True, "linger.ms": 0}


@dataclass(frozen=True, slots=True)
class Latencies:
    """acks=all latencies of one run: the first seconds after the topic was created, and the steady state."""

    first: list[float]  # ms, produce() to delivery report, records sent in the first ``first_s`` seconds
    steady: list[float]  # ms, records sent after the warm-up

    @staticmethod
    def percentile(samples: list[float], fraction: float) -> float:
        ordered = sorted(samples)
        return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)] if ordered else float("nan")


def started_producer(bootstrap: str, warm_topic: str) -> tuple[Producer, float]:
    """An idempotent acks=all producer that has its producer id (one record acknowledged on ``warm_topic``), and
    the seconds that first acknowledgement took: librdkafka asks for the id only once it knows a broker by its
    id, on a 500 ms timer, so a new idempotent producer's first records wait about half a second whatever the
    broker (the same against Kafka), which is not the topic's doing."""
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT_ACKS_ALL})
    start = time.perf_counter()
    producer.produce(warm_topic, b"warm")
    if producer.flush(30) != 0:
        raise RuntimeError("the warm-up record was not acknowledged")
    return producer, time.perf_counter() - start


def latency(
    producer: Producer, topic: str, rate: int, *, first_s: float, warmup_s: float, steady_s: float
) -> Latencies:
    """Produce ``rate`` records/s with ``producer`` (``linger.ms=0``), starting at once: the latencies of the
    records sent in the first ``first_s`` seconds, and of those sent after ``warmup_s`` for ``steady_s``
    seconds."""
    samples: list[tuple[float, float]] = []  # (sent, seconds from the start; latency in seconds)
    failed: list[str] = []
    interval = 1 / rate
    start = time.perf_counter()
    end = start + warmup_s + steady_s
    next_at = start
    while time.perf_counter() < end:
        sent = time.perf_counter()

        def report(error: Any, message: Any, sent: float = sent) -> None:
            if error is not None:
                failed.append(str(error))
            else:
                samples.append((sent - start, time.perf_counter() - sent))

        producer.produce(topic, PAYLOAD, on_delivery=report)
        next_at += interval
        producer.poll(0)
        while (pause := next_at - time.perf_counter()) > 0:  # poll returns early when it served a report
            producer.poll(pause)
    producer.flush(30)
    if failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[:3]}")
    return Latencies(
        [lat * 1000 for at, lat in samples if at < first_s],
        [lat * 1000 for at, lat in samples if at >= warmup_s],
    )


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def latency_runs(cluster: LocalCluster, args: argparse.Namespace) -> None:
    """``--latency-runs`` runs, each on a new topic (RF 3): the first seconds and the steady state, then the
    spread over runs."""
    firsts: list[tuple[float, float]] = []
    steadies: list[tuple[float, float]] = []
    create(cluster.bootstrap_servers, "lat-warm", 1, 3)
    for run in range(args.latency_runs):
        topic = f"lat-{run}"
        producer, first_ack = started_producer(cluster.bootstrap_servers, "lat-warm")
        print(
            f"latency run {run + 1}: a new idempotent producer's first acknowledgement {first_ack * 1000:.0f} ms"
        )
        create(cluster.bootstrap_servers, topic, 1, 3)
        found = latency(
            producer,
            topic,
            args.rate,
            first_s=args.first_seconds,
            warmup_s=args.warmup_seconds,
            steady_s=args.steady_seconds,
        )
        first = (Latencies.percentile(found.first, 0.5), Latencies.percentile(found.first, 0.99))
        steady = (Latencies.percentile(found.steady, 0.5), Latencies.percentile(found.steady, 0.99))
        firsts.append(first)
        steadies.append(steady)
        print(
            f"latency run {run + 1}: acks=all idempotent, RF 3, {args.rate} rec/s, linger.ms=0: "
            f"first {args.first_seconds:.0f} s after creating the topic p50 {first[0]:.2f} ms, "
            f"p99 {first[1]:.2f} ms ({len(found.first)} records); steady (after {args.warmup_seconds:.0f} s, "
            f"{args.steady_seconds:.0f} s) p50 {steady[0]:.2f} ms, p99 {steady[1]:.2f} ms "
            f"({len(found.steady)} records); {loadavg()}",
            flush=True,
        )
    for name, runs in ((f"first {args.first_seconds:.0f} s", firsts), ("steady state", steadies)):
        p50s = sorted(r[0] for r in runs)
        p99s = sorted(r[1] for r in runs)
        print(
            f"acks=all RF 3 latency, {name}, over {len(runs)} runs: p50 median {statistics.median(p50s):.2f} ms "
            f"({p50s[0]:.2f}-{p50s[-1]:.2f}), p99 median {statistics.median(p99s):.2f} ms "
            f"({p99s[0]:.2f}-{p99s[-1]:.2f})",
            flush=True,
        )


def single_latency(bootstrap: str, topic: str, rate: int) -> tuple[float, float]:
    producer, _ = started_producer(bootstrap, topic)
    found = latency(producer, topic, rate, first_s=0.0, warmup_s=2.0, steady_s=5.0)
    return Latencies.percentile(found.steady, 0.5), Latencies.percentile(found.steady, 0.99)


def failover(cluster: LocalCluster, topic: str) -> tuple[float, float]:
    """Seconds from ``kill -9`` of the leader to (the metadata naming a new leader, the first acks=all record
    acknowledged on the partition)."""
    bootstrap = cluster.bootstrap_servers
    leader, isr = leader_of(bootstrap, topic)
    survivors = ",".join(b.address for b in cluster.brokers if b.broker_id != leader)
    admin = AdminClient({"bootstrap.servers": survivors})
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 0}
    )
    producer.produce(topic, b"warm", partition=0)
    assert producer.flush(30) == 0
    acked: list[float] = []
    elected: list[float] = []
    killed = time.perf_counter()
    cluster.kill(leader)
    next_look = killed
    while not acked and time.perf_counter() - killed < 60:
        producer.produce(
            topic,
            PAYLOAD,
            partition=0,
            on_delivery=lambda e, m: e is None and acked.append(time.perf_counter()),
        )
        producer.poll(0.02)
        if not elected and time.perf_counter() >= next_look:
            next_look += 0.05
            found = admin.list_topics(topic, timeout=5).topics[topic].partitions[0].leader
            if found not in (-1, leader):
                elected.append(time.perf_counter())
    producer.flush(30)
    if not acked:
        raise RuntimeError("no acknowledgement within 60 s of the kill")
    cluster.start_broker(leader)
    deadline = time.monotonic() + 60
    while leader_of(bootstrap, topic)[1] != sorted(isr) and time.monotonic() < deadline:
        time.sleep(0.2)
    return (elected[0] if elected else acked[0]) - killed, acked[0] - killed


def single_broker(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "samsa.cli", "serve",
            "--override", f"log.dirs={work / 'single'}",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_port(port)
    return process, f"127.0.0.1:{port}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--rate", type=int, default=200, help="records/s for the latency phase")
    parser.add_argument("--latency-runs", type=int, default=3, help="latency runs, each on a new topic")
    parser.add_argument("--first-seconds", type=float, default=5.0, help="the first seconds after creation")
    parser.add_argument("--warmup-seconds", type=float, default=10.0, help="warm-up before the steady state")
    parser.add_argument("--steady-seconds", type=float, default=20.0, help="steady state measured")
    parser.add_argument(
        "--round-requests", type=int, default=2000, help="requests per replication-round phase"
    )
    parser.add_argument(
        "--phases",
        default="throughput,latency,rounds,failover",
        help="comma-separated phases to run (throughput, latency, rounds, failover)",
    )
    args = parser.parse_args()
    phases = set(args.phases.split(","))
    print(
        f"machine: {os.cpu_count()} cores; {loadavg()}; {args.records} x 100 B per throughput phase",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        work = Path(tmp)
        single, single_bootstrap = single_broker(work)
        cluster = LocalCluster(work / "cluster", session_timeout_ms=6000)
        cluster.up(3)
        try:
            create(single_bootstrap, "one", 1, 1)
            if "throughput" in phases:
                throughput(cluster, single_bootstrap, args)
            if "latency" in phases:
                latency_runs(cluster, args)
                p50, p99 = single_latency(single_bootstrap, "one", args.rate)
                print(
                    f"single broker (acks=all = acks=1 alone) latency at {args.rate} rec/s: p50 {p50:.2f} ms, "
                    f"p99 {p99:.2f} ms; {loadavg()}",
                    flush=True,
                )
            if "rounds" in phases:
                replication_rounds(cluster, single, single_bootstrap, args.round_requests)
            if "failover" in phases:
                failovers(cluster, args)
        finally:
            cluster.down()
            single.terminate()
            single.wait(30)


def throughput(cluster: LocalCluster, single_bootstrap: str, args: argparse.Namespace) -> None:
    create(cluster.bootstrap_servers, "three", 1, 3)
    ratios = []
    for round_ in range(args.rounds):
        alone = produce_rate(single_bootstrap, "one", args.records, "1")
        replicated = produce_rate(cluster.bootstrap_servers, "three", args.records, "all")
        ratios.append(replicated / alone)
        print(
            f"round {round_ + 1}: acks=1 single broker {alone:,.0f} rec/s; acks=all RF 3 on 3 brokers "
            f"{replicated:,.0f} rec/s; ratio {replicated / alone:.2f}",
            flush=True,
        )
    print(f"throughput ratio (acks=all RF3 / acks=1 single): median {statistics.median(ratios):.2f}")


def process_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` so far."""
    return sum(cpu_seconds(pid) for pid in pids)


def one_at_a_time(
    bootstrap: str, topic: str, partitions: int, acks: str, requests: int, pids: list[int]
) -> str:
    """``requests`` produce requests of one record each, the next sent once the last was answered: the brokers'
    CPU and the wall time per request."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0})
    for i in range(200):  # connections, metadata, the producer's and the brokers' first requests
        producer.produce(topic, PAYLOAD, partition=i % partitions)
        producer.flush(30)
    cpu, start = process_cpu_s(pids), time.perf_counter()
    for i in range(requests):
        producer.produce(topic, PAYLOAD, partition=i % partitions)
        if producer.flush(30):
            raise RuntimeError(f"a record into {topic} was not acknowledged in 30 s")
    wall = (time.perf_counter() - start) / requests
    used = (process_cpu_s(pids) - cpu) / requests
    return f"brokers' CPU {used * 1e6:,.0f} us per request, {wall * 1e3:.2f} ms each"


def replication_rounds(
    cluster: LocalCluster, single: subprocess.Popen[bytes], single_bootstrap: str, requests: int
) -> None:
    pids = [cluster.running_pid(b.broker_id) for b in cluster.brokers]
    print(
        f"acks=1, single broker (the floor): {one_at_a_time(single_bootstrap, 'one', 1, '1', requests, [single.pid])}"
    )
    for partitions in (1, 64):
        topic = f"rounds-{partitions}"
        create(cluster.bootstrap_servers, topic, partitions, 3)
        figure = one_at_a_time(cluster.bootstrap_servers, topic, partitions, "all", requests, pids)
        print(f"acks=all, RF 3 on 3 brokers, {partitions} partition(s): {figure}; {loadavg()}", flush=True)


def failovers(cluster: LocalCluster, args: argparse.Namespace) -> None:
    create(cluster.bootstrap_servers, "failover", 1, 3)
    times: list[tuple[float, float]] = []
    for kill in range(args.kills):
        elected, acked = failover(cluster, "failover")
        times.append((elected, acked))
        print(
            f"kill {kill + 1}: new leader in the metadata {elected:.2f} s, first acks=all "
            f"acknowledgement {acked:.2f} s after kill -9 of the leader",
            flush=True,
        )
    for name, values in (
        ("metadata", [t[0] for t in times]),
        ("acknowledged", [t[1] for t in times]),
    ):
        values.sort()
        if values:
            print(
                f"failover, {name}, over {len(values)} kills (zookeeper.session.timeout.ms=6000): "
                f"min {values[0]:.2f} s, median {statistics.median(values):.2f} s, max {values[-1]:.2f} s"
            )


if __name__ == "__main__":
    main()
