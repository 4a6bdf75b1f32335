"""acks=all produce throughput on a 3-broker cluster whose one listener (clients and brokers alike) is PLAINTEXT,
then SASL_SSL (``samsa cluster up --security``'s setup: a new CA, PLAIN between brokers and for the client).

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_secure_cluster.py`` (about a minute; ``--messages N``
(500,000), ``--size B`` (100), ``--rounds R`` (2, the best kept)).

Each cluster is a ``LocalCluster`` (ZooKeeper and three ``samsa serve`` processes); one topic of 3 partitions,
replication 3, ``min.insync.replicas=2``; a confluent-kafka producer (acks=all, linger.ms=5) sends ``--messages``
values of ``--size`` bytes and the figure is messages per second until every one is acknowledged. Under SASL_SSL
every byte is encrypted twice more than the client's: leader to each follower (follower fetches), and the ratio
shows what TLS between brokers costs on top of the client's own (``bench_security.py`` measures the client's
alone on one broker).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.local_security import LISTENER, secure_setup

TOPIC = "bench"


def _rdkafka(setup_file: Path | None) -> dict[str, str]:
    if setup_file is None:
        return {}
    lines = setup_file.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def run(secure: bool, messages: int, size: int, rounds: int) -> float:
    with tempfile.TemporaryDirectory(prefix="samsa-bench-") as tmp:
        directory = Path(tmp)
        setup = secure_setup(directory) if secure else None
        local = LocalCluster(
            directory / "cluster",
            broker_config=setup.broker_config if setup else {},
            listener=LISTENER if setup else "PLAINTEXT",
            client_config=setup.client_config if setup else None,
        ).up(3)
        try:
            client = {
                **_rdkafka(setup.librdkafka_properties if setup else None),
                "bootstrap.servers": local.bootstrap_servers,
            }
            admin = AdminClient(client)
            admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(
                60
            )
            time.sleep(2)  # leaders and ISR settled
            value = b"x" * size
            best = 0.0
            for _ in range(rounds):
                producer = Producer(
                    {**client, "acks": "all", "linger.ms": "5", "queue.buffering.max.messages": "1000000"}
                )
                start = time.perf_counter()
                for _ in range(messages):
                    producer.produce(TOPIC, value)
                    producer.poll(0)
                assert producer.flush(120) == 0
                best = max(best, messages / (time.perf_counter() - start))
            return best
        finally:
            local.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    plain = run(False, args.messages, args.size, args.rounds)
    print(f"PLAINTEXT cluster: {plain:,.0f} msg/s (acks=all, RF 3)")
    secured = run(True, args.messages, args.size, args.rounds)
    print(f"SASL_SSL cluster:  {secured:,.0f} msg/s = {secured / plain:.2f}x PLAINTEXT")


if __name__ == "__main__":
    main()
