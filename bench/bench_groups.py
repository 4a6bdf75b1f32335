"""Consumer groups on Samsa with confluent-kafka: group read throughput, the cost of committing, rebalance time.

Run: ``.venv/bin/python bench/bench_groups.py`` (``--records N``, default 3,000,000 x 100 B over 6 partitions, about 45 s;
``--json FILE`` keeps the figures). The broker runs as ``samsa serve`` in its own process with Kafka's default
``group.initial.rebalance.delay.ms`` (3000 ms), so three consumers started together join one generation; every
consumer runs in a process of its own, over loopback.

Phases:

1. read throughput: 3 consumers in one group (``enable.auto.commit=false``) read the N records, timed from the
   first record any of them receives to the last; once with no commits, once committing synchronously after
   every ``consume()`` batch (``commit(asynchronous=False)``), which gives the cost of a synchronous commit;
2. rebalance time: with 3 members consuming a steady stream (about 3000 records/s), a fourth member subscribes;
   timed from its ``subscribe()`` to (a) the last member's ``on_assign`` and (b) the moment every one of the four
   has received a record under the new assignment. Client defaults (``heartbeat.interval.ms=3000``) apply: the
   existing members learn of the rebalance from a heartbeat, as they do with Kafka.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TOPIC = "groupbench"
STREAM_TOPIC = "groupstream"
PARTITIONS = 6
PAYLOAD = os.urandom(100)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    args = [sys.executable, "-m", "samsa.cli", "serve"]
    for key, value in {
        "node.id": "1",
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(data_dir),
        "num.partitions": str(PARTITIONS),
    }.items():
        args += ["--override", f"{key}={value}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "started" in line:
            threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
            return proc, f"127.0.0.1:{port}"
    raise RuntimeError("the broker did not start")


def produce(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1048576, "acks": 1})
    for i in range(count):
        while True:
            try:
                producer.produce(topic, PAYLOAD, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.005)
    producer.flush(60)


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(TOPIC, PARTITIONS), NewTopic(STREAM_TOPIC, PARTITIONS)]
    ).values():
        future.result(30)


# --- worker processes ----------------------------------------------------------------------------------------


def emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def worker(bootstrap: str, topic: str, group: str, commit: bool) -> None:
    """Consume until SIGTERM; report first/last record times, counts, commits and assignment events."""
    from confluent_kafka import Consumer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
        }
    )
    fresh_assignment = [False]

    def on_assign(c: Any, partitions: list[Any]) -> None:
        emit({"assigned": time.time(), "partitions": [p.partition for p in partitions]})
        fresh_assignment[0] = True

    emit({"subscribe": time.time()})
    consumer.subscribe([topic], on_assign=on_assign)
    count, commits, commit_s = 0, 0, 0.0
    first = last = 0.0
    last_report = time.monotonic()
    while not stop.is_set():
        messages = [m for m in consumer.consume(num_messages=1000, timeout=0.1) if m.error() is None]
        if time.monotonic() - last_report > 0.2:
            emit({"count": count})
            last_report = time.monotonic()
        if not messages:
            continue
        now = time.time()
        if fresh_assignment[0]:
            fresh_assignment[0] = False
            emit({"first_after_assign": now})
        first = first or now
        last = now
        count += len(messages)
        if commit:
            t0 = time.perf_counter()
            try:
                consumer.commit(asynchronous=False)
                commits += 1
            except Exception:
                pass
            commit_s += time.perf_counter() - t0
    emit(
        {"done": True, "count": count, "first": first, "last": last, "commits": commits, "commit_s": commit_s}
    )
    consumer.close()


class Worker:
    def __init__(self, bootstrap: str, topic: str, group: str, commit: bool) -> None:
        self.events: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", bootstrap, topic, group, "1" if commit else "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def latest(self, key: str) -> Any:
        for event in reversed(self.events):
            if key in event:
                return event[key]
        return None

    def finish(self) -> dict[str, Any]:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        time.sleep(0.1)
        return next(e for e in reversed(self.events) if "done" in e)


# --- phases --------------------------------------------------------------------------------------------------


def read_phase(bootstrap: str, records: int, commit: bool, group: str) -> dict[str, Any]:
    workers = [Worker(bootstrap, TOPIC, group, commit) for _ in range(3)]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if sum(w.latest("count") or 0 for w in workers) >= records:
            break
        time.sleep(0.05)
    results = [w.finish() for w in workers]
    total = sum(r["count"] for r in results)
    span = max(r["last"] for r in results) - min(r["first"] for r in results if r["first"])
    commits = sum(r["commits"] for r in results)
    commit_s = sum(r["commit_s"] for r in results)
    return {
        "records": total,
        "seconds": round(span, 3),
        "records_per_s": round(total / span),
        "per_member": [r["count"] for r in results],
        "commits": commits,
        "mean_commit_ms": round(1000 * commit_s / commits, 2) if commits else None,
    }


def rebalance_phase(bootstrap: str) -> dict[str, Any]:
    stop = threading.Event()

    def stream() -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            for _ in range(30):
                producer.produce(STREAM_TOPIC, PAYLOAD, partition=i % PARTITIONS)
                i += 1
            producer.poll(0)
            time.sleep(0.01)
        producer.flush(10)

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    workers = [Worker(bootstrap, STREAM_TOPIC, "rebalance", False) for _ in range(3)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(w.latest("first_after_assign") for w in workers):
        time.sleep(0.05)
    time.sleep(2.0)
    newcomer = Worker(bootstrap, STREAM_TOPIC, "rebalance", False)
    while newcomer.latest("subscribe") is None:
        time.sleep(0.01)
    joined_at = newcomer.latest("subscribe")
    everyone = [*workers, newcomer]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assigned = [w.latest("assigned") for w in everyone]
        consuming = [w.latest("first_after_assign") for w in everyone]
        if all(a and a > joined_at for a in assigned) and all(c and c > joined_at for c in consuming):
            break
        time.sleep(0.05)
    assigned = [w.latest("assigned") for w in everyone]
    consuming = [w.latest("first_after_assign") for w in everyone]
    for w in everyone:
        w.finish()
    stop.set()
    streamer.join(15)
    return {
        "to_last_assignment_s": round(max(assigned) - joined_at, 3),
        "to_all_consuming_s": round(max(consuming) - joined_at, 3),
        "partitions": [w.latest("partitions") for w in everyone],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=3_000_000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        bootstrap, topic, group, commit = args.worker
        worker(bootstrap, topic, group, commit == "1")
        return
    with tempfile.TemporaryDirectory(prefix="samsa-bench-groups-", dir="/var/tmp") as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            create_topics(bootstrap)
            t0 = time.perf_counter()
            produce(bootstrap, TOPIC, args.records)
            print(f"produced {args.records:,} x 100 B in {time.perf_counter() - t0:.1f} s", flush=True)
            figures: dict[str, Any] = {"records": args.records}
            figures["read_no_commit"] = read_phase(bootstrap, args.records, False, "read-a")
            print("3 consumers, no commits:", figures["read_no_commit"], flush=True)
            figures["read_sync_commit"] = read_phase(bootstrap, args.records, True, "read-b")
            print("3 consumers, sync commit per batch:", figures["read_sync_commit"], flush=True)
            figures["rebalance"] = rebalance_phase(bootstrap)
            print("a 4th member joins:", figures["rebalance"], flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
