"""``samsa leader-election``: preferred or unclean leader elections, like Kafka's ``kafka-leader-election.sh``.

Which partitions: ``--all-topic-partitions``, or ``--topic`` with ``--partition``, or ``--path-to-json-file``
holding ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``; exactly one of them. The request goes to the
controller (ElectLeaders). Output, one line per outcome::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: PreferredLeaderNotAvailableException

Exit 1 when any partition failed or an argument is wrong (its message on stderr).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click

from samsa.client import BrokerError, KafkaError, TopicPartition
from samsa.protocol import ErrorCode

from .command_config import command_config_option, tool_client

ELECTION_TYPES = {"preferred": 0, "unclean": 1}


def partitions_from_json(path: Path) -> list[TopicPartition]:
    """The partitions listed in a ``--path-to-json-file`` file (duplicates refused, as Kafka's tool does)."""
    try:
        document = json.loads(path.read_text())
        listed = [TopicPartition(str(p["topic"]), int(p["partition"])) for p in document["partitions"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise click.UsageError(f"cannot read the partitions of {path}: {exc}") from None
    if len(set(listed)) != len(listed):
        raise click.UsageError(f"{path} lists a partition more than once")
    return listed


def describe(tps: list[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}" for tp in tps)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", required=True, help="The server(s) to connect to.")
@command_config_option("--admin.config", "admin client")
@click.option(
    "--election-type",
    required=True,
    type=click.Choice(sorted(ELECTION_TYPES), case_sensitive=False),
    help="preferred: move leadership back to the first assigned replica; unclean: elect a leader for partitions "
    "without one, even from outside the ISR.",
)
@click.option("--all-topic-partitions", is_flag=True, help="Elect for every partition.")
@click.option("--topic", help="The topic of the partition to elect for (with --partition).")
@click.option("--partition", type=int, help="The partition to elect for (with --topic).")
@click.option(
    "--path-to-json-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help='A JSON file with {"partitions": [{"topic": ..., "partition": ...}]}.',
)
@click.option(
    "--timeout-ms", type=int, default=30000, show_default=True, help="How long the controller waits."
)
def leader_election(
    bootstrap_server: str,
    election_type: str,
    all_topic_partitions: bool,
    topic: str | None,
    partition: int | None,
    path_to_json_file: Path | None,
    timeout_ms: int,
) -> None:
    """Run a preferred or unclean leader election."""
    partitions = _chosen_partitions(all_topic_partitions, topic, partition, path_to_json_file)
    kind = election_type.lower()

    async def run() -> dict[TopicPartition, int]:
        async with tool_client(bootstrap_server, client_id="leader-election-tool") as client:
            return await client.elect_leaders(ELECTION_TYPES[kind], partitions, timeout_ms=timeout_ms)

    try:
        results = asyncio.run(run())
    except KafkaError as exc:
        click.echo(f"Error completing leader election ({kind.upper()}): {exc}", err=True)
        sys.exit(1)
    if not _report(kind, results):
        sys.exit(1)


def _chosen_partitions(
    all_topic_partitions: bool, topic: str | None, partition: int | None, path_to_json_file: Path | None
) -> list[TopicPartition] | None:
    """The partitions the options name (None: all of them), or a usage error unless exactly one way was used."""
    chosen = sum(
        [all_topic_partitions, topic is not None or partition is not None, path_to_json_file is not None]
    )
    if chosen != 1:
        raise click.UsageError(
            "give exactly one of --all-topic-partitions, --topic with --partition, --path-to-json-file"
        )
    if (topic is None) != (partition is None):
        raise click.UsageError("--topic and --partition go together")
    if path_to_json_file is not None:
        return partitions_from_json(path_to_json_file)
    if topic is not None and partition is not None:
        return [TopicPartition(topic, partition)]
    return None


def _report(kind: str, results: dict[TopicPartition, int]) -> bool:
    """Print one line per outcome as Kafka's tool does; whether every partition succeeded (or needed nothing)."""
    succeeded = sorted(tp for tp, code in results.items() if code == ErrorCode.NONE)
    not_needed = sorted(tp for tp, code in results.items() if code == ErrorCode.ELECTION_NOT_NEEDED)
    failed = sorted(
        (tp, code)
        for tp, code in results.items()
        if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)
    )
    if succeeded:
        click.echo(
            f"Successfully completed leader election ({kind.upper()}) for partitions {describe(succeeded)}"
        )
    if not_needed:
        click.echo(f"Valid replica already elected for partitions {describe(not_needed)}")
    if not succeeded and not not_needed and not failed:
        click.echo(f"No partition needed a leader election ({kind.upper()})")
    for tp, code in failed:
        name = BrokerError.from_code(code).exception_name
        click.echo(
            f"Error completing leader election ({kind.upper()}) for partition: {tp.topic}-{tp.partition}: {name}"
        )
    return not failed
