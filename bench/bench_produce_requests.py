"""The broker's CPU per produce request over a real socket, as librdkafka sends them with many partitions.

librdkafka sends one partition per produce request when it produces to many partitions (the 64-partition phase of
``bench_broker.py``), so that phase is bounded by what one request costs the broker. This measures that cost
steadily, without librdkafka's adaptive batching in the way: a ``samsa serve`` process, one topic of
``--partitions`` partitions, and one connection that pipelines ``--requests`` pre-encoded Produce v9 requests
(one partition each, round-robin, one batch of ``--records`` x 100 B, acks=1), at most ``--window`` in flight,
answers read by a second thread. Printed: the broker's CPU (user + system, from ``/proc``) per request, the
kernel's part, and the wall time per request.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_produce_requests.py`` (about 5 s). To compare two trees, run it
with ``PYTHONPATH`` pointing at each, in turns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

from bench_broker import cpu_times, start_samsa
from samsa.protocol import RequestHeader, encode_request
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch

TOPIC = "requests"


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(30)


def frames(partitions: int, records: int) -> list[bytes]:
    batch = build_batch([Record(i, 1_700_000_000_000, None, b"v" * 100) for i in range(records)])
    return [
        encode_request(
            RequestHeader(0, 9, i, "bench"),
            ProduceRequest(None, 1, 30_000, [TopicProduceData(TOPIC, [PartitionProduceData(i, batch)])]),
        )
        for i in range(partitions)
    ]


def pipeline(bootstrap: str, requests: list[bytes], count: int, window: int) -> None:
    """Send ``count`` of ``requests`` (round-robin) on one connection, at most ``window`` unanswered."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    room = threading.Semaphore(window)

    def read_answers() -> None:
        stream = sock.makefile("rb")
        for _ in range(count):
            size = struct.unpack(">i", stream.read(4))[0]
            stream.read(size)
            room.release()

    reader = threading.Thread(target=read_answers)
    reader.start()
    for i in range(count):
        room.acquire()
        sock.sendall(requests[i % len(requests)])
    reader.join()
    sock.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=64)
    ap.add_argument("--records", type=int, default=100, help="records of 100 B per request's batch")
    ap.add_argument("--window", type=int, default=32, help="requests in flight at most")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-requests-", dir="/var/tmp"))
    broker = start_samsa(work, None)
    try:
        create_topic(broker.bootstrap, args.partitions)
        requests = frames(args.partitions, args.records)
        pipeline(broker.bootstrap, requests, 2 * args.partitions, args.window)  # first appends, untimed
        cpu0, kernel0 = cpu_times(broker.process.pid)
        started = time.perf_counter()
        pipeline(broker.bootstrap, requests, args.requests, args.window)
        wall = time.perf_counter() - started
        cpu1, kernel1 = cpu_times(broker.process.pid)
        n = args.requests
        figures = {
            "requests": n,
            "broker_cpu_us_per_request": (cpu1 - cpu0) / n * 1e6,
            "broker_kernel_us_per_request": (kernel1 - kernel0) / n * 1e6,
            "wall_us_per_request": wall / n * 1e6,
            "records_per_s": n * args.records / wall,
        }
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2))
        print(
            f"{n:,} produce requests ({args.partitions} partitions, {args.records} x 100 B each, window "
            f"{args.window}): broker CPU {(cpu1 - cpu0) / n * 1e6:.1f} us/request (kernel "
            f"{(kernel1 - kernel0) / n * 1e6:.1f}), wall {wall / n * 1e6:.1f} us/request, "
            f"{n * args.records / wall:,.0f} records/s; load average {os.getloadavg()[0]:.2f}"
        )
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
