"""``samsa transactions``: Kafka's ``kafka-transactions.sh`` commands ``list``, ``describe``,
``describe-producers``, ``find-hanging`` and ``abort``.

``list`` asks every broker for the transactions it coordinates (ListTransactions); ``describe`` finds the
transactional id's coordinator (FindCoordinator, key type 1) and asks it (DescribeTransactions);
``describe-producers`` asks a partition's leader for its producers (DescribeProducers). ``find-hanging`` looks, on
the partitions a broker leads (or one partition), for producers whose transaction has been open longer than
``--max-transaction-timeout`` minutes and that their coordinator does not know as open on that partition: a
transaction no marker will ever end, which holds the partition's last stable offset (read_committed readers)
back. ``abort`` ends such a transaction by writing an ABORT marker to the partition (WriteTxnMarkers to its
leader), named by ``--start-offset`` (the producer is looked up) or by producer id, epoch and coordinator epoch.
Output: a header row and one row per item, tab-separated, with Kafka's column names.
"""

from __future__ import annotations

import asyncio
import sys
import time

import click

from samsa.client import KafkaClient
from samsa.client.errors import BrokerError
from samsa.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    ProducerState,
    TopicRequest,
)
from samsa.protocol.messages.describe_transactions import DescribeTransactionsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.list_transactions import ListTransactionsRequest
from samsa.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)

from .command_config import command_config_option, tool_client

LIST_HEADER = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADER = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", required=True, help="The server(s) to use for bootstrapping.")
@command_config_option("--command-config", "admin client")
@click.pass_context
def transactions(ctx: click.Context, bootstrap_server: str) -> None:
    """List and describe transactions, like kafka-transactions.sh."""
    ctx.obj = bootstrap_server


@transactions.command("list")
@click.pass_obj
def list_command(bootstrap_server: str) -> None:
    """Every transaction the brokers coordinate."""

    async def run() -> list[tuple[str, ...]]:
        rows: list[tuple[str, ...]] = []
        async with tool_client(bootstrap_server, client_id="transactions-tool") as client:
            cluster = await client.metadata([])
            for node_id in sorted(cluster.brokers):
                answer = await client.send(ListTransactionsRequest(), api_key=66, node_id=node_id)
                rows += [
                    (t.transactional_id, str(node_id), str(t.producer_id), t.transaction_state)
                    for t in answer.transaction_states
                ]
        return rows

    _print([LIST_HEADER, *asyncio.run(run())])


@transactions.command("describe")
@click.option("--transactional-id", required=True, help="The transactional id to describe.")
@click.pass_obj
def describe_command(bootstrap_server: str, transactional_id: str) -> None:
    """The state of one transactional id, from its coordinator."""

    async def run() -> tuple[str, ...]:
        async with tool_client(bootstrap_server, client_id="transactions-tool") as client:
            found = await client.send(
                FindCoordinatorRequest(key_type=1, coordinator_keys=[transactional_id]), api_key=10, version=4
            )
            node_id = found.coordinators[0].node_id
            await client.metadata([])
            answer = await client.send(
                DescribeTransactionsRequest([transactional_id]), api_key=65, node_id=node_id
            )
        state = answer.transaction_states[0]
        if state.error_code:
            raise click.ClickException(f"cannot describe {transactional_id}: error {state.error_code}")
        start = state.transaction_start_time_ms
        duration = int(time.time() * 1000) - start if start >= 0 else -1
        partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
        return (
            str(node_id),
            transactional_id,
            str(state.producer_id),
            str(state.producer_epoch),
            state.transaction_state,
            str(state.transaction_timeout_ms),
            str(start) if start >= 0 else "None",
            str(duration) if duration >= 0 else "None",
            partitions,
        )

    _print([DESCRIBE_HEADER, asyncio.run(run())])


PRODUCERS_HEADER = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADER = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)


async def _producers(
    client: KafkaClient, topic: str, partitions: list[int], node_id: int
) -> dict[int, list[ProducerState]]:
    """Partition -> its active producers, from ``node_id`` (which must lead them)."""
    answer = await client.send(
        DescribeProducersRequest([TopicRequest(topic, partitions)]), api_key=61, node_id=node_id
    )
    found: dict[int, list[ProducerState]] = {}
    for part in answer.topics[0].partitions:
        if part.error_code:
            raise click.ClickException(
                f"cannot describe the producers of {topic}-{part.partition_index}: "
                f"{BrokerError.from_code(part.error_code).name}"
            )
        found[part.partition_index] = list(part.active_producers)
    return found


async def _leader(client: KafkaClient, topic: str, partition: int) -> int:
    cluster = await client.metadata([topic])
    meta = cluster.topics.get(topic)
    if meta is None or meta.error_code or partition not in meta.partitions:
        raise click.ClickException(f"unknown topic or partition {topic}-{partition}")
    leader = meta.partitions[partition].leader
    if leader < 0:
        raise click.ClickException(f"{topic}-{partition} has no leader")
    return leader


@transactions.command("describe-producers")
@click.option("--topic", required=True, help="The topic of the partition.")
@click.option("--partition", required=True, type=int, help="The partition.")
@click.pass_obj
def describe_producers_command(bootstrap_server: str, topic: str, partition: int) -> None:
    """The active producers of a partition, from its leader."""

    async def run() -> list[ProducerState]:
        async with tool_client(bootstrap_server, client_id="transactions-tool") as client:
            leader = await _leader(client, topic, partition)
            return (await _producers(client, topic, [partition], leader))[partition]

    rows = [
        (
            str(p.producer_id),
            str(p.producer_epoch),
            str(p.coordinator_epoch),
            str(p.last_sequence),
            str(p.last_timestamp),
            str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None",
        )
        for p in asyncio.run(run())
    ]
    _print([PRODUCERS_HEADER, *rows])


@transactions.command("find-hanging")
@click.option("--broker-id", type=int, help="Look at the partitions this broker leads.")
@click.option("--topic", help="Look at this topic (every partition, or --partition).")
@click.option("--partition", type=int, help="Look at this partition of --topic.")
@click.option(
    "--max-transaction-timeout",
    type=int,
    default=15,
    show_default=True,
    help="Minutes a transaction may be open before it is looked at (the largest transaction.max.timeout.ms).",
)
@click.pass_obj
def find_hanging_command(
    bootstrap_server: str,
    broker_id: int | None,
    topic: str | None,
    partition: int | None,
    max_transaction_timeout: int,
) -> None:
    """Transactions open on a partition that their coordinator will never end."""
    if broker_id is None and topic is None:
        raise click.UsageError("give --broker-id or --topic")
    now = int(time.time() * 1000)
    limit_ms = max_transaction_timeout * 60_000
    rows = asyncio.run(_find_hanging(bootstrap_server, broker_id, topic, partition, now, limit_ms))
    _print([HANGING_HEADER, *rows])


async def _find_hanging(
    bootstrap_server: str,
    broker_id: int | None,
    topic: str | None,
    partition: int | None,
    now: int,
    limit_ms: int,
) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    async with tool_client(bootstrap_server, client_id="transactions-tool") as client:
        cluster = await client.metadata([topic] if topic else None)
        wanted: dict[tuple[str, int], list[int]] = {}  # (topic, leader) -> partitions
        for meta in cluster.topics.values():
            for part in meta.partitions.values():
                if partition is not None and part.partition != partition:
                    continue
                if broker_id is not None and part.leader != broker_id:
                    continue
                if part.leader >= 0:
                    wanted.setdefault((meta.name, part.leader), []).append(part.partition)
        candidates: list[tuple[str, int, ProducerState]] = []
        for (name, leader), parts in sorted(wanted.items()):
            for index, producers in (await _producers(client, name, sorted(parts), leader)).items():
                candidates += [
                    (name, index, p)
                    for p in producers
                    if p.current_txn_start_offset >= 0 and now - p.last_timestamp >= limit_ms
                ]
        for name, index, producer in candidates:
            if not await _coordinator_has_it_open(client, cluster.brokers, name, index, producer):
                duration_min = (now - producer.last_timestamp) // 60_000
                rows.append(
                    (
                        name,
                        str(index),
                        str(producer.producer_id),
                        str(producer.producer_epoch),
                        str(producer.coordinator_epoch),
                        str(producer.current_txn_start_offset),
                        str(producer.last_timestamp),
                        str(duration_min),
                    )
                )
    return rows


async def _coordinator_has_it_open(
    client: KafkaClient,
    brokers: dict[int, tuple[str, int, str | None]],
    topic: str,
    partition: int,
    producer: ProducerState,
) -> bool:
    """Whether some coordinator holds an open transaction of this producer (same epoch) with this partition."""
    for node_id in sorted(brokers):
        listed = await client.send(
            ListTransactionsRequest(producer_id_filters=[producer.producer_id]), api_key=66, node_id=node_id
        )
        for txn in listed.transaction_states:
            described = await client.send(
                DescribeTransactionsRequest([txn.transactional_id]), api_key=65, node_id=node_id
            )
            for state in described.transaction_states:
                if state.error_code or state.producer_epoch != producer.producer_epoch:
                    continue
                if any(t.topic == topic and partition in t.partitions for t in state.topics):
                    return state.transaction_state in ("Ongoing", "PrepareCommit", "PrepareAbort")
    return False


@transactions.command("abort")
@click.option("--topic", required=True, help="The topic of the partition.")
@click.option("--partition", required=True, type=int, help="The partition.")
@click.option("--start-offset", type=int, help="The first offset of the transaction to abort.")
@click.option("--producer-id", type=int, help="The producer (without --start-offset).")
@click.option("--producer-epoch", type=int, help="Its epoch (without --start-offset).")
@click.option("--coordinator-epoch", type=int, help="Its coordinator epoch (without --start-offset).")
@click.pass_obj
def abort_command(
    bootstrap_server: str,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer_id: int | None,
    producer_epoch: int | None,
    coordinator_epoch: int | None,
) -> None:
    """Abort a hanging transaction on one partition (an ABORT marker written by its leader)."""
    if start_offset is None and None in (producer_id, producer_epoch, coordinator_epoch):
        raise click.UsageError(
            "give --start-offset, or --producer-id, --producer-epoch and --coordinator-epoch"
        )

    async def run() -> None:
        async with tool_client(bootstrap_server, client_id="transactions-tool") as client:
            leader = await _leader(client, topic, partition)
            if start_offset is not None:
                producers = (await _producers(client, topic, [partition], leader))[partition]
                found = [p for p in producers if p.current_txn_start_offset == start_offset]
                if not found:
                    raise click.ClickException(
                        f"no open transaction starts at offset {start_offset} in {topic}-{partition}"
                    )
                pid, epoch, coordinator = (
                    found[0].producer_id,
                    found[0].producer_epoch,
                    found[0].coordinator_epoch,
                )
            else:
                assert (
                    producer_id is not None and producer_epoch is not None and coordinator_epoch is not None
                )
                pid, epoch, coordinator = producer_id, producer_epoch, coordinator_epoch
            marker = WritableTxnMarker(
                producer_id=pid,
                producer_epoch=epoch,
                transaction_result=False,
                topics=[WritableTxnMarkerTopic(topic, [partition])],
                coordinator_epoch=max(coordinator, 0),
            )
            answer = await client.send(WriteTxnMarkersRequest([marker]), api_key=27, node_id=leader)
            error = answer.markers[0].topics[0].partitions[0].error_code
            if error:
                raise click.ClickException(
                    f"the abort of {topic}-{partition} failed: {BrokerError.from_code(error).name}"
                )

    asyncio.run(run())


def _print(rows: list[tuple[str, ...]]) -> None:
    for row in rows:
        sys.stdout.write("\t".join(row) + "\n")
