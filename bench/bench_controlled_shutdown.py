"""Controlled shutdown: how fast a stopping broker's leaderships move, and what an acks=all producer sees meanwhile.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_controlled_shutdown.py`` (about 2 minutes; ``--rounds`` and
``--rate`` scale it). ZooKeeper and three ``samsa serve`` processes on loopback, on this one machine; the clients
run in this process.

A topic of 100 partitions with replication factor 3, all led by broker 1 (replicas alternate [1,2,3] and
[1,3,2]), ``min.insync.replicas=2``. An idempotent acks=all producer (``linger.ms=0``) writes ``--rate``
records/s spread over every partition throughout. Each round sends SIGTERM to broker 1 and measures:

- **leaderships moved**: from SIGTERM until the broker logs that the controller answered its ControlledShutdown
  with nothing left to lead (the new leaders are then written in ZooKeeper and LeaderAndIsr is on its way; log
  timestamps have millisecond resolution, same clock), and until the metadata of another broker shows no
  partition led by it (polled every 50 ms: each poll is a Metadata request of 100 partitions the brokers pay
  for); and the controller's own time for the request (its log line);
- **stopped**: from SIGTERM until the process has exited;
- the producer's **latency** (``produce()`` to acknowledgement, as librdkafka times it: ``Message.latency()``) p50 / p99 / max of the records sent from SIGTERM
  until 1 s after the leaderships moved, against the same figures in the 3 s before; and its delivery errors.

The broker is then restarted, waits to be back in every ISR, and a preferred election (ElectLeaders) gives its
leaderships back before the next round.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.client import KafkaClient
from samsa.cluster.launcher import LocalCluster

TOPIC = "moving"
PARTITIONS = 100
BROKER = 1
PAYLOAD = b"x" * 100


class Load:
    """An idempotent acks=all producer at a fixed rate on a thread; every record's send and delivery times."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
                "message.timeout.ms": 120_000,
            }
        )
        self.samples: list[tuple[float, float]] = []  # (sent, latency s)
        self.errors: list[str] = []
        self._rate = rate
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _report(self, sent: float, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:  # librdkafka's own produce-to-acknowledgement time: a late poll() on this thread does not count
            latency = message.latency()
            self.samples.append((sent, latency if latency is not None else time.perf_counter() - sent))

    def _run(self) -> None:
        interval, next_at, n = 1 / self._rate, time.perf_counter(), 0
        while not self._stop.is_set():
            sent = time.perf_counter()
            self.producer.produce(
                TOPIC,
                PAYLOAD,
                partition=n % PARTITIONS,
                on_delivery=lambda e, m, s=sent: self._report(s, e, m),
            )
            n += 1
            next_at += interval
            self.producer.poll(max(0.0, next_at - time.perf_counter()))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(60)

    def window(self, start: float, end: float) -> list[float]:
        return sorted(lat * 1000 for sent, lat in list(self.samples) if start <= sent < end)


def leaders(admin: AdminClient) -> dict[int, tuple[int, int]]:
    """partition -> (leader, ISR size)."""
    found = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p.id: (p.leader, len(p.isrs)) for p in found.partitions.values()}


def wait(what: str, check: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def percentile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def preferred_election(bootstrap: str) -> None:
    async def run() -> None:
        async with KafkaClient(bootstrap) as client:
            await client.elect_leaders(0, None, timeout_ms=30_000)

    asyncio.run(run())


def controller_ms(cluster: LocalCluster, broker: int) -> float:
    pattern = re.compile(rf"controlled shutdown of broker {broker}: .* in (\d+) ms")
    found: list[float] = []
    for b in (1, 2, 3):
        found += [float(m) for m in pattern.findall(cluster.output(b, 2_000_000))]
    return found[-1] if found else float("nan")


def answered_at(cluster: LocalCluster, broker: int, after: float) -> float:
    """When ``broker`` last logged a successful controlled shutdown (epoch seconds), if after ``after``."""
    stamps = re.findall(
        rf"\[([0-9-]+ [0-9:]+,[0-9]+)\] INFO samsa.broker.zk_broker: broker {broker}: controlled shutdown succeeded",
        cluster.output(broker, 2_000_000),
    )
    if not stamps:
        return float("nan")
    at = datetime.datetime.strptime(stamps[-1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return at if at >= after - 0.001 else float("nan")


def one_round(cluster: LocalCluster, admin: AdminClient, load: Load, broker: int) -> dict[str, Any]:
    led = sum(1 for leader, _ in leaders(admin).values() if leader == broker)
    others = [b for b in (1, 2, 3) if b != broker]
    watcher = AdminClient({"bootstrap.servers": ",".join(cluster.broker(b).address for b in others)})
    errors_before = len(load.errors)
    term, term_wall = time.perf_counter(), time.time()
    cluster.signal(broker, signal.SIGTERM)
    moved = float("nan")
    while time.perf_counter() - term < 30:
        if all(leader != broker for leader, _ in leaders(watcher).values()):
            moved = time.perf_counter() - term
            break
        time.sleep(0.05)
    cluster.stop_broker(broker)  # already stopping: waits for the exit
    stopped = time.perf_counter() - term
    answered = answered_at(cluster, broker, term_wall) - term_wall
    time.sleep(1.0)
    cluster.start_broker(broker)
    wait("every ISR full again", lambda: all(size == 3 for _, size in leaders(admin).values()))
    preferred_election(cluster.bootstrap_servers)
    wait(
        "balanced leaders", lambda: sum(1 for leader, _ in leaders(admin).values() if leader == broker) == led
    )
    return {
        "broker": broker,
        "led": led,
        "moved_ms": moved * 1000,
        "answered_ms": answered * 1000,
        "controller_ms": controller_ms(cluster, broker),
        "stopped_ms": stopped * 1000,
        "term": term,
        "moved_s": moved,
        "errors": len(load.errors) - errors_before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="SIGTERMs of broker 1")
    parser.add_argument("--rate", type=int, default=50, help="producer records/s")
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} cores; {PARTITIONS} partitions RF 3 led by broker {BROKER}; {args.rate} rec/s"
    )
    with tempfile.TemporaryDirectory(prefix="bench-cs-") as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster",
            broker_config={"auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "10000"},
        )
        cluster.up(3)
        load: Load | None = None
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            assignment = [[1, 2, 3] if p % 2 == 0 else [1, 3, 2] for p in range(PARTITIONS)]
            topic = NewTopic(
                TOPIC,
                num_partitions=PARTITIONS,
                replication_factor=-1,
                replica_assignment=assignment,
                config={"min.insync.replicas": "2"},
            )
            admin.create_topics([topic])[TOPIC].result(60)
            wait("full ISRs", lambda: (s := leaders(admin)) and all(v == (BROKER, 3) for v in s.values()))
            load = Load(cluster.bootstrap_servers, args.rate)
            time.sleep(15)  # past the start-up transient (the first seconds of load are slow)
            results = []
            for _ in range(args.rounds):
                results.append(one_round(cluster, admin, load, BROKER))
            load.stop()  # every record delivered: the slow ones count too
            for result in results:
                term = result["term"]
                before = result["before"] = load.window(term - 3.0, term)
                during = result["during"] = load.window(term, term + result["moved_s"] + 1.0)
                print(
                    f"broker {result['broker']} (led {result['led']}): leaderships moved in "
                    f"{result['answered_ms']:.0f} ms (controller {result['controller_ms']:.0f} ms; metadata "
                    f"{result['moved_ms']:.0f} ms), stopped in "
                    f"{result['stopped_ms']:.0f} ms; producer latency before p50 {percentile(before, 0.5):.1f} "
                    f"p99 {percentile(before, 0.99):.1f} ms, during p50 {percentile(during, 0.5):.1f} "
                    f"p99 {percentile(during, 0.99):.1f} max {max(during, default=float('nan')):.1f} ms "
                    f"({len(during)} records); delivery errors {result['errors']}",
                    flush=True,
                )
            print(
                f"median over {len(results)}: moved {statistics.median(r['answered_ms'] for r in results):.0f} ms "
                f"(metadata {statistics.median(r['moved_ms'] for r in results):.0f} ms), "
                f"stopped {statistics.median(r['stopped_ms'] for r in results):.0f} ms, producer p99 during "
                f"{statistics.median(percentile(r['during'], 0.99) for r in results):.1f} ms; delivery errors "
                f"{len(load.errors)} of {len(load.samples) + len(load.errors)} records"
            )
        finally:
            if load is not None:
                load.stop()
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
