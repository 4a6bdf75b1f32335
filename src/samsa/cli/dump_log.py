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
    producerId: .. producerEpoch: .. coordinatorEpoch: .. currentTxnFirstOffset: OptionalLong[..]|OptionalLong.empty
      lastTimestamp: .. firstSequence: .. lastSequence: .. lastOffset: .. offsetDelta: .. timestamp: ..
                                      (.snapshot, one line per producer; from firstSequence on only when the
                                       entry names a batch)

``--offsets-decoder`` prints every record of a ``__consumer_offsets`` segment with its key and value decoded
(``key: {"type":"1","data":{...}} payload: {"version":"3","data":{...}}``, ``payload: <DELETE>`` for a
tombstone; :mod:`samsa.cli.offsets_json`), as Kafka's option does; it implies ``--print-data-log``.

Index problems go to stderr as Kafka prints them ("Mismatches in :<path>", "Found timestamp mismatch in :<path>",
...). Differences from Kafka, on purpose: a batch failing its CRC, an unframeable batch, an index failing its sanity
check or disagreeing with its log, an index entry pointing outside its log and a missing file make the exit
code 1 (Kafka prints and exits 0), as does a producer snapshot failing its CRC, version or size check, and each such problem is also reported on stderr naming the file and the byte
position. Legacy record lines end with ``isValid: .. crc: N``, a compressed wrapper's inner messages each with their
own (Kafka 3.x prints a stray ``}`` there). Index files are read through storage's read-only ``OffsetIndex`` / ``TimeIndex``, whose entries
end at the first zeroed slot (where Kafka's dump stops too), so the sanity check of an active segment's
still-preallocated time index passes where Kafka's reports its zeros as a last timestamp of 0. Nothing is opened
for writing: dumping the files of a running broker, or of a read-only mount, changes nothing.
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
from samsa.records.batch_view import DELETE_HORIZON_MASK
from samsa.records.legacy import inner_message_crcs
from samsa.storage.index import OffsetIndex, TimeIndex
from samsa.storage.log_dir_reader import SegmentFiles
from samsa.storage.producer_state import (
    SNAPSHOT_SUFFIX,
    CorruptSnapshotError,
    ProducerStateEntry,
    read_snapshot,
)
from samsa.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SET_ASIDE_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_from_file_name,
)

INT32_MAX = 2**31 - 1
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
TXN_ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
RECORD_INDENT = "|"
_TS_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

Printer = Callable[[str], None]
RecordData = Callable[[Record], str]  # a record's `` key: .. payload: ..`` text


@dataclass(slots=True)
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    index_sanity_only: bool = False
    verify_index_only: bool = False
    max_bytes: int = INT32_MAX
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    offsets_decoder: bool = False


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


def plain_record_data(record: Record) -> str:
    """Key and payload as UTF-8 text, each left out when null (Kafka's default decoder)."""
    parts = []
    if record.key is not None:
        parts.append(f" key: {_decode_text(record.key)}")
    if record.value is not None:
        parts.append(f" payload: {_decode_text(record.value)}")
    return "".join(parts)


def record_lines(batch: BatchView, data: RecordData | None) -> list[str]:
    """One line per record; ``data`` (when given) prints each non-control record's key and payload."""
    ts_name = _TS_NAMES[batch.timestamp_type]
    lines: list[str] = []
    compressed_legacy = batch.magic < 2 and batch.compression != 0
    inner_crcs = inner_message_crcs(batch) if compressed_legacy else []
    for n, record in enumerate(iter_records(batch, verify_crc=False)):
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
        elif compressed_legacy:
            valid, crc = inner_crcs[n]
            parts.append(f" isValid: {_java_bool(valid)} crc: {crc}")
        else:
            parts.append(f" isValid: {_java_bool(batch.is_valid())} crc: {batch.stored_crc}")
        if batch.is_control:
            parts.append(control_text(record))
        if data is not None and not batch.is_control:
            parts.append(data(record))
        lines.append("".join(parts))
    return lines


def dump_log_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    data = path.read_bytes()
    if path.name.endswith((LOG_SUFFIX, LOG_SUFFIX + SET_ASIDE_SUFFIX)):
        base = offset_from_file_name(path.name)
        if base is None:
            raise ValueError(f"the file name does not start with a base offset: {path.name}")
        out(f"Log starting offset: {base}")
    end = min(len(data), opts.max_bytes)
    print_data = opts.print_data_log or opts.offsets_decoder
    deep = opts.deep_iteration or print_data
    record_data = _record_data(opts) if print_data else None
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
                for line in record_lines(batch, record_data):
                    out(line)
            valid_bytes += batch.size_in_bytes
            position = valid_bytes
    except RecordsError as exc:
        report.errors.append(f"Corrupt data in {path} at position {position}: {exc}")
        return
    trailing = len(data) - valid_bytes
    if trailing > 0 and opts.max_bytes == INT32_MAX:
        out(f"Found {trailing} invalid bytes at the end of {path.name}")


def _record_data(opts: DumpOptions) -> RecordData:
    if opts.offsets_decoder:
        from .offsets_json import offsets_record_text  # the generated group-record codecs, only when asked

        return offsets_record_text
    return plain_record_data


# --- .index / .timeindex (read through storage's read-only indexes) ------------------------------------------


def offset_index_sanity(index: OffsetIndex) -> str | None:
    """Kafka's OffsetIndex.sanityCheck, in Kafka's words: the reason the index is corrupt, or None."""
    if index.length % index.entry_size:
        return (
            f"Index file {index.path} is corrupt, found {index.length} bytes which is not a multiple of "
            f"{index.entry_size}"
        )
    if index.entries and index.last_offset < index.base_offset:
        return (
            f"Corrupt index found, index file ({index.path}) has non-zero size but the last offset is "
            f"{index.last_offset} which is less than the base offset {index.base_offset}"
        )
    return None


def time_index_sanity(index: TimeIndex) -> str | None:
    """Kafka's TimeIndex.sanityCheck, in Kafka's words: the reason the index is corrupt, or None."""
    if index.length % index.entry_size:
        return (
            f"Time index file {index.path} is corrupt, found {index.length} bytes which is not a multiple of "
            f"{index.entry_size}"
        )
    if index.entries:
        first, last = index.entry(0), index.last_entry
        if last.timestamp < first.timestamp:
            return (
                f"Corrupt time index found, time index file ({index.path}) has non-zero size but the last "
                f"timestamp is {last.timestamp} which is less than the first timestamp {first.timestamp}"
            )
        if last.offset < index.base_offset:
            return (
                f"Corrupt time index found, time index file ({index.path}) has non-zero size but the last offset "
                f"is {last.offset} which is less than the base offset {index.base_offset}"
            )
    return None


def _log_position(log: bytes, position: int, offset: int) -> int:
    """An index entry's position, checked to lie in the log (a garbage index points anywhere): ValueError if not."""
    if not 0 <= position <= len(log):
        raise ValueError(
            f"unreadable index: the entry for offset {offset} points to position {position}, outside the "
            f"{len(log)}-byte log"
        )
    return position


def _first_batch_at(log: bytes, position: int, limit: int) -> BatchView | None:
    for batch in iter_batches(log, position, min(len(log), position + limit)):
        return batch
    return None


def _report_sanity(problem: str | None, path: Path, out: Printer, report: DumpReport) -> None:
    if problem:
        report.errors.append(problem)
    else:
        out(f"{path} passed sanity check.")


def dump_index_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    path.stat()  # a missing file is an error here, not an empty index
    segment = SegmentFiles.at(path)
    with segment.indexes() as (index, _):
        if not index.entries:
            out(f"{path} is empty.")
            return
        if opts.index_sanity_only:
            _report_sanity(offset_index_sanity(index), path, out, report)
            return
        entries = [index.entry(n) for n in range(index.entries)]
    log = segment.log_path.read_bytes()
    for entry in entries:
        try:
            position = _log_position(log, entry.position, entry.offset)
            batch = _first_batch_at(log, position, opts.max_message_size)
        except RecordsError as exc:
            report.errors.append(f"Corrupt data in {segment.log_path} at position {entry.position}: {exc}")
            batch = None
        found = -1 if batch is None else batch.last_offset
        if found != entry.offset:
            report.index_mismatches.setdefault(str(path.absolute()), []).append((entry.offset, found))
        if not opts.verify_index_only:
            out(f"offset: {entry.offset} position: {entry.position}")


def dump_time_index_file(path: Path, opts: DumpOptions, out: Printer, report: DumpReport) -> None:
    path.stat()  # a missing file is an error here, not an empty index
    segment = SegmentFiles.at(path)
    with segment.indexes() as (offset_index, time_index):
        if opts.index_sanity_only:
            _report_sanity(time_index_sanity(time_index), path, out, report)
            return
        log = segment.log_path.read_bytes()
        check = _TimeEntryCheck(log, segment.log_path, str(path.absolute()), report)
        previous = -1
        for n in range(time_index.entries):
            entry = time_index.entry(n)
            position = _log_position(log, offset_index.lookup(entry.offset).position, entry.offset)
            check.check(position, entry.timestamp, entry.offset, previous)
            if not opts.verify_index_only:
                out(f"timestamp: {entry.timestamp} offset: {entry.offset}")
            previous = entry.timestamp


@dataclass(slots=True)
class _TimeEntryCheck:
    """Kafka's time-index checks: the batch ending at an entry's offset exists, its largest timestamp is the
    entry's, and the entry's timestamp is above the previous one (checked only when the batch matched)."""

    log: bytes
    log_path: Path
    key: str
    report: DumpReport

    def check(self, position: int, timestamp: int, offset: int, previous: int) -> None:
        report, key = self.report, self.key
        try:
            batch = next((b for b in iter_batches(self.log, position) if b.last_offset >= offset), None)
            if batch is None or batch.last_offset != offset:
                found = -1 if batch is None else batch.last_offset
                report.time_not_found.setdefault(key, []).append((offset, found))
                return
            max_ts = max((r.timestamp for r in iter_records(batch, verify_crc=False)), default=-1)
            if max_ts != timestamp:
                report.time_mismatches.setdefault(key, []).append((timestamp, max_ts))
            if previous >= timestamp:
                report.time_out_of_order.setdefault(key, []).append((timestamp, previous))
        except RecordsError as exc:
            report.errors.append(f"Corrupt data in {self.log_path} while checking offset {offset}: {exc}")


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


# --- .snapshot (producer state) -------------------------------------------------------------------------------


def snapshot_entry_line(entry: ProducerStateEntry) -> str:
    """One producer of a snapshot: its epochs, open transaction and last timestamp, then the batch it names."""
    txn_first = entry.current_txn_first_offset
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
        f"{f'OptionalLong[{txn_first}]' if txn_first >= 0 else 'OptionalLong.empty'} "
        f"lastTimestamp: {entry.last_timestamp}"
    )
    if entry.batches:
        batch = entry.batches[0]
        line += (
            f" firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} lastOffset: {batch.last_offset} "
            f"offsetDelta: {batch.offset_delta} timestamp: {batch.timestamp}"
        )
    return line


def dump_snapshot_file(path: Path, out: Printer, report: DumpReport) -> None:
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as exc:
        report.errors.append(f"Cannot dump {path}: {exc.reason}")
        return
    for entry in entries:
        out(snapshot_entry_line(entry))


# --- driver --------------------------------------------------------------------------------------------------


def dump_files(files: list[Path], opts: DumpOptions, out: Printer, err: Printer) -> DumpReport:
    """Dump every file in order; problems are collected in the report and printed to ``err`` at the end."""
    report = DumpReport()
    for path in files:
        out(f"Dumping {path}")
        if not path.exists():
            report.errors.append(f"Cannot read {path}: No such file or directory")
            continue
        suffix = path.suffix
        if (
            suffix == SET_ASIDE_SUFFIX
        ):  # a segment recovery set aside (``*.log.salvage``): read as what it was
            suffix = Path(path.stem).suffix
        try:
            if suffix == LOG_SUFFIX:
                dump_log_file(path, opts, out, report)
            elif suffix == INDEX_SUFFIX:
                dump_index_file(path, opts, out, report)
            elif suffix == TIME_INDEX_SUFFIX:
                dump_time_index_file(path, opts, out, report)
            elif suffix == TXN_INDEX_SUFFIX:
                dump_txn_index_file(path, out, report)
            elif suffix == SNAPSHOT_SUFFIX:
                dump_snapshot_file(path, out, report)
            else:
                err(f"Ignoring unknown file {path}")
        except BrokenPipeError:
            raise  # the reader went away (``| head``): the command's wrapper exits quietly
        except OSError as exc:
            report.errors.append(f"Cannot read {exc.filename or path}: {exc.strerror or exc}")
        except (ValueError, struct.error) as exc:
            report.errors.append(f"Cannot dump {path}: {exc}")
    report.print(err)
    return report


@click.command("dump-log")
@click.option(
    "--files",
    required=True,
    help="Comma-separated data, index and producer snapshot files (.log, .index, .timeindex, .txnindex, .snapshot).",
)
@click.option(
    "--print-data-log", is_flag=True, help="Print each record's key and payload (implies --deep-iteration)."
)
@click.option("--deep-iteration", is_flag=True, help="Print every record, not only batch headers.")
@click.option(
    "--offsets-decoder",
    is_flag=True,
    help="Decode records as __consumer_offsets keys and values (implies --print-data-log).",
)
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
    offsets_decoder: bool,
) -> None:
    """Print segment files as Kafka's kafka-dump-log.sh does."""
    opts = DumpOptions(
        print_data_log,
        deep_iteration,
        index_sanity_check,
        verify_index_only,
        max_bytes,
        max_message_size,
        offsets_decoder,
    )
    paths = [Path(name) for name in files.split(",") if name]
    report = dump_files(paths, opts, click.echo, lambda line: click.echo(line, err=True))
    if report.failed:
        raise SystemExit(1)
