"""``LogManager``: every partition log on this broker, across its log directories.

Concurrency contract: not thread-safe. One owner (the broker's storage thread, or the event loop through it)
serialises every call. Periodic work is not scheduled here: the owner calls ``cleanup_logs(now)``,
``flush_dirty_logs(now)``, ``delete_pending(now)`` and the ``checkpoint_*`` methods on its own timers, with the
intervals of Kafka's ``log.retention.check.interval.ms``, ``log.flush.scheduler.interval.ms``,
``log.flush.offset.checkpoint.interval.ms`` and so on (``schedule_due(now)`` runs whatever is due).

Per log directory, on ``startup()``:

1. take the ``.lock`` file (an exclusive ``flock``; a second manager on the same directory fails at once);
2. check or write ``meta.properties`` when a node id is configured;
3. if ``.kafka_cleanshutdown`` exists, delete it at once and treat every log in the directory as clean (a crash
   while loading then counts as unclean next time);
4. read ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` (an unreadable file is treated
   as empty, as Kafka does);
5. open every partition directory: live ones with their checkpointed recovery point (after an unclean shutdown
   ``Log`` recovers every segment at or above it); ``-delete`` directories are queued for removal without loading;
   ``-future`` and ``-stray`` directories are left alone; a log's high watermark starts at its
   ``replication-offset-checkpoint`` value (clamped by the log), so retention works before any fetch.

Log compaction: ``clean_logs(now)`` (run by ``schedule_due`` on every call) drives a ``log_cleaner.LogCleaner``: every
``log.cleaner.backoff.ms`` it picks the filthiest log with ``cleanup.policy`` including ``compact``, cleans it on a
worker thread and swaps the result in on the owner's thread at a later call; progress is kept per log directory in
``cleaner-offset-checkpoint``. Retention (``cleanup_logs``) runs for every log: a compacted log loses only
segments below its log start offset, ``compact,delete`` ones also what retention.ms/bytes allow.

Each log directory's load ends with one summary line (logs, time, segments checked and recovered, bytes cut,
files set aside); every fix inside it was logged at WARN by the loader. Periodic tasks that fail on I/O (a full
disk) are logged once a minute and retried on schedule; retention runs per log, so one log's trouble does not stop
the others, and keeps freeing space on a full disk.

``shutdown()`` stops a running cleaning, flushes every log through its end, closes it, writes the three checkpoints
and, per log directory where every step succeeded, writes ``.kafka_cleanshutdown``; then it releases the locks and
returns what failed, so the owner can say why the next start will recover.

Each log directory holds a space reserve (``space_reserve``, ``.samsa-space-reserve``, 1 MiB) for the writes an
operator's way out of a full disk needs: a topic's config (a lower retention), DeleteRecords's leader-epoch
checkpoint (``with_space_reserve``) and a clean stop's checkpoints and marker; taken back by the periodic task once
there is room.

Topic configuration overrides (topic-level keys such as ``retention.ms``) are kept per topic and persisted, so they
survive a restart, as ``topic-config.<topic>.properties`` in every log directory (Kafka keeps them in ZooKeeper or
the metadata log; a plain file beside the checkpoints is what a single node needs and Kafka ignores regular files
at this level). Only the overrides are stored; the defaults come from ``default_config`` at startup.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeVar

from samsa.clock import Clock
from samsa.log_throttle import LogThrottle
from samsa.server_defaults import default

from .checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    consume_clean_shutdown,
    fsync_directory,
    offset_checkpoint,
    write_atomically,
    write_clean_shutdown,
)
from .checkpoint import read_offsets_or_empty as _read_or_empty
from .config import LogConfig
from .errors import InvalidConfigError, KafkaStorageError, StorageError
from .log_cleaner import CleanerConfig, LogCleaner
from .log_end_claims import CLAIM_STEP, claims_after_a_restart, write_claims
from .meta import ensure_meta_properties, read_properties_file, write_properties_file
from .properties import PropertiesError
from .space_reserve import SpaceReserve, is_disk_full
from .topic import (
    CLUSTER_METADATA_TOPIC,
    DirKind,
    InvalidPartitionDirError,
    TopicPartition,
    delete_dir_name,
    ensure_no_collision,
    log_dir_name,
    parse_dir_name,
    validate_topic,
)

if TYPE_CHECKING:
    from .log import Log
    from .log_loader import LoadReport

# .log (with the loader, segments, indexes and samsa.records) is imported when the first log is opened or
# created: a broker with none answers its first requests without it (start-up time)

_log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
TASK_FAILURE_LOG_INTERVAL_MS = 60_000  # a periodic task failing again and again says so once a minute
TOPIC_CONFIG_PREFIX = "topic-config."
TOPIC_CONFIG_SUFFIX = ".properties"
# a single broker's dynamic configs: broker-config.<id|default>.properties
BROKER_CONFIG_PREFIX = "broker-config."
# a single broker's client quotas, by entity path (users/alice, clients/app, users/alice/clients/app)
CLIENT_QUOTAS_FILE = "client-quotas.json"
IGNORED_DIRS = frozenset({"remote-log-index-cache"})

_OffsetOf = Callable[["Log"], "int | None"]
_T = TypeVar("_T")

DEFAULT_RETENTION_CHECK_INTERVAL_MS: int = default("log.retention.check.interval.ms")
DEFAULT_FLUSH_CHECKPOINT_INTERVAL_MS: int = default("log.flush.offset.checkpoint.interval.ms")
DEFAULT_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS: int = default(
    "log.flush.start.offset.checkpoint.interval.ms"
)
DEFAULT_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: int = default("replica.high.watermark.checkpoint.interval.ms")
DELETE_CHECK_INTERVAL_MS = 1_000  # how often files whose file.delete.delay.ms passed are looked for
# how often a log dir's spent space reserve is taken back where there is room
RESERVE_CHECK_INTERVAL_MS = 1_000


class LogManagerError(StorageError):
    """Base of the errors LogManager raises itself (Log's own errors pass through unchanged)."""


class TopicConfigFileError(LogManagerError):
    """A topic's config file is damaged in every log dir holding one (``LogManager._load_topic_configs``)."""


class LogDirLockedError(LogManagerError):
    """Another process (or another LogManager) holds ``<log_dir>/.lock``."""

    def __init__(self, log_dir: Path) -> None:
        super().__init__(
            f"failed to acquire lock on {log_dir / LOCK_FILE}: another process is using this log directory"
        )
        self.log_dir = log_dir


class InvalidPartitionsError(LogManagerError):
    """A partition count that is not allowed (Kafka: InvalidPartitionsException)."""

    def __init__(self, topic: str, current: int, requested: int, message: str) -> None:
        super().__init__(message)
        self.topic = topic
        self.current = current
        self.requested = requested


class TopicExistsError(LogManagerError):
    """``create_topic`` for a topic that already has partitions here (Kafka: TopicExistsException)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"Topic '{topic}' already exists.")
        self.topic = topic


class UnknownTopicError(LogManagerError):
    """A topic with no partitions here (Kafka: UnknownTopicOrPartitionException)."""

    def __init__(self, topic: str) -> None:
        super().__init__(f"Topic '{topic}' does not exist on this broker.")
        self.topic = topic


@dataclass(slots=True)
class _LogDir:
    path: Path
    lock: IO[bytes] | None = None
    had_clean_shutdown: bool = False
    reserve: SpaceReserve | None = None  # None where it could not be made (said at WARN)


@dataclass(frozen=True, slots=True)
class _PendingDelete:
    path: Path
    due_ms: int


class LogManager:
    """All partition logs of one broker, their checkpoints, retention, flushing and deletion.

    Not thread-safe: the owner serialises every call (see the module doc). Time comes from ``clock``; the
    periodic methods also take ``now`` so a test drives them with a ManualClock.
    """

    def __init__(
        self,
        log_dirs: list[Path],
        default_config: LogConfig,
        clock: Clock,
        *,
        node_id: int | None = None,
        cluster_id: str | None = None,
        broker_epoch: int = -1,
        retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS,
        flush_checkpoint_interval_ms: int = DEFAULT_FLUSH_CHECKPOINT_INTERVAL_MS,
        flush_start_offset_checkpoint_interval_ms: int = DEFAULT_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS,
        high_watermark_checkpoint_interval_ms: int = DEFAULT_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
        flush_scheduler_interval_ms: int | None = None,
        cleaner_config: CleanerConfig | None = None,
        cleaner_threaded: bool = True,
        replicated: bool = False,
    ) -> None:
        if not log_dirs:
            raise ValueError("LogManager needs at least one log directory")
        self.default_config = default_config
        self.clock = clock
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.broker_epoch = broker_epoch
        # a cluster's logs: what damage took from one is fetched again from its leader (``log_loader.load``)
        self.replicated = replicated
        self._dirs = [_LogDir(Path(d)) for d in log_dirs]
        self._logs: dict[TopicPartition, Log] = {}
        self._log_dir_of: dict[TopicPartition, _LogDir] = {}
        self._topic_overrides: dict[str, dict[str, str]] = {}
        self._broker_configs: dict[str, dict[str, str]] = {}  # a single broker's dynamic configs, by entity
        self._client_quotas: dict[str, dict[str, str]] | None = None  # read at first use
        self._pending_deletes: list[_PendingDelete] = []
        self._intervals = {
            "retention": retention_check_interval_ms,
            "recovery": flush_checkpoint_interval_ms,
            "start": flush_start_offset_checkpoint_interval_ms,
            "hw": high_watermark_checkpoint_interval_ms,
            "flush": flush_scheduler_interval_ms if flush_scheduler_interval_ms is not None else 2**63 - 1,
            "deletes": DELETE_CHECK_INTERVAL_MS,
            "reserve": RESERVE_CHECK_INTERVAL_MS,
        }
        self._last_run: dict[str, int] = {}
        self._task_failures = LogThrottle(TASK_FAILURE_LOG_INTERVAL_MS)  # periodic tasks failing now
        self.cleaner = LogCleaner(cleaner_config or CleanerConfig(), clock, threaded=cleaner_threaded)
        self._cleaner_checkpoints: dict[TopicPartition, int] = {}
        self._started = False
        self.recovered_logs: set[TopicPartition] = (
            set()
        )  # logs loaded after an unclean shutdown (for inspection)

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def startup(self) -> None:
        """Lock every log directory, check its identity and load its logs (see the module doc)."""
        try:
            for log_dir in self._dirs:
                log_dir.path.mkdir(parents=True, exist_ok=True)
                log_dir.lock = _lock(log_dir.path)
                if self.node_id is not None:
                    ensure_meta_properties(log_dir.path, self.node_id, self.cluster_id)
                log_dir.had_clean_shutdown = consume_clean_shutdown(log_dir.path)
                log_dir.reserve = _open_reserve(log_dir.path)
            self._load_topic_configs()
            for log_dir in self._dirs:
                self._load_dir(log_dir)
        except BaseException:
            self._release_locks()
            raise
        now = self.clock.milliseconds()
        self._last_run = dict.fromkeys(self._intervals, now)
        self._started = True

    def shutdown(self) -> list[str]:
        """Flush and close every log, write the checkpoints and, per log directory where every step succeeded,
        the clean-shutdown marker; release the locks. Returns what failed (empty: a clean shutdown); a
        directory without its marker is recovered at the next start."""
        self.cleaner.shutdown()
        problems: list[str] = []
        failed: set[Path] = set()
        for tp, log in list(self._logs.items()):
            try:
                log.flush(log.log_end_offset, including_offset=True)
                log.close()
            except OSError as exc:
                failed.add(self._log_dir_of[tp].path)
                problems.append(f"{tp}: {exc}")
        for log_dir in self._dirs:
            try:
                self._with_reserve(
                    log_dir,
                    "the checkpoints of a clean stop",
                    functools.partial(self._checkpoint_dir, log_dir),
                )
                if log_dir.path not in failed:
                    self._with_reserve(
                        log_dir,
                        "the clean-shutdown marker",
                        functools.partial(write_clean_shutdown, log_dir.path, self.broker_epoch),
                    )
            except OSError as exc:
                problems.append(f"{log_dir.path}: {exc}")
        self._logs.clear()
        self._log_dir_of.clear()
        self._release_locks()
        self._started = False
        return problems

    def _checkpoint_dir(self, log_dir: _LogDir) -> None:
        self._write_offsets(log_dir, RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)
        self._write_offsets(log_dir, LOG_START_OFFSET_CHECKPOINT, self._start_offset_to_checkpoint)
        self._write_offsets(log_dir, REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)

    # --- the space reserve -------------------------------------------------------------------------------------

    def with_space_reserve(self, tp: TopicPartition, needed_by: str, action: Callable[[], _T]) -> _T:
        """Run ``action``, a write an operator's request needs before it can free space (DeleteRecords), drawing
        on the space reserve of ``tp``'s log directory while it fails for want of space (``space_reserve``)."""
        return self._with_reserve(self._log_dir_of[tp], needed_by, action)

    def _with_reserve(self, log_dir: _LogDir, needed_by: str, action: Callable[[], _T]) -> _T:
        while True:
            try:
                return action()
            except (OSError, StorageError) as exc:
                reserve = log_dir.reserve
                if not is_disk_full(exc) or reserve is None or not reserve.release_step(needed_by):
                    raise

    def refill_space_reserves(self) -> None:
        """Take spent space reserves back where their filesystem has room again (``SpaceReserve.refill``)."""
        for log_dir in self._dirs:
            if log_dir.reserve is not None and not log_dir.reserve.full and log_dir.reserve.refill():
                _log.info("the space reserve of %s is whole again", log_dir.path)

    # --- lookups -----------------------------------------------------------------------------------------------

    @property
    def log_dirs(self) -> list[Path]:
        return [d.path for d in self._dirs]

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def all_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def offline_logs(self, log_dir: Path | None = None) -> dict[TopicPartition, OSError]:
        """Logs taken offline by a failed append that could not be undone (in ``log_dir``, or anywhere)."""
        return {
            tp: log.offline_error
            for tp, log in self._logs.items()
            if log.offline_error is not None and (log_dir is None or self._log_dir_of[tp].path == log_dir)
        }

    def log_dir_of(self, tp: TopicPartition) -> Path:
        return self._log_dir_of[tp].path

    def topics(self) -> set[str]:
        return {tp.topic for tp in self._logs}

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self._logs if tp.topic == topic)

    def topic_overrides(self, topic: str) -> dict[str, str]:
        return dict(self._topic_overrides.get(topic, {}))

    def topic_config(self, topic: str) -> LogConfig:
        """The default config with the topic's overrides applied."""
        overrides = self._topic_overrides.get(topic)
        if not overrides:
            return self.default_config
        return self.default_config.with_overrides(overrides)

    # --- creating logs -----------------------------------------------------------------------------------------

    def get_or_create_log(self, tp: TopicPartition, config: LogConfig | None = None) -> Log:
        """The partition's log, created in the log directory holding the fewest partitions when absent."""
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        from .log import Log

        validate_topic(tp.topic)
        if tp.partition < 0:
            raise InvalidPartitionsError(tp.topic, 0, tp.partition, f"partition {tp.partition} is negative")
        log_dir = self._least_loaded_dir()
        directory = log_dir.path / log_dir_name(tp)
        directory.mkdir(parents=False, exist_ok=True)
        fsync_directory(log_dir.path)
        log = Log.open(
            directory,
            config if config is not None else self.topic_config(tp.topic),
            self.clock,
            recovery_point=0,
            log_start_offset=0,
            had_clean_shutdown=True,
        )
        self._serve(tp, log, log_dir)
        return log

    def _serve(self, tp: TopicPartition, log: Log, log_dir: _LogDir) -> None:
        """Hold ``log`` as ``tp``'s, in ``log_dir``; alone, with log-end claims (``log_end_claims``)."""
        self._logs[tp] = log
        self._log_dir_of[tp] = log_dir
        if not self.replicated:
            log.take_claims(functools.partial(self._claim_offsets, log_dir))

    def _claim_offsets(self, log_dir: _LogDir, log: Log, end: int) -> None:
        """``log`` is about to take its end to ``end``, past its claim: write new claims for the log dir, this
        log's ``CLAIM_STEP`` past ``end``, any other's that has used half of its claim renewed with it (one write
        for many partitions), drawing on the space reserve on a full disk. Raises OSError when they cannot be
        written (the append then fails, nothing changed)."""
        claims: dict[TopicPartition, int] = {}
        for tp, other in self._logs.items():
            if self._log_dir_of[tp] is not log_dir or other.claim_offsets is None:
                continue
            reached = end if other is log else other.log_end_offset
            claimed = other.claimed_end
            claims[tp] = reached + CLAIM_STEP if claimed - reached < CLAIM_STEP // 2 else claimed
        self._with_reserve(log_dir, "the log-end claims", lambda: write_claims(log_dir.path, claims))
        for tp, claimed in claims.items():
            self._logs[tp].set_claimed_end(claimed)

    def create_topic(
        self, topic: str, partitions: int, overrides: Mapping[str, str | int] | None = None
    ) -> list[Log]:
        """Create ``partitions`` logs for a new topic; ``overrides`` are topic-level config keys, persisted."""
        validate_topic(topic)
        if partitions < 1:
            raise InvalidPartitionsError(
                topic,
                0,
                partitions,
                f"Number of partitions was set to an invalid non-positive value {partitions}.",
            )
        if self.partitions_of(topic):
            raise TopicExistsError(topic)
        ensure_no_collision(topic, self.topics())
        self._set_overrides(topic, {k: str(v) for k, v in (overrides or {}).items()})
        config = self.topic_config(topic)
        try:
            return self._create_logs(topic, range(partitions), config)
        except OSError:
            if not self.partitions_of(topic):  # undone (out of descriptors): no topic, no overrides
                self._set_overrides(topic, {})
            raise

    def add_partitions(self, topic: str, new_total: int) -> list[Log]:
        """Grow a topic to ``new_total`` partitions, returning the new logs; partitions are never removed."""
        current = len(self.partitions_of(topic))
        if current == 0:
            raise UnknownTopicError(topic)
        if new_total == current:
            raise InvalidPartitionsError(
                topic, current, new_total, f"Topic already has {current} partition(s)."
            )
        if new_total < current:
            raise InvalidPartitionsError(
                topic,
                current,
                new_total,
                f"The topic {topic} currently has {current} partition(s); {new_total} would not be an increase. "
                "Partitions can be added, never removed.",
            )
        return self._create_logs(topic, range(current, new_total), self.topic_config(topic))

    def _create_logs(self, topic: str, partitions: range, config: LogConfig) -> list[Log]:
        """Create the logs of ``partitions``. When one fails because the process is out of file descriptors,
        the logs made by this call are closed and removed before the error is raised: kept, they would hold
        the descriptors the broker needs to serve everything else (each log keeps its files open). Other
        failures (a full disk) keep what was made, for a later call to complete."""
        made: list[Log] = []
        try:
            for partition in partitions:
                made.append(self.get_or_create_log(TopicPartition(topic, partition), config))
        except OSError as exc:
            if _out_of_descriptors(exc):
                import shutil  # here: not needed to start (start-up time)

                for log in made:
                    self._remove_new_log(log)
                failed = TopicPartition(topic, partitions[len(made)])
                for log_dir in self._dirs:  # the directory the failed one had made, if any
                    shutil.rmtree(log_dir.path / log_dir_name(failed), ignore_errors=True)
                _log.warning(
                    "creating %d partitions of %s ran out of file descriptors after %d: those are removed again "
                    "(raise the open files limit, ulimit -n, to host them)",
                    len(partitions),
                    topic,
                    len(made),
                )
            raise
        return made

    def _remove_new_log(self, log: Log) -> None:
        import shutil

        tp = next(tp for tp, held in self._logs.items() if held is log)
        del self._logs[tp]
        del self._log_dir_of[tp]
        log.close_handlers()  # writes nothing: it goes, and a snapshot would need a descriptor
        shutil.rmtree(log.directory, ignore_errors=True)

    def update_topic_config(self, topic: str, overrides: Mapping[str, str | int]) -> None:
        """Replace the topic's overrides, persist them and apply them to its open logs."""
        before = self.topic_config(topic)
        self._set_overrides(topic, {k: str(v) for k, v in overrides.items()}, from_reserve=True)
        config = self.topic_config(topic)
        for tp in self.partitions_of(topic):
            self._logs[tp].update_config(config)
        if (config.retention_ms, config.retention_bytes, config.has_delete) != (
            before.retention_ms,
            before.retention_bytes,
            before.has_delete,
        ):
            self._apply_retention_now(topic)

    def update_default_config(self, config: LogConfig) -> None:
        """New topic defaults (dynamic broker configs changed): every open log takes them under its topic's own
        overrides, at once; retention runs at once for the topics whose retention moved."""
        before = {topic: self.topic_config(topic) for topic in {tp.topic for tp in self._logs}}
        self.default_config = config
        for tp, log in self._logs.items():
            log.update_config(self.topic_config(tp.topic))
        for topic, old in before.items():
            new = self.topic_config(topic)
            if (new.retention_ms, new.retention_bytes, new.has_delete) != (
                old.retention_ms,
                old.retention_bytes,
                old.has_delete,
            ):
                self._apply_retention_now(topic)

    def dynamic_broker_config(self, entity: str) -> dict[str, str]:
        """A single broker's dynamic configs for ``entity`` (``default`` or its id), as kept in its log dirs."""
        if entity not in self._broker_configs:
            self._broker_configs[entity] = self._read_broker_config(entity)
        return dict(self._broker_configs[entity])

    def set_dynamic_broker_config(self, entity: str, config: Mapping[str, str]) -> None:
        """Keep a single broker's dynamic configs for ``entity`` in every log dir (a failed write leaves the
        ones before it as they were), drawing on the space reserve: lowering retention is how an operator frees
        a full disk."""
        name = f"{BROKER_CONFIG_PREFIX}{entity}{TOPIC_CONFIG_SUFFIX}"
        previous = self.dynamic_broker_config(entity)

        def write(log_dir: _LogDir, values: Mapping[str, str]) -> None:
            path = log_dir.path / name
            if not values:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                return
            self._with_reserve(
                log_dir,
                f"the dynamic broker config {entity}",
                functools.partial(
                    write_properties_file, path, dict(values), comment=f"dynamic broker config ({entity})"
                ),
            )

        self._write_every_dir(
            functools.partial(write, values=config), functools.partial(write, values=previous)
        )
        self._broker_configs[entity] = dict(config)

    def client_quotas(self) -> dict[str, dict[str, str]]:
        """A single broker's client quota configs by entity path (``users/<user>``, ``clients/<id>``,
        ``users/<user>/clients/<id>``), from the first log dir with a readable copy."""
        if self._client_quotas is None:
            self._client_quotas = {}
            for log_dir in self._dirs:
                path = log_dir.path / CLIENT_QUOTAS_FILE
                if not path.exists():
                    continue
                import json  # here: a broker without quotas starts without json (start-up time)

                try:
                    raw = json.loads(path.read_text())
                    self._client_quotas = {
                        str(entity): {str(k): str(v) for k, v in values.items()}
                        for entity, values in raw["entities"].items()
                    }
                    break
                except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                    _log.warning("%s cannot be read (%s): the client quotas in it are not applied", path, exc)
        return {entity: dict(values) for entity, values in self._client_quotas.items()}

    def set_client_quotas(self, quotas: Mapping[str, Mapping[str, str]]) -> None:
        """Keep a single broker's client quotas (all of them) in every log dir, as ``set_dynamic_broker_config``
        keeps its configs."""
        previous = self.client_quotas()
        kept = {entity: dict(values) for entity, values in quotas.items() if values}

        import json

        def write(log_dir: _LogDir, values: Mapping[str, Mapping[str, str]]) -> None:
            text = json.dumps({"version": 1, "entities": values}, indent=1, sort_keys=True)
            self._with_reserve(
                log_dir,
                "the client quotas",
                functools.partial(write_atomically, log_dir.path / CLIENT_QUOTAS_FILE, text.encode()),
            )

        self._write_every_dir(
            functools.partial(write, values=kept), functools.partial(write, values=previous)
        )
        self._client_quotas = kept

    def _write_every_dir(self, write: Callable[[_LogDir], None], undo: Callable[[_LogDir], None]) -> None:
        """``write`` in every log dir; when one fails, ``undo`` in those already written (best effort), then the
        failure is raised: the dirs never hold two versions for long."""
        written: list[_LogDir] = []
        try:
            for log_dir in self._dirs:
                write(log_dir)
                written.append(log_dir)
        except OSError:
            for log_dir in written:
                with contextlib.suppress(OSError):
                    undo(log_dir)
            raise

    def _read_broker_config(self, entity: str) -> dict[str, str]:
        """The first readable copy of ``entity``'s dynamic configs in the log dirs ({} when there is none; a
        damaged copy is said at WARN and the next one is read)."""
        for log_dir in self._dirs:
            path = log_dir.path / f"{BROKER_CONFIG_PREFIX}{entity}{TOPIC_CONFIG_SUFFIX}"
            if not path.exists():
                continue
            try:
                return read_properties_file(path)
            except (PropertiesError, UnicodeDecodeError, OSError) as exc:
                _log.warning(
                    "%s cannot be read (%s): the dynamic broker configs in it are not applied", path, exc
                )
        return {}

    def _apply_retention_now(self, topic: str) -> None:
        """Retention for ``topic``'s logs at once, its retention having changed, not at the next
        ``log.retention.check.interval.ms`` (up to 5 minutes): on a full disk, a lower retention is how an
        operator frees space. Kafka waits for the interval. A failure is left to the periodic retention."""
        now = self.clock.milliseconds()
        for tp in self.partitions_of(topic):
            try:
                self._logs[tp].delete_old_segments(now)
            except OSError as exc:
                _log.warning(
                    "retention of %s after its config changed failed: %s (retried on schedule)", tp, exc
                )

    # --- deleting ----------------------------------------------------------------------------------------------

    def delete_log(self, tp: TopicPartition, *, checkpoint: bool = True) -> Path:
        """Close the log, rename its directory to ``topic-N.<uuid>-delete`` and queue it for removal; with
        ``checkpoint``, rewrite its log dir's checkpoints without it.

        Returns the renamed directory. It is removed by ``delete_pending`` once ``file.delete.delay.ms`` passed.
        """
        self.cleaner.abort(tp)
        log = self._logs.pop(tp, None)
        if log is None:
            raise UnknownTopicError(tp.topic)
        log_dir = self._log_dir_of.pop(tp)
        config = log.config
        log.close_handlers()  # it is being deleted: nothing to write (as Kafka's asyncDelete; a full disk too)
        if self._cleaner_checkpoints.pop(tp, None) is not None:
            self._write_cleaner_checkpoint(log_dir)
        source = log_dir.path / log_dir_name(tp)
        target = log_dir.path / delete_dir_name(tp)
        os.replace(source, target)
        fsync_directory(log_dir.path)
        if checkpoint:
            self._checkpoint_without_deleted([log_dir])
        self._pending_deletes.append(
            _PendingDelete(target, self.clock.milliseconds() + config.file_delete_delay_ms)
        )
        return target

    def delete_topic(self, topic: str) -> list[Path]:
        """Delete every partition of the topic and forget its config overrides."""
        tps = self.partitions_of(topic)
        if not tps:
            raise UnknownTopicError(topic)
        dirs = {id(d): d for d in (self._log_dir_of[tp] for tp in tps)}
        renamed = [self.delete_log(tp, checkpoint=False) for tp in tps]
        self._checkpoint_without_deleted(list(dirs.values()))
        self._set_overrides(topic, {})
        return renamed

    def _checkpoint_without_deleted(self, log_dirs: list[_LogDir]) -> None:
        """Rewrite the recovery-point and high-watermark checkpoints of ``log_dirs`` after logs were deleted: a
        log made again under a deleted one's name must not meet its offsets at the next load (the loader takes
        them as offsets the log has handed out, ``log_loader.load``). Best effort: said at WARN when it fails."""
        for log_dir in log_dirs:
            try:
                self._write_offsets(log_dir, RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)
                self._write_offsets(log_dir, REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)
            except OSError as exc:
                _log.warning(
                    "could not rewrite the checkpoints of %s after a deletion: %s", log_dir.path, exc
                )

    def delete_pending(self, now: int, *, force: bool = False) -> list[Path]:
        """Remove ``-delete`` directories whose delay has passed (all of them with ``force``)."""
        due = [p for p in self._pending_deletes if force or p.due_ms <= now]
        self._pending_deletes = [p for p in self._pending_deletes if p not in due]
        if not due:
            return []
        import shutil  # start-up time: a broker that deletes nothing never imports it

        for pending in due:
            shutil.rmtree(pending.path, ignore_errors=True)
            fsync_directory(pending.path.parent)
        return [p.path for p in due]

    @property
    def pending_deletes(self) -> list[Path]:
        return [p.path for p in self._pending_deletes]

    # --- periodic tasks ----------------------------------------------------------------------------------------

    def cleanup_logs(self, now: int) -> int:
        """Retention for every log whose cleanup.policy includes ``delete`` (compacted logs: log-start breach
        only, handled by Log), then ``delete_files_due``. Returns the number of segments deleted."""
        deleted = 0
        failures: list[str] = []
        for tp, log in self._logs.items():
            try:
                deleted += log.delete_old_segments(now)
            except OSError as exc:  # one log's trouble does not stop retention of the others
                failures.append(f"{tp}: {exc}")
        failures += self._delete_files_due(now)
        if failures:
            raise LogManagerError(f"retention failed for {len(failures)} log(s): {'; '.join(failures[:3])}")
        return deleted

    def delete_files_due(self, now: int) -> None:
        """Remove the segments and partition directories whose ``file.delete.delay.ms`` has passed, as Kafka's
        scheduler does once the delay passes, not at the next retention check (up to
        ``log.retention.check.interval.ms``, 5 minutes, later: space a full disk waits for)."""
        failures = self._delete_files_due(now)
        if failures:
            raise LogManagerError(f"deletion failed for {len(failures)} log(s): {'; '.join(failures[:3])}")

    def _delete_files_due(self, now: int) -> list[str]:
        """``delete_files_due``, one log's failure not stopping the others: the failures."""
        failures: list[str] = []
        for tp, log in self._logs.items():
            try:
                log.delete_pending_segments(now)
            except OSError as exc:
                failures.append(f"{tp}: {exc}")
        self.delete_pending(now)
        return failures

    def flush_dirty_logs(self, now: int) -> list[TopicPartition]:
        """Flush every log whose ``flush.ms`` has passed since its last flush; returns the flushed partitions."""
        flushed: list[TopicPartition] = []
        for tp, log in self._logs.items():
            if now - log.last_flush_time >= log.config.flush_ms:
                log.flush(log.log_end_offset)
                flushed.append(tp)
        return flushed

    def checkpoint_recovery_points(self) -> None:
        for log_dir in self._dirs:
            self._write_offsets(log_dir, RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        for log_dir in self._dirs:
            self._write_offsets(log_dir, LOG_START_OFFSET_CHECKPOINT, self._start_offset_to_checkpoint)

    def checkpoint_high_watermarks(self) -> None:
        for log_dir in self._dirs:
            self._write_offsets(log_dir, REPLICATION_OFFSET_CHECKPOINT, lambda log: log.high_watermark)

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """The checkpointed high watermarks of every log directory (for the partition layer at startup)."""
        result: dict[TopicPartition, int] = {}
        for log_dir in self._dirs:
            result.update(_read_or_empty(log_dir.path / REPLICATION_OFFSET_CHECKPOINT))
        return result

    def schedule_due(self, now: int) -> list[str]:
        """Run each periodic task whose interval has passed since it last ran; returns the names run."""
        tasks = {
            "retention": lambda: self.cleanup_logs(now),
            "deletes": lambda: self.delete_files_due(now),
            "reserve": self.refill_space_reserves,
            "flush": lambda: self.flush_dirty_logs(now),
            "recovery": self.checkpoint_recovery_points,
            "start": self.checkpoint_log_start_offsets,
            "hw": self.checkpoint_high_watermarks,
        }
        ran: list[str] = []
        for name, task in tasks.items():
            if now - self._last_run.get(name, now) >= self._intervals[name]:
                self._last_run[name] = now
                if self._run_task(name, task, now):
                    ran.append(name)
        cleaned: list[bool] = []
        if self._run_task("cleaner", lambda: cleaned.append(self.clean_logs(now)), now) and cleaned[0]:
            ran.append("cleaner")
        return ran

    def _run_task(self, name: str, task: Callable[[], object], now: int) -> bool:
        """Run one periodic task; False when it failed on I/O (a full disk), which is logged once a minute, not
        raised: the other tasks, retention above all (what frees space), still run."""
        try:
            task()
        except (OSError, StorageError) as exc:
            if self._task_failures.due(now, name) is not None:
                _log.warning("periodic task %s failed: %s (retried on schedule)", name, exc)
            return False
        if self._task_failures.forget(name):
            _log.info("periodic task %s succeeded again", name)
        return True

    def clean_logs(self, now: int) -> bool:
        """One step of log compaction (``LogCleaner.tick``): finish the running cleaning or start a due one.
        True when a cleaning was swapped in (its checkpoint is then written)."""
        return self.cleaner.tick(self._logs, self._cleaner_checkpoints, now, self._cleaned)

    def cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """Each compacted log's first dirty offset as ``cleaner-offset-checkpoint`` records it."""
        return dict(self._cleaner_checkpoints)

    def _cleaned(self, tp: TopicPartition, end_offset: int) -> None:
        self._cleaner_checkpoints[tp] = end_offset
        self._write_cleaner_checkpoint(self._log_dir_of[tp])

    def _write_cleaner_checkpoint(self, log_dir: _LogDir) -> None:
        entries = [
            (tp, offset)
            for tp, offset in sorted(self._cleaner_checkpoints.items())
            if self._log_dir_of.get(tp) is log_dir
        ]
        offset_checkpoint(log_dir.path / CLEANER_OFFSET_CHECKPOINT).write(entries)

    # --- internals ---------------------------------------------------------------------------------------------

    def _least_loaded_dir(self) -> _LogDir:
        counts = {id(d): 0 for d in self._dirs}
        for log_dir in self._log_dir_of.values():
            counts[id(log_dir)] += 1
        return min(self._dirs, key=lambda d: counts[id(d)])

    def _load_dir(self, log_dir: _LogDir) -> None:
        checkpoints = _DirCheckpoints.read(log_dir.path)
        started = time.monotonic()  # a figure for the log line, not a decision: real time, not the clock's
        summary: LoadReport | None = None  # made with the first log (log_loader is imported with it)
        loaded = 0
        for child in sorted(log_dir.path.iterdir()):
            if not child.is_dir() or child.name in IGNORED_DIRS:
                continue
            try:
                parsed = parse_dir_name(child.name)
            except InvalidPartitionDirError as exc:
                raise LogManagerError(
                    f"cannot load log directory {log_dir.path}: {child}: {exc.reason}"
                ) from exc
            if parsed.tp.topic == CLUSTER_METADATA_TOPIC:
                continue
            if parsed.kind is DirKind.DELETE:
                self._pending_deletes.append(_PendingDelete(child, self.clock.milliseconds()))
                continue
            if parsed.kind is not DirKind.LIVE:
                continue  # -future and -stray replicas are not served by this manager
            log = self._load_log(log_dir, child, parsed.tp, checkpoints)
            loaded += 1
            if summary is None:
                summary = type(log.load_report)()
            summary.add(log.load_report)
        _log_loaded(log_dir, loaded, summary, (time.monotonic() - started) * 1000)

    def _load_log(
        self, log_dir: _LogDir, child: Path, tp: TopicPartition, checkpoints: _DirCheckpoints
    ) -> Log:
        """Open the partition directory ``child`` of ``log_dir`` from its checkpointed offsets and serve it."""
        if tp in self._logs:
            raise LogManagerError(
                f"duplicate log directories for {tp}: {self._log_dir_of[tp].path / child.name} and {child}"
            )
        if not log_dir.had_clean_shutdown:
            self.recovered_logs.add(tp)
        from .log import Log  # imported with the first log (start-up time; see the imports)

        log = Log.open(
            child,
            self.topic_config(tp.topic),
            self.clock,
            recovery_point=checkpoints.recovery_points.get(tp, 0),
            log_start_offset=checkpoints.start_offsets.get(tp, 0),
            had_clean_shutdown=log_dir.had_clean_shutdown,
            previous_end=max(
                checkpoints.recovery_points.get(tp, -1), checkpoints.high_watermarks.get(tp, -1)
            ),
            replicated=self.replicated,
            end_claim=-1 if log_dir.had_clean_shutdown else checkpoints.log_end_claims.get(tp, -1),
        )
        if tp in checkpoints.high_watermarks:
            log.update_high_watermark(
                checkpoints.high_watermarks[tp]
            )  # clamped to [log start, LEO] by the log
        self._serve(tp, log, log_dir)
        if tp in checkpoints.cleaned_to:
            self._cleaner_checkpoints[tp] = checkpoints.cleaned_to[tp]
        return log

    def _start_offset_to_checkpoint(self, log: Log) -> int | None:
        first_base = log.segments.first_base_offset() if len(log.segments) else log.log_start_offset
        return log.log_start_offset if log.log_start_offset > first_base else None

    def _write_offsets(self, log_dir: _LogDir, name: str, value_of: _OffsetOf) -> None:
        entries: list[tuple[TopicPartition, int]] = []
        for tp in sorted(self._logs):
            if self._log_dir_of[tp] is log_dir:
                value = value_of(self._logs[tp])
                if value is not None:
                    entries.append((tp, value))
        offset_checkpoint(log_dir.path / name).write(entries)

    def _set_overrides(self, topic: str, overrides: dict[str, str], *, from_reserve: bool = False) -> None:
        """Persist the topic's overrides in every log directory, then hold them: a write that fails leaves them
        as they were (the directories written before it get the old ones back). ``from_reserve``: on a full disk
        the writes draw on the space reserve (a changed config, as a lower retention is how an operator frees
        space; not a new topic's)."""
        if overrides:
            self.default_config.with_overrides(
                overrides
            )  # validates keys and values before anything is stored
        previous = self._topic_overrides.get(topic, {})
        self._write_every_dir(
            lambda log_dir: self._write_overrides(log_dir, topic, overrides, from_reserve),
            lambda log_dir: self._write_overrides(log_dir, topic, previous, from_reserve),
        )
        if overrides:
            self._topic_overrides[topic] = overrides
        else:
            self._topic_overrides.pop(topic, None)

    def _write_overrides(
        self, log_dir: _LogDir, topic: str, overrides: dict[str, str], from_reserve: bool
    ) -> None:
        path = log_dir.path / f"{TOPIC_CONFIG_PREFIX}{topic}{TOPIC_CONFIG_SUFFIX}"
        if overrides:
            write = functools.partial(
                write_properties_file, path, overrides, comment=f"topic-level config overrides for {topic}"
            )
            if from_reserve:
                self._with_reserve(log_dir, f"the config of topic {topic}", write)
            else:
                write()
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _load_topic_configs(self) -> None:
        """Every topic's overrides, from the first log dir holding a sound copy. A copy that cannot be read, holds
        a value its key does not allow, or holds no settings (one is written only with some) is damaged: with a
        sound copy in another dir it is said at WARN; with none the start stops (TopicConfigFileError), since
        the defaults in its place could delete the topic's records (a compacted topic under time retention)."""
        damaged: dict[str, list[str]] = {}
        for log_dir in self._dirs:
            for path in sorted(log_dir.path.glob(f"{TOPIC_CONFIG_PREFIX}*{TOPIC_CONFIG_SUFFIX}")):
                topic = path.name[len(TOPIC_CONFIG_PREFIX) : -len(TOPIC_CONFIG_SUFFIX)]
                try:
                    overrides = read_properties_file(path)
                except (PropertiesError, UnicodeDecodeError) as exc:
                    damaged.setdefault(topic, []).append(f"{path} cannot be read ({exc})")
                    continue
                if not overrides:
                    damaged.setdefault(topic, []).append(f"{path} holds no settings")
                    continue
                try:
                    self.default_config.with_overrides(overrides)
                except InvalidConfigError as exc:
                    damaged.setdefault(topic, []).append(f"{path} holds a bad setting ({exc})")
                    continue
                self._topic_overrides.setdefault(topic, overrides)
        for topic, problems in damaged.items():
            if topic in self._topic_overrides:
                for problem in problems:
                    _log.warning("%s: topic %s takes its config from another log dir", problem, topic)
            else:
                raise TopicConfigFileError(
                    f"{problems[0]}: the broker does not start with topic {topic}'s config unknown (the defaults "
                    f"could delete its records); restore the file, or delete it to give {topic} the broker "
                    "defaults"
                )

    def _release_locks(self) -> None:
        for log_dir in self._dirs:
            if log_dir.reserve is not None:
                with contextlib.suppress(OSError):
                    log_dir.reserve.close()
                log_dir.reserve = None
            if log_dir.lock is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(log_dir.lock.fileno(), fcntl.LOCK_UN)
                log_dir.lock.close()
                log_dir.lock = None


def _out_of_descriptors(exc: OSError) -> bool:
    cause = exc.cause if isinstance(exc, KafkaStorageError) else exc
    return isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE)


def _open_reserve(log_dir: Path) -> SpaceReserve | None:
    """The log directory's space reserve, taken where there is room; None, said at WARN, when it cannot be."""
    try:
        return SpaceReserve(log_dir)
    except OSError as exc:
        _log.warning(
            "%s has no space reserve (%s): on a full disk, only retention and deleted topics free space",
            log_dir,
            exc,
        )
        return None


def _lock(log_dir: Path) -> IO[bytes]:
    handle = open(log_dir / LOCK_FILE, "ab")  # noqa: SIM115 - held open until shutdown
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise LogDirLockedError(log_dir) from None
    return handle


def partition_counts(manager: LogManager) -> dict[Path, int]:
    """How many partitions each log directory holds."""
    counts = dict.fromkeys(manager.log_dirs, 0)
    for tp in manager.all_logs():
        counts[manager.log_dir_of(tp)] += 1
    return counts


@dataclass(frozen=True, slots=True)
class _DirCheckpoints:
    """The offset checkpoints of one log directory, as loading reads them (a missing file reads as empty)."""

    recovery_points: Mapping[TopicPartition, int]
    start_offsets: Mapping[TopicPartition, int]
    high_watermarks: Mapping[TopicPartition, int]
    cleaned_to: Mapping[TopicPartition, int]
    log_end_claims: Mapping[TopicPartition, int]  # written in another boot (``log_end_claims``)

    @classmethod
    def read(cls, path: Path) -> _DirCheckpoints:
        return cls(
            _read_or_empty(path / RECOVERY_POINT_CHECKPOINT),
            _read_or_empty(path / LOG_START_OFFSET_CHECKPOINT),
            _read_or_empty(path / REPLICATION_OFFSET_CHECKPOINT),
            _read_or_empty(path / CLEANER_OFFSET_CHECKPOINT),
            claims_after_a_restart(path),
        )


def _log_loaded(log_dir: _LogDir, loaded: int, summary: LoadReport | None, elapsed_ms: float) -> None:
    """The one line per log directory after loading it: a warning when anything was truncated or set aside."""
    checked, recovered, truncated, set_aside = (
        (
            summary.segments_checked,
            summary.segments_recovered,
            summary.bytes_truncated,
            len(summary.set_aside),
        )
        if summary is not None
        else (0, 0, 0, 0)
    )
    level = logging.WARNING if truncated or set_aside else logging.INFO
    _log.log(
        level,
        "loaded %d logs from %s in %.0f ms %s: %d segments checked, %d recovered, %d bytes truncated, "
        "%d files set aside (*.salvage)",
        loaded,
        log_dir.path,
        elapsed_ms,
        "after a clean shutdown" if log_dir.had_clean_shutdown else "with no clean-shutdown marker",
        checked,
        recovered,
        truncated,
        set_aside,
    )
