"""``samsa topics``: create, list, describe, alter and delete topics, like Kafka's ``kafka-topics.sh``.

Talks to any Kafka-protocol broker through :mod:`samsa.client`. Output lines follow Kafka's tool::

    Created topic <name>.
    Topic: <name>\tTopicId: <id>\tPartitionCount: <n>\tReplicationFactor: <r>\tConfigs: k=v,...
    \tTopic: <name>\tPartition: <p>\tLeader: <id|none>\tReplicas: 1,2\tIsr: 1,2\tElr: N/A\tLastKnownElr: N/A
    (while the partition moves, before Elr: ...\tAdding Replicas: 3\tRemoving Replicas: 2)

``Elr``/``LastKnownElr`` are Kafka 3.7+'s eligible leader replicas (KIP-966); Samsa keeps none and does not serve
DescribeTopicPartitions, so both read ``N/A``, as Kafka's tool prints them against such a broker.

``--topic`` is a regular expression (commas mean "or"), as in Kafka; ``--list`` is sorted and ``--describe``
follows the iteration order of a Java HashMap of the names, as Kafka's tool does. A failed broker call prints
``Error while executing topic command : <message>`` on stdout and an ERROR line with the message and Kafka's
error name on stderr, exit 1; a
bad argument or a topic that does not exist prints its message on stderr, exit 1.

``--describe`` with ``--under-replicated-partitions`` (ISR smaller than the replicas), ``--unavailable-partitions``
(no live leader), ``--under-min-isr-partitions`` (ISR under the topic's ``min.insync.replicas``, or no leader) or
``--at-min-isr-partitions`` prints only the matching partitions' lines, without the topic lines, as Kafka's does;
``--topics-with-overrides`` prints only the topic lines of topics whose configs are not all defaults.

``--replica-assignment 1:2,2:3`` (with ``--create``) places each partition's replicas (comma between partitions,
colon between replicas, the first the preferred leader) instead of ``--partitions``/``--replication-factor``; with
``--alter --partitions N`` it lists every partition's replicas and the new partitions are placed as it says (the
entries of the existing ones are skipped, as Kafka's tool skips them).
``--command-config`` reads the admin client's properties (``command_config``): ``request.timeout.ms``,
``client.id`` and the security settings (SSL, SASL) are used; the rest are ignored. ``--version`` prints Samsa's version.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import re
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import NoReturn

import click

from samsa.client import BrokerError, ClientSecurity, KafkaClient, KafkaError, NewTopic
from samsa.client.types import ClusterMetadata, PartitionMetadata, TopicMetadata
from samsa.topic_partition import TopicPartition

from .command_config import CommandConfigError, read_command_config
from .log_dirs import java_hash_order, java_string_hash

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
SHORT_MAX = 32767
# what Kafka 3.7+'s tool prints for the eligible leader replicas of a broker without DescribeTopicPartitions
NO_ELR = "\tElr: N/A\tLastKnownElr: N/A"


class ArgumentError(Exception):
    """A bad argument or a missing topic: printed on stderr alone, exit 1 (Kafka's IllegalArgumentException)."""


def kafka_uuid(value: uuid.UUID | None) -> str:
    """Kafka's text form of a topic id: URL-safe base64 of the 16 bytes, unpadded."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def include_list(pattern: str) -> re.Pattern[str]:
    """Kafka's topic include-list: a regex where ',' means '|', spaces and outer quotes dropped; a pattern that
    does not compile is an ArgumentError."""
    cleaned = pattern.strip().replace(",", "|").replace(" ", "")
    cleaned = re.sub(r"^[\"']+", "", cleaned)
    cleaned = re.sub(r"[\"']+$", "", cleaned)
    try:
        return re.compile(cleaned)
    except re.error as exc:
        raise ArgumentError(f"Invalid regular expression '{pattern}': {exc}") from None


def is_internal(topic: TopicMetadata) -> bool:
    return topic.internal or topic.name in INTERNAL_TOPICS


def select_topics(cluster: ClusterMetadata, pattern: str | None, exclude_internal: bool) -> list[str]:
    regex = include_list(pattern) if pattern is not None else None
    return sorted(
        name
        for name, meta in cluster.topics.items()
        if (regex is None or regex.fullmatch(name)) and not (exclude_internal and is_internal(meta))
    )


def ensure_found(found: Sequence[str], pattern: str | None, required: bool) -> None:
    if pattern and required and not found:
        raise ArgumentError(f"Topic '{pattern}' does not exist as expected")


def parse_configs(items: Sequence[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for item in items:
        parts = re.split(r"\s*=\s*", item)
        if len(parts) != 2:
            raise ArgumentError(
                'requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'
            )
        configs[parts[0].strip()] = parts[1].strip()
    return configs


def log_line(text: str, level: str = "ERROR") -> None:
    """A log4j-style ``[time] LEVEL <text>`` line on stderr, as Kafka's tools log errors and warnings."""
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    click.echo(f"[{now}] {level} {text}", err=True)


def error_text(error: KafkaError) -> str:
    """A failure as the tools log it: the broker's message and Kafka's error name, ``Topic 't' already exists.
    (TOPIC_ALREADY_EXISTS)``; a client-side failure's own message."""
    if isinstance(error, BrokerError):
        return f"{error.message} ({error.name})" if error.message else error.name
    return str(error)


def error_message(error: KafkaError) -> str:
    if isinstance(error, BrokerError):
        return error.message or error.name
    return str(error)


async def create_topic(
    client: KafkaClient,
    topic: str,
    partitions: int | None,
    replication_factor: int | None,
    configs: dict[str, str],
    if_not_exists: bool,
    assignment: dict[int, list[int]] | None = None,
) -> None:
    if replication_factor is not None and not 1 <= replication_factor <= SHORT_MAX:
        raise ArgumentError(f"The replication factor must be between 1 and {SHORT_MAX} inclusive")
    if partitions is not None and partitions < 1:
        raise ArgumentError("The partitions must be greater than 0")
    if "." in topic or "_" in topic:
        click.echo(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
            "collide. To avoid issues it is best to use either, but not both."
        )
    new = NewTopic(topic, partitions or -1, replication_factor or -1, configs, assignment)
    error = (await client.create_topics([new]))[topic]
    if error is None:
        click.echo(f"Created topic {topic}.")
    elif not (if_not_exists and error.name == "TOPIC_ALREADY_EXISTS"):
        raise error


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``--replica-assignment``: partition -> broker ids, checked as Kafka's tool checks them (broker ids are
    integers, no broker twice in a partition, the same replication factor everywhere)."""
    assignment: dict[int, list[int]] = {}
    for partition, replicas in enumerate(text.split(",")):
        ids = [r.strip() for r in replicas.split(":") if r.strip()]
        if not ids or not all(r.isdigit() for r in ids):
            raise ArgumentError(
                f"Invalid replica assignment {text!r}: broker ids must be integers, as 1:2,2:3"
            )
        brokers = [int(r) for r in ids]
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise ArgumentError(
                f"Partition replica lists may not contain duplicate entries: {','.join(map(str, duplicates))}"
            )
        if assignment and len(brokers) != len(assignment[0]):
            raise ArgumentError(
                f"Partition {partition} has different replication factor: {','.join(map(str, brokers))}"
            )
        assignment[partition] = brokers
    return assignment


def partition_filter(report: str | None, live: set[int], min_isr: int) -> Callable[[PartitionMetadata], bool]:
    """Kafka's describe filters: which partitions a ``--<report>-partitions`` option shows (None: all)."""
    if report == "under-replicated":
        return lambda p: len(p.isr) < len(p.replicas)
    if report == "unavailable":
        return lambda p: p.leader < 0 or p.leader not in live
    if report == "under-min-isr":
        return lambda p: p.leader < 0 or len(p.isr) < min_isr
    if report == "at-min-isr":
        return lambda p: len(p.isr) == min_isr
    return lambda p: True


async def describe_topics(
    client: KafkaClient,
    pattern: str | None,
    exclude_internal: bool,
    if_exists: bool,
    report: str | None = None,
) -> None:
    """``report``: a partition filter (``partition_filter``) or "overrides" (``--topics-with-overrides``)."""
    cluster = await client.metadata()
    names = select_topics(cluster, pattern, exclude_internal)
    ensure_found(names, pattern, not if_exists)
    if not names:
        return
    configs = await client.describe_configs(names)
    live = set(cluster.brokers)
    moving = await reassignments(client, cluster)
    # Kafka's tool prints topics in the iteration order of the admin client's HashMap of descriptions
    for name in java_hash_order(names, java_string_hash):
        meta = cluster.topics[name]
        if meta.error_code:
            raise BrokerError.from_code(meta.error_code, f"Topic {name}")
        partitions = [meta.partitions[p] for p in sorted(meta.partitions)]
        overridden = ",".join(
            f"{entry.name}={entry.value}" for entry in configs.get(name, {}).values() if entry.source != 5
        )
        head = f"Topic: {name}"
        if meta.topic_id is not None and meta.topic_id.int != 0:
            head += f"\tTopicId: {kafka_uuid(meta.topic_id)}"
        replication = len(partitions[0].replicas) if partitions else 0
        if partitions and (first := moving.get(TopicPartition(name, partitions[0].partition))):
            replication -= len(first[1])  # a move's adding replicas are not counted
        if report is None or (report == "overrides" and overridden):  # a partition report: its lines alone
            click.echo(
                f"{head}\tPartitionCount: {len(partitions)}\tReplicationFactor: {replication}\tConfigs: {overridden}"
            )
        if report == "overrides":
            continue
        min_isr_entry = configs.get(name, {}).get("min.insync.replicas")
        min_isr = int(min_isr_entry.value) if min_isr_entry is not None and min_isr_entry.value else 1
        for p in filter(partition_filter(report, live, min_isr), partitions):
            leader = str(p.leader) if p.leader >= 0 else "none"
            replicas = ",".join(map(str, p.replicas))
            isr = ",".join(map(str, p.isr))
            line = f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {leader}\tReplicas: {replicas}\tIsr: {isr}"
            move = moving.get(TopicPartition(name, p.partition))
            if move is not None:
                line += f"\tAdding Replicas: {','.join(map(str, move[1]))}"
                line += f"\tRemoving Replicas: {','.join(map(str, move[2]))}"
            click.echo(line + NO_ELR)


async def reassignments(
    client: KafkaClient, cluster: ClusterMetadata
) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    """The partitions being moved (none on a single broker, or when the controller does not say)."""
    if len(cluster.brokers) < 2:
        return {}
    try:
        return await client.list_partition_reassignments()
    except BrokerError:
        return {}


async def alter_topics(
    client: KafkaClient,
    pattern: str,
    partitions: int | None,
    exclude_internal: bool,
    if_exists: bool,
    assignment: dict[int, list[int]] | None = None,
) -> None:
    """Grow the matching topics to ``partitions``; with ``assignment`` (every partition's replicas, as for
    ``--create``) the new partitions go where it says, the existing ones' entries skipped, as Kafka's tool does."""
    metadata = await client.metadata()
    names = select_topics(metadata, pattern, exclude_internal)
    ensure_found(names, pattern, not if_exists)
    if not names or partitions is None:
        return
    placed = None
    if assignment is not None:
        placed = {
            name: [
                replicas
                for p, replicas in sorted(assignment.items())
                if p >= len(metadata.topics[name].partitions)
            ]
            for name in names
        }
    errors = await client.create_partitions({name: partitions for name in names}, assignments=placed)
    for error in errors.values():
        if error is not None:
            raise error


async def delete_topics(client: KafkaClient, pattern: str, exclude_internal: bool, if_exists: bool) -> None:
    names = select_topics(await client.metadata(), pattern, exclude_internal)
    ensure_found(names, pattern, not if_exists)
    if not names:
        return
    for error in (await client.delete_topics(names)).values():
        if error is not None:
            raise error


async def list_topics(client: KafkaClient, pattern: str | None, exclude_internal: bool) -> None:
    click.echo("\n".join(select_topics(await client.metadata(), pattern, exclude_internal)))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The Kafka server(s) to connect to, host:port[,host:port]."
)
@click.option("--create", is_flag=True, help="Create a new topic.")
@click.option("--list", "list_", is_flag=True, help="List all available topics.")
@click.option("--describe", is_flag=True, help="List details for the given topics.")
@click.option("--alter", is_flag=True, help="Alter the number of partitions of a topic.")
@click.option("--delete", is_flag=True, help="Delete a topic.")
@click.option("--topic", help="The topic to act on; a regular expression except with --create.")
@click.option("--partitions", type=int, help="The number of partitions to create or raise to.")
@click.option("--replication-factor", type=int, help="The replication factor of each partition.")
@click.option("--config", "configs", multiple=True, help="A topic config override key=value (repeatable).")
@click.option(
    "--if-exists", is_flag=True, help="With --alter, --delete or --describe: only act if the topic exists."
)
@click.option(
    "--if-not-exists", is_flag=True, help="With --create: only create the topic if it does not exist."
)
@click.option("--exclude-internal", is_flag=True, help="Leave internal topics out of --list and --describe.")
@click.option(
    "--under-replicated-partitions",
    "report",
    flag_value="under-replicated",
    help="With --describe: only partitions whose ISR is smaller than their replica set.",
)
@click.option(
    "--unavailable-partitions",
    "report",
    flag_value="unavailable",
    help="With --describe: only partitions whose leader is not available.",
)
@click.option(
    "--under-min-isr-partitions",
    "report",
    flag_value="under-min-isr",
    help="With --describe: only partitions whose ISR is smaller than min.insync.replicas.",
)
@click.option(
    "--topics-with-overrides",
    "report",
    flag_value="overrides",
    help="With --describe: only the topics whose configs differ from the defaults (topic lines only).",
)
@click.option(
    "--replica-assignment",
    help="Each partition's replicas, comma between partitions, colon between replicas (1:2,2:3): with --create, "
    "or with --alter --partitions N for the new partitions.",
)
@click.option(
    "--command-config",
    help="A properties file for the admin client: security.protocol, sasl.*, ssl.*, client.id.",
)
@click.version_option(
    None, "--version", package_name="samsa", message="%(version)s", help="Print Samsa's version and exit."
)
@click.option(
    "--at-min-isr-partitions",
    "report",
    flag_value="at-min-isr",
    help="With --describe: only partitions whose ISR is exactly min.insync.replicas.",
)
def topics(
    bootstrap_server: str,
    create: bool,
    list_: bool,
    describe: bool,
    alter: bool,
    delete: bool,
    topic: str | None,
    partitions: int | None,
    replication_factor: int | None,
    configs: tuple[str, ...],
    if_exists: bool,
    if_not_exists: bool,
    exclude_internal: bool,
    report: str | None,
    replica_assignment: str | None,
    command_config: str | None,
) -> None:
    """Create, delete, describe, or change a topic (like kafka-topics.sh)."""
    given = {"create": create, "list": list_, "describe": describe, "alter": alter, "delete": delete}
    actions = [name for name, flag in given.items() if flag]
    if len(actions) != 1:
        fail("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = actions[0]
    if action in ("create", "alter", "delete") and not topic:
        fail('Missing required argument "[topic]"')
    if action == "alter" and partitions is None:
        fail("--partitions is required with --alter")
    if replica_assignment is not None and action not in ("create", "alter"):
        fail("--replica-assignment is supported with --create and --alter only")
    if (
        replica_assignment is not None
        and action == "create"
        and (partitions is not None or replication_factor is not None)
    ):
        fail("--replica-assignment cannot be used with --partitions or --replication-factor")
    try:
        assignment = parse_replica_assignment(replica_assignment) if replica_assignment is not None else None
        client_props = read_command_config(command_config) if command_config is not None else {}
    except (ArgumentError, CommandConfigError) as exc:
        fail(str(exc))
    security = ClientSecurity.from_properties(client_props)
    client_id = client_props.get("client.id", "samsa-topics")
    timeout_ms = int(client_props.get("request.timeout.ms", "30000").strip())

    async def run() -> None:
        async with KafkaClient(
            bootstrap_server, client_id=client_id, request_timeout_ms=timeout_ms, security=security
        ) as client:
            if action == "create":
                assert topic is not None
                await create_topic(
                    client,
                    topic,
                    partitions,
                    replication_factor,
                    parse_configs(configs),
                    if_not_exists,
                    assignment,
                )
            elif action == "list":
                await list_topics(client, topic, exclude_internal)
            elif action == "describe":
                await describe_topics(client, topic, exclude_internal, if_exists, report)
            elif action == "alter":
                assert topic is not None
                await alter_topics(client, topic, partitions, exclude_internal, if_exists, assignment)
            else:
                assert topic is not None
                await delete_topics(client, topic, exclude_internal, if_exists)

    try:
        asyncio.run(run())
    except ArgumentError as exc:
        fail(str(exc))
    except KafkaError as exc:
        click.echo(f"Error while executing topic command : {error_message(exc)}")
        log_line(error_text(exc))
        sys.exit(1)


def fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)
