"""``samsa consumer-groups``: list, describe, reset and delete consumer groups, like ``kafka-consumer-groups.sh``.

    --list                                  one group id a line
    --describe --group G [--group G2 ...]   GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
                                            CLIENT-ID, one row per partition the group owns or has committed
    --describe --members [--verbose]        GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS
                                            [ASSIGNMENT], one row per member
    --describe --state                      GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
    --reset-offsets --group G (--topic T[:P,..] | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --shift-by N)
        [--dry-run | --execute]             prints GROUP TOPIC PARTITION NEW-OFFSET; commits only with --execute
    --delete --group G [--group G2 ...]

As in Kafka: offsets can be reset only while the group is inactive (Empty or unknown), a reset past either end of
the log is clamped to it, and a reset with neither --dry-run nor --execute warns and behaves as --dry-run. Errors
print ``Error: <message>`` and exit 1.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import click

from samsa.client import BrokerError, KafkaClient, KafkaError, TopicPartition
from samsa.client import groups as admin

INACTIVE_STATES = ("Empty", "Dead")
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. In a future major release, the default "
    "behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. "
    "You should add the --dry-run option explicitly if you are scripting this command and want to keep the current "
    "default behavior without prompting."
)


class CommandError(Exception):
    """Printed as ``Error: <message>``, exit 1."""


@dataclass(frozen=True, slots=True)
class Row:
    group: str
    tp: TopicPartition
    current: int | None
    log_end: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.current is None or self.log_end is None:
            return None
        return max(self.log_end - self.current, 0)


def _text(value: int | None) -> str:
    return "-" if value is None else str(value)


# --- describe ------------------------------------------------------------------------------------------------


async def describe_rows(client: KafkaClient, group_id: str) -> tuple[admin.GroupDescription, list[Row]]:
    description = await admin.describe_group(client, group_id)
    committed = await admin.committed_offsets(client, group_id)
    owners: dict[TopicPartition, admin.MemberDescription] = {}
    for member in description.members:
        for tp in member.assignment:
            owners[tp] = member
    partitions = sorted(set(owners) | set(committed))
    log_ends = await _log_end_offsets(client, partitions)
    rows = []
    for tp in partitions:
        owner = owners.get(tp)
        rows.append(
            Row(
                group_id,
                tp,
                committed.get(tp),
                log_ends.get(tp),
                owner.member_id if owner else "-",
                owner.host if owner else "-",
                owner.client_id if owner else "-",
            )
        )
    return description, rows


async def _log_end_offsets(
    client: KafkaClient, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for tp in partitions:
        try:
            (offset, _) = (await client.list_offsets({tp: -1}))[tp]
        except KafkaError:
            continue
        out[tp] = offset
    return out


def format_rows(rows: Sequence[Row]) -> list[str]:
    group_w = max([15, *(len(r.group) for r in rows)])
    topic_w = max([15, *(len(r.tp.topic) for r in rows)])
    consumer_w = max([15, *(len(r.consumer_id) for r in rows)])
    host_w = max([15, *(len(r.host) for r in rows)])

    def line(*cells: str) -> str:
        group, topic, partition, current, end, lag, consumer, host, client = cells
        return (
            f"{group:<{group_w}} {topic:<{topic_w}} {partition:<10} {current:<15} {end:<15} {lag:<15} "
            f"{consumer:<{consumer_w}} {host:<{host_w}} {client}"
        ).rstrip()

    out = [
        "",
        line(
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ),
    ]
    for r in rows:
        out.append(
            line(
                r.group,
                r.tp.topic,
                str(r.tp.partition),
                _text(r.current),
                _text(r.log_end),
                _text(r.lag),
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )
    return out


async def run_describe(client: KafkaClient, group_ids: Sequence[str]) -> list[str]:
    out: list[str] = []
    for group_id in group_ids:
        description, rows = await describe_rows(client, group_id)
        if description.state == "Dead" and not rows:
            raise CommandError(f"Consumer group '{group_id}' does not exist.")
        if description.state in ("PreparingRebalance", "CompletingRebalance"):
            out += ["", f"Warning: Consumer group '{group_id}' is rebalancing."]
        elif not description.members:
            out += ["", f"Consumer group '{group_id}' has no active members."]
        out += format_rows(rows)
    return out


def _group_warning(group_id: str, state: str) -> list[str]:
    """The line Kafka's tool prints before a group's table, by state (Dead raises)."""
    if state == "Dead":
        raise CommandError(f"Consumer group '{group_id}' does not exist.")
    if state in ("PreparingRebalance", "CompletingRebalance"):
        return ["", f"Warning: Consumer group '{group_id}' is rebalancing."]
    if state == "Empty":
        return ["", f"Consumer group '{group_id}' has no active members."]
    return []


def _columns(widths: Sequence[int], cells: Sequence[str]) -> str:
    """Cells left-aligned in columns of at least ``widths`` (the last one unpadded), as Kafka's tool prints."""
    padded = [f"{cell:<{width}}" for cell, width in zip(cells, widths, strict=False)]
    return " ".join([*padded, *cells[len(widths) :]]).rstrip()


def _assignment_text(assignment: Sequence[TopicPartition]) -> str:
    """``topic(0,1),other(2)``: Kafka's ASSIGNMENT column."""
    if not assignment:
        return "-"
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ",".join(sorted(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in by_topic.items()))


def format_members(description: admin.GroupDescription, verbose: bool) -> list[str]:
    """GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT], one row per member."""
    members = description.members
    with_instance = any(m.group_instance_id for m in members)
    header = ["GROUP", "CONSUMER-ID", *(["GROUP-INSTANCE-ID"] if with_instance else []), "HOST", "CLIENT-ID"]
    rows = []
    for m in members:
        instance = [m.group_instance_id or "-"] if with_instance else []
        rows.append([description.group_id, m.member_id, *instance, m.host, m.client_id])
    minimums = [15, 15, *([17] if with_instance else []), 15, 15]
    widths = [max([minimum, *(len(r[i]) for r in rows)]) for i, minimum in enumerate(minimums)] + [15]
    assignment = ["ASSIGNMENT"] if verbose else []
    out = ["", _columns(widths, [*header, "#PARTITIONS", *assignment])]
    for m, row in zip(members, rows, strict=True):
        extra = [_assignment_text(m.assignment)] if verbose else []
        out.append(_columns(widths, [*row, str(len(m.assignment)), *extra]))
    return out


async def run_describe_members(client: KafkaClient, group_ids: Sequence[str], verbose: bool) -> list[str]:
    out: list[str] = []
    for group_id in group_ids:
        description = await admin.describe_group(client, group_id)
        out += _group_warning(group_id, description.state)
        if description.members:
            out += format_members(description, verbose)
    return out


async def run_describe_state(client: KafkaClient, group_ids: Sequence[str]) -> list[str]:
    """GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS, one table per group."""
    out: list[str] = []
    for group_id in group_ids:
        description = await admin.describe_group(client, group_id)
        out += _group_warning(group_id, description.state)
        found = await admin.coordinator_of(client, group_id)
        coordinator = f"{found.host}:{found.port}  ({found.node_id})"
        widths = [max(15, len(group_id)), max(25, len(coordinator)), 20, 20]
        out += [
            "",
            _columns(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]),
            _columns(
                widths,
                [
                    group_id,
                    coordinator,
                    description.protocol,
                    description.state,
                    str(len(description.members)),
                ],
            ),
        ]
    return out


# --- reset ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResetSpec:
    to_earliest: bool = False
    to_latest: bool = False
    to_offset: int | None = None
    to_datetime: str | None = None
    shift_by: int | None = None


def parse_datetime(text: str) -> int:
    """Kafka's ``yyyy-MM-dd'T'HH:mm:ss.SSS`` with an optional zone (Z, +hh:mm); local time when none."""
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(
            f"Error parsing timestamp. It does not match the format yyyy-MM-dd'T'HH:mm:ss.SSS: {text}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()
    return int(parsed.timestamp() * 1000)


async def _scope(
    client: KafkaClient, group_id: str, topics: Sequence[str], all_topics: bool
) -> list[TopicPartition]:
    if all_topics:
        return sorted(await admin.committed_offsets(client, group_id))
    cluster = await client.metadata([t.split(":", 1)[0] for t in topics])
    out: list[TopicPartition] = []
    for spec in topics:
        name, _, parts = spec.partition(":")
        meta = cluster.topics.get(name)
        if meta is None or meta.error_code != 0 or not meta.partitions:
            raise CommandError(f"The topic '{name}' does not exist.")
        wanted = _partition_ids(spec, parts) if parts else sorted(meta.partitions)
        out += [TopicPartition(name, p) for p in wanted]
    return sorted(set(out))


def _partition_ids(spec: str, parts: str) -> list[int]:
    """The partitions of a ``--topic TOPIC:P1,P2`` scope; anything but non-negative integers is a CommandError."""
    ids = [p.strip() for p in parts.split(",")]
    if not all(p.isdigit() for p in ids):
        raise CommandError(
            f"Invalid --topic '{spec}': partitions must be comma separated non-negative integers"
        )
    return [int(p) for p in ids]


async def plan_reset(
    client: KafkaClient, group_id: str, partitions: Sequence[TopicPartition], spec: ResetSpec
) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    earliest = {tp: o for tp, (o, _) in (await client.list_offsets(dict.fromkeys(partitions, -2))).items()}
    latest = {tp: o for tp, (o, _) in (await client.list_offsets(dict.fromkeys(partitions, -1))).items()}

    def clamp(tp: TopicPartition, offset: int) -> int:
        return min(max(offset, earliest[tp]), latest[tp])

    if spec.to_earliest:
        return {tp: earliest[tp] for tp in partitions}
    if spec.to_latest:
        return {tp: latest[tp] for tp in partitions}
    if spec.to_offset is not None:
        return {tp: clamp(tp, spec.to_offset) for tp in partitions}
    if spec.to_datetime is not None:
        ts = parse_datetime(spec.to_datetime)
        found = await client.list_offsets(dict.fromkeys(partitions, ts))
        return {tp: found[tp][0] if found[tp][0] >= 0 else latest[tp] for tp in partitions}
    assert spec.shift_by is not None
    committed = await admin.committed_offsets(client, group_id, partitions)
    return {tp: clamp(tp, committed.get(tp, latest[tp]) + spec.shift_by) for tp in partitions}


def format_plan(group_id: str, plan: dict[TopicPartition, int]) -> list[str]:
    out = ["", f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}".rstrip()]
    for tp in sorted(plan):
        out.append(f"{group_id:<30} {tp.topic:<30} {tp.partition:<10} {plan[tp]:<15}".rstrip())
    return out


async def run_reset(
    client: KafkaClient,
    group_ids: Sequence[str],
    topics: Sequence[str],
    all_topics: bool,
    spec: ResetSpec,
    execute: bool,
) -> list[str]:
    out: list[str] = []
    for group_id in group_ids:
        description = await admin.describe_group(client, group_id)
        if description.state not in INACTIVE_STATES:
            raise CommandError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state is "
                f"{description.state}."
            )
        plan = await plan_reset(client, group_id, await _scope(client, group_id, topics, all_topics), spec)
        if execute and plan:
            errors = await admin.commit_offsets(client, group_id, plan)
            failed = {tp: code for tp, code in errors.items() if code != 0}
            if failed:
                tp, code = next(iter(sorted(failed.items())))
                raise CommandError(
                    f"committing the new offset of {tp.topic}-{tp.partition}: {BrokerError.from_code(code)}"
                )
        out += format_plan(group_id, plan)
    return out


# --- list / delete -------------------------------------------------------------------------------------------


async def run_delete(client: KafkaClient, group_ids: Sequence[str]) -> list[str]:
    results = await admin.delete_groups(client, group_ids)
    failed = {g: code for g, code in results.items() if code != 0}
    if not failed:
        names = ", ".join(f"'{g}'" for g in group_ids)
        return [f"Deletion of requested consumer groups ({names}) was successful."]
    lines = ["Deletion of some consumer groups failed:"]
    for group_id, code in failed.items():
        error = BrokerError.from_code(code)
        lines.append(f"* Group '{group_id}' could not be deleted due to: {error}")
    ok = [g for g in group_ids if g not in failed]
    if ok:
        lines.append("These consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in ok))
    raise CommandError("\n".join(lines))


@dataclass(frozen=True, slots=True)
class DescribeView:
    """Which table ``--describe`` prints: offsets (default), ``--members [--verbose]`` or ``--state``."""

    members: bool = False
    verbose: bool = False
    state: bool = False


# --- the command ---------------------------------------------------------------------------------------------


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option(
    "--describe", is_flag=True, help="Describe consumer groups: offsets, log end offsets, lag, owners."
)
@click.option("--delete", is_flag=True, help="Delete consumer groups (only inactive ones can go).")
@click.option("--reset-offsets", is_flag=True, help="Reset the committed offsets of an inactive group.")
@click.option("--group", "groups", multiple=True, help="The consumer group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Apply to every group.")
@click.option("--topic", "topics", multiple=True, help="Reset scope: TOPIC or TOPIC:P1,P2 (repeatable).")
@click.option(
    "--all-topics", is_flag=True, help="Reset scope: every topic the group has committed offsets for."
)
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option("--to-offset", type=int, help="Reset to this offset (clamped to the log).")
@click.option("--to-datetime", help="Reset to the first offset at or after yyyy-MM-ddTHH:mm:SS.sss.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (may be negative).")
@click.option("--members", is_flag=True, help="With --describe: one row per member instead of per partition.")
@click.option("--verbose", is_flag=True, help="With --describe --members: instance ids and assignments too.")
@click.option("--state", is_flag=True, help="With --describe: the group's coordinator, strategy and state.")
@click.option("--dry-run", is_flag=True, help="Only print the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
def consumer_groups(
    bootstrap_server: str,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    groups: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    members: bool,
    verbose: bool,
    state: bool,
    dry_run: bool,
    execute: bool,
) -> None:
    """List, describe, delete consumer groups and reset their offsets (kafka-consumer-groups.sh)."""
    action = _one_action({"list": list_, "describe": describe, "delete": delete, "reset": reset_offsets})
    spec = ResetSpec(to_earliest, to_latest, to_offset, to_datetime, shift_by)
    view = DescribeView(members, verbose, state)
    if action == "reset":
        _check_reset_options(spec, topics, all_topics, dry_run, execute)
    _check_describe_options(action == "describe", view)
    if action != "list" and not groups and not all_groups:
        raise click.UsageError("Option --describe, --delete and --reset-offsets need --group or --all-groups")
    run = _run(bootstrap_server, action, groups, all_groups, topics, all_topics, spec, execute, view)
    try:
        lines = asyncio.run(run)
    except (CommandError, KafkaError) as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(1) from None
    if action == "reset" and not dry_run and not execute:
        click.echo(NO_EXECUTE_WARNING)
    for line in lines:
        click.echo(line)


def _one_action(flags: dict[str, bool]) -> str:
    """The one action whose flag is given, or a usage error."""
    chosen = [action for action, given in flags.items() if given]
    if len(chosen) != 1:
        raise click.UsageError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets"
        )
    return chosen[0]


def _check_reset_options(
    spec: ResetSpec, topics: tuple[str, ...], all_topics: bool, dry_run: bool, execute: bool
) -> None:
    scenarios = [
        spec.to_earliest,
        spec.to_latest,
        spec.to_offset is not None,
        spec.to_datetime is not None,
        spec.shift_by is not None,
    ]
    if sum(scenarios) != 1:
        raise click.UsageError(
            "Option --reset-offsets takes exactly one of --to-earliest, --to-latest, --to-offset, "
            "--to-datetime, --shift-by"
        )
    if not topics and not all_topics:
        raise click.UsageError("Option --reset-offsets needs one of --topic or --all-topics")
    if dry_run and execute:
        raise click.UsageError("Option --execute cannot be used with --dry-run")


def _check_describe_options(describe: bool, view: DescribeView) -> None:
    if (view.members or view.state) and not describe:
        raise click.UsageError("Options --members and --state need --describe")
    if view.members and view.state:
        raise click.UsageError("Options --members and --state cannot be used together")
    if view.verbose and not view.members:
        raise click.UsageError("Option --verbose needs --describe --members")


async def _run(
    bootstrap: str,
    action: str,
    groups: Sequence[str],
    all_groups: bool,
    topics: Sequence[str],
    all_topics: bool,
    spec: ResetSpec,
    execute: bool,
    view: DescribeView,
) -> list[str]:
    async with KafkaClient(bootstrap, client_id="samsa-consumer-groups") as client:
        if action == "list":
            return [g.group_id for g in await admin.list_groups(client)]
        names = list(groups)
        if all_groups:
            names = [g.group_id for g in await admin.list_groups(client)]
        if action == "describe" and view.members:
            return await run_describe_members(client, names, view.verbose)
        if action == "describe" and view.state:
            return await run_describe_state(client, names)
        if action == "describe":
            return await run_describe(client, names)
        if action == "delete":
            return await run_delete(client, names)
        return await run_reset(client, names, topics, all_topics, spec, execute)
