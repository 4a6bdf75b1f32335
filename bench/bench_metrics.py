"""Produce and consume throughput with the broker's Prometheus metrics on and off, in one run.

Two ``samsa serve`` processes on their own log dirs, one with ``metrics.prometheus.port`` (scraped once a second
by this process, as Prometheus would) and one without; confluent-kafka clients produce N x 100 B to one topic of
8 partitions (``linger.ms=5``, acks=1) and then read them all back, against each broker in turn, several rounds.
Prints each round's records/s and the median ratio on/off (the goal: >= 0.97).

    .venv/bin/python bench/bench_metrics.py [--records 300000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(data: Path, metrics_port: int | None) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [sys.executable, "-m", "samsa.cli", "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={data}"]  # fmt: skip
    if metrics_port is not None:
        args += ["--override", f"metrics.prometheus.port={metrics_port}"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    bootstrap = f"127.0.0.1:{port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("bench", PARTITIONS, 1)])["bench"].result(30)
    return proc, bootstrap


def produce(bootstrap: str, records: int, topic: str = "bench", **client: str) -> float:
    """records/s of confluent-kafka producing ``records`` x 100 B round-robin over the topic's partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, **client})
    value = b"v" * 100
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return records / (time.perf_counter() - start)


def consume(bootstrap: str, records: int, round_no: int, topic: str = "bench", **client: str) -> float:
    """records/s of a confluent-kafka consumer reading ``records`` from the start of the topic's partitions."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{round_no}", **client})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got, start = 0, time.perf_counter()
    while got < records:
        got += sum(1 for m in consumer.consume(10_000, 1.0) if not m.error())
    elapsed = time.perf_counter() - start
    consumer.close()
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
    metrics_port = free_port()
    off, off_bootstrap = start(work / "off", None)
    on, on_bootstrap = start(work / "on", metrics_port)
    stop = threading.Event()

    def scrape() -> None:
        while not stop.wait(1.0):
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as answer:
                answer.read()

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    ratios: dict[str, list[float]] = {"produce": [], "consume": []}
    try:
        for round_no in range(args.rounds):
            rates = {}
            for name, bootstrap in (("off", off_bootstrap), ("on", on_bootstrap))[
                :: 1 if round_no % 2 else -1
            ]:
                rates[name] = (produce(bootstrap, args.records), consume(bootstrap, args.records, round_no))
            for index, phase in enumerate(("produce", "consume")):
                ratios[phase].append(rates["on"][index] / rates["off"][index])
                print(
                    f"round {round_no + 1} {phase:8s} off {rates['off'][index]:>10,.0f} rec/s   "
                    f"on {rates['on'][index]:>10,.0f} rec/s   on/off {ratios[phase][-1]:.3f}"
                )
    finally:
        stop.set()
        for proc in (off, on):
            proc.terminate()
            proc.wait(30)
    for phase, values in ratios.items():
        print(
            f"{phase}: median on/off {statistics.median(values):.3f} over {len(values)} rounds (goal >= 0.97)"
        )


if __name__ == "__main__":
    main()
