"""``samsa demo``: write a small topic to disk, then show what Kafka's storage layout looks like and how a read finds
an offset.

Steps: a clean ``--data-dir`` (default ``./data``); topic ``demo-events`` with 3 partitions, 16 KiB segments and an
index entry every 512 bytes, written through ``LogManager`` with a fixed clock and seed so every run prints the same
bytes; a clean shutdown; then the directory tree with sizes, ``dump-log`` of one segment and its index, and one
offset lookup walked step by step over the files themselves: binary search over the segments' base offsets (their
file names), binary search in the ``.index`` for the largest entry at or below the offset, then a scan of batch
headers from that byte position to the batch holding the offset.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.tree import Tree

from samsa.cli.dump_log import DumpOptions, dump_files
from samsa.clock import ManualClock
from samsa.records import Record, build_batch, iter_batches, iter_records
from samsa.storage.log_dir_reader import LogDirReader, SegmentFiles
from samsa.storage.segment import LOG_SUFFIX, filename_prefix

TOPIC = "demo-events"
PARTITIONS = 3
SEGMENT_BYTES = 16 * 1024
INDEX_INTERVAL_BYTES = 512
BATCHES = 1200
START_MS = 1_763_800_000_000
CLUSTER_ID = "c2Ftc2EtZGVtby0wMDAw"


@dataclass(frozen=True, slots=True)
class LookupStep:
    """One line of the walk-through."""

    title: str
    detail: str


def segment_base_offsets(partition_dir: Path) -> list[int]:
    reader = LogDirReader(partition_dir.parent)
    return [segment.base_offset for segment in reader.segments(reader.partition_dir(partition_dir.name))]


def walk_lookup(partition_dir: Path, target: int) -> tuple[list[LookupStep], Record | None]:
    """Find ``target`` the way a fetch does, returning each step taken and the record found."""
    steps: list[LookupStep] = []
    base = _find_segment(segment_base_offsets(partition_dir), target, steps)
    position = _find_position(partition_dir, base, target, steps)
    return steps, _scan(partition_dir, base, position, target, steps)


def _find_segment(bases: list[int], target: int, steps: list[LookupStep]) -> int:
    """The base offset of the segment holding ``target``: the last one <= ``target``, by binary search."""
    steps.append(LookupStep("segments", f"base offsets (from file names): {bases}"))
    lo, hi = 0, len(bases) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        verdict = "<=" if bases[mid] <= target else ">"
        steps.append(
            LookupStep("binary search", f"lo={lo} hi={hi} mid={mid}: base {bases[mid]} {verdict} {target}")
        )
        if bases[mid] <= target:
            lo = mid
        else:
            hi = mid - 1
    base = bases[lo]
    steps.append(LookupStep("segment", f"{filename_prefix(base)}{LOG_SUFFIX} holds offsets from {base}"))
    return base


def _find_position(partition_dir: Path, base: int, target: int, steps: list[LookupStep]) -> int:
    """Where the scan for ``target`` starts in the segment: the position of the largest indexed offset <= it."""
    with SegmentFiles(partition_dir, base).indexes() as (index, _):
        entries = index.offset_positions()
    lo, hi = 0, len(entries) - 1
    found = -1
    while lo <= hi:
        mid = (lo + hi) // 2
        offset, _ = entries[mid]
        relation = "<=" if offset <= target else ">"
        steps.append(
            LookupStep(
                "index search",
                f"entry {mid}: relative offset {offset - base} (offset {offset}) {relation} {target}",
            )
        )
        if offset <= target:
            found = mid
            lo = mid + 1
        else:
            hi = mid - 1
    if found < 0:
        steps.append(LookupStep("index entry", "no entry at or below the offset: start at byte 0"))
        return 0
    offset, position = entries[found]
    steps.append(
        LookupStep("index entry", f"offset {offset} -> byte position {position} ({len(entries)} entries)")
    )
    return position


def _scan(
    partition_dir: Path, base: int, position: int, target: int, steps: list[LookupStep]
) -> Record | None:
    """Read batch headers from ``position`` until the batch holding ``target``; its record."""
    data = SegmentFiles(partition_dir, base).log_path.read_bytes()
    for batch in iter_batches(data, position):
        contains = batch.base_offset <= target <= batch.last_offset
        steps.append(
            LookupStep(
                "scan",
                f"position {batch.position}: batch {batch.base_offset}..{batch.last_offset} "
                f"({batch.size_in_bytes} bytes) {'<- holds the offset' if contains else 'skip: only its header was read'}",
            )
        )
        if contains:
            record = next(r for r in iter_records(batch) if r.offset == target)
            scanned = batch.position - position
            steps.append(LookupStep("found", f"scanned {scanned} bytes of headers past the index entry"))
            return record
        if batch.base_offset > target:
            break
    return None


MARKER = ".samsa-storage-demo"  # in a directory this demo made: the only kind it empties again


def write_demo_data(data_dir: Path) -> None:
    """The topic, written through LogManager with a fixed clock and seed; ends with a clean shutdown. A
    directory from an earlier run (it has ``MARKER``) is emptied first; any other that is not empty is refused
    (click.ClickException), never deleted: it may be a broker's log dir."""
    from samsa.storage.config import LogConfig
    from samsa.storage.log_manager import LogManager

    if (data_dir / MARKER).exists():
        shutil.rmtree(data_dir)
    elif data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        raise click.ClickException(
            f"{data_dir} is not empty and was not made by this demo; give an empty or new --data-dir"
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / MARKER).touch()
    clock = ManualClock(START_MS, seed=7)
    config = LogConfig.from_properties(
        {"segment.bytes": SEGMENT_BYTES, "index.interval.bytes": INDEX_INTERVAL_BYTES}
    )
    manager = LogManager([data_dir], config, clock, node_id=0, cluster_id=CLUSTER_ID)
    manager.startup()
    try:
        logs = manager.create_topic(TOPIC, PARTITIONS)
        rng = clock.random()
        for n in range(BATCHES):
            tp_log = logs[n % PARTITIONS]
            count = rng.randint(1, 6)
            records = [
                Record(
                    0,
                    clock.milliseconds() + i,
                    f"user-{rng.randint(1, 40)}".encode(),
                    f'{{"event":"{rng.choice(["click", "view", "buy"])}","n":{n},"i":{i}}}'.encode(),
                )
                for i in range(count)
            ]
            tp_log.append_as_leader(
                build_batch([Record(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)])
            )
            clock.advance(rng.randint(1, 50))
        for log in logs:
            log.update_high_watermark(log.log_end_offset)
        manager.checkpoint_high_watermarks()
    finally:
        manager.shutdown()


def render_tree(data_dir: Path) -> Tree:
    tree = Tree(f"[bold]{data_dir}[/]")
    for child in sorted(data_dir.iterdir()):
        if child.is_dir():
            branch = tree.add(f"[bold blue]{child.name}/[/]")
            for f in sorted(child.iterdir()):
                branch.add(f"{f.name}  [dim]{f.stat().st_size:,} B[/]")
        elif child.name != MARKER:
            tree.add(f"{child.name}  [dim]{child.stat().st_size:,} B[/]")
    return tree


@click.command("demo")
@click.option(
    "--data-dir", type=click.Path(path_type=Path), default=Path("data/storage-demo"), show_default=True
)
def demo(data_dir: Path) -> None:
    """Write a 3-partition topic with small segments and show how Kafka's on-disk layout serves a lookup."""
    console = Console(highlight=False)
    write_demo_data(data_dir)
    console.rule(
        f"[bold]{TOPIC}: {PARTITIONS} partitions, segment.bytes={SEGMENT_BYTES}, "
        f"index.interval.bytes={INDEX_INTERVAL_BYTES}"
    )
    console.print(render_tree(data_dir))

    partition_dir = data_dir / f"{TOPIC}-0"
    bases = segment_base_offsets(partition_dir)
    segment = SegmentFiles(partition_dir, bases[0])
    console.rule("[bold]dump-log (first batches of one segment, then its index)")
    lines: list[str] = []
    dump_files([segment.log_path], DumpOptions(deep_iteration=True), lines.append, lines.append)
    for line in lines[:12]:
        console.print(line, markup=False, soft_wrap=True)
    console.print(f"... ({len(lines) - 12} more lines)")
    index_lines: list[str] = []
    dump_files([segment.index_path], DumpOptions(), index_lines.append, index_lines.append)
    for line in index_lines:
        console.print(line, markup=False, soft_wrap=True)

    target = bases[len(bases) // 2] + 25 if len(bases) > 1 else 25
    console.rule(f"[bold]lookup of offset {target} in {partition_dir.name}")
    steps, record = walk_lookup(partition_dir, target)
    for step in steps:
        console.print(f"[cyan]{step.title:>13}[/]  {step.detail}", soft_wrap=True)
    if record is None:
        console.print(f"[red]offset {target} not found[/]")
        raise SystemExit(1)
    key = record.key.decode() if record.key else None
    value = record.value.decode() if record.value else None
    console.print(
        f"[bold green]{'record':>13}[/]  offset={record.offset} timestamp={record.timestamp} key={key} value={value}",
        soft_wrap=True,
    )
