"""``samsa log-dirs``: describe brokers' log directories, like Kafka's ``kafka-log-dirs.sh``.

Prints ``Querying brokers for log directories information``, then ``Received log directory information from
brokers <ids>`` and one JSON line::

    {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":0,"offsetLag":0,
     "isFuture":false}],"error":null,"logDir":"/data"}]}],"version":1}

Kafka's tool serialises Java HashMaps, so its key order is the HashMap iteration order; ``java_hash_order``
reproduces that order (bucket of the spread hash, then insertion order) so the line matches Kafka's byte for
byte.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from samsa.client import BrokerError, KafkaError, LogDir, TopicPartition

from .command_config import command_config_option, tool_client

K = TypeVar("K")
INT_MASK = 0xFFFFFFFF


def java_int(value: int) -> int:
    value &= INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    data = text.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & INT_MASK
    return java_int(h)


def topic_partition_hash(tp: TopicPartition) -> int:
    return java_int(31 * (31 + tp.partition) + java_string_hash(tp.topic))


def java_hash_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """``keys`` (in insertion order) in the order a default-constructed java.util.HashMap iterates them."""
    items = list(keys)
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: K) -> int:
        h = hash_of(key) & INT_MASK
        return (h ^ (h >> 16)) & (capacity - 1)

    return [key for _, key in sorted(enumerate(items), key=lambda pair: (bucket(pair[1]), pair[0]))]


def java_map(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A dict whose key order is a Java HashMap's for these string keys, inserted in this order."""
    values = dict(pairs)
    return {key: values[key] for key in java_hash_order(values, java_string_hash)}


def log_dir_entry(log_dir: LogDir, topics: set[str]) -> dict[str, Any]:
    replicas = java_hash_order(log_dir.partitions, topic_partition_hash)
    kept = java_hash_order([tp for tp in replicas if not topics or tp.topic in topics], topic_partition_hash)
    partitions = [
        java_map(
            [
                ("partition", f"{tp.topic}-{tp.partition}"),
                ("size", log_dir.partitions[tp].size),
                ("offsetLag", log_dir.partitions[tp].offset_lag),
                ("isFuture", log_dir.partitions[tp].is_future),
            ]
        )
        for tp in kept
    ]
    error = None
    if log_dir.error_code:
        error = BrokerError.from_code(log_dir.error_code).exception_name
    return java_map([("logDir", log_dir.path), ("error", error), ("partitions", partitions)])


def format_json(described: dict[int, list[LogDir]], topics: set[str]) -> str:
    brokers = []
    for broker in java_hash_order(described, java_int):
        dirs = {d.path: d for d in described[broker]}
        entries = [log_dir_entry(dirs[path], topics) for path in java_hash_order(dirs, java_string_hash)]
        brokers.append(java_map([("broker", broker), ("logDirs", entries)]))
    document = java_map([("version", 1), ("brokers", brokers)])
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def split_list(text: str) -> list[str]:
    return [item for item in text.split(",") if item]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", required=True, help="The server(s) to use for bootstrapping.")
@command_config_option("--command-config", "admin client")
@click.option("--describe", is_flag=True, help="Describe the log directories of the brokers.")
@click.option("--topic-list", default="", help='Topics to report, "topic1,topic2" (default: all).')
@click.option("--broker-list", default="", help='Brokers to query, "0,1,2" (default: all).')
def log_dirs(bootstrap_server: str, describe: bool, topic_list: str, broker_list: str) -> None:
    """Query brokers for their log directories (like kafka-log-dirs.sh)."""
    if not describe:
        click.echo('Missing required argument "[describe]"', err=True)
        sys.exit(1)
    topics = set(split_list(topic_list))
    try:
        wanted = {int(b) for b in split_list(broker_list)}
    except ValueError:
        click.echo(f"--broker-list expects broker ids, got: {broker_list}", err=True)
        sys.exit(1)

    async def run() -> None:
        async with tool_client(bootstrap_server, client_id="log-dirs-tool") as client:
            cluster = set((await client.metadata([])).brokers)
            missing = wanted - cluster
            if missing:
                raise click.ClickException(
                    "ERROR: The given brokers do not exist from --broker-list: "
                    f"{','.join(map(str, java_hash_order(missing, java_int)))}. Current existent brokers: "
                    f"{','.join(map(str, java_hash_order(cluster, java_int)))}"
                )
            nodes = java_hash_order(wanted or cluster, java_int)
            click.echo("Querying brokers for log directories information")
            described = await client.describe_log_dirs(None, node_ids=nodes)
            click.echo(f"Received log directory information from brokers {','.join(map(str, nodes))}")
            click.echo(format_json(described, topics))

    try:
        asyncio.run(run())
    except click.ClickException as exc:
        click.echo(exc.message, err=True)
        sys.exit(1)
    except KafkaError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
