"""Reassignment speed: how fast a new replica copies a partition, against how fast a consumer reads the same data.

Run: ``.venv/bin/python bench/bench_reassign.py`` (about a minute; ``--megabytes`` and ``--rounds`` scale it).
Two ``samsa serve`` brokers over a real ZooKeeper on loopback, the clients in this process.

Per round:

1. a topic of one partition on broker 1 alone is filled with ``--megabytes`` MB of 1000 B records (acks=1);
2. **consume**: a confluent-kafka consumer (assigned, no group) reads the whole partition from broker 1; bytes of
   the log / seconds from its first record to its last;
3. **reassign**: ``[1] -> [1, 2]`` with no throttle, through AlterPartitionReassignments; from the request to
   ListPartitionReassignments showing it finished (broker 2 caught up and in the ISR); bytes / seconds.

The figure is the ratio reassign / consume of the same round: both move the same bytes out of broker 1's log on
the same machine, one to a client, one to a follower that appends them to its own log; both ask for 1 MB of the
partition per fetch (``max.partition.fetch.bytes`` and ``replica.fetch.max.bytes`` defaults).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.client import KafkaClient
from samsa.cluster.launcher import LocalCluster
from samsa.topic_partition import TopicPartition as SamsaTopicPartition

RECORD = b"r" * 1000


def fill(bootstrap: str, topic: str, megabytes: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 20,
            "batch.size": 1048576,
            "delivery.report.only.error": True,
        }
    )
    for _ in range(megabytes * 1000):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(120) == 0


def log_bytes(cluster: LocalCluster, broker: int, topic: str) -> int:
    directory = cluster.directory / f"broker-{broker}" / "data" / f"{topic}-0"
    return sum(p.stat().st_size for p in directory.glob("*.log"))


def consume_seconds(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{time.monotonic_ns()}",
            "enable.auto.commit": False,  # fetch sizes left at their defaults: 1 MB per partition, as a follower's
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    while seen < records:
        for message in consumer.consume(10000, 1.0):
            if not message.error():
                if not seen:
                    start = time.perf_counter()  # from the first record: the client's start-up is not reading
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


async def reassign_seconds(bootstrap: str, topic: str) -> float:
    tp = SamsaTopicPartition(topic, 0)
    async with KafkaClient(bootstrap) as client:
        start = time.perf_counter()
        errors = await client.alter_partition_reassignments({tp: [1, 2]})
        assert errors[tp] is None, errors
        while await client.list_partition_reassignments([tp]):
            await asyncio.sleep(0.02)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-reassign-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster")
        cluster.up(2)
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            deadline = time.monotonic() + 30
            while admin.list_topics(timeout=10).controller_id < 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            ratios = []
            for round_ in range(args.rounds):
                topic = f"move-{round_}"
                admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[
                    topic
                ].result(30)
                time.sleep(0.5)
                fill(cluster.broker(1).address, topic, args.megabytes)
                size = log_bytes(cluster, 1, topic)
                consumed = consume_seconds(cluster.broker(1).address, topic, args.megabytes * 1000)
                moved = asyncio.run(reassign_seconds(cluster.bootstrap_servers, topic))
                assert log_bytes(cluster, 2, topic) == size, "the new replica differs in size"
                consume_rate, reassign_rate = size / consumed / 1e6, size / moved / 1e6
                ratios.append(reassign_rate / consume_rate)
                print(
                    f"round {round_ + 1}: {size / 1e6:.1f} MB; consume {consume_rate:.1f} MB/s; "
                    f"reassign (new replica caught up) {reassign_rate:.1f} MB/s; ratio {ratios[-1]:.2f}"
                )
            print(f"median ratio reassign / consume: {statistics.median(ratios):.2f}")
        finally:
            cluster.down()


if __name__ == "__main__":
    main()
