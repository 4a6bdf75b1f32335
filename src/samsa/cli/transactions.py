"""``samsa transactions``: Kafka's ``kafka-transactions.sh`` commands ``list`` and ``describe``.

``list`` asks every broker for the transactions it coordinates (ListTransactions); ``describe`` finds the
transactional id's coordinator (FindCoordinator, key type 1) and asks it (DescribeTransactions). Output: a header
row and one row per transaction, tab-separated, with Kafka's column names.
"""

from __future__ import annotations

import asyncio
import sys
import time

import click

from samsa.client import KafkaClient
from samsa.protocol.messages.describe_transactions import DescribeTransactionsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.list_transactions import ListTransactionsRequest

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
        async with KafkaClient(bootstrap_server, client_id="transactions-tool") as client:
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
        async with KafkaClient(bootstrap_server, client_id="transactions-tool") as client:
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


def _print(rows: list[tuple[str, ...]]) -> None:
    for row in rows:
        sys.stdout.write("\t".join(row) + "\n")
