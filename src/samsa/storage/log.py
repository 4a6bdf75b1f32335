"""``Log``: one partition's log — a directory ``<topic>-<partition>`` of segments — with offsets, appends,
reads, rolling, retention, flushing and truncation (Kafka's ``UnifiedLog`` + ``LocalLog``).

Offsets kept (Kafka's names):

    log_start_offset   first offset clients may read (raised by retention and DeleteRecords; <= HW)
    log_end_offset     LEO, the offset the next record gets
    high_watermark     HW, in [log_start_offset, LEO]; reads bounded by it are what consumers see
    last_stable_offset LSO, <= HW: the first offset of the oldest transaction not yet stable (read_committed)
    recovery_point     first offset not known to be fsynced; an unclean restart recovers from its segment

API, for the layers above (LogManager, ReplicaManager, tools):

    Log.open(directory, config, clock, *, recovery_point=0, log_start_offset=0, had_clean_shutdown=False)
    append_as_leader(records, leader_epoch=0) -> LogAppendInfo      offsets assigned in place, one write
    append_as_follower(records) -> LogAppendInfo                    offsets kept, must start at >= LEO
    read(start_offset, max_length, isolation=HIGH_WATERMARK, min_one_message=False) -> FetchDataInfo
    collect_aborted_transactions(start_offset, upper_bound) -> list[AbortedTxn]     from the ``.txnindex`` files
    fetch_offset_by_timestamp(timestamp) -> TimestampAndOffset | None   -1 latest, -2 earliest, -3 max, -4, -5
    update_high_watermark(hw), maybe_increment_high_watermark(hw), maybe_increment_log_start_offset(offset)
    roll(expected_next_offset=None), delete_old_segments(now=None) -> int, delete_pending_segments(now=None)
    flush(offset, including_offset=False), truncate_to(offset), truncate_fully_and_start_at(offset)
    replace_segments(new, old)                                      the cleaner's crash-safe swap
    update_config(config), close(), delete()

Appends: ``records`` are whole batches; a ``bytearray`` or writable ``memoryview`` is patched in place (a
``bytes`` argument is copied once). A trailing partial batch is dropped. Each batch is validated (size, magic,
CRC); the leader rejects a batch above ``max.message.bytes`` (RecordTooLargeError); an append above
``segment.bytes`` is RecordBatchTooLargeError. The leader writes base offsets (v2: baseOffset; legacy: each
message offset, a v1 wrapper's offset = its last inner offset), the partition leader epoch, and with
``message.timestamp.type=LogAppendTime`` the broker time (CRC recomputed). v0 compressed sets would need
re-compression and are refused (InvalidRecordError). Client-batch rules beyond that (base offset 0, sequence
numbers, record-level timestamp checks) belong to the broker's validator, except that a compacted log refuses
records without a key (RecordValidationError, Kafka's INVALID_RECORD), decoding records for compacted logs only.

Deletion: retention and truncation remove segments from the map at once and rename their files to
``*.deleted``; the files are removed by ``delete_pending_segments(now)`` once ``file.delete.delay.ms`` has
passed (immediately when the delay is 0). The owner calls it periodically (LogManager does).

Flushing: after an append, if ``LEO - recovery_point >= flush.messages`` the log flushes up to LEO. A roll
flushes the segments below the new one synchronously (Kafka does this on a scheduler thread) and moves the
recovery point to the new base; pass ``flush_on_roll=False`` to leave that to the owner's ``flush`` calls.
``flush(LEO + 1)`` also persists an empty active segment; the recovery point never passes LEO.

Leader epochs are kept in ``leader-epoch-checkpoint`` (``LeaderEpochFileCache``) as epochs are assigned.

Producer state (``producer_state``, idempotence): a leader append first looks for a batch already appended by the
same producer, epoch and sequences; if one is found nothing is written and the append info carries the original
offsets (``duplicate=True``). Otherwise every batch with a producer id is checked (a sequence gap raises
OutOfOrderSequenceError, an old epoch InvalidProducerEpochError) before anything is written, and recorded after.
Follower appends record without checks. A roll writes ``<new base>.snapshot`` and ``close`` one at the log end;
``open`` rebuilds the state from the latest snapshot plus the batches after it; truncation rebuilds it the same
way; a segment deleted by retention or truncation takes the snapshot named by its base offset with it.
Producers silent for ``producer.id.expiration.ms`` are forgotten by ``delete_old_segments``.

Transactions: the producer state tracks each producer's open transaction and the first unstable offset (its doc);
the LSO is that, bounded by the HW and at least the log start. An ABORT marker's append records the aborted
transaction in the active segment's ``.txnindex``; a read_committed read stops at the LSO, and
``collect_aborted_transactions`` answers which aborted transactions the records read overlap.

I/O failures: every public method (and ``open``) raises ``KafkaStorageError`` (an OSError too) for an OSError
underneath, naming the directory. Appends are all or nothing: a write, index entry, leader-epoch checkpoint or
flush that fails leaves the log exactly as before the call (bytes cut off again, no index entry, the log end offset
unmoved), so a full disk refuses writes and the next append after space is freed succeeds, with no offset handed
out twice. A failed append that cannot be undone (the ``.log`` cannot be cut back) raises ``AppendRollbackError``
and takes the log offline: ``offline_error`` is set and every later call raises ``KafkaStorageError``.

Concurrency contract: not thread-safe. The owner serialises every call (one thread, or the event loop through
one executor). File slices returned by ``read`` stay valid until a later call deletes their segment.
"""

from __future__ import annotations

import enum
import functools
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, NamedTuple, ParamSpec, TypeVar

from samsa.clock import Clock
from samsa.records import InflatedTooLargeError, InvalidRecordError
from samsa.records.batch import keyless_records
from samsa.records.batch_view import (
    CONTROL_MASK,
    CRC32C_C,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TRANSACTIONAL_MASK,
    V2_ATTRIBUTES_OFFSET,
    BatchView,
    V2BatchView,
    V2Header,
    iter_request_batches,
    last_sequence,
    read_v2_header,
    stamp_v2_batch,
)
from samsa.records.legacy import decode_legacy, set_legacy_timestamp
from samsa.records.record import TimestampType

from .checkpoint import fsync_directory
from .config import LogConfig
from .errors import (
    AppendRollbackError,
    IllegalRollError,
    InflatedBatchTooLargeError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    OffsetsOutOfOrderError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RecordValidationError,
    UnexpectedAppendOffsetError,
)
from .file_slice import FetchDataInfo, LogOffsetMetadata
from .leader_epoch import LeaderEpochFileCache
from .log_loader import LoadReport, load, rebuild_producer_state, rebuild_txn_indexes, segment_aborts
from .producer_state import CompletedTxn, ProducerStateManager
from .segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    TimestampAndOffset,
    remove_segment_files,
)
from .segments import LogSegments
from .txn_index import AbortedTxn

_log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
UNKNOWN_OFFSET = -1
NO_CLAIMS = 2**63 - 1  # a log that takes no log-end claims (``Log.take_claims``)


LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


class FetchIsolation(enum.Enum):
    """How far a read may go: LEO (replicas), the HW (read_uncommitted), the LSO (read_committed)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


class LogAppendInfo(NamedTuple):
    """What an append did: offsets, timestamps, sizes. ``first_offset`` is -1 when unknown (legacy follower data).

    A named tuple rather than a frozen dataclass: one is made per append, and a tuple is made several times
    faster (measured by ``bench/bench_storage.py``)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    valid_bytes: int
    num_batches: int
    duplicate: bool = False

    @property
    def num_messages(self) -> int:
        return self.last_offset - self.first_offset + 1 if self.first_offset >= 0 else 0


_new_append_info: Callable[[tuple[int, int, int, int, int, int, int, int, bool]], LogAppendInfo] = (
    functools.partial(tuple.__new__, LogAppendInfo)
)
"""A LogAppendInfo from all nine fields at once, without the Python-level ``__new__`` of a named tuple (half the
cost; the leader's fast path makes one per append)."""

_Predicate = Callable[[LogSegment, "LogSegment | None"], bool]
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _io_boundary(method: Callable[Concatenate[Log, _P], _R]) -> Callable[Concatenate[Log, _P], _R]:
    """Turn an OSError inside a public ``Log`` method into KafkaStorageError naming the log directory; refuse
    every call of an offline log, and take the log offline when a failed append could not be undone."""

    def wrapper(self: Log, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self.offline_error is not None:
            raise KafkaStorageError(self.directory, self.offline_error)
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            failure = _storage_failure(self, exc)
            if failure is exc:
                raise
            raise failure from exc

    functools.update_wrapper(wrapper, method)
    return wrapper


def _storage_failure(log: Log, exc: OSError) -> OSError:
    """What ``_io_boundary`` raises for ``exc``: AppendRollbackError (the log is now offline) and
    KafkaStorageError as they are, any other OSError as a KafkaStorageError naming the log directory."""
    if isinstance(exc, AppendRollbackError):
        log.offline_error = exc
        _log.error("%s is offline: %s", log.directory, exc)
        return exc
    if isinstance(exc, KafkaStorageError):
        return exc
    return KafkaStorageError(log.directory, exc)


class Log:
    """One partition's log (module doc). Not thread-safe; the owner serialises every call."""

    __slots__ = (
        "_claimed_end",
        "_flush_messages",
        "_high_watermark",
        "_hw_metadata",
        "_last_flush_time",
        "_log_end_offset",
        "_log_start_offset",
        "_max_lone_batch",
        "_max_segment_ms",
        "_pending_deletes",
        "_recovery_point",
        "_segment_bytes",
        "_stamps_or_compacts",
        "claim_offsets",
        "clock",
        "config",
        "directory",
        "flush_on_roll",
        "leader_epoch_cache",
        "load_report",
        "offline_error",
        "producer_state",
        "segments",
    )

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        segments: LogSegments,
        log_start_offset: int,
        log_end_offset: int,
        recovery_point: int,
        leader_epochs: LeaderEpochFileCache,
        flush_on_roll: bool = True,
        producer_state: ProducerStateManager | None = None,
    ) -> None:
        self.directory = directory
        self.config = config
        self.clock = clock
        self.segments = segments
        self.leader_epoch_cache = leader_epochs
        self.flush_on_roll = flush_on_roll
        self._log_start_offset = log_start_offset
        self._log_end_offset = log_end_offset
        self._recovery_point = recovery_point
        self._high_watermark = log_start_offset
        self._hw_metadata: LogOffsetMetadata | None = None
        self._last_flush_time = clock.milliseconds()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self.offline_error: OSError | None = None  # set when a failed append could not be undone
        # log-end claims (``log_end_claims``): the log end stays at or below ``_claimed_end``; an append that would
        # pass it first asks ``claim_offsets`` (the log manager), which writes a new claim or raises
        self._claimed_end = NO_CLAIMS
        self.claim_offsets: Callable[[Log, int], None] | None = None
        self._read_config(config)
        self.load_report = LoadReport()  # what loading found (``open`` fills it)
        if producer_state is None:
            producer_state = ProducerStateManager(directory)
            producer_state.map_end_offset = log_end_offset
        self.producer_state = producer_state

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        flush_on_roll: bool = True,
        previous_end: int = -1,
        replicated: bool = False,
        end_claim: int = -1,
    ) -> Log:
        """Load (or create) the partition directory; after an unclean shutdown recover from ``recovery_point``.
        ``previous_end``, ``end_claim`` and ``replicated``: where the log continues when damage or an OS crash
        took its end (``log_loader``)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            epochs = LeaderEpochFileCache(directory)
            loaded = load(
                directory,
                config,
                clock,
                recovery_point,
                log_start_offset,
                had_clean_shutdown,
                epochs,
                previous_end,
                replicated,
                end_claim,
            )
        except KafkaStorageError:
            raise
        except OSError as exc:
            raise KafkaStorageError(directory, exc) from exc
        try:
            epochs.truncate_from_end(loaded.log_end_offset, best_effort=True)
            epochs.truncate_from_start(loaded.log_start_offset, best_effort=True)
        except OSError as exc:  # a full disk at start: the truncation is repeated at the next load
            _log.warning("could not rewrite %s: %s", epochs.path, exc)
        log = cls(
            directory,
            config,
            clock,
            loaded.segments,
            loaded.log_start_offset,
            loaded.log_end_offset,
            loaded.recovery_point,
            epochs,
            flush_on_roll,
            loaded.producer_state,
        )
        log.load_report = loaded.report
        return log

    # --- offsets -----------------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        unstable = self.producer_state.first_unstable_offset
        if unstable is None or unstable >= self._high_watermark:
            return self._high_watermark
        return max(unstable, self._log_start_offset)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def last_flush_time(self) -> int:
        return self._last_flush_time

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active_segment

    @property
    def size(self) -> int:
        """Bytes in all segments."""
        return self.segments.size_in_bytes()

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        active = self.active_segment
        return LogOffsetMetadata(self._log_end_offset, active.base_offset, active.size)

    def high_watermark_metadata(self) -> LogOffsetMetadata:
        if self._high_watermark == self._log_end_offset:
            return self.log_end_offset_metadata
        if self._hw_metadata is None or self._hw_metadata.message_offset != self._high_watermark:
            self._hw_metadata = self.offset_metadata(self._high_watermark)
        return self._hw_metadata

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """``offset`` with the segment and position of the batch holding it (Kafka's convertToOffsetMetadata)."""
        return self._read(offset, 1, self.log_end_offset_metadata, False).fetch_offset_metadata

    def _clamped_high_watermark(self, high_watermark: int) -> int:
        return min(max(high_watermark, self._log_start_offset), self._log_end_offset)

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW, clamped to [log_start_offset, LEO]; returns the value set."""
        clamped = self._clamped_high_watermark(high_watermark)
        self._set_high_watermark(clamped)
        return clamped

    def _set_high_watermark(self, high_watermark: int) -> None:
        """Set the HW, already within [log_start_offset, LEO]."""
        self._high_watermark = high_watermark
        self._hw_metadata = None
        self.producer_state.on_high_watermark_updated(high_watermark)

    def maybe_increment_high_watermark(self, high_watermark: int) -> bool:
        """Raise the HW (leader path, never lowers it; clamped to LEO); True when it moved."""
        if high_watermark > self._log_end_offset:
            high_watermark = self._log_end_offset
        if high_watermark > self._high_watermark:
            # above the HW, so above the log start too, and at most the LEO: no clamp needed
            self._set_high_watermark(high_watermark)
            return True
        return False

    def maybe_update_high_watermark(self, high_watermark: int) -> int | None:
        """Follower path: set the HW (clamped as ``update_high_watermark`` clamps it) and return it when it
        changed, else None."""
        new = self._clamped_high_watermark(high_watermark)
        if new == self._high_watermark:
            return None
        return self.update_high_watermark(new)

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """DeleteRecords: raise the log start offset (never past the HW); segments below go at the next
        ``delete_old_segments``. True when it moved."""
        if new_log_start_offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                new_log_start_offset,
                self._log_start_offset,
                self._log_end_offset,
                f"cannot increment the log start offset past the high watermark {self._high_watermark}",
            )
        if new_log_start_offset <= self._log_start_offset:
            return False
        self._set_log_start_offset(new_log_start_offset)
        return True

    def _set_log_start_offset(self, offset: int, segments_gone: bool = False) -> None:
        """Move the log start to ``offset``, the leader-epoch checkpoint first: when it cannot be rewritten (a
        full disk), DeleteRecords fails with nothing changed; after retention deleted the segments below
        ``offset`` (``segments_gone``) the start moves anyway, and the checkpoint is cut at the next load."""
        try:
            self.leader_epoch_cache.truncate_from_start(offset, best_effort=segments_gone)
        except OSError as exc:
            if not segments_gone:
                raise
            _log.warning(
                "%s: could not rewrite %s (%s): cut again at the next load",
                self,
                self.leader_epoch_cache.path,
                exc,
            )
        self._log_start_offset = offset
        self.producer_state.on_log_start_offset_incremented(offset)
        if self._high_watermark < offset:
            self.update_high_watermark(offset)
        if self._recovery_point < offset:
            self._recovery_point = offset

    # --- append ------------------------------------------------------------------------------------------

    def append_as_leader(
        self, records: bytes | bytearray | memoryview, leader_epoch: int = 0, header: V2Header | None = None
    ) -> LogAppendInfo:
        """Validate, assign offsets from LEO in place, stamp ``leader_epoch``, and append with one write.

        ``header``: the first batch's header as the produce handler read it (``read_v2_header``), read here when
        not given. Storage failures as ``_io_boundary`` says. The common case, a writable buffer holding one
        valid v2 batch on a topic that neither compacts nor stamps LogAppendTime, is done from that one header
        value: its CRC-32C checked, its base offset and epoch stamped in place, the buffer written as it is.
        Anything else (and a retried batch, answered with its original offsets) takes the general path, which
        also raises whichever error applies."""
        if type(records) is bytes or self._stamps_or_compacts or self.offline_error is not None:
            return self._append_as_leader(records, leader_epoch)
        view = records if type(records) is memoryview else memoryview(records)
        if header is None:
            header = read_v2_header(view)
        size = view.nbytes
        if (
            header is None
            or header.magic != 2
            or header.size + LOG_OVERHEAD != size
            or size > self._max_lone_batch
            or header.last_offset_delta < 0
            or view.readonly
            or CRC32C_C(view[V2_ATTRIBUTES_OFFSET:]) != header.crc
        ):
            return self._append_as_leader(records, leader_epoch)
        return self._append_lone_batch(view, header, leader_epoch)

    def _append_lone_batch(self, view: memoryview, header: V2Header, leader_epoch: int) -> LogAppendInfo:
        """``append_as_leader`` of one valid v2 batch (checked by the caller), with the general path's effects to
        the byte: producer state checked, offsets and epoch stamped, one write."""
        first = self._log_end_offset
        last = first + header.last_offset_delta
        pending = None  # a marker's, for ``complete_append``
        client_seq = None  # a client batch's last sequence, for ``record``
        producer_id = header.producer_id
        producers = self.producer_state
        if producer_id >= 0 and header.attributes & CONTROL_MASK:  # a transaction marker (WriteTxnMarkers)
            pending = producers.validate_append([V2BatchView(view, 0, header)])
        elif producer_id >= 0:  # a client's batch, checked from its header (in memory only: nothing to undo)
            epoch, first_seq = header.producer_epoch, header.base_sequence
            client_seq = last_sequence(first_seq, header.last_offset_delta)
            if (
                producers.producers
                and producers.duplicate_of(producer_id, epoch, first_seq, client_seq) is not None
            ):
                return self._append_as_leader(view, leader_epoch)  # answered with the original offsets
            producers.check_sequence(producer_id, epoch, first_seq)
        max_ts, shallow = header.max_timestamp, last
        if max_ts <= NO_TIMESTAMP:  # the offset of the largest timestamp as ``_assign_offsets`` has it
            max_ts, shallow = NO_TIMESTAMP, first
        info = _new_append_info(
            (first, last, max_ts, shallow, -1, self._log_start_offset, view.nbytes, 1, False)
        )
        try:
            stamp_v2_batch(view, 0, header.size, first, leader_epoch)
            if leader_epoch >= 0:
                latest = self.leader_epoch_cache.latest
                if latest is None or leader_epoch > latest:
                    self.leader_epoch_cache.assign(
                        leader_epoch, first
                    )  # before the data: harmless if it fails
            self._append(view, info)
            if pending is not None:
                completed = producers.complete_append(pending, last + 1)
                if completed:
                    self._complete_transactions(completed)
            elif client_seq is not None:
                producers.record(
                    producer_id,
                    header.producer_epoch,
                    client_seq,
                    last,
                    header.last_offset_delta,
                    header.max_timestamp,
                    first if header.attributes & TRANSACTIONAL_MASK else -1,
                )
                producers.map_end_offset = last + 1
        except OSError as exc:
            failure = _storage_failure(self, exc)
            if failure is exc:
                raise
            raise failure from exc
        return info

    @_io_boundary
    def _append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> LogAppendInfo:
        view, batches = self._analyze(records)
        if not batches:
            return self._empty_append_info()
        valid_bytes = batches[-1].end
        self._check_leader_batches(batches, valid_bytes)
        now = self.clock.milliseconds()
        log_append = self.config.log_append_time
        producers = self.producer_state
        duplicate = producers.find_duplicate(batches) if producers.producers else None
        if duplicate is not None:
            return LogAppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.timestamp,
                duplicate.last_offset,
                duplicate.timestamp if log_append else -1,
                self._log_start_offset,
                0,
                0,
                duplicate=True,
            )
        pending = producers.validate_append(batches)
        first_offset = self._log_end_offset
        next_offset, max_ts, shallow = self._assign_offsets(view, batches, leader_epoch, now, log_append)
        info = LogAppendInfo(
            first_offset,
            next_offset - 1,
            max_ts,
            shallow,
            now if log_append else -1,
            self._log_start_offset,
            valid_bytes,
            len(batches),
        )
        if leader_epoch >= 0 and batches[0].magic >= 2:
            self.leader_epoch_cache.assign(
                leader_epoch, first_offset
            )  # before the data: harmless if it fails
        self._append(view[:valid_bytes], info)
        completed = producers.complete_append(pending, next_offset)
        if completed:
            self._complete_transactions(completed)
        return info

    def _check_leader_batches(self, batches: list[BatchView], valid_bytes: int) -> None:
        """Kafka's size checks per batch and for the segment; a compacted topic's keys."""
        for batch in batches:
            if batch.size_in_bytes > self.config.max_message_bytes:
                raise RecordTooLargeError(batch.size_in_bytes, self.config.max_message_bytes, batch.position)
        self._check_segment_size(valid_bytes)
        if self.config.is_compacted:
            self._validate_keys(batches)

    def _assign_offsets(
        self, view: memoryview, batches: list[BatchView], leader_epoch: int, now: int, log_append: bool
    ) -> tuple[int, int, int]:
        """Patch each batch's offsets (and epoch, and LogAppendTime) in place from the log end; returns the next
        offset, the largest timestamp and the offset holding it."""
        next_offset = self._log_end_offset
        max_ts, shallow = -1, next_offset
        for batch in batches:
            magic = batch.magic
            if magic >= 2:
                count = batch.last_offset_delta + 1
                stamp_v2_batch(view, batch.position, batch.size_field, next_offset, leader_epoch)
                if log_append:
                    batch.set_max_timestamp(now, log_append_time=True)
                batch_max_ts = batch.max_timestamp
                if batch_max_ts > max_ts or log_append:
                    max_ts, shallow = batch_max_ts, next_offset + count - 1
                next_offset += count
                continue
            count = self._offset_count(batch)
            batch.set_base_offset(next_offset + count - 1)
            if log_append and magic == 1:
                set_legacy_timestamp(view, batch.position, now, TimestampType.LOG_APPEND_TIME)
            next_offset += count
            if batch.max_timestamp > max_ts or log_append:
                max_ts, shallow = batch.max_timestamp, batch.last_offset
        return next_offset, max_ts, shallow

    @_io_boundary
    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Validate and append batches with the offsets they carry (which must increase, from >= LEO). Nothing
        in them is patched, so they are read where they are (a fetch response's frame), not copied."""
        view, batches = self._analyze(records, patched=False)
        if not batches:
            return self._empty_append_info()
        valid_bytes = batches[-1].end
        self._check_segment_size(valid_bytes)
        previous = -1
        max_ts, shallow = -1, batches[0].last_offset
        for batch in batches:
            first = batch.base_offset if batch.magic >= 2 else batch.last_offset
            if previous >= 0 and (first <= previous or batch.last_offset < first):
                raise OffsetsOutOfOrderError(first, previous)
            previous = batch.last_offset
            if batch.max_timestamp > max_ts:
                max_ts, shallow = batch.max_timestamp, batch.last_offset
        head = batches[0]
        first_or_last = head.base_offset if head.magic >= 2 else head.last_offset
        if first_or_last < self._log_end_offset:
            raise UnexpectedAppendOffsetError(first_or_last, batches[-1].last_offset, self._log_end_offset)
        info = LogAppendInfo(
            head.base_offset if head.magic >= 2 else UNKNOWN_OFFSET,
            batches[-1].last_offset,
            max_ts,
            shallow,
            -1,
            self._log_start_offset,
            valid_bytes,
            len(batches),
        )
        for batch in batches:
            if batch.magic >= 2:
                self.leader_epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
        self._append(view[:valid_bytes], info)
        completed = self.producer_state.load_batches(batches, self._log_end_offset)
        if completed:
            self._complete_transactions(completed)
        return info

    def _analyze(
        self, records: bytes | bytearray | memoryview, patched: bool = True
    ) -> tuple[memoryview, list[BatchView]]:
        """The valid batches of ``records``, over a view that is writable when they are to be ``patched`` (a
        leader's append: read-only bytes are copied once)."""
        if patched and (isinstance(records, bytes) or (isinstance(records, memoryview) and records.readonly)):
            records = bytearray(records)
        view = records if isinstance(records, memoryview) else memoryview(records)
        batches = list(iter_request_batches(view, INT_MAX))
        for batch in batches:
            batch.ensure_valid()
        return view, batches

    def _validate_keys(self, batches: list[BatchView]) -> None:
        """A compacted topic refuses records without a key (Kafka's ``LogValidator.validateKey``). The only
        per-record work of a leader append, done for compacted topics alone; compressed records inflate to
        ``max_inflated_bytes`` at most (InflatedBatchTooLargeError past it)."""
        limit = self.config.max_inflated_bytes
        for batch in batches:
            try:
                if batch.magic >= 2:
                    missing = keyless_records(batch, max_inflated=limit)
                else:
                    records = decode_legacy(batch, verify_crc=False, max_inflated=limit)
                    missing = [i for i, r in enumerate(records) if r.key is None]
            except InflatedTooLargeError:
                raise InflatedBatchTooLargeError(batch.size_in_bytes, limit, batch.position) from None
            if missing:
                message = f"Compacted topic cannot accept message without key in topic partition {self.directory.name}."
                raise RecordValidationError([(i, message) for i in missing])

    def _offset_count(self, batch: BatchView) -> int:
        if batch.magic >= 2:
            return batch.last_offset_delta + 1
        if batch.compression == 0:
            return 1
        if batch.magic == 0:
            raise InvalidRecordError(
                f"a compressed magic 0 message set at position {batch.position} needs re-compression to get "
                "offsets, which this log does not do"
            )
        limit = self.config.max_inflated_bytes
        try:
            return len(decode_legacy(batch, verify_crc=False, max_inflated=limit))
        except InflatedTooLargeError:
            raise InflatedBatchTooLargeError(batch.size_in_bytes, limit, batch.position) from None

    def _check_segment_size(self, size: int) -> None:
        if size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(size, self.config.segment_bytes)

    def _complete_transactions(self, completed: list[CompletedTxn]) -> None:
        """Record each aborted transaction in the active segment's ``.txnindex`` (the one its marker is in). The
        marker is in the log already: an index entry that cannot be written is said, and the segment's index is
        rebuilt by the next recovery."""
        index = self.segments.active_segment.txn_index
        for txn in completed:
            if not txn.is_aborted:
                continue
            try:
                index.append(
                    AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
                )
            except (OSError, ValueError) as exc:
                _log.warning(
                    "%s: could not record the aborted transaction %s in %s: %s", self, txn, index.path, exc
                )

    def _empty_append_info(self) -> LogAppendInfo:
        return LogAppendInfo(
            UNKNOWN_OFFSET, UNKNOWN_OFFSET, -1, UNKNOWN_OFFSET, -1, self._log_start_offset, 0, 0
        )

    def _append(self, data: bytearray | memoryview, info: LogAppendInfo) -> None:
        """Roll if due, write, index, flush if due: all or nothing. A failure leaves the log as it was before
        (the log end offset unmoved, the bytes cut off again); one that cannot be undone takes it offline."""
        end = info.last_offset + 1
        if end > self._claimed_end:
            self._claim(end)
        segment = self.segments.active_segment
        if segment.should_roll_for(
            len(data), info.max_timestamp, info.last_offset, None, self._max_segment_ms, self._segment_bytes
        ):
            expected = info.first_offset if info.first_offset >= 0 else info.last_offset - INT_MAX
            segment = self.roll(expected)
        if end - self._recovery_point < self._flush_messages:
            segment.append(info.last_offset, info.max_timestamp, info.shallow_offset_of_max_timestamp, data)
            self._log_end_offset = end
            return
        mark = segment.append_mark()
        segment.append(info.last_offset, info.max_timestamp, info.shallow_offset_of_max_timestamp, data)
        try:
            self._flush_segments(end)
        except OSError:
            segment.rollback(mark)
            raise
        self._log_end_offset = end
        self._mark_flushed(end)

    # --- log-end claims ------------------------------------------------------------------------------------

    @property
    def claimed_end(self) -> int:
        """The offset the log end may reach before it needs a new claim (``log_end_claims``); ``NO_CLAIMS`` when it
        takes none, -1 when it has none yet."""
        return self._claimed_end

    def take_claims(self, claim_offsets: Callable[[Log, int], None] | None) -> None:
        """From now on, ask ``claim_offsets(log, end)`` before the log end passes its claim (None: no claims)."""
        self.claim_offsets = claim_offsets
        self._claimed_end = -1 if claim_offsets is not None else NO_CLAIMS

    def set_claimed_end(self, claimed: int) -> None:
        """A claim up to ``claimed`` is durable (``claim_offsets`` says so once it wrote it)."""
        self._claimed_end = claimed

    def _claim(self, end: int) -> None:
        if self.claim_offsets is not None:
            self.claim_offsets(self, end)

    # --- roll --------------------------------------------------------------------------------------------

    @_io_boundary
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at ``max(expected_next_offset, LEO)`` (4.3) and return it."""
        new_offset = max(expected_next_offset or 0, self._log_end_offset)
        active = self.active_segment
        existing = self.segments.get(new_offset)
        if existing is not None:
            if existing is not active or active.size != 0:
                raise IllegalRollError(
                    new_offset, active.base_offset, "a non-empty segment already has this base"
                )
            # an empty active segment at this base is what a roll would create: keep it (no file is touched,
            # so a roll cannot fail half-way here), with full-size indexes and a fresh roll clock (KAFKA-6388)
            active.resize_indexes(self.config.segment_index_bytes)
            active.restart_roll_clock()
            return active
        if new_offset < active.base_offset:
            raise IllegalRollError(new_offset, active.base_offset, "below the active segment's base offset")
        else:
            remove_segment_files(self.directory, new_offset)
            active.on_become_inactive_segment()
        segment = LogSegment.open(
            self.directory,
            new_offset,
            self.config,
            self.clock,
            init_file_size=self.config.segment_bytes,
            preallocate=self.config.preallocate,
        )
        self.segments.add(segment)
        self.producer_state.map_end_offset = new_offset
        self.producer_state.take_snapshot(sync=self.flush_on_roll)
        if self.flush_on_roll and new_offset > self._recovery_point:
            self._flush_segments(new_offset)
            self._mark_flushed(new_offset)
        return segment

    # --- read --------------------------------------------------------------------------------------------

    @_io_boundary
    def read(
        self,
        start_offset: int,
        max_length: int,
        isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK,
        min_one_message: bool = False,
    ) -> FetchDataInfo:
        """Batches from the one holding ``start_offset``, up to ``max_length`` bytes, not past the isolation
        bound; empty at the bound. Raises OffsetOutOfRangeError below the log start or beyond LEO."""
        if start_offset < self._log_start_offset:
            raise OffsetOutOfRangeError(start_offset, self._log_start_offset, self._log_end_offset)
        if isolation is FetchIsolation.LOG_END:
            bound = self.log_end_offset_metadata
        elif isolation is FetchIsolation.TXN_COMMITTED:
            lso = self.last_stable_offset
            bound = (
                self.high_watermark_metadata() if lso == self._high_watermark else self.offset_metadata(lso)
            )
        else:
            bound = self.high_watermark_metadata()
        return self._read(start_offset, max_length, bound, min_one_message)

    @_io_boundary
    def collect_aborted_transactions(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed reader of [start_offset, upper_bound) must know: from the
        ``.txnindex`` of the segment holding ``start_offset`` and those after it, until one says no later segment
        can hold more (Kafka's ``collectAbortedTransactions``)."""
        segment = self.segments.floor_segment(start_offset) or self.segments.first_segment()
        found: list[AbortedTxn] = []
        while segment is not None:
            if not segment.txn_index.verified:
                self._verify_txn_index(segment)
            txns, complete = segment.txn_index.collect(start_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
            segment = self.segments.higher_segment(segment.base_offset)
        return found

    def _verify_txn_index(self, segment: LogSegment) -> None:
        """A segment loaded without a ``.txnindex``: if its log holds an ABORT marker the file was lost, and it is
        rebuilt (with every later segment's), said at WARN; else it needs none."""
        if not segment_aborts(segment, {}):
            segment.txn_index.verified = True
            return
        _log.warning(
            "%s: %s is missing but the segment holds aborted transactions: rebuilt from the log",
            self,
            segment.txn_index.path.name,
        )
        rebuild_txn_indexes(self.directory, self.segments, segment.base_offset, self._log_start_offset)

    def fetch_upper_bound(self, fetch_offset: int, stable: int) -> int:
        """The offset a read from ``fetch_offset`` cannot pass: the next segment's base (a read stays in one
        segment) or ``stable``, whichever is lower."""
        segment = self.segments.floor_segment(fetch_offset)
        following = self.segments.higher_segment(segment.base_offset) if segment is not None else None
        return stable if following is None else min(stable, following.base_offset)

    def _read(
        self, start_offset: int, max_length: int, bound: LogOffsetMetadata, min_one_message: bool
    ) -> FetchDataInfo:
        segment = self.segments.floor_segment(start_offset)
        if start_offset > self._log_end_offset or segment is None:
            raise OffsetOutOfRangeError(start_offset, self._log_start_offset, self._log_end_offset)
        if start_offset == bound.message_offset:
            return FetchDataInfo(bound)
        if start_offset > bound.message_offset:
            return FetchDataInfo(self.offset_metadata(start_offset))
        while segment is not None:
            if segment.base_offset < bound.segment_base_offset:
                info = segment.read(start_offset, max_length, segment.size, min_one_message)
            elif segment.base_offset == bound.segment_base_offset and not bound.message_offset_only:
                info = segment.read(
                    start_offset, max_length, bound.relative_position_in_segment, min_one_message
                )
            else:
                info = segment.read(start_offset, 0)
            if info is not None:
                return info
            segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo(self.log_end_offset_metadata)

    # --- offsets by timestamp ------------------------------------------------------------------------------

    @_io_boundary
    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2/-4 the log start, -1 the LEO (the partition layer answers clients with the HW),
        -3 the record with the largest timestamp, -5 (-1, -1); otherwise the first record with a timestamp
        >= ``timestamp`` at or after the log start, in the first segment whose largest timestamp reaches it."""
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            earliest = self.leader_epoch_cache.earliest_entry()
            epoch = earliest.epoch if earliest and earliest.start_offset <= self._log_start_offset else None
            return TimestampAndOffset(-1, self._log_start_offset, epoch)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self._log_end_offset, self.leader_epoch_cache.latest_epoch())
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return TimestampAndOffset(-1, -1, None)
        if timestamp == MAX_TIMESTAMP:
            best: LogSegment | None = None
            for segment in self.segments:
                if best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far:
                    best = segment
            return best.offset_of_max_timestamp() if best is not None else None
        if timestamp < 0:
            raise ValueError(f"unsupported special timestamp {timestamp}")
        for segment in self.segments:
            if segment.largest_timestamp >= timestamp:
                return segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
        return None

    # --- retention ---------------------------------------------------------------------------------------

    @_io_boundary
    def delete_old_segments(self, now: int | None = None) -> int:
        """Retention: log-start breach always; size and time too when cleanup.policy has ``delete``."""
        now = self.clock.milliseconds() if now is None else now
        self.producer_state.remove_expired_producers(now)
        deleted = self._delete_log_start_offset_breached()
        if self.config.has_delete:
            deleted += self._delete_retention_size_breached()
            deleted += self._delete_retention_ms_breached(now)
        return deleted

    @_io_boundary
    def delete_segments_below_log_start(self) -> int:
        """The log-start breach of retention alone, at once (after DeleteRecords, whose space a full disk
        awaits; Kafka waits for the next retention check): the segments wholly below the log start offset."""
        return self._delete_log_start_offset_breached()

    def _delete_log_start_offset_breached(self) -> int:
        def breached(segment: LogSegment, following: LogSegment | None) -> bool:
            return following is not None and following.base_offset <= self._log_start_offset

        return self._delete_segments(
            self.deletable_segments(breached), f"below the log start offset {self._log_start_offset}"
        )

    def _delete_retention_size_breached(self) -> int:
        limit = self.config.retention_bytes
        size = self.size
        if limit < 0 or size < limit:
            return 0
        diff = size - limit

        def breached(segment: LogSegment, following: LogSegment | None) -> bool:
            nonlocal diff
            if diff - segment.size >= 0:
                diff -= segment.size
                return True
            return False

        return self._delete_segments(
            self.deletable_segments(breached), f"past retention.bytes {limit} (the log held {size} bytes)"
        )

    def _delete_retention_ms_breached(self, now: int) -> int:
        limit = self.config.retention_ms
        if limit < 0:
            return 0

        def breached(segment: LogSegment, following: LogSegment | None) -> bool:
            return now - segment.largest_timestamp > limit

        return self._delete_segments(
            self.deletable_segments(breached), f"past retention.ms {limit} (by their largest timestamps)"
        )

    def deletable_segments(self, predicate: _Predicate) -> list[LogSegment]:
        """The oldest segments, in order, that lie wholly below the HW and satisfy ``predicate(segment, next)``;
        never an empty active segment."""
        result: list[LogSegment] = []
        ordered = list(self.segments)
        for i, segment in enumerate(ordered):
            following = ordered[i + 1] if i + 1 < len(ordered) else None
            upper = following.base_offset if following is not None else self._log_end_offset
            empty_active = following is None and segment.size == 0
            if self._high_watermark >= upper and predicate(segment, following) and not empty_active:
                result.append(segment)
            else:
                break
        return result

    def _delete_segments(self, deletable: list[LogSegment], reason: str) -> int:
        """Retention's deletion of ``deletable`` (the oldest segments), said at INFO with ``reason``."""
        if not deletable:
            return 0
        if len(deletable) == len(self.segments):
            try:
                new_active = self.roll()
            except OSError as exc:  # a full disk: delete what retention allows but the active segment
                _log.warning("%s: cannot roll before deleting the active segment (%s); keeping it", self, exc)
                deletable = deletable[:-1]
            else:
                if new_active.base_offset == deletable[-1].base_offset:
                    deletable = deletable[:-1]
            if not deletable:
                return 0
        following = self.segments.higher_segment(deletable[-1].base_offset)
        _log.info(
            "%s: deleting %d segment(s), offsets %d to %d (%d bytes), %s",
            self,
            len(deletable),
            deletable[0].base_offset,
            (following.base_offset if following is not None else self._log_end_offset) - 1,
            sum(segment.size for segment in deletable),
            reason,
        )
        self._remove_and_delete(deletable)
        first = self.segments.first_base_offset()
        if first > self._log_start_offset:
            self._set_log_start_offset(first, segments_gone=True)
        return len(deletable)

    def _remove_and_delete(self, doomed: list[LogSegment]) -> None:
        """Drop ``doomed`` from the map, rename their files to ``.deleted`` and queue them for removal."""
        for segment in doomed:
            self.segments.remove(segment.base_offset)
            self.producer_state.delete_snapshot(segment.base_offset)
        self._delete_segment_files(doomed)

    def _delete_segment_files(self, doomed: list[LogSegment]) -> None:
        due = self.clock.milliseconds() + self.config.file_delete_delay_ms
        for segment in doomed:
            segment.close_handlers()
            segment.change_file_suffixes("", DELETED_SUFFIX)
            self._pending_deletes.append((due, segment))
        if self.config.file_delete_delay_ms <= 0:
            self.delete_pending_segments()

    @_io_boundary
    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Swap ``new_segments`` (complete ``.cleaned`` segments, flushed) in for ``old_segments`` so that a
        crash at any point leaves the old set or the new one (Kafka's ``replaceSegments``, storage spec 7.5):

        1. rename the new segments ``.cleaned`` -> ``.swap``, highest base offset first;
        2. put them in the map; take out the old ones (but not where a new one has the same base), rename the
           old files to ``.deleted`` and queue them for removal;
        3. drop the ``.swap`` suffix and fsync the directory.

        The loader finishes a crash after 1 and undoes one before it (``log_loader``). Old segments no longer in
        the map are skipped. Producer snapshots named by an old base that no new segment takes are deleted."""
        ordered = sorted(new_segments, key=lambda s: s.base_offset)
        for segment in reversed(ordered):
            segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
        fsync_directory(self.directory)
        new_bases = {s.base_offset for s in ordered}
        doomed = sorted(
            (s for s in old_segments if self.segments.get(s.base_offset) is s), key=lambda s: s.base_offset
        )
        for segment in reversed(ordered):
            self.segments.add(segment)
        for segment in doomed:
            if segment.base_offset not in new_bases:
                self.segments.remove(segment.base_offset)
                self.producer_state.delete_snapshot(segment.base_offset)
        self._delete_segment_files(doomed)
        for segment in ordered:
            segment.change_file_suffixes(SWAP_SUFFIX, "")
        fsync_directory(self.directory)
        self._hw_metadata = None

    @_io_boundary
    def delete_pending_segments(self, now: int | None = None) -> int:
        """Remove the ``.deleted`` files whose ``file.delete.delay.ms`` has passed; returns how many segments."""
        now = self.clock.milliseconds() if now is None else now
        due = [s for when, s in self._pending_deletes if when <= now]
        self._pending_deletes = [(when, s) for when, s in self._pending_deletes if when > now]
        for segment in due:
            segment.delete()
        return len(due)

    # --- flush -------------------------------------------------------------------------------------------

    @_io_boundary
    def flush(self, offset: int, including_offset: bool = False) -> None:
        """fsync every segment holding offsets in [recovery_point, offset) (``offset`` included when asked),
        then move the recovery point to ``offset`` (at most LEO)."""
        flush_offset = offset + 1 if including_offset else offset
        if flush_offset <= self._recovery_point:
            return
        self._flush_segments(flush_offset)
        self._mark_flushed(min(offset, self._log_end_offset))

    def _flush_segments(self, flush_offset: int) -> None:
        flushed = self.segments.values(self._recovery_point, flush_offset)
        for segment in flushed:
            segment.flush()
        if any(s.base_offset >= self._recovery_point for s in flushed):
            fsync_directory(self.directory)

    def _mark_flushed(self, offset: int) -> None:
        if offset > self._recovery_point:
            self._recovery_point = offset
            self._last_flush_time = self.clock.milliseconds()

    # --- truncation --------------------------------------------------------------------------------------

    @_io_boundary
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything at and after ``target_offset`` (follower path); False when no record goes.

        The leader-epoch cache is cut at the log end even then, as Kafka does: a broker that became leader
        assigned its epoch at its log end and lost leadership before appending holds an epoch no record has, and
        its fetches would name that epoch as their last one (a diverging-epoch answer that never changes)."""
        if target_offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {target_offset}")
        if target_offset >= self._log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
            return False
        if target_offset < self.segments.first_base_offset():
            self.truncate_fully_and_start_at(target_offset)
            return True
        self._remove_and_delete(self.segments.higher_segments(target_offset))
        self.active_segment.truncate_to(target_offset)
        self._log_end_offset = target_offset
        self._recovery_point = min(self._recovery_point, target_offset)
        self._log_start_offset = min(self._log_start_offset, target_offset)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self.update_high_watermark(self._high_watermark)
        rebuild_producer_state(
            self.producer_state,
            self.segments,
            self._log_start_offset,
            target_offset,
            self.clock.milliseconds(),
        )
        self.producer_state.on_high_watermark_updated(self._high_watermark)  # markers replayed below the HW
        return True

    @_io_boundary
    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start empty at ``new_offset`` (LEO = log start = HW = ``new_offset``)."""
        self._remove_and_delete(list(self.segments))
        self.segments.add(
            LogSegment.open(
                self.directory,
                new_offset,
                self.config,
                self.clock,
                init_file_size=self.config.segment_bytes,
                preallocate=self.config.preallocate,
            )
        )
        self._log_end_offset = new_offset
        self._log_start_offset = new_offset
        self._recovery_point = min(self._recovery_point, new_offset)
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.update_high_watermark(new_offset)

    # --- lifecycle ---------------------------------------------------------------------------------------

    def _read_config(self, config: LogConfig) -> None:
        """What the append path reads of ``config`` per append, worked out once."""
        self._stamps_or_compacts = config.is_compacted or config.log_append_time
        self._max_segment_ms = config.max_segment_ms
        self._max_lone_batch = min(config.max_message_bytes, config.segment_bytes)
        self._segment_bytes = config.segment_bytes
        self._flush_messages = config.flush_messages

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic settings (index interval, retention, roll and flush limits) from now on."""
        self.config = config
        self._read_config(config)
        for segment in self.segments:
            segment.index_interval_bytes = config.index_interval_bytes

    @_io_boundary
    def close(self) -> None:
        """Snapshot the producer state at the log end, then close every segment (final time-index entries,
        trimmed indexes, fsynced and trimmed ``.log``)."""
        self.producer_state.map_end_offset = self._log_end_offset
        self.producer_state.take_snapshot(sync=True)
        for segment in self.segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.close_handlers()

    def close_handlers(self) -> None:
        """Close every file without writing anything (no snapshot, no final index entries, no sync): for a log
        about to be deleted, which a full disk must not stop."""
        for segment in self.segments:
            segment.close_handlers()
        for _, segment in self._pending_deletes:
            segment.close_handlers()

    @_io_boundary
    def delete(self) -> None:
        """Remove every file of this log and its directory."""
        self.close_handlers()
        self.segments.clear()
        self._pending_deletes.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.directory}, start={self._log_start_offset}, end={self._log_end_offset}, "
            f"hw={self._high_watermark}, segments={len(self.segments)})"
        )
