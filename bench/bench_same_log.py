"""One log, two brokers: is a consume phase beside Kafka decided by the broker or by the client? (issue 32, item 6)

``bench_vs_kafka.py`` lets each client produce its own records, so the two brokers' logs differ in batch sizes
(the producer batches by how fast the broker answers), and the consume phases that follow read different logs.
This puts the same bytes in both: one ``samsa serve`` and one Apache Kafka 4.4 node (KRaft, as
``bench_vs_kafka.py`` starts them, one at a time), a one-partition topic, and ``--records`` x 100 B written as
Produce v7 requests of one pre-built batch of ``--batch`` records each (acks=1, identical bytes but for the base
offset the broker stamps). Then, against each:

- **raw fetches**: one connection walks the partition with Fetch v11 requests as librdkafka sends them
  (``max.partition.fetch.bytes`` 1 MiB, ``fetch.max.bytes`` 50 MiB, read_committed), each answer read whole before the next request. Printed:
  the median and 90th percentile time per fetch, and whether the first answer is byte-identical on both brokers;
- **rdkafka_performance -C** (``--rounds`` times, a new group each): its own rate (from its first record), and the
  CPU seconds of the client process and of the broker in that round.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_same_log.py --rdkafka-performance /tmp/rdkafka_performance``
(about a minute; Kafka's jars from ``make kafka-jars``, ``rdkafka_performance`` from
``bench/build_rdkafka_performance.sh``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import socket
import statistics
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench_broker import cpu_seconds
from bench_vs_kafka import (
    LIBRDKAFKA_CONSUMER,
    Deployment,
    create_topic,
    rk_consume,
    start_kafka_single,
    start_samsa_single,
    wait_brokers,
)
from samsa.protocol import RequestHeader, encode_request
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch

TOPIC = "same-log"
PARTITION_MAX_BYTES = 1 << 20  # librdkafka's and Kafka's max.partition.fetch.bytes
FETCH_MAX_BYTES = 50 << 20  # fetch.max.bytes
CREATE_TIME_MS = 1_700_000_000_000


@dataclass
class Figures:
    broker: str
    fetch_ms: list[float] = field(default_factory=list)
    first_answer: str = ""
    rates: list[float] = field(default_factory=list)
    client_cpu: list[float] = field(default_factory=list)
    broker_cpu: list[float] = field(default_factory=list)


def _answer(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    body = sock.recv(size, socket.MSG_WAITALL)
    if len(body) != size:
        raise RuntimeError(f"answer cut: {len(body)} of {size} bytes")
    return body


def write_log(bootstrap: str, records: int, per_batch: int) -> int:
    """``records`` rounded up to whole batches, written as one pre-built batch per Produce request; the count."""
    batch = build_batch([Record(i, CREATE_TIME_MS, None, b"v" * 100) for i in range(per_batch)])
    host, port = bootstrap.rsplit(":", 1)
    written = 0
    with socket.create_connection((host, int(port))) as sock:
        while written < records:
            request = ProduceRequest(
                None, 1, 30_000, [TopicProduceData(TOPIC, [PartitionProduceData(0, batch)])]
            )
            sock.sendall(encode_request(RequestHeader(0, 7, written // per_batch, "same-log"), request))
            _answer(sock)
            written += per_batch
    return written


def raw_fetches(bootstrap: str, records: int, per_batch: int, figures: Figures) -> None:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for offset in range(0, records, per_batch):
            request = FetchRequest(
                max_wait_ms=500,
                min_bytes=1,
                max_bytes=FETCH_MAX_BYTES,
                isolation_level=1,
                session_epoch=-1,
                topics=[
                    FetchTopic(TOPIC, partitions=[FetchPartition(0, -1, offset, -1, -1, PARTITION_MAX_BYTES)])
                ],
            )
            started = time.perf_counter()
            sock.sendall(encode_request(RequestHeader(1, 11, offset, "same-log"), request))
            body = _answer(sock)
            figures.fetch_ms.append((time.perf_counter() - started) * 1e3)
            if offset == 0:
                # past the correlation id and throttle time (v11: 8 bytes), which differ by nothing but may
                figures.first_answer = hashlib.sha256(body[8:]).hexdigest()[:16]


def measure(name: str, deployment: Deployment, args: argparse.Namespace) -> Figures:
    figures = Figures(name)
    try:
        wait_brokers(deployment, 1)
        bootstrap = deployment.bootstrap
        create_topic(bootstrap, TOPIC, 1, 1)
        records = write_log(bootstrap, args.records, args.batch)
        raw_fetches(bootstrap, records, args.batch, figures)
        pid = deployment.pids[0]
        for _ in range(args.rounds):
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            broker = cpu_seconds(pid)
            result = rk_consume(args.rdkafka_performance, bootstrap, TOPIC, records)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            figures.rates.append(records / result["seconds"])
            figures.client_cpu.append(after.ru_utime - children.ru_utime + after.ru_stime - children.ru_stime)
            figures.broker_cpu.append(cpu_seconds(pid) - broker)
    finally:
        deployment.stop()
    return figures


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument(
        "--batch", type=int, default=9082, help="records per batch (rdkafka_performance's 1 MB batch)"
    )
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rdkafka-performance", type=Path, default=os.environ.get("RDKAFKA_PERFORMANCE"))
    args = ap.parse_args()
    if args.rdkafka_performance is None or not args.rdkafka_performance.exists():
        ap.error("--rdkafka-performance PATH is required (bench/build_rdkafka_performance.sh)")
    results = []
    for name, start in (
        ("kafka", start_kafka_single),
        ("samsa", lambda work: start_samsa_single(work, None)),
    ):
        with tempfile.TemporaryDirectory(prefix=f"same-log-{name}-", dir="/var/tmp") as work:
            results.append(measure(name, start(Path(work)), args))
    print(
        f"{args.records:,} x 100 B in batches of {args.batch} records; rdkafka_performance -C with "
        f"{LIBRDKAFKA_CONSUMER}; load average {os.getloadavg()[0]:.2f}"
    )
    for f in results:
        fetch = sorted(f.fetch_ms)
        print(
            f"{f.broker:6} raw fetch p50 {_median(fetch):.2f} ms p90 {fetch[int(len(fetch) * 0.9)]:.2f} ms "
            f"(first answer {f.first_answer}); rdkafka_performance "
            f"{' '.join(f'{r / 1e3:.0f}k' for r in f.rates)} (median {_median(f.rates) / 1e3:.0f}k records/s), "
            f"client CPU median {_median(f.client_cpu):.2f} s, broker CPU median {_median(f.broker_cpu):.2f} s"
        )
    kafka, samsa = results
    print(
        f"Samsa / Kafka: rate {_median(samsa.rates) / _median(kafka.rates):.2f}, raw fetch time "
        f"{_median(samsa.fetch_ms) / _median(kafka.fetch_ms):.2f}, client CPU "
        f"{_median(samsa.client_cpu) / _median(kafka.client_cpu):.2f}; first answers "
        f"{'identical' if samsa.first_answer == kafka.first_answer else 'DIFFER'}"
    )


if __name__ == "__main__":
    main()
