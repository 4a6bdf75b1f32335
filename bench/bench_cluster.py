"""A replicated cluster against the single broker, with the same confluent-kafka client, in one run.

Run: ``.venv/bin/python bench/bench_cluster.py`` (about 3 minutes; ``--records``, ``--kills`` and ``--rounds``
scale it). Every broker is its own ``samsa serve`` process on loopback, all on this one machine; the clients run
in this process.

Phases:

1. **Throughput, as a ratio.** N x 100 B into one partition (``linger.ms=5``, ``batch.size=1048576``): acks=1 on a
   single broker (no ZooKeeper, the embedded default's code path) and acks=all with replication factor 3 on a
   3-broker cluster over a real ZooKeeper, alternated for ``--rounds`` rounds. Kafka's own 2014 figure for this
   pair on three machines was 421,823 / 821,557 records/s = 0.51.
2. **acks=all latency** at a fixed, moderate rate (``linger.ms=0``): ``produce()`` to delivery report, p50/p99.
3. **Failover**, ``--kills`` times: ``kill -9`` of the partition's leader, then one idempotent acks=all record
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
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.cluster.local import LocalCluster

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


def latency(bootstrap: str, topic: str, rate: int, seconds: float) -> tuple[float, float]:
    samples: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    interval = 1 / rate
    end = time.perf_counter() + seconds
    next_at = time.perf_counter()
    while time.perf_counter() < end:
        sent = time.perf_counter()
        producer.produce(
            topic, PAYLOAD, on_delivery=lambda e, m, s=sent: e or samples.append(time.perf_counter() - s)
        )
        producer.poll(0)
        next_at += interval
        pause = next_at - time.perf_counter()
        if pause > 0:
            producer.poll(pause)
    producer.flush(30)
    samples.sort()
    return samples[len(samples) // 2] * 1000, samples[int(len(samples) * 0.99)] * 1000


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
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; {args.records} x 100 B per throughput phase")
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        work = Path(tmp)
        single, single_bootstrap = single_broker(work)
        cluster = LocalCluster(work / "cluster", session_timeout_ms=6000)
        cluster.up(3)
        try:
            create(single_bootstrap, "one", 1, 1)
            create(cluster.bootstrap_servers, "three", 1, 3)
            ratios = []
            for round_ in range(args.rounds):
                alone = produce_rate(single_bootstrap, "one", args.records, "1")
                replicated = produce_rate(cluster.bootstrap_servers, "three", args.records, "all")
                ratios.append(replicated / alone)
                print(
                    f"round {round_ + 1}: acks=1 single broker {alone:,.0f} rec/s; acks=all RF 3 on 3 brokers "
                    f"{replicated:,.0f} rec/s; ratio {replicated / alone:.2f}"
                )
            print(f"throughput ratio (acks=all RF3 / acks=1 single): median {statistics.median(ratios):.2f}")
            create(cluster.bootstrap_servers, "lat", 1, 3)
            p50, p99 = latency(cluster.bootstrap_servers, "lat", args.rate, 5.0)
            print(f"acks=all RF 3 latency at {args.rate} rec/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
            p50, p99 = latency(single_bootstrap, "one", args.rate, 5.0)
            print(
                f"single broker (acks=all = acks=1 alone) latency at {args.rate} rec/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
            )
            create(cluster.bootstrap_servers, "failover", 1, 3)
            times: list[tuple[float, float]] = []
            for kill in range(args.kills):
                elected, acked = failover(cluster, "failover")
                times.append((elected, acked))
                print(
                    f"kill {kill + 1}: new leader in the metadata {elected:.2f} s, first acks=all "
                    f"acknowledgement {acked:.2f} s after kill -9 of the leader"
                )
            if times:
                for name, values in (
                    ("metadata", [t[0] for t in times]),
                    ("acknowledged", [t[1] for t in times]),
                ):
                    values.sort()
                    print(
                        f"failover, {name}, over {len(values)} kills (zookeeper.session.timeout.ms=6000): "
                        f"min {values[0]:.2f} s, median {statistics.median(values):.2f} s, max {values[-1]:.2f} s"
                    )
        finally:
            cluster.down()
            single.terminate()
            single.wait(30)


if __name__ == "__main__":
    main()
