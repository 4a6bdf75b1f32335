"""Log compaction (``cleanup.policy=compact``): keep only the latest record of each key: which log to clean and
when (Kafka's ``LogCleaner`` and ``LogCleanerManager``); one cleaning itself is ``cleaner`` (Kafka's ``Cleaner``).

A log's offsets, for the cleaner::

    log start ... first dirty offset ... first uncleanable offset ... active segment base ... LEO
    |-- clean (cleaned before) --|-- dirty, cleanable --|-- uncleanable (min.compaction.lag.ms, HW, active) --|

- The **first dirty offset** is the log's entry in ``cleaner-offset-checkpoint`` (a per-log-directory offset
  checkpoint, format in ``checkpoint``), or the log start offset when it has none or it lies outside
  [log start, LEO].
- The **first uncleanable offset** is the base offset of the segment holding the smallest of the last stable
  offset (so no open transaction and nothing above the high watermark is cleaned), the active segment's base
  offset, and the base offset of the first dirty segment holding a record newer than ``now -
  min.compaction.lag.ms``. The active segment is never cleaned.
- A log is cleanable when its dirty bytes / all bytes below the first uncleanable offset exceed
  ``min.cleanable.dirty.ratio``, or when its first dirty segment is older than ``max.compaction.lag.ms`` and there is
  something dirty. The filthiest cleanable log is cleaned first.

One cleaning (``plan``, ``clean`` and ``commit``, in ``cleaner``):

1. **Offset map**: key -> offset of its latest record in the dirty range, at most ``max_map_entries`` keys (Kafka's
   dedupe buffer); batches are mapped whole (the first one even beyond the limit, so a round always progresses);
   when the next batch does not fit, the range ends before it, and the rest waits for the next round.
   ``end_offset`` = the last offset mapped + 1 becomes the new checkpoint.
2. **Groups**: the segments from the log start up to ``end_offset``, consecutive ones merged while their total
   ``.log`` size stays within ``segment.bytes``, their index sizes within ``segment.index.bytes`` and their offsets
   within Int.MAX of the group's base.
3. **Filter** each group into one new segment ``<group base>.log.cleaned`` (with its indexes). A record is kept iff
   it lies past the mapped range, or has a key and is the latest of that key, and, for a tombstone (null value),
   its batch's delete horizon has not passed (v2) or its segment was modified within ``delete.retention.ms`` of the
   last clean segment (legacy messages). Records with a null key are dropped (Kafka counts them as invalid).
   Batches keep their base offset and last offset, so no offset ever changes:

   - every record kept and no delete horizon to set: the batch is copied byte for byte;
   - otherwise it is rebuilt with the kept records, its codec, producer fields and last offset; a batch that keeps
     a tombstone gets the delete horizon ``now + delete.retention.ms`` (attribute bit 6, in baseTimestamp), once;
   - nothing kept: the batch goes, unless it holds the last data offset of a producer the log still tracks: then
     an empty batch (header only, 0 records) keeps its producer id, epoch and sequences (``writeEmptyHeader``).
   Transactions (``cleaner.TransactionsInCleaning``): the data of aborted transactions goes (it never enters the
   offset map, so it never shadows a committed record); an ABORT marker and its ``.txnindex`` entry stay while
   the pass still finds data of its transaction, a COMMIT marker while its transaction has data left; a marker
   that may go gets a delete horizon and goes once ``delete.retention.ms`` has passed.
4. **Swap**: ``Log.replace_segments`` renames ``.cleaned`` -> ``.swap``, takes the old segments out (``.deleted``),
   drops ``.swap``; a crash at any point loads as the old segments or the new ones (``log_loader``).

Threads: ``plan`` and ``commit`` run on the log owner's thread (they touch the ``Log``); ``clean`` runs anywhere,
e.g. a worker thread: it reads the old segments through file descriptors of its own opened by ``plan`` (so a
retention or truncation meanwhile cannot pull data from under it) and writes only its new ``.cleaned`` files.
``commit`` refuses (CleaningAbortedError) when the log changed meanwhile: an old segment gone or resized.
``LogCleaner`` schedules all this for a ``LogManager``.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.clock import Clock
from samsa.server_defaults import default

from .errors import CleaningAbortedError, KafkaStorageError
from .topic import TopicPartition

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from .cleaner import CleaningPlan, CleaningResult
    from .log import Log

# One cleaning (``cleaner``: its plan, the offset map, grouping, filtering into new segments, with
# samsa.records) is imported when the first cleaning starts: a broker creates its LogCleaner at start, before
# any log exists (start-up time).

_logger = logging.getLogger(__name__)

FULL_DISK_RETRY_MS = 10_000
"""How long a log whose cleaning a full disk stopped waits before it is tried again."""
BYTES_PER_MAP_ENTRY = 24  # Kafka's SkimpyOffsetMap: a 16-byte MD5 of the key and an 8-byte offset


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings that the cleaner itself reads."""

    enable: bool = default("log.cleaner.enable")
    backoff_ms: int = default("log.cleaner.backoff.ms")
    dedupe_buffer_size: int = default("log.cleaner.dedupe.buffer.size")
    io_buffer_load_factor: float = default("log.cleaner.io.buffer.load.factor")

    @property
    def max_map_entries(self) -> int:
        """How many keys one cleaning maps: as many as Kafka's dedupe buffer holds at its load factor."""
        return max(1, int(self.dedupe_buffer_size // BYTES_PER_MAP_ENTRY * self.io_buffer_load_factor))


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log's cleanable range and sizes (Kafka's ``LogToClean``)."""

    tp: TopicPartition
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


def cleanable_offsets(log: Log, last_clean_offset: int | None, now: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, needs compaction now) for ``log`` (module doc)."""
    start = log.log_start_offset
    first_dirty = last_clean_offset if last_clean_offset is not None else start
    if first_dirty < start or first_dirty > log.log_end_offset:
        first_dirty = start
    dirty = log.segments.non_active_from(first_dirty)
    config = log.config
    needs_now = False
    if config.max_compaction_lag_ms > 0 and dirty:
        first_timestamp = dirty[0].first_batch_timestamp()
        needs_now = 0 <= first_timestamp < now - config.max_compaction_lag_ms
    bounds = [log.last_stable_offset, log.active_segment.base_offset]
    if config.min_compaction_lag_ms > 0:
        for segment in dirty:
            if segment.largest_timestamp > now - config.min_compaction_lag_ms:
                bounds.append(segment.base_offset)
                break
    uncleanable = min(bounds)
    holding = log.segments.floor_segment(
        uncleanable
    )  # the segment holding the bound is not cleaned (Kafka's)
    if holding is not None:
        uncleanable = holding.base_offset
    return first_dirty, max(first_dirty, uncleanable), needs_now


def log_to_clean(tp: TopicPartition, log: Log, last_clean_offset: int | None, now: int) -> LogToClean:
    first_dirty, first_uncleanable, needs_now = cleanable_offsets(log, last_clean_offset, now)
    clean = sum(s.size for s in log.segments.values(log.log_start_offset, first_dirty))
    cleanable = sum(s.size for s in log.segments.values(first_dirty, first_uncleanable))
    return LogToClean(tp, log, first_dirty, first_uncleanable, clean, cleanable, needs_now)


def filthiest_log(
    logs: Mapping[TopicPartition, Log],
    checkpoints: Mapping[TopicPartition, int],
    now: int,
    skip: Collection[TopicPartition] = (),
) -> LogToClean | None:
    """The compacted log most in need of cleaning, or None (Kafka's ``grabFilthiestCompactedLog``); logs in
    ``skip`` (uncleanable ones) are passed over."""
    best: LogToClean | None = None
    for tp, log in logs.items():
        if not log.config.is_compacted or tp in skip:
            continue
        candidate = log_to_clean(tp, log, checkpoints.get(tp), now)
        ratio = candidate.cleanable_ratio
        if not (
            (candidate.needs_compaction_now and candidate.cleanable_bytes > 0)
            or ratio > log.config.min_cleanable_dirty_ratio
        ):
            continue
        if best is None or ratio > best.cleanable_ratio:
            best = candidate
    return best


# --- scheduling ---------------------------------------------------------------------------------------------------


_Finish = Callable[[TopicPartition, int], None]


class LogCleaner:
    """Runs one cleaning at a time for a ``LogManager``: ``tick(now)`` from the owner's periodic task picks the
    filthiest compacted log every ``log.cleaner.backoff.ms`` (at once after a cleaning), plans it, cleans it on a
    worker thread (``threaded``) or inline, and commits the finished one on the owner's thread, then reports the
    new checkpoint to ``on_cleaned(tp, end_offset)``. A log whose cleaning fails (a corrupt batch, an I/O error)
    is marked uncleanable and passed over from then on, as Kafka does; ``abort(tp)`` stops a cleaning of a log
    that is going away.

    Owner's thread only, except ``clean`` running on the worker.
    """

    def __init__(self, config: CleanerConfig, clock: Clock, *, threaded: bool = True) -> None:
        self.config = config
        self.clock = clock
        self.threaded = threaded
        self._executor: ThreadPoolExecutor | None = None
        self._running: tuple[CleaningPlan, Future[CleaningResult]] | None = None
        self._abort = threading.Event()
        self._next_attempt = 0
        self.cleanings = 0
        self.uncleanable: dict[TopicPartition, BaseException] = {}
        self.deferred: dict[TopicPartition, int] = {}  # logs a full disk stopped: when to try them again

    @property
    def busy(self) -> bool:
        return self._running is not None

    def tick(
        self,
        logs: Mapping[TopicPartition, Log],
        checkpoints: Mapping[TopicPartition, int],
        now: int,
        on_cleaned: _Finish,
    ) -> bool:
        """Finish a cleaning that is done, or start one that is due; True when a cleaning was committed."""
        if not self.config.enable:
            return False
        if self._running is not None:
            return self._finish(logs, on_cleaned, block=False)
        if now < self._next_attempt:
            return False
        skip = self.uncleanable.keys() | {tp for tp, at in self.deferred.items() if now < at}
        to_clean = filthiest_log(logs, checkpoints, now, skip)
        if to_clean is None:
            self._next_attempt = now + self.config.backoff_ms
            return False
        from .cleaner import clean, plan

        try:
            cleaning = plan(to_clean, self.clock, self.config.max_map_entries, now)
        except OSError as exc:
            self._give_up(to_clean.tp, exc)
            return False
        if not self.threaded:
            self._running = (cleaning, _done(cleaning, self._abort))
            return self._finish(logs, on_cleaned, block=True)
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(1, thread_name_prefix="samsa-log-cleaner")
        self._running = (cleaning, self._executor.submit(clean, cleaning, self._abort))
        return False

    def _finish(self, logs: Mapping[TopicPartition, Log], on_cleaned: _Finish, *, block: bool) -> bool:
        assert self._running is not None
        cleaning, future = self._running
        if not block and not future.done():
            return False
        self._running = None
        try:
            result = future.result()
        except CleaningAbortedError:
            cleaning.close()
            return False
        except Exception as exc:  # the worker removed its new files
            cleaning.close()
            self._give_up(cleaning.tp, exc)
            return False
        if logs.get(cleaning.tp) is not cleaning.log:
            result.abandon()
            return False
        from .cleaner import commit

        try:
            commit(result)
        except CleaningAbortedError:
            return False  # the log changed meanwhile: planned again at the next tick
        except OSError as exc:
            self._give_up(cleaning.tp, exc)
            return False
        self.cleanings += 1
        if self.deferred.pop(cleaning.tp, None) is not None:
            _logger.warning("cleaned %s again after the disk had room", cleaning.tp)
        on_cleaned(cleaning.tp, result.end_offset)
        return True

    def _give_up(self, tp: TopicPartition, exc: BaseException) -> None:
        """Mark ``tp`` uncleanable, as Kafka does; but a full disk is the disk's state, not the log's fault:
        the log is tried again ``FULL_DISK_RETRY_MS`` later (cleaning is what frees space on a compacted
        topic), and said once until it cleans again."""
        cause = exc.cause if isinstance(exc, KafkaStorageError) else exc
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            if tp not in self.deferred:
                _logger.warning(
                    "cannot clean %s now: %s; tried again every %d s until the disk has room",
                    tp,
                    exc,
                    FULL_DISK_RETRY_MS // 1000,
                )
            self.deferred[tp] = self.clock.milliseconds() + FULL_DISK_RETRY_MS
            return
        _logger.error("cannot clean %s, marking it uncleanable: %s", tp, exc)
        self.uncleanable[tp] = exc

    def abort(self, tp: TopicPartition) -> None:
        """Stop the running cleaning if it is of ``tp`` (its log is being deleted), waiting for the worker."""
        if self._running is not None and self._running[0].tp == tp:
            self._stop_running()
        self.uncleanable.pop(tp, None)
        self.deferred.pop(tp, None)

    def shutdown(self) -> None:
        """Stop a running cleaning (its new files are removed) and the worker thread."""
        self._stop_running()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _stop_running(self) -> None:
        if self._running is None:
            return
        cleaning, future = self._running
        self._running = None
        self._abort.set()
        try:
            future.result().abandon()
        except BaseException:
            cleaning.close()
        finally:
            self._abort.clear()


def _done(cleaning: CleaningPlan, abort: threading.Event) -> Future[CleaningResult]:
    from .cleaner import clean

    future: Future[CleaningResult] = Future()
    try:
        future.set_result(clean(cleaning, abort))
    except BaseException as exc:
        future.set_exception(exc)
    return future
