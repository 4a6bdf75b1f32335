"""``samsa dump-log``: print segment files in the layout of Kafka's ``kafka-dump-log.sh`` (DumpLogSegments).

Lines it prints (``<TsType>`` is CreateTime, LogAppendTime or NoTimestampType):

    Dumping <file>
    Log starting offset: <base>                                            (.log)
    baseOffset: .. lastOffset: .. count: .. baseSequence: .. lastSequence: .. producerId: .. producerEpoch: ..
      partitionLeaderEpoch: .. isTransactional: .. isControl: .. deleteHorizonMs: .. position: .. <TsType>: ..
      size: .. magic: .. compresscodec: .. crc: .. isvalid: ..             (one line per v2 batch)
    offset: .. position: .. <TsType>: .. size: .. magic: .. compresscodec: .. crc: .. isvalid: ..  (v0/v1)
    | offset: .. <TsType>: .. keySize: .. valueSize: .. sequence: .. headerKeys: [..] key: .. payload: ..
                                                                           (--deep-iteration / --print-data-log)
    Found <n> invalid bytes at the end of <name>
    offset: <o> position: <p>                                              (.index)
    timestamp: <t> offset: <o>                                             (.timeindex)
    version: .. producerId: .. firstOffset: .. lastOffset: .. lastStableOffset: ..  (.txnindex)

Index problems go to stderr as Kafka prints them ("Mismatches in :<path>", "Found timestamp mismatch in :<path>",
...). Differences from Kafka, on purpose: a batch failing its CRC, an unframeable batch, an index failing its sanity
check or disagreeing with its log make the exit code 1 (Kafka prints and exits 0), and each such problem is also
reported on stderr naming the file and the byte position. Legacy record lines end with ``crc: N`` (Kafka prints a
stray ``}`` there). Index files are read as raw entries, so Kafka's files and ours are dumped alike.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from samsa.records import (
    BatchView,
    CompressionType,
    Record,
    RecordsError,
    iter_batches,
    iter_records,
    parse_control_record,
)
from samsa.records.view import DELETE_HORIZON_MASK

INT32_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
TXN_ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
RECORD_INDENT = "|"
_TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

Printer = Callable[[str], None]


@dataclass(slots=True)
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    index_sanity_only: bool = False
    verify_index_only: bool = False
    max_bytes: int = INT32_MAX
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE


@dataclass(slots=True)
class DumpReport:
    """What went wrong across all files; any entry makes the exit code 1."""

    errors: list[str] = field(default_factory=list)
    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(
            self.errors
            or self.index_mismatches
            or self.time_mismatches
            or self.time_out_of_order
            or self.time_not_found
        )

    def print(self, err: Printer) -> None:
        for path, pairs in self.index_mismatches.items():
            err(f"Mismatches in :{path}")
            for index_offset, log_offset in pairs:
                err(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for path, pairs in self.time_mismatches.items():
            err(f"Found timestamp mismatch in :{path}")
            for index_ts, log_ts in pairs:
                err(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for path, pairs in self.time_out_of_order.items():
            err(f"Found out of order timestamp in :{path}")
            for index_ts, previous in pairs:
                err(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}")
        for pairs in self.time_not_found.values():
            err("The following indexed offsets are not found in the log.")
            for indexed, found in pairs:
                err(f"Indexed offset: {indexed}, found log offset: {found}")
        for message in self.errors:
            err(message)


def base_offset_of(path: Path) -> int:
    return int(path.name.split(".")[0])


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _decode_text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


# --- .log ----------------------------------------------------------------------------------------------------


def batch_line(batch: BatchView, position: int) -> str:
    ts_name = _TS_NAMES[batch.timestamp_type]
    codec = (
        CompressionType(batch.compression).kafka_name if batch.compression <= 4 else str(batch.compression)
    )
    if batch.magic >= 2:
        horizon = (
            f"OptionalLong[{batch.base_timestamp}]"
            if batch.attributes & DELETE_HORIZON_MASK
            else "OptionalLong.empty"
        )
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.records_count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
            f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_java_bool(batch.is_transactional)} isControl: {_java_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {position} {ts_name}: {batch.max_timestamp} size: {batch.size_in_bytes} "
        f"magic: {batch.magic} compresscodec: {codec} crc: {batch.stored_crc} isvalid: {_java_bool(batch.is_valid())}"
    )


def control_text(record: Record) -> str:
    """What Kafka prints for a control record: the end-transaction marker, or the control type and its id."""
    try:
        control = parse_control_record(record)
    except RecordsError as exc:
        return f" controlType: UNKNOWN (unreadable control record: {exc})"
    if control.marker is not None:
        return (
            f" endTxnMarker: {control.control_type.name} coordinatorEpoch: {control.marker.coordinator_epoch}"
        )
    return f" controlType: {control.control_type.name}({int(control.control_type)})"


def record_lines(batch: BatchView, print_data: bool) -> list[str]:
    ts_name = _TS_NAMES[batch.timestamp_type]
    lines: list[str] = []
    compressed_legacy = batch.magic < 2 and batch.compression != 0
    for record in iter_records(batch, verify_crc=False):
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        parts = [
            f"{RECORD_INDENT} offset: {record.offset} {ts_name}: {record.timestamp} "
            f"keySize: {key_size} valueSize: {value_size}"
        ]
        if batch.magic >= 2:
            base_seq = batch.base_sequence
            sequence = (
                -1 if base_seq < 0 else (base_seq + record.offset - batch.base_offset) % (INT32_MAX + 1)
            )
            keys = ",".join(key for key, _ in record.headers)
            parts.append(f" sequence: {sequence} headerKeys: [{keys}]")
        elif not compressed_legacy:
            parts.append(f" isValid: {_java_bool(batch.is_valid())} crc: {batch.stored_crc}")
        if batch.is_control:
            parts.append(control_text(record))
        if print_data and not batch.is_control:
            if record.key is not None:
                parts.append(f" key: {_decode_text(record.key)}")
            if record.value is not None:
                parts.append(f" payload: {_decode_text(record.value)}")
        lines.append("".join(parts))
    return lines


def dump_log_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    if path.name.endswith(".log"):
        out(f"Log starting offset: {base_offset_of(path)}")
    data = path.read_bytes()
    end = min(len(data), opts.max_bytes)
    deep = opts.deep_iteration or opts.print_data_log
    valid_bytes = 0
    position = 0
    try:
        for batch in iter_batches(data, 0, end):
            position = batch.position
            out(batch_line(batch, valid_bytes))
            if not batch.is_valid():
                report.errors.append(
                    f"Corrupt batch in {path} at position {batch.position}: stored crc {batch.stored_crc}, "
                    f"computed crc {batch.computed_crc()}, size {batch.size_in_bytes}"
                )
            if deep:
                for line in record_lines(batch, opts.print_data_log):
                    out(line)
            valid_bytes += batch.size_in_bytes
            position = valid_bytes
    except RecordsError as exc:
        report.errors.append(f"Corrupt data in {path} at position {position}: {exc}")
        return
    trailing = len(data) - valid_bytes
    if trailing > 0 and opts.max_bytes == INT32_MAX:
        out(f"Found {trailing} invalid bytes at the end of {path.name}")


# --- .index / .timeindex -----------------------------------------------------------------------------------


def read_offset_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """(absolute offset, position) for every whole 8-byte entry, stopping at a zeroed (preallocated) one."""
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // OFFSET_ENTRY.size):
        relative, position = OFFSET_ENTRY.unpack_from(data, i * OFFSET_ENTRY.size)
        if relative == 0 and i > 0:
            break
        entries.append((base_offset + relative, position))
    return entries


def read_time_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """(timestamp, absolute offset) for every whole 12-byte entry, stopping at a zeroed (preallocated) one."""
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // TIME_ENTRY.size):
        timestamp, relative = TIME_ENTRY.unpack_from(data, i * TIME_ENTRY.size)
        if relative == 0 and i > 0:
            break
        entries.append((timestamp, base_offset + relative))
    return entries


def _last_raw_offset(data: bytes, entry: struct.Struct, base_offset: int, field_index: int) -> int:
    count = len(data) // entry.size
    return base_offset + int(entry.unpack_from(data, (count - 1) * entry.size)[field_index])


def offset_index_sanity(path: Path, data: bytes, base_offset: int) -> str | None:
    """Kafka's OffsetIndex.sanityCheck: the reason the index is corrupt, or None."""
    if len(data) % OFFSET_ENTRY.size:
        return f"Index file {path} is corrupt, found {len(data)} bytes which is not a multiple of {OFFSET_ENTRY.size}"
    if data:
        last = _last_raw_offset(data, OFFSET_ENTRY, base_offset, 0)
        if last < base_offset:
            return (
                f"Corrupt index found, index file ({path}) has non-zero size but the last offset is {last} "
                f"which is less than the base offset {base_offset}"
            )
    return None


def time_index_sanity(path: Path, data: bytes, base_offset: int) -> str | None:
    """Kafka's TimeIndex.sanityCheck: the reason the index is corrupt, or None."""
    if len(data) % TIME_ENTRY.size:
        return f"Time index file {path} is corrupt, found {len(data)} bytes which is not a multiple of {TIME_ENTRY.size}"
    if data:
        count = len(data) // TIME_ENTRY.size
        first_ts = TIME_ENTRY.unpack_from(data, 0)[0]
        last_ts = TIME_ENTRY.unpack_from(data, (count - 1) * TIME_ENTRY.size)[0]
        last_offset = _last_raw_offset(data, TIME_ENTRY, base_offset, 1)
        if last_ts < first_ts:
            return (
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last timestamp "
                f"is {last_ts} which is less than the first timestamp {first_ts}"
            )
        if last_offset < base_offset:
            return (
                f"Corrupt time index found, time index file ({path}) has non-zero size but the last offset is "
                f"{last_offset} which is less than the base offset {base_offset}"
            )
    return None


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".")[0] + suffix)


def _first_batch_at(log: bytes, position: int, limit: int) -> BatchView | None:
    for batch in iter_batches(log, position, min(len(log), position + limit)):
        return batch
    return None


def dump_index_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    base = base_offset_of(path)
    data = path.read_bytes()
    entries = read_offset_index(data, base)
    if not entries:
        out(f"{path} is empty.")
        return
    if opts.index_sanity_only:
        problem = offset_index_sanity(path, data, base)
        if problem:
            report.errors.append(problem)
        else:
            out(f"{path} passed sanity check.")
        return
    log = _sibling(path, ".log").read_bytes()
    for offset, position in entries:
        try:
            batch = _first_batch_at(log, position, opts.max_message_size)
        except RecordsError as exc:
            report.errors.append(f"Corrupt data in {_sibling(path, '.log')} at position {position}: {exc}")
            batch = None
        found = -1 if batch is None else batch.last_offset
        if found != offset:
            report.index_mismatches.setdefault(str(path.absolute()), []).append((offset, found))
        if not opts.verify_index_only:
            out(f"offset: {offset} position: {position}")


def _lookup_position(entries: list[tuple[int, int]], target: int) -> int:
    """Position of the largest indexed offset <= target (0 when none), as OffsetIndex.lookup answers."""
    position = 0
    for offset, pos in entries:
        if offset > target:
            break
        position = pos
    return position


def dump_time_index_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    base = base_offset_of(path)
    data = path.read_bytes()
    if opts.index_sanity_only:
        problem = time_index_sanity(path, data, base)
        if problem:
            report.errors.append(problem)
        else:
            out(f"{path} passed sanity check.")
        return
    log = _sibling(path, ".log").read_bytes()
    index_path = _sibling(path, ".index")
    offsets = read_offset_index(index_path.read_bytes(), base) if index_path.exists() else []
    key = str(path.absolute())
    previous = -1
    for timestamp, offset in read_time_index(data, base):
        try:
            batch = next(
                (b for b in iter_batches(log, _lookup_position(offsets, offset)) if b.last_offset >= offset),
                None,
            )
            if batch is None:
                report.time_not_found.setdefault(key, []).append((offset, -1))
            elif batch.last_offset != offset:
                report.time_not_found.setdefault(key, []).append((offset, batch.last_offset))
            else:
                max_ts = max((r.timestamp for r in iter_records(batch, verify_crc=False)), default=-1)
                if max_ts != timestamp:
                    report.time_mismatches.setdefault(key, []).append((timestamp, max_ts))
                if previous >= timestamp:
                    report.time_out_of_order.setdefault(key, []).append((timestamp, previous))
        except RecordsError as exc:
            report.errors.append(
                f"Corrupt data in {_sibling(path, '.log')} while checking offset {offset}: {exc}"
            )
        if not opts.verify_index_only:
            out(f"timestamp: {timestamp} offset: {offset}")
        previous = timestamp


def dump_txn_index_file(path: Path, out: Printer, report: DumpReport) -> None:
    data = path.read_bytes()
    if len(data) % TXN_ENTRY.size:
        report.errors.append(
            f"Transaction index {path} is corrupt: {len(data)} bytes is not a multiple of 34"
        )
    for i in range(len(data) // TXN_ENTRY.size):
        version, pid, first, last, lso = TXN_ENTRY.unpack_from(data, i * TXN_ENTRY.size)
        out(
            f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} lastStableOffset: {lso}"
        )


# --- driver --------------------------------------------------------------------------------------------------


def dump_files(files: list[Path], opts: DumpOptions, out: Printer, err: Printer) -> DumpReport:
    """Dump every file in order; problems are collected in the report and printed to ``err`` at the end."""
    report = DumpReport()
    for path in files:
        out(f"Dumping {path}")
        suffix = path.suffix
        try:
            if suffix == ".log":
                dump_log_file(path, opts, out, report)
            elif suffix == ".index":
                dump_index_file(path, opts, out, report)
            elif suffix == ".timeindex":
                dump_time_index_file(path, opts, out, report)
            elif suffix == ".txnindex":
                dump_txn_index_file(path, out, report)
            else:
                err(f"Ignoring unknown file {path}")
        except BrokenPipeError:
            raise  # the reader went away (``| head``): the command's wrapper exits quietly
        except OSError as exc:
            report.errors.append(f"Cannot read {exc.filename or path}: {exc.strerror or exc}")
        except ValueError as exc:
            report.errors.append(f"Cannot dump {path}: {exc}")
    report.print(err)
    return report


@click.command("dump-log")
@click.option(
    "--files",
    required=True,
    help="Comma-separated data and index files (.log, .index, .timeindex, .txnindex).",
)
@click.option(
    "--print-data-log", is_flag=True, help="Print each record's key and payload (implies --deep-iteration)."
)
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
@click.option("--index-sanity-check", is_flag=True, help="Only run the index sanity check.")
@click.option(
    "--verify-index-only", is_flag=True, help="Check index entries against the log without printing them."
)
@click.option(
    "--max-bytes",
    type=int,
    default=INT32_MAX,
    show_default=True,
    help="Read at most this many bytes of a .log.",
)
@click.option(
    "--max-message-size",
    type=int,
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    help="Largest batch read when checking an index entry.",
)
def dump_log(
    files: str,
    print_data_log: bool,
    deep_iteration: bool,
    index_sanity_check: bool,
    verify_index_only: bool,
    max_bytes: int,
    max_message_size: int,
) -> None:
    """Print segment files as Kafka's kafka-dump-log.sh does."""
    opts = DumpOptions(
        print_data_log, deep_iteration, index_sanity_check, verify_index_only, max_bytes, max_message_size
    )
    paths = [Path(name) for name in files.split(",") if name]
    report = dump_files(paths, opts, click.echo, lambda line: click.echo(line, err=True))
    if report.failed:
        raise SystemExit(1)
