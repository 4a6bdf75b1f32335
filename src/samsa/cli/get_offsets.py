"""``samsa get-offsets``: offsets of topic partitions, like Kafka's ``kafka-get-offsets.sh`` (GetOffsetShell).

Prints one ``topic:partition:offset`` line per partition that has an answer, ordered as Kafka orders them (by
the text ``topic-partition``). ``--time`` takes a timestamp in ms or -1/latest, -2/earliest, -3/max-timestamp,
-4/earliest-local, -5/latest-tiered. Errors print ``Error occurred: <message>`` on stderr and exit 1.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable

import click

from samsa.client import BrokerError, KafkaClient, KafkaError, TopicPartition
from samsa.client.types import ClusterMetadata

from .command_config import command_config_option, tool_client
from .topics import ArgumentError, include_list, is_internal

NAMED_TIMES = {"latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5}
TOPIC_PARTITION_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
INT_MAX = 2**31 - 1

Filter = Callable[[str, int], bool]


class TerseError(Exception):
    """An error printed as ``Error occurred: <message>``, exit 1."""


def parse_time(value: str) -> int:
    if value in NAMED_TIMES:
        return NAMED_TIMES[value]
    try:
        return int(value)
    except ValueError:
        raise TerseError(
            f"Malformed time argument {value}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / "
            "-4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp"
        ) from None


def topic_and_partitions_filter(
    topic: str | None, partitions: str | None
) -> tuple[Filter, Callable[[str], bool]]:
    regex = include_list(topic if topic is not None else ".*")
    wanted: set[int] = set()
    if partitions:
        try:
            wanted = {int(p) for p in partitions.split(",")}
        except ValueError:
            raise TerseError(
                f"--partitions expects a comma separated list of numeric partition ids, but received: {partitions}"
            ) from None

    def topic_ok(name: str) -> bool:
        return regex.fullmatch(name) is not None

    return (lambda name, p: topic_ok(name) and (not wanted or p in wanted)), topic_ok


def rule_list_filter(spec: str) -> tuple[Filter, Callable[[str], bool]]:
    rules: list[tuple[re.Pattern[str], int, int]] = []
    for rule in spec.split(","):
        match = TOPIC_PARTITION_RULE.fullmatch(rule)
        if match is None:
            raise TerseError(f"Invalid rule specification: {rule}")
        topic, single, low, high = (g or None for g in match.groups())
        regex = include_list(topic or ".*")
        if single is not None:
            rules.append((regex, int(single), int(single) + 1))
        else:
            rules.append((regex, int(low) if low else 0, int(high) if high else INT_MAX))

    def topic_ok(name: str) -> bool:
        return any(regex.fullmatch(name) for regex, _, _ in rules)

    def partition_ok(name: str, p: int) -> bool:
        return any(regex.fullmatch(name) and lo <= p < hi for regex, lo, hi in rules)

    return partition_ok, topic_ok


def matching_partitions(
    cluster: ClusterMetadata, partition_ok: Filter, topic_ok: Callable[[str], bool], exclude_internal: bool
) -> list[TopicPartition]:
    return [
        TopicPartition(name, p)
        for name, meta in cluster.topics.items()
        if topic_ok(name) and not (exclude_internal and is_internal(meta))
        for p in meta.partitions
        if partition_ok(name, p)
    ]


async def fetch_offsets(
    client: KafkaClient, tps: list[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    try:
        answers = await client.list_offsets(dict.fromkeys(tps, timestamp))
    except BrokerError:
        answers = {}
        for tp in tps:  # find which partitions failed, as Kafka reports each one
            try:
                answers.update(await client.list_offsets({tp: timestamp}))
            except BrokerError as exc:
                click.echo(
                    f"Skip getting offsets for topic-partition {tp.topic}-{tp.partition} due to error: {exc}",
                    err=True,
                )
    return {tp: offset for tp, (offset, _) in answers.items() if offset != -1}


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@command_config_option("--command-config", "consumer")
@click.option("--topic", help="The topic(s) to get offsets for: a regular expression (default: all).")
@click.option("--partitions", help="Comma separated partition ids (default: all).")
@click.option(
    "--topic-partitions", help="Comma separated topic:partition patterns, e.g. t1:1,t2:0-3,t3,t4:5-."
)
@click.option(
    "--time", "time_", default="latest", show_default=True, help="A timestamp in ms, or -1/-2/-3 ..."
)
@click.option("--exclude-internal-topics", is_flag=True, help="Leave internal topics out.")
@click.option(
    "--isolation",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
    help="What latest means: the high watermark, or the last stable offset (read_committed consumers' end).",
)
def get_offsets(
    bootstrap_server: str,
    topic: str | None,
    partitions: str | None,
    topic_partitions: str | None,
    time_: str,
    exclude_internal_topics: bool,
    isolation: str,
) -> None:
    """Print the offsets of topic partitions (like kafka-get-offsets.sh)."""
    level = 1 if isolation == "read_committed" else 0

    async def run() -> dict[TopicPartition, int]:
        if topic_partitions is not None and (topic is not None or partitions is not None):
            raise TerseError("--topic-partitions cannot be used with --topic or --partitions")
        timestamp = parse_time(time_)
        if topic_partitions is not None:
            partition_ok, topic_ok = rule_list_filter(topic_partitions)
        else:
            partition_ok, topic_ok = topic_and_partitions_filter(topic, partitions)
        async with tool_client(bootstrap_server, client_id="GetOffsetShell", isolation_level=level) as client:
            tps = matching_partitions(
                await client.metadata(), partition_ok, topic_ok, exclude_internal_topics
            )
            if not tps:
                raise TerseError("Could not match any topic-partitions with the specified filters")
            return await fetch_offsets(client, tps, timestamp)

    try:
        offsets = asyncio.run(run())
    except (TerseError, ArgumentError, KafkaError) as exc:
        click.echo(f"Error occurred: {exc}", err=True)
        sys.exit(1)
    for tp in sorted(offsets, key=lambda tp: (tp.topic, tp.partition)):
        click.echo(f"{tp.topic}:{tp.partition}:{offsets[tp]}")
