"""Transactions: transactional vs idempotent produce, read_committed vs read_uncommitted consume (one broker, one
run), and commit latency on a 3-broker cluster.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_transactions.py`` (about two minutes; ``--messages N``
(200,000), ``--size B`` (100), ``--txn-records R`` (1,000 per transaction), ``--rounds K`` (3, the best of each is
kept), ``--commits C`` (200, for the latency), ``--no-cluster``, ``--json FILE``).

Throughput: one broker (``samsa.Broker`` in a child process, so the client's librdkafka threads and the broker do
not share a GIL), confluent-kafka with linger.ms=5. Idempotent: ``enable.idempotence=true``, ``--messages`` values
of ``--size`` bytes to a one-partition topic. Transactional: the same producer settings plus a
``transactional.id``, the same messages in transactions of ``--txn-records`` (begin, produce, commit), to a topic
of its own. Both topics are then read back by consumers with read_uncommitted and read_committed (the
transactional topic, which has a COMMIT marker per transaction to skip). The two kinds alternate, ``--rounds``
times; each figure is the best round, and the ratios are transactional / idempotent and read_committed /
read_uncommitted.

Commit latency: a 3-broker cluster on a real ZooKeeper (``samsa cluster``'s ``LocalCluster``), a topic of 3
partitions with 3 replicas and min.insync.replicas=2; ``--commits`` transactions of 10 records over all three
partitions (so every commit sends markers to the three leaders, two of them on other brokers than the
coordinator); the time of ``commit_transaction`` (EndTxn: the prepare written to ``__transaction_state`` and
replicated), p50 and p99.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

CHILD = """
import json, sys, samsa
with samsa.Broker(config=json.loads(sys.argv[1])) as broker:
    print(json.dumps(broker.core.bound_addresses[0][2]), flush=True)
    sys.stdin.read()
"""


def produce(bootstrap: str, topic: str, count: int, size: int, txn_records: int | None) -> float:
    from confluent_kafka import Producer

    conf: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "enable.idempotence": True,
        "queue.buffering.max.messages": 1_000_000,
    }
    if txn_records:
        conf["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    if txn_records:
        producer.init_transactions(30)
    value = b"x" * size
    start = time.perf_counter()
    sent = 0
    while sent < count:
        chunk = min(txn_records or count, count - sent)
        if txn_records:
            producer.begin_transaction()
        for _ in range(chunk):
            while True:
                try:
                    producer.produce(topic, value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.01)
        if txn_records:
            producer.commit_transaction(60)
        sent += chunk
    producer.flush(120)
    return count / (time.perf_counter() - start)


def consume(bootstrap: str, topic: str, count: int, isolation: str) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, start = 0, None
    deadline = time.monotonic() + 120
    while got < count and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error() is None:
                start = start or time.perf_counter()
                got += 1
    elapsed = time.perf_counter() - (start or time.perf_counter())
    consumer.close()
    assert got == count, (topic, isolation, got, count)
    return got / elapsed if elapsed else 0.0


def single_broker(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="samsa-bench-txn-") as tmp:
        config = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": tmp}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, json.dumps(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        try:
            assert child.stdout is not None
            bootstrap = f"127.0.0.1:{json.loads(child.stdout.readline())}"
            best = dict.fromkeys(("idempotent", "transactional", "read_uncommitted", "read_committed"), 0.0)
            produce(bootstrap, "warm-up", args.messages // 4, args.size, args.txn_records)
            for round_ in range(args.rounds):
                kinds = (
                    ("idempotent", "transactional") if round_ % 2 == 0 else ("transactional", "idempotent")
                )
                topics = {}
                for kind in kinds:
                    topics[kind] = f"bench-{kind}-{uuid.uuid4().hex[:6]}"
                    txn = args.txn_records if kind == "transactional" else None
                    best[kind] = max(
                        best[kind], produce(bootstrap, topics[kind], args.messages, args.size, txn)
                    )
                for isolation in ("read_uncommitted", "read_committed")[:: 1 if round_ % 2 == 0 else -1]:
                    rate = consume(bootstrap, topics["transactional"], args.messages, isolation)
                    best[isolation] = max(best[isolation], rate)
        finally:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(30)
    return best


def cluster_commit_latency(args: argparse.Namespace) -> list[float]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from samsa.cluster.launcher import LocalCluster

    with tempfile.TemporaryDirectory(prefix="samsa-bench-txn-cluster-") as tmp:
        cluster = LocalCluster(
            Path(tmp) / "cluster",
            broker_config={"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3"},
        )
        cluster.up(3)
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            admin.create_topics([NewTopic("latency", 3, 3, config={"min.insync.replicas": "2"})])[
                "latency"
            ].result(60)
            producer = Producer(
                {
                    "bootstrap.servers": cluster.bootstrap_servers,
                    "transactional.id": "latency",
                    "linger.ms": 1,
                }
            )
            producer.init_transactions(60)
            times = []
            for i in range(args.commits + 10):
                producer.begin_transaction()
                for j in range(10):
                    producer.produce("latency", b"v", partition=j % 3)
                producer.flush(30)  # the records are written: what is timed is the commit alone
                start = time.perf_counter()
                producer.commit_transaction(60)
                if i >= 10:  # the first ones find the coordinator and warm up
                    times.append((time.perf_counter() - start) * 1000)
            return times
        finally:
            cluster.down()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--txn-records", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--no-cluster", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    best = single_broker(args)
    print(
        f"one broker, {args.messages} messages of {args.size} B, transactions of {args.txn_records}, best of "
        f"{args.rounds} rounds (alternating order), confluent-kafka"
    )
    print(f"  idempotent produce      {best['idempotent']:12,.0f} msg/s")
    print(
        f"  transactional produce   {best['transactional']:12,.0f} msg/s   "
        f"x idempotent {best['transactional'] / best['idempotent']:.2f}"
    )
    print(f"  read_uncommitted        {best['read_uncommitted']:12,.0f} msg/s")
    print(
        f"  read_committed          {best['read_committed']:12,.0f} msg/s   "
        f"x read_uncommitted {best['read_committed'] / best['read_uncommitted']:.2f}"
    )
    out: dict[str, object] = {"single_broker": best}
    if not args.no_cluster:
        times = sorted(cluster_commit_latency(args))
        p50 = statistics.median(times)
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(
            f"3 brokers: commit_transaction of 10 records over 3 partitions, {len(times)} commits: "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        )
        out["commit_ms"] = {"p50": p50, "p99": p99, "n": len(times)}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
