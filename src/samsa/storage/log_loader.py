"""Loading a partition directory: leftovers of interrupted operations, segments, and recovery (Kafka's ``LogLoader``).

Sequence (storage spec 7.3 and 7.5):

1. Delete ``*.deleted`` files (not ``*.checkpoint.deleted``). Collect ``*.cleaned`` and ``*.swap`` files; a
   ``.swap`` whose base offset is >= the smallest ``.cleaned`` base belongs to an unfinished split or clean and
   is deleted; then every ``.cleaned`` file is deleted.
2. For the remaining ``.log.swap`` segments, delete the regular files they replace (base offsets in
   [min swap base, max swap next offset)), then drop the ``.swap`` suffix.
3. Delete index files with no ``.log``; open every ``.log``; a segment with no ``.index`` is recovered.
4. After an unclean shutdown, recover every segment from the one holding the recovery point to the end
   (``LogSegment.recover`` cuts a segment at its first invalid, partial or non-increasing batch; one that cannot
   be read is emptied); the bytes cut are kept beside it (``*.log.cut-at-<position>.salvage``, unless all
   zeros), and every later segment is set aside (renamed ``*.salvage``, kept for the operator). After a clean
   shutdown the active segment is checked (``LogSegment.check``) and recovered if it fails; the other segments
   are checked when first read; then a batch beyond the latest producer snapshot (written at the log end by a
   clean stop) that repeats a batch the snapshot holds (same producer id, epoch and sequences: a copy with a new
   base offset, which its CRC does not cover) is cut with what follows it, kept aside
   (``*.log.repeated-at-<position>.salvage``) and said at ERROR (``cut_repeated_batches``): Kafka loads it, and
   its records are read twice. Every recovery, removal and set-aside is logged at WARN with the file, offsets
   and bytes; ``LoadedLog.report`` counts them for the directory's summary line.
   Then, unless the log is replicated, it continues after every offset it is known to have handed out: those of
   the segments set aside, of valid batches in bytes cut, its checkpointed recovery point and high watermark,
   its latest producer snapshot, and after an unclean shutdown in another boot its log-end claim (``log_end_claims``:
   an OS crash can lose the tail the page cache held). Damage can take records; it never makes the log hand
   their offsets out again.
5. If the log end is below the log-start checkpoint, every segment is set aside (renamed ``*.salvage``: the end
   was lost, or the checkpoint is wrong), said at WARN; after a clean shutdown a log start beyond the
   checkpointed end is a wrong checkpoint and is not believed. With no segment left, an empty one is created at
   the log start offset. The active segment's indexes get their full size back.
6. Producer state (``producer_state``): snapshots that match no segment base are deleted (but the latest one
   beyond the last segment's base is kept), then the state is loaded from the latest snapshot at or below the log
   end and the batches after it are replayed, and a snapshot is written at the log end. After a clean shutdown
   with no snapshot at all (data from before producer state existed) the replay is skipped, as Kafka skips it,
   unless the last segment holds a batch with a producer id: then the snapshots were lost (said at WARN).

Runs on one thread before the ``Log`` exists; raises ``LogSegmentOffsetOverflowError`` for legacy segments that
need splitting (not supported).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from samsa.clock import Clock
from samsa.records import CorruptRecordError

from .config import LogConfig
from .file_records import FileRecords
from .leader_epoch import LeaderEpochFileCache
from .producer_state import (
    INT32_MAX,
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    ProducerStateManager,
    read_snapshot,
    snapshot_file,
)
from .segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SET_ASIDE_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogSegment,
    segment_file,
)
from .segment import offset_from_file_name as _offset_of
from .segments import LogSegments
from .txn_index import AbortedTxn

if TYPE_CHECKING:
    from samsa.records.batch_view import BatchView

_log = logging.getLogger(__name__)

_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


@dataclass(slots=True)
class LoadReport:
    """What loading one partition found and did, for the log directory's summary line."""

    segments_checked: int = 0
    segments_recovered: int = 0
    bytes_truncated: int = 0
    set_aside: list[Path] = field(default_factory=list)
    cut_held_to: int = -1
    """The offset after the valid batches found in bytes recovery cut (``LogSegment.cut_claims``), -1 when
    none."""
    txn_rebuild_from: int = -1
    """The base offset of the first segment whose ``.txnindex`` is rebuilt (recovered or damaged), -1: none."""

    def rebuild_txn_index_from(self, base_offset: int) -> None:
        if self.txn_rebuild_from < 0 or base_offset < self.txn_rebuild_from:
            self.txn_rebuild_from = base_offset

    def add(self, other: LoadReport) -> None:
        """Count ``other`` in (a log directory's summary of its partitions)."""
        self.segments_checked += other.segments_checked
        self.segments_recovered += other.segments_recovered
        self.bytes_truncated += other.bytes_truncated
        self.set_aside += other.set_aside
        self.cut_held_to = max(self.cut_held_to, other.cut_held_to)


@dataclass(frozen=True, slots=True)
class LoadedLog:
    segments: LogSegments
    log_end_offset: int
    recovery_point: int
    log_start_offset: int
    producer_state: ProducerStateManager
    report: LoadReport = field(default_factory=LoadReport)


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file())


def remove_temp_files_and_collect_swap_files(directory: Path) -> list[Path]:
    """Pass 1: delete ``.deleted`` and ``.cleaned`` files and swaps of unfinished operations; the other swaps."""
    cleaned: list[Path] = []
    swaps: list[Path] = []
    for path in _files(directory):
        name = path.name
        if name.endswith(DELETED_SUFFIX) and not name.endswith(".checkpoint" + DELETED_SUFFIX):
            path.unlink(missing_ok=True)
        elif name.endswith(CLEANED_SUFFIX) and _offset_of(name) is not None:
            cleaned.append(path)
        elif name.endswith(SWAP_SUFFIX) and _offset_of(name) is not None:
            swaps.append(path)
    min_cleaned = min((_offset_of(p.name) or 0 for p in cleaned), default=None)
    kept: list[Path] = []
    for path in swaps:
        if min_cleaned is not None and (_offset_of(path.name) or 0) >= min_cleaned:
            path.unlink(missing_ok=True)
        else:
            kept.append(path)
    for path in cleaned:
        path.unlink(missing_ok=True)
    return kept


def complete_swaps(directory: Path, swaps: list[Path]) -> None:
    """Passes 2 and 3: delete the segments the swaps replace, then remove the ``.swap`` suffix."""
    swap_logs = [p for p in swaps if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    if swap_logs:
        bases = [_offset_of(p.name) or 0 for p in swap_logs]
        ends: list[int] = []
        for path, base in zip(swap_logs, bases, strict=True):
            records = FileRecords.open(path)
            ends.append(max((b.next_offset for _, b in records.batches()), default=base))
            records.close_handlers()
        low, high = min(bases), max(ends)
        for path in _files(directory):
            offset = _offset_of(path.name)
            if not path.name.endswith(SWAP_SUFFIX) and offset is not None and low <= offset < high:
                path.unlink(missing_ok=True)
    for path in swaps:
        if path.exists():
            os.replace(path, path.with_name(path.name[: -len(SWAP_SUFFIX)]))


def load_segment_files(
    directory: Path, config: LogConfig, clock: Clock, epochs: LeaderEpochFileCache | None, report: LoadReport
) -> LogSegments:
    """Pass 4: delete orphan index files, open each ``.log``; a segment missing its ``.index`` is recovered."""
    segments = LogSegments()
    files = _files(directory)
    logs = {p.name for p in files if p.name.endswith(LOG_SUFFIX)}
    bases = sorted(b for b in (_offset_of(name) for name in logs) if b is not None)
    orphans: dict[int, list[str]] = {}
    for path in files:
        offset = _offset_of(path.name)
        if offset is None:
            continue
        for suffix in _INDEX_SUFFIXES:
            if path.name.endswith(suffix) and path.name[: -len(suffix)] + LOG_SUFFIX not in logs:
                orphans.setdefault(offset, []).append(path.name)
                path.unlink(missing_ok=True)
    for offset, names in orphans.items():
        # the index of a segment whose .log is gone: those records are lost, and the offsets they held say so
        later = [b for b in bases if b > offset]
        held = f"offsets {offset} to {later[0] - 1}" if later else f"offsets from {offset} on"
        _log.warning(
            "%s: the segment at offset %d has no .log (%s removed): whatever it held, %s, is not in the log",
            directory,
            offset,
            ", ".join(names),
            held,
        )
    for name in sorted(logs):
        base = _offset_of(name)
        if base is None:
            continue
        time_index_missing = not segment_file(directory, base, TIME_INDEX_SUFFIX).exists()
        segment = LogSegment.open(directory, base, config, clock)
        try:
            segment.sanity_check(time_index_missing)
        except FileNotFoundError:
            _recover(segment, epochs, report, "its .index is missing")
        has_index = segment.txn_index.path.exists()
        segment.txn_index.verified = has_index  # without one: looked at before its first read_committed read
        damage = segment.txn_index.check() if has_index else None
        if damage is not None:
            _log.warning("%s cannot be trusted (%s): rebuilt from the log", segment.txn_index.path, damage)
            report.rebuild_txn_index_from(base)
        segments.add(segment)
    return segments


def _recover(segment: LogSegment, epochs: LeaderEpochFileCache | None, report: LoadReport, why: str) -> int:
    """Recover one segment, saying so: WARN with the file, why, and what was cut."""
    size = segment.size
    truncated = segment.recover(epochs)
    report.segments_recovered += 1
    report.bytes_truncated += truncated
    report.rebuild_txn_index_from(segment.base_offset)
    _count_cut(segment, report)
    if truncated:
        _log.warning(
            "recovered %s (%s): cut %d of %d bytes at position %d; it now ends at offset %d, indexes rebuilt",
            segment.log.path,
            why,
            truncated,
            size,
            size - truncated,
            segment.read_next_offset(),
        )
    else:
        _log.warning("recovered %s (%s): every batch valid, indexes rebuilt", segment.log.path, why)
    return truncated


def _count_cut(segment: LogSegment, report: LoadReport) -> None:
    """Report the bytes a recovery of ``segment`` cut and kept, and the offsets valid batches among them held."""
    if segment.cut_set_aside is not None:
        report.set_aside.append(segment.cut_set_aside)
    report.cut_held_to = max(report.cut_held_to, segment.cut_claims)


def _claimed_next_offset(segment: LogSegment) -> int:
    """The offset after the last batch header a segment's ``.log`` holds (its indexes are not trusted here)."""
    next_offset = segment.base_offset
    try:
        for _, header in segment.log.headers():
            next_offset = max(next_offset, header.next_offset)
    except (CorruptRecordError, OSError):
        pass
    return next_offset


def recover_segments(
    segments: LogSegments, recovery_point: int, epochs: LeaderEpochFileCache | None, report: LoadReport
) -> int:
    """Recover every segment from the one holding ``recovery_point``. At a cut, the later segments are set
    aside (renamed ``*.salvage``, not deleted) and reported. Returns the next offset the set-aside segments
    claimed (-1 when none), so the log never hands those offsets out again."""
    unflushed = segments.values(recovery_point)
    for i, segment in enumerate(unflushed):
        report.segments_checked += 1
        try:
            truncated = segment.recover(epochs)
        except OSError as exc:
            _log.warning("could not read %s to recover it (%s): emptying it", segment.log.path, exc)
            truncated = segment.truncate_fully()
        report.segments_recovered += 1
        report.bytes_truncated += truncated
        report.rebuild_txn_index_from(segment.base_offset)
        _count_cut(segment, report)
        if truncated > 0:
            _log.warning(
                "recovery cut %d bytes from %s after an unclean shutdown (invalid or partial batch at position "
                "%d); the log now ends at offset %d",
                truncated,
                segment.log.path,
                segment.size,
                segment.read_next_offset(),
            )
            return _set_aside(segments, unflushed[i + 1 :], report, "it follows a corrupt batch")
    return -1


def _set_aside(segments: LogSegments, later: list[LogSegment], report: LoadReport, why: str) -> int:
    claimed = -1
    for segment in later:
        next_offset = _claimed_next_offset(segment)
        claimed = max(claimed, next_offset)
        segments.remove(segment.base_offset)
        segment.close_handlers()
        segment.change_file_suffixes("", SET_ASIDE_SUFFIX)
        report.set_aside.append(segment.log.path)
        _log.warning(
            "set aside %s (offsets %d to %d, %d bytes) because %s: renamed, not deleted",
            segment.log.path,
            segment.base_offset,
            next_offset - 1,
            segment.size,
            why,
        )
    return claimed


def load(
    directory: Path,
    config: LogConfig,
    clock: Clock,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    epochs: LeaderEpochFileCache | None,
    previous_end: int = -1,
    replicated: bool = False,
    end_claim: int = -1,
) -> LoadedLog:
    """Run the whole load sequence (module doc) and return the segments and the offsets to start from.

    ``previous_end``: an offset the log is known to have reached before (its checkpointed recovery point or
    high watermark). Unless the log is ``replicated``, it continues after the offsets it is known to have handed
    out (that, the segments set aside, valid batches in bytes cut, its producer snapshots), even when damage took
    them: an offset is never handed out twice. ``end_claim``: its log-end claim, given after an unclean shutdown
    in another boot (``log_end_claims``), which it continues at too. A replicated log continues at its last valid
    batch instead: a follower fetches what it lost from the leader, and a gap there would leave it without
    records the leader has."""
    directory.mkdir(parents=True, exist_ok=True)
    report = LoadReport()
    swaps = remove_temp_files_and_collect_swap_files(directory)
    complete_swaps(directory, swaps)
    segments = load_segment_files(directory, config, clock, epochs, report)
    claimed = -1  # the next offset of segments set aside: the log continues after it
    producer_state = ProducerStateManager(directory)
    if len(segments) and not directory.name.endswith("-delete"):
        if had_clean_shutdown:
            _check_after_clean_shutdown(segments, epochs, report)
            claimed = cut_repeated_batches(producer_state, segments, report)
        else:
            claimed = recover_segments(segments, recovery_point, epochs, report)
    if had_clean_shutdown and 0 <= previous_end < log_start_offset:
        # a clean stop checkpoints the log start, the high watermark and the end together, start <= end
        _log.warning(
            "%s: the log-start-offset-checkpoint says %d, beyond the end %d the log had when it stopped cleanly "
            "(its recovery-point checkpoint): a wrong checkpoint, not believed; the log starts at its first "
            "segment",
            directory,
            log_start_offset,
            previous_end,
        )
        log_start_offset = 0
    if replicated:
        claimed = -1
    else:
        known = max(previous_end, producer_state.latest_snapshot_offset() or 0, report.cut_held_to)
        claimed = max(claimed, _lost_end(directory, segments, log_start_offset, known))
        if end_claim > max(claimed, known, _segments_end(segments, log_start_offset)):
            _log.warning(
                "%s: the system restarted since this log last ran and it did not stop cleanly, so the page cache "
                "may have lost its tail, and offsets up to its log-end claim %d may have been handed out: the log "
                "continues at %d, so that none of them is handed out again",
                directory,
                end_claim,
                end_claim,
            )
            claimed = end_claim
    last = _active_segment(directory, segments, config, clock, log_start_offset, claimed, report)
    log_end_offset = last.read_next_offset()
    try:
        last.resize_indexes(config.segment_index_bytes)
    except OSError as exc:  # a full disk at start: index entries kept in memory could not be written first
        _log.warning(
            "could not size the indexes of the active segment %s for appends (%s): serving it as it is; its "
            "index entries are written behind once the disk has room, appends refused until then",
            last.log.path,
            exc,
        )
    first = segments.first_base_offset()
    start = max(log_start_offset, first)
    producer_state.remove_stray_snapshots(segments.base_offsets())
    rebuild_producer_state(
        producer_state, segments, start, log_end_offset, clock.milliseconds(), had_clean_shutdown
    )
    if report.txn_rebuild_from >= 0 and report.txn_rebuild_from in segments.base_offsets():
        rebuild_txn_indexes(directory, segments, report.txn_rebuild_from, start)
    return LoadedLog(
        segments,
        log_end_offset,
        log_end_offset if had_clean_shutdown else min(recovery_point, log_end_offset),
        start,
        producer_state,
        report,
    )


def _segments_end(segments: LogSegments, log_start_offset: int) -> int:
    last = segments.last_segment()
    return max(log_start_offset, last.read_next_offset() if last is not None else 0)


def _lost_end(directory: Path, segments: LogSegments, log_start_offset: int, known: int) -> int:
    """The offset a log whose end was lost must continue at, -1 when nothing was: ``known``, the highest offset
    it is known to have reached (``load``), when that is beyond what its segments now hold; said at WARN with
    the offsets lost."""
    end = _segments_end(segments, log_start_offset)
    if known <= end:
        return -1
    _log.warning(
        "%s: offsets %d to %d were handed out before (the log had reached %d, by its checkpoints, producer "
        "snapshots or the valid batches in bytes recovery cut) but are no longer in the log: set aside (the "
        "*.salvage files said above) or lost with damaged or removed bytes; the log continues at %d, so that none "
        "of them is handed out again",
        directory,
        end,
        known - 1,
        known,
        known,
    )
    return known


def _active_segment(
    directory: Path,
    segments: LogSegments,
    config: LogConfig,
    clock: Clock,
    log_start_offset: int,
    claimed: int,
    report: LoadReport,
) -> LogSegment:
    """The segment appends go to: the last one, unless the log is empty, wholly below ``log_start_offset``
    (everything is set aside) or behind ``claimed`` (segments were set aside); then a new one is opened there."""
    last = segments.last_segment()
    if last is not None and last.read_next_offset() < log_start_offset:
        # below the log start its records are deleted, but a log start beyond the log end means the end was
        # lost or the checkpoint is wrong: kept, not deleted
        _set_aside(
            segments,
            list(segments),
            report,
            f"the whole log lies below its log start offset {log_start_offset} (a lost end, or a wrong "
            f"log-start-offset-checkpoint)",
        )
        last = None
    if last is not None and claimed <= last.read_next_offset():
        return last
    if last is not None:
        last.on_become_inactive_segment()
    last = LogSegment.open(
        directory,
        max(log_start_offset, claimed),
        config,
        clock,
        init_file_size=config.segment_bytes,
        preallocate=config.preallocate,
    )
    segments.add(last)
    return last


def _check_after_clean_shutdown(
    segments: LogSegments, epochs: LeaderEpochFileCache | None, report: LoadReport
) -> None:
    """The clean-shutdown marker skips recovery, but the active segment is checked every time (and the others
    when first read, ``LogSegment.verify_on_first_use``); a segment that fails is recovered."""
    last = segments.last_segment()
    for segment in segments:
        if segment is not last:
            segment.verify_on_first_use = True
    assert last is not None
    report.segments_checked += 1
    reason = last.check()
    if reason is not None:
        _recover(last, epochs, report, f"after a clean shutdown: {reason}")


def cut_repeated_batches(
    producer_state: ProducerStateManager, segments: LogSegments, report: LoadReport
) -> int:
    """After a clean shutdown: cut the log at the first batch beyond the latest producer snapshot that repeats a
    batch the producer state already holds (same producer id and epoch, same first and last sequence: Kafka's
    duplicate rule) at a higher offset. A clean stop writes the snapshot at the log end and the broker's appends
    refuse such a batch, so it came from outside (bytes copied with a new base offset, which the CRC does not
    cover); Kafka loads it, and its records are then read twice. The bytes cut are kept beside the segment
    (``*.log.repeated-at-<position>.salvage``), the later segments set aside, all said at ERROR; the offsets of
    the valid batches cut are claimed as recovery claims them. Returns the next offset the set-aside segments
    claimed, -1 when none."""
    offset = producer_state.latest_snapshot_offset()
    if offset is None or not len(segments):
        return -1
    try:
        snapshot = snapshot_file(producer_state.directory, offset)
        producers = {entry.producer_id: entry for entry in read_snapshot(snapshot)}
    except (CorruptSnapshotError, OSError):
        return -1  # the load rebuilds the state from the log and says why
    later = segments.values(offset)
    for i, segment in enumerate(later):
        found = segment.translate_offset(max(offset, segment.base_offset))
        if found is None:
            continue
        for position, batch in segment.log.batches(found.position):
            if _repeats_a_held_batch(producers, batch, position, segment):
                _cut_repeat(segment, position, batch.base_offset, report)
                return _set_aside(segments, later[i + 1 :], report, "it follows a repeated batch")
    return -1


def _repeats_a_held_batch(
    producers: dict[int, ProducerStateEntry], batch: BatchView, position: int, segment: LogSegment
) -> bool:
    """Whether ``batch`` repeats a batch ``producers`` hold at a lower offset (said at ERROR); else it is
    added to them, as the replay adds it."""
    if batch.magic < 2 or batch.producer_id < 0:
        return False
    entry = producers.get(batch.producer_id)
    if entry is None:
        entry = producers[batch.producer_id] = ProducerStateEntry(batch.producer_id)
    if batch.is_control:
        entry.maybe_update_epoch(batch.producer_epoch)
        return False
    held = entry.find_duplicate(batch.producer_epoch, batch.base_sequence, batch.last_sequence)
    if held is not None and held.last_offset < batch.base_offset:
        _log.error(
            "%s: the batch at position %d (offsets %d to %d) repeats producer %d's batch at offsets %d to %d "
            "(epoch %d, sequences %d to %d), which the producer snapshot holds: a copy, not an append "
            "(the broker refuses a repeated batch); cut with what follows it, kept aside, so that its records "
            "are not read twice",
            segment.log.path,
            position,
            batch.base_offset,
            batch.last_offset,
            batch.producer_id,
            held.first_offset,
            held.last_offset,
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence,
        )
        return True
    entry.add_batch(
        batch.producer_epoch,
        BatchMetadata(batch.last_sequence, batch.last_offset, batch.last_offset_delta, batch.max_timestamp),
    )
    return False


def _cut_repeat(segment: LogSegment, position: int, base_offset: int, report: LoadReport) -> None:
    """Cut ``segment`` at ``position`` (the batch at ``base_offset``), its bytes from there kept in a
    ``*.salvage`` file beside it."""
    size = segment.size
    report.cut_held_to = max(
        report.cut_held_to,
        segment.log.valid_batches_end(position, segment.base_offset, segment.base_offset + INT32_MAX),
    )
    path = segment_file(
        segment.log.path.parent, segment.base_offset, LOG_SUFFIX, f".repeated-at-{position}{SET_ASIDE_SUFFIX}"
    )
    try:
        if segment.log.copy_out(position, path):
            report.set_aside.append(path)
    except OSError as exc:
        _log.error(
            "could not keep the bytes cut from %s in %s (%s): cut without a copy", segment.log.path, path, exc
        )
    segment.truncate_to(base_offset)
    report.segments_recovered += 1
    report.bytes_truncated += size - segment.size
    _log.error(
        "cut %d of %d bytes from %s at position %d (kept in %s); it now ends at offset %d",
        size - segment.size,
        size,
        segment.log.path,
        position,
        path.name,
        segment.read_next_offset(),
    )


def _holds_producer_batches(segment: LogSegment) -> bool:
    """Whether ``segment`` holds a v2 batch with a producer id (its headers read up to the first that has one)."""
    return any(b.magic >= 2 and b.producer_id >= 0 for _, b in segment.log.headers())


def rebuild_producer_state(
    state: ProducerStateManager,
    segments: LogSegments,
    log_start_offset: int,
    last_offset: int,
    now: int,
    reload_from_clean_shutdown: bool = False,
) -> None:
    """Bring ``state`` to ``last_offset``: the latest snapshot at or below it, then the batches after it
    (Kafka's ``rebuildProducerState``). Snapshots are taken at the last two segment bases passed and at the end."""
    last = segments.last_segment()
    to_snapshot = {last_offset}
    if last is not None:
        to_snapshot.add(last.base_offset)
        lower = segments.lower_segment(last.base_offset)
        if lower is not None:
            to_snapshot.add(lower.base_offset)
    if state.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        if last is None or not _holds_producer_batches(last):
            for offset in sorted(to_snapshot):
                state.map_end_offset = offset
                _snapshot(state)
            return
        # a clean stop writes a snapshot at the log end: these were lost, and without the state a retried
        # batch would be stored twice
        _log.warning(
            "%s: no producer snapshot after a clean shutdown, but the log holds idempotent batches: the "
            "producer state is rebuilt from the log",
            state.directory,
        )
    was_empty = state.is_empty and state.map_end_offset >= last_offset
    state.truncate_and_reload(log_start_offset, last_offset, now)
    if last_offset > state.map_end_offset and not was_empty:
        for segment in segments.values(state.map_end_offset, last_offset):
            start = max(segment.base_offset, state.map_end_offset, log_start_offset)
            state.map_end_offset = start
            if start == segment.base_offset and start in to_snapshot:
                _snapshot(state)
            position = 0
            if start > segment.base_offset:
                found = segment.translate_offset(start)
                if found is None:
                    continue
                position = found.position
            state.load_batches(b for _, b in segment.log.batches(position) if b.base_offset < last_offset)
    state.map_end_offset = last_offset
    _snapshot(state)


def rebuild_txn_indexes(
    directory: Path, segments: LogSegments, from_base: int, log_start_offset: int
) -> None:
    """Rebuild the ``.txnindex`` of the segment at ``from_base`` and of every later one from their batches. The
    transactions open at ``from_base`` come from the producer snapshot named by it (written when that segment was
    rolled in), else from replaying the log from its start."""
    open_txns: dict[int, int] = {}
    replay_from = from_base
    try:
        open_txns = {
            e.producer_id: e.current_txn_first_offset
            for e in read_snapshot(snapshot_file(directory, from_base))
            if e.current_txn_first_offset >= 0
        }
    except (CorruptSnapshotError, OSError):
        replay_from = log_start_offset
    for segment in segments.values(replay_from):
        try:
            aborted = segment_aborts(segment, open_txns)
            if segment.base_offset >= from_base:
                segment.txn_index.rewrite(aborted)
        except (CorruptRecordError, OSError) as exc:
            _log.warning("could not rebuild %s (%s): removed", segment.txn_index.path, exc)
            segment.txn_index.delete()


def segment_aborts(segment: LogSegment, open_txns: dict[int, int]) -> list[AbortedTxn]:
    """Follow the transactions of ``segment``'s batches (``open_txns``: producer id -> first offset, updated);
    returns the aborts its markers wrote, as the segment's ``.txnindex`` holds them."""
    from samsa.records.control import ControlRecordType, batch_control_type

    aborted: list[AbortedTxn] = []
    for position, header in segment.log.headers():
        if header.magic < 2 or header.producer_id < 0 or not header.is_transactional:
            continue
        pid = header.producer_id
        if not header.is_control:
            open_txns.setdefault(pid, header.base_offset)
            continue
        kind = batch_control_type(segment.log.batch_at(position))
        if kind not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            continue
        marker = header.base_offset
        first = open_txns.pop(pid, marker)
        if kind is ControlRecordType.ABORT:
            aborted.append(AbortedTxn(pid, first, marker, min(open_txns.values(), default=marker + 1)))
    return aborted


def _snapshot(state: ProducerStateManager) -> None:
    """A producer-state snapshot is a shortcut, not the record: when it cannot be written (a full disk), the
    state is rebuilt from the log next time instead."""
    try:
        state.take_snapshot()
    except OSError as exc:
        _log.warning("could not write a producer-state snapshot in %s: %s", state.directory, exc)
