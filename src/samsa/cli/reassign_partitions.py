"""``samsa reassign-partitions``: move partitions' replicas between brokers, like Kafka's
``kafka-reassign-partitions.sh`` (through the AlterPartitionReassignments and ListPartitionReassignments APIs).

Actions, one per call:

- ``--generate`` with ``--topics-to-move-json-file`` (``{"topics":[{"topic":"foo"}],"version":1}``) and
  ``--broker-list "1,2,3"``: prints the current assignment and a proposed one that spreads the topics' partitions
  over those brokers (Kafka's replica placement; rack-aware unless ``--disable-rack-aware``). Nothing moves.
- ``--execute`` with ``--reassignment-json-file``
  (``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}``):
  prints the current assignment (to roll back with) and starts the moves; refused while other moves run unless
  ``--additional``. ``--throttle`` B/s sets the replication throttles of the topics and brokers involved.
- ``--verify`` with the same file: each partition's status; when all are done the throttles are cleared.
- ``--cancel`` with the same file: the running moves go back to their original replicas; the throttles are
  cleared (unless ``--preserve-throttles``, as with ``--verify``).
- ``--list``: the moves running now.

A refused argument prints its message on stderr and exits 1, as Kafka's tool does.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from samsa.client import BrokerError, KafkaClient, KafkaError
from samsa.client.types import ClusterMetadata
from samsa.cluster.assignment import AssignmentError, assign_replicas
from samsa.topic_partition import TopicPartition

from .command_config import command_config_option, tool_client

LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
BROKER_RESOURCE = 4


class ReassignError(Exception):
    """A refused argument or plan: its message on stderr, exit 1."""


def name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _raise_failed(results: Mapping[TopicPartition, BrokerError | None], heading: str) -> None:
    """A ReassignError under ``heading`` listing each partition whose change the controller refused, if any."""
    failed = {tp: e for tp, e in results.items() if e is not None}
    if failed:
        lines = [f"{name(tp)}: {e}" for tp, e in sorted(failed.items())]
        raise ReassignError(heading + "\n" + "\n".join(lines))


def plan_json(plan: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON, partitions by topic then partition."""
    partitions = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(r), "log_dirs": ["any"] * len(r)}
        for tp, r in sorted(plan.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def parse_plan(text: str) -> dict[TopicPartition, list[int]]:
    """A reassignment JSON file's partitions and target replicas (ReassignError when malformed)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ReassignError(f"The reassignment JSON is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or value.get("version") != 1:
        raise ReassignError("Not a version 1 reassignment JSON: the only version is 1.")
    entries = value.get("partitions")
    if not isinstance(entries, list) or not entries:
        raise ReassignError("The reassignment JSON names no partitions.")
    plan: dict[TopicPartition, list[int]] = {}
    for entry in entries:
        try:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise ReassignError(f"A partition entry needs topic, partition and replicas: {entry}") from None
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            if len(log_dirs) != len(replicas):
                raise ReassignError(f"{name(tp)}: log_dirs and replicas differ in length.")
            if any(d != "any" and not str(d).startswith("/") for d in log_dirs):
                raise ReassignError(f'{name(tp)}: each log dir must be "any" or an absolute path.')
        if tp in plan:
            raise ReassignError(f"The partition {name(tp)} appears more than once.")
        if not replicas:
            raise ReassignError(f"Partition replica list cannot be empty for {name(tp)}.")
        if len(set(replicas)) != len(replicas):
            raise ReassignError(f"Duplicate replica assignment found: {name(tp)} -> {replicas}")
        plan[tp] = replicas
    return plan


def parse_topics(text: str) -> list[str]:
    try:
        value = json.loads(text)
        return [str(t["topic"]) for t in value["topics"]]
    except (ValueError, KeyError, TypeError):
        raise ReassignError('The topics JSON must be {"topics":[{"topic":"name"}],"version":1}.') from None


def current_assignment(
    cluster: ClusterMetadata, tps: Iterable[TopicPartition]
) -> dict[TopicPartition, list[int]]:
    found: dict[TopicPartition, list[int]] = {}
    for tp in tps:
        topic = cluster.topics.get(tp.topic)
        if topic is None or topic.error_code or tp.partition not in topic.partitions:
            raise ReassignError(f"Topic partition {name(tp)} does not exist.")
        found[tp] = list(topic.partitions[tp.partition].replicas)
    return found


def propose(
    cluster: ClusterMetadata, topics: Sequence[str], brokers: Sequence[int], rack_aware: bool
) -> tuple[dict[TopicPartition, list[int]], dict[TopicPartition, list[int]]]:
    """The topics' current assignment and Kafka's placement of the same partitions and RF over ``brokers``."""
    current: dict[TopicPartition, list[int]] = {}
    proposed: dict[TopicPartition, list[int]] = {}
    racks = {b: (cluster.brokers[b][2] if rack_aware and b in cluster.brokers else None) for b in brokers}
    for topic in topics:
        meta = cluster.topics.get(topic)
        if meta is None or meta.error_code:
            raise ReassignError(f"Topic {topic} not found.")
        for p, partition in meta.partitions.items():
            current[TopicPartition(topic, p)] = list(partition.replicas)
        rf = len(next(iter(meta.partitions.values())).replicas) if meta.partitions else 0
        try:
            placed = assign_replicas(racks, len(meta.partitions), rf, rng=random.Random())
        except AssignmentError as exc:
            raise ReassignError(str(exc)) from None
        for p, replicas in placed.items():
            proposed[TopicPartition(topic, p)] = replicas
    return current, proposed


def throttled_replicas(entries: Mapping[TopicPartition, Iterable[int]]) -> dict[str, str]:
    """Per topic the throttle list ``p:broker,...`` for these partitions' replicas."""
    per_topic: dict[str, list[str]] = {}
    for tp, brokers in sorted(entries.items()):
        per_topic.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in brokers)
    return {topic: ",".join(items) for topic, items in per_topic.items()}


async def set_throttles(
    client: KafkaClient,
    current: Mapping[TopicPartition, Sequence[int]],
    plan: Mapping[TopicPartition, Sequence[int]],
    rate: int,
) -> None:
    leaders = throttled_replicas(current)
    followers = throttled_replicas({tp: [r for r in plan[tp] if r not in current[tp]] for tp in plan})
    changes = {
        topic: {
            LEADER_THROTTLED_REPLICAS: leaders.get(topic, ""),
            FOLLOWER_THROTTLED_REPLICAS: followers.get(topic, ""),
        }
        for topic in {tp.topic for tp in plan}
    }
    await raise_first(await client.incremental_alter_configs(changes))
    brokers = sorted({b for tp in plan for b in (*current[tp], *plan[tp])})
    rates = {str(b): {LEADER_THROTTLED_RATE: str(rate), FOLLOWER_THROTTLED_RATE: str(rate)} for b in brokers}
    await raise_first(await client.incremental_alter_configs(rates, resource_type=BROKER_RESOURCE))


async def clear_throttles(client: KafkaClient, topics: Iterable[str], brokers: Iterable[int]) -> None:
    broker_ids = sorted(set(brokers))
    rates: dict[str, Mapping[str, str | None]] = {
        str(b): {LEADER_THROTTLED_RATE: None, FOLLOWER_THROTTLED_RATE: None} for b in broker_ids
    }
    await raise_first(await client.incremental_alter_configs(rates, resource_type=BROKER_RESOURCE))
    click.echo(f"Clearing broker-level throttles on brokers {','.join(map(str, broker_ids))}")
    for topic in sorted(set(topics)):
        changes: dict[str, Mapping[str, str | None]] = {
            topic: {LEADER_THROTTLED_REPLICAS: None, FOLLOWER_THROTTLED_REPLICAS: None}
        }
        await raise_first(await client.incremental_alter_configs(changes))
        click.echo(f"Clearing topic-level throttles on topic {topic}")


async def raise_first(results: Mapping[Any, BrokerError | None]) -> None:
    for error in results.values():
        if error is not None:
            raise error


# --- actions ---------------------------------------------------------------------------------------------------


async def generate(client: KafkaClient, topics_file: Path, broker_list: str, rack_aware: bool) -> None:
    topics = parse_topics(topics_file.read_text())
    try:
        brokers = [int(b) for b in broker_list.split(",") if b.strip()]
    except ValueError:
        raise ReassignError(f"--broker-list expects broker ids, got: {broker_list}") from None
    if len(set(brokers)) != len(brokers):
        raise ReassignError(f"Duplicate brokers in --broker-list: {broker_list}")
    cluster = await client.metadata(topics)
    unknown = [b for b in brokers if b not in cluster.brokers]
    if unknown:
        raise ReassignError(f"Unknown broker id(s): {','.join(map(str, unknown))}")
    current, proposed = propose(cluster, topics, brokers, rack_aware)
    click.echo("Current partition replica assignment")
    click.echo(plan_json(current))
    click.echo("")
    click.echo("Proposed partition reassignment configuration")
    click.echo(plan_json(proposed))


async def execute(client: KafkaClient, plan_file: Path, additional: bool, throttle: int) -> None:
    plan = parse_plan(plan_file.read_text())
    cluster = await client.metadata(sorted({tp.topic for tp in plan}))
    unknown = sorted({b for replicas in plan.values() for b in replicas if b not in cluster.brokers})
    if unknown:
        raise ReassignError(f"Unknown broker id(s): {','.join(map(str, unknown))}")
    current = current_assignment(cluster, plan)
    if not additional and await client.list_partition_reassignments():
        raise ReassignError(
            "Cannot execute: partition reassignments are already running. Add --additional to start these "
            "as well (or to change the throttle of the running ones)."
        )
    click.echo("Current partition replica assignment")
    click.echo("")
    click.echo(plan_json(current))
    click.echo("")
    click.echo("Save this to use as the --reassignment-json-file option during rollback")
    if throttle >= 0:
        await set_throttles(client, current, plan, throttle)
        click.echo(
            "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
            "throttle is removed."
        )
        click.echo(f"The inter-broker throttle limit was set to {throttle} B/s")
    results = await client.alter_partition_reassignments(plan)
    _raise_failed(results, "Error reassigning partition(s):")
    click.echo(
        f"Successfully started partition reassignments for {','.join(name(tp) for tp in sorted(plan))}"
    )


async def verify(client: KafkaClient, plan_file: Path, preserve_throttles: bool) -> None:
    plan = parse_plan(plan_file.read_text())
    running = await client.list_partition_reassignments(sorted(plan))
    cluster = await client.metadata(sorted({tp.topic for tp in plan}))
    click.echo("Status of partition reassignment:")
    done = True
    for tp in sorted(plan):
        if tp in running:
            done = False
            click.echo(f"Reassignment of partition {name(tp)} is still in progress.")
            continue
        replicas = current_assignment(cluster, [tp])[tp]
        if replicas == plan[tp]:
            click.echo(f"Reassignment of partition {name(tp)} is completed.")
        else:
            click.echo(
                f"There is no active reassignment of partition {name(tp)}, but replica set is "
                f"{','.join(map(str, replicas))} rather than {','.join(map(str, plan[tp]))}."
            )
    if done and not preserve_throttles:
        click.echo("")
        brokers = {b for tp in plan for b in plan[tp]} | set(cluster.brokers)
        await clear_throttles(client, {tp.topic for tp in plan}, brokers)


async def cancel(client: KafkaClient, plan_file: Path, preserve_throttles: bool) -> None:
    plan = parse_plan(plan_file.read_text())
    running = await client.list_partition_reassignments(sorted(plan))
    moving = sorted(tp for tp in plan if tp in running)
    if moving:
        results = await client.alter_partition_reassignments({tp: None for tp in moving})
        _raise_failed(results, "Error cancelling partition reassignment(s):")
        click.echo(
            f"Successfully cancelled partition reassignments for: {','.join(name(tp) for tp in moving)}"
        )
    else:
        click.echo("None of the specified partition moves are active.")
    if not preserve_throttles:
        click.echo("")
        cluster = await client.metadata([])
        brokers = {b for tp in plan for b in plan[tp]} | set(cluster.brokers)
        await clear_throttles(client, {tp.topic for tp in plan}, brokers)


async def list_moves(client: KafkaClient) -> None:
    running = await client.list_partition_reassignments()
    if not running:
        click.echo("No partition reassignments found.")
        return
    click.echo("Current partition reassignments:")
    for tp, (replicas, adding, removing) in sorted(running.items()):
        click.echo(
            f"{name(tp)}: replicas: {','.join(map(str, replicas))}. adding: {','.join(map(str, adding))}. "
            f"removing: {','.join(map(str, removing))}."
        )


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", required=True, help="The server(s) to connect to, host:port[,host:port].")
@command_config_option("--command-config", "admin client")
@click.option(
    "--generate", "action", flag_value="generate", help="Propose an assignment of topics to brokers."
)
@click.option(
    "--execute", "action", flag_value="execute", help="Start the moves of --reassignment-json-file."
)
@click.option(
    "--verify", "action", flag_value="verify", help="Report the moves' status; clear throttles when done."
)
@click.option("--cancel", "action", flag_value="cancel", help="Cancel the moves of --reassignment-json-file.")
@click.option("--list", "action", flag_value="list", help="List the moves running now.")
@click.option(
    "--topics-to-move-json-file", type=click.Path(exists=True, path_type=Path), help="With --generate."
)
@click.option("--broker-list", help='With --generate: the brokers to place replicas on, "1,2,3".')
@click.option("--reassignment-json-file", type=click.Path(exists=True, path_type=Path))
@click.option("--disable-rack-aware", is_flag=True, help="With --generate: ignore the brokers' racks.")
@click.option("--additional", is_flag=True, help="With --execute: start while other moves run.")
@click.option(
    "--throttle", type=int, default=-1, help="With --execute: replication throttle in B/s (-1: none)."
)
@click.option(
    "--preserve-throttles", is_flag=True, help="With --verify or --cancel: leave the throttles in place."
)
@click.option("--timeout", type=int, default=10000, help="Milliseconds to wait for the moves to start.")
def reassign_partitions(
    bootstrap_server: str,
    action: str | None,
    topics_to_move_json_file: Path | None,
    broker_list: str | None,
    reassignment_json_file: Path | None,
    disable_rack_aware: bool,
    additional: bool,
    throttle: int,
    preserve_throttles: bool,
    timeout: int,
) -> None:
    """Move partitions' replicas between brokers (like kafka-reassign-partitions.sh)."""
    if action is None:
        fail("Command must include exactly one action: --generate, --execute, --verify, --cancel or --list")
    if action == "generate" and (topics_to_move_json_file is None or broker_list is None):
        fail("--generate needs --topics-to-move-json-file and --broker-list")
    if action in ("execute", "verify", "cancel") and reassignment_json_file is None:
        fail(f"--{action} needs --reassignment-json-file")

    async def run() -> None:
        async with tool_client(bootstrap_server, client_id="reassign-partitions") as client:
            if action == "generate":
                assert topics_to_move_json_file is not None and broker_list is not None
                await generate(client, topics_to_move_json_file, broker_list, not disable_rack_aware)
            elif action == "execute":
                assert reassignment_json_file is not None
                await execute(client, reassignment_json_file, additional, throttle)
            elif action == "verify":
                assert reassignment_json_file is not None
                await verify(client, reassignment_json_file, preserve_throttles)
            elif action == "cancel":
                assert reassignment_json_file is not None
                await cancel(client, reassignment_json_file, preserve_throttles)
            else:
                await list_moves(client)

    try:
        asyncio.run(run())
    except ReassignError as exc:
        fail(str(exc))
    except KafkaError as exc:
        fail(f"Error: {exc}")


def fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)
