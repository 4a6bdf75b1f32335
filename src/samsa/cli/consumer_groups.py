"""``samsa consumer-groups``: list, describe, reset and delete consumer groups, like ``kafka-consumer-groups.sh``.

    --list                                  one group id a line
    --list --state [STATE,...]              GROUP STATE, the groups in those states (all without a value)
    --describe --group G [--group G2 ...]   GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
                                            CLIENT-ID, one row per partition the group owns or has committed
    --describe --members [--verbose]        GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS
                                            [ASSIGNMENT], one row per member
    --describe --state                      GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
    --reset-offsets --group G (--topic T[:P,..] | --all-topics)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss
         | --by-duration PnDTnHnMnS | --shift-by N)
        [--dry-run | --execute] [--export]  prints GROUP TOPIC PARTITION NEW-OFFSET (with --export, CSV lines
                                            topic,partition,offset; group,topic,partition,offset for several
                                            groups); commits only with --execute
    --reset-offsets --group G --from-file F  the offsets of a CSV file as --export writes it
    --delete --group G [--group G2 ...]
    --delete-offsets --group G --topic T[:P,..]   TOPIC PARTITION STATUS, one row per partition

``--timeout MS`` bounds each request to the brokers (default 30000).

As in Kafka: offsets can be reset only while the group is inactive (Empty or unknown), a reset past either end of
the log is clamped to it, and a reset with neither --dry-run nor --execute warns and behaves as --dry-run. Errors
print ``Error: <message>`` and exit 1.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from samsa.client import BrokerError, KafkaClient, KafkaError, TopicPartition
from samsa.client import groups as admin

from .command_config import command_config_option, tool_client

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
    to_current: bool = False
    by_duration: str | None = None
    from_file: str | None = None

    @property
    def scenarios(self) -> list[bool]:
        """One flag per way of choosing the new offsets: exactly one must be given."""
        return [
            self.to_earliest,
            self.to_latest,
            self.to_current,
            self.to_offset is not None,
            self.to_datetime is not None,
            self.by_duration is not None,
            self.shift_by is not None,
            self.from_file is not None,
        ]


def parse_duration(text: str) -> int:
    """An ISO-8601 duration as Kafka's ``--by-duration`` takes it (``PnDTnHnMn.nS``, e.g. ``PT1H30M``), in ms."""
    match = re.fullmatch(
        r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip().upper()
    )
    if match is None or text.strip().upper() in ("P", "PT"):
        raise CommandError(f"Error parsing duration. It does not match the format PnDTnHnMn.nS: {text}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def read_offsets_file(path: str) -> dict[str, dict[TopicPartition, int]]:
    """The offsets of a CSV file as ``--export`` writes it, by group ("" for a file of one group's lines)."""
    try:
        lines = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    out: dict[str, dict[TopicPartition, int]] = {}
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        group, cells = (cells[0], cells[1:]) if len(cells) == 4 else ("", cells)
        if len(cells) != 3 or not cells[1].isdigit() or not cells[2].lstrip("-").isdigit():
            raise CommandError(f"Invalid line in {path}: {line!r} is not topic,partition,offset")
        out.setdefault(group, {})[TopicPartition(cells[0], int(cells[1]))] = int(cells[2])
    return out


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
    if spec.to_current:
        current = await admin.committed_offsets(client, group_id, partitions)
        return {tp: current.get(tp, latest[tp]) for tp in partitions}
    if spec.by_duration is not None:
        since = int(time.time() * 1000) - parse_duration(spec.by_duration)
        found = await client.list_offsets(dict.fromkeys(partitions, since))
        return {tp: found[tp][0] if found[tp][0] >= 0 else latest[tp] for tp in partitions}
    if spec.to_offset is not None:
        return {tp: clamp(tp, spec.to_offset) for tp in partitions}
    if spec.to_datetime is not None:
        ts = parse_datetime(spec.to_datetime)
        found = await client.list_offsets(dict.fromkeys(partitions, ts))
        return {tp: found[tp][0] if found[tp][0] >= 0 else latest[tp] for tp in partitions}
    assert spec.shift_by is not None
    committed = await admin.committed_offsets(client, group_id, partitions)
    return {tp: clamp(tp, committed.get(tp, latest[tp]) + spec.shift_by) for tp in partitions}


def format_csv(group_id: str, plan: dict[TopicPartition, int], with_group: bool) -> list[str]:
    """``--export``: one ``topic,partition,offset`` line a partition, led by the group with several groups."""
    lead = f"{group_id}," if with_group else ""
    return [f"{lead}{tp.topic},{tp.partition},{plan[tp]}" for tp in sorted(plan)]


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
    export: bool = False,
) -> list[str]:
    out: list[str] = []
    from_file = read_offsets_file(spec.from_file) if spec.from_file is not None else None
    for group_id in group_ids:
        description = await admin.describe_group(client, group_id)
        if description.state not in INACTIVE_STATES:
            raise CommandError(
                f"Assignments can only be reset if the group '{group_id}' is inactive, but the current state is "
                f"{description.state}."
            )
        if from_file is not None:
            plan = from_file.get(group_id) or from_file.get("") or {}
        else:
            plan = await plan_reset(
                client, group_id, await _scope(client, group_id, topics, all_topics), spec
            )
        if execute and plan:
            errors = await admin.commit_offsets(client, group_id, plan)
            failed = {tp: code for tp, code in errors.items() if code != 0}
            if failed:
                tp, code = next(iter(sorted(failed.items())))
                raise CommandError(
                    f"committing the new offset of {tp.topic}-{tp.partition}: {BrokerError.from_code(code)}"
                )
        out += format_csv(group_id, plan, len(group_ids) > 1) if export else format_plan(group_id, plan)
    return out


async def run_delete_offsets(client: KafkaClient, group_id: str, topics: Sequence[str]) -> list[str]:
    """``--delete-offsets``: TOPIC PARTITION STATUS rows; a group-level refusal is a CommandError."""
    partitions = await _scope(client, group_id, topics, False)
    error, results = await admin.delete_offsets(client, group_id, partitions)
    if error:
        raise CommandError(
            f"Deleting the offsets of group '{group_id}' failed: {BrokerError.from_code(error)}"
        )
    failed = any(results.values())
    out = [
        f"Request {'failed' if failed else 'succeeded'} for deleting offsets from group '{group_id}'.",
        "",
        f"{'TOPIC':<30} {'PARTITION':<10} STATUS",
    ]
    for tp in sorted(results):
        code = results[tp]
        status = "Successful" if code == 0 else f"Error: {BrokerError.from_code(code)}"
        out.append(f"{tp.topic:<30} {tp.partition:<10} {status}")
    if failed:
        raise CommandError("\n".join(out))
    return out


# --- list / delete -------------------------------------------------------------------------------------------


async def run_list(client: KafkaClient, view: DescribeView) -> list[str]:
    """``--list``: one group id a line; with ``--state``, GROUP STATE columns of the groups in the states asked."""
    listed = await admin.list_groups(client)
    if not view.list_states:
        return [g.group_id for g in listed]
    wanted = {s.lower() for s in view.states or ()}
    rows = [(g.group_id, g.state) for g in listed if not wanted or g.state.lower() in wanted]
    width = max([15, *(len(group_id) for group_id, _ in rows)])
    return [f"{'GROUP':<{width}} STATE", *(f"{group_id:<{width}} {state}" for group_id, state in rows)]


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
    states: tuple[str, ...] | None = (
        None  # --list --state: the states to list (None: every group, with states)
    )
    list_states: bool = False


# --- the command ---------------------------------------------------------------------------------------------


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@command_config_option("--command-config", "admin client")
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option(
    "--describe", is_flag=True, help="Describe consumer groups: offsets, log end offsets, lag, owners."
)
@click.option("--delete", is_flag=True, help="Delete consumer groups (only inactive ones can go).")
@click.option("--reset-offsets", is_flag=True, help="Reset the committed offsets of an inactive group.")
@click.option(
    "--delete-offsets", is_flag=True, help="Delete a group's committed offsets of --topic partitions."
)
@click.option("--group", "groups", multiple=True, help="The consumer group (repeatable).")
@click.option("--all-groups", is_flag=True, help="Apply to every group.")
@click.option("--topic", "topics", multiple=True, help="Reset scope: TOPIC or TOPIC:P1,P2 (repeatable).")
@click.option(
    "--all-topics", is_flag=True, help="Reset scope: every topic the group has committed offsets for."
)
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option("--to-current", is_flag=True, help="Reset to the committed offset (the latest where none).")
@click.option("--by-duration", help="Reset to the first offset at or after now minus PnDTnHnMnS.")
@click.option("--from-file", help="Reset to the offsets of a CSV file (topic,partition,offset; as --export).")
@click.option("--export", is_flag=True, help="With --reset-offsets: print the new offsets as CSV.")
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(1),
    default=30000,
    show_default=True,
    help="Request timeout, ms.",
)
@click.option("--to-offset", type=int, help="Reset to this offset (clamped to the log).")
@click.option("--to-datetime", help="Reset to the first offset at or after yyyy-MM-ddTHH:mm:SS.sss.")
@click.option("--shift-by", type=int, help="Move the committed offset by N (may be negative).")
@click.option("--members", is_flag=True, help="With --describe: one row per member instead of per partition.")
@click.option("--verbose", is_flag=True, help="With --describe --members: instance ids and assignments too.")
@click.option(
    "--state",
    "state_filter",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[STATES]",
    help="With --describe: the group's coordinator, strategy and state; with --list: each group's state, only "
    "the states given (comma separated) when any.",
)
@click.option(
    "--isolation",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
    help="Which end LOG-END-OFFSET, LAG and --to-latest use: the high watermark, or the last stable offset (what "
    "a read_committed consumer can reach while transactions are open).",
)
@click.option("--dry-run", is_flag=True, help="Only print the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
def consumer_groups(
    bootstrap_server: str,
    list_: bool,
    describe: bool,
    delete: bool,
    reset_offsets: bool,
    delete_offsets: bool,
    groups: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    all_topics: bool,
    to_earliest: bool,
    to_latest: bool,
    to_current: bool,
    by_duration: str | None,
    from_file: str | None,
    export: bool,
    timeout_ms: int,
    to_offset: int | None,
    to_datetime: str | None,
    shift_by: int | None,
    members: bool,
    verbose: bool,
    state_filter: str | None,
    isolation: str,
    dry_run: bool,
    execute: bool,
) -> None:
    """List, describe, delete consumer groups and reset their offsets (kafka-consumer-groups.sh)."""
    action = _one_action(
        {
            "list": list_,
            "describe": describe,
            "delete": delete,
            "reset": reset_offsets,
            "delete-offsets": delete_offsets,
        }
    )
    spec = ResetSpec(
        to_earliest, to_latest, to_offset, to_datetime, shift_by, to_current, by_duration, from_file
    )
    state = state_filter is not None
    view = DescribeView(members, verbose, state and action == "describe")
    if state and action == "list":
        states = tuple(s.strip() for s in (state_filter or "").split(",") if s.strip())
        view = DescribeView(states=states or None, list_states=True)
    elif state_filter and action == "describe":
        raise click.UsageError("Option --state takes a list of states with --list only")
    elif state and action != "describe":
        raise click.UsageError("Option --state needs --describe or --list")
    if action == "reset":
        _check_reset_options(spec, topics, all_topics, dry_run, execute)
    if export and action != "reset":
        raise click.UsageError("Option --export needs --reset-offsets")
    if action == "delete-offsets" and (len(groups) != 1 or not topics):
        raise click.UsageError("Option --delete-offsets needs one --group and at least one --topic")
    _check_describe_options(action == "describe", view)
    if action != "list" and not groups and not all_groups:
        raise click.UsageError("Option --describe, --delete and --reset-offsets need --group or --all-groups")
    level = 1 if isolation == "read_committed" else 0
    options = RunOptions(topics, all_topics, spec, execute, view, export, timeout_ms, level)
    run = _run(bootstrap_server, action, groups, all_groups, options)
    try:
        lines = asyncio.run(run)
    except (CommandError, KafkaError) as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(1) from None
    if action == "reset" and not dry_run and not execute:
        click.echo(NO_EXECUTE_WARNING, err=export)  # CSV on stdout stays CSV
    for line in lines:
        click.echo(line)


def _one_action(flags: dict[str, bool]) -> str:
    """The one action whose flag is given, or a usage error."""
    chosen = [action for action, given in flags.items() if given]
    if len(chosen) != 1:
        raise click.UsageError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
            "--delete-offsets"
        )
    return chosen[0]


def _check_reset_options(
    spec: ResetSpec, topics: tuple[str, ...], all_topics: bool, dry_run: bool, execute: bool
) -> None:
    if sum(spec.scenarios) != 1:
        raise click.UsageError(
            "Option --reset-offsets takes exactly one of --to-earliest, --to-latest, --to-current, --to-offset, "
            "--to-datetime, --by-duration, --shift-by, --from-file"
        )
    if spec.by_duration is not None:
        try:
            parse_duration(spec.by_duration)
        except CommandError as exc:
            raise click.UsageError(str(exc)) from None
    if not topics and not all_topics and spec.from_file is None:
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


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What the action needs besides the groups."""

    topics: Sequence[str]
    all_topics: bool
    spec: ResetSpec
    execute: bool
    view: DescribeView
    export: bool
    timeout_ms: int
    isolation_level: int = 0


async def _run(
    bootstrap: str, action: str, groups: Sequence[str], all_groups: bool, options: RunOptions
) -> list[str]:
    view = options.view
    client_id = "samsa-consumer-groups"
    async with tool_client(
        bootstrap,
        client_id=client_id,
        request_timeout_ms=options.timeout_ms,
        isolation_level=options.isolation_level,
    ) as client:
        if action == "list":
            return await run_list(client, view)
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
        if action == "delete-offsets":
            return await run_delete_offsets(client, names[0], options.topics)
        return await run_reset(
            client, names, options.topics, options.all_topics, options.spec, options.execute, options.export
        )
