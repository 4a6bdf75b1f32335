"""``format("samsa")``: read topics from a running broker, batch or streaming, as Spark's Kafka connector does.

    spark.readStream.format("samsa")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "access-log")
        .option("maxOffsetsPerTrigger", 100000)
        .load()

Options and schema: ``samsa.spark.options`` and ``samsa.spark.arrow``. Each Spark task reads one offset range of one
partition ([start, end), planned on the driver) with Fetch requests through ``samsa.client.SyncClient`` and yields
Arrow RecordBatches. Streaming offsets are the connector's JSON, ``{"topic": {"0": next_offset}}``, keys sorted.

Data loss (``failOnDataLoss``): a range whose start is below the partition's log start offset (retention or
DeleteRecords moved it), a partition that disappeared, or an OFFSET_OUT_OF_RANGE during a fetch fails the query
with a ``SamsaDataLossError`` naming the partition and offsets when the option is true (the default); when false the
range is skipped with a warning and reading resumes at the log start offset.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from samsa.records import BatchView, iter_batches

from .arrow import RecordBatchBuilder, spark_ddl
from .connection import SamsaBrokerError, broker_error, connect, short_errors, short_iteration

if TYPE_CHECKING:
    from samsa.client import FetchedPartition, SyncClient

from .options import (
    EARLIEST,
    LATEST,
    PartitionOffsets,
    SamsaOptionError,
    SourceOptions,
    StartSpec,
    cap_offsets,
    offsets_from_json,
    offsets_json,
    split_range,
)

log = logging.getLogger("samsa.spark")

OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
FETCH_MAX_WAIT_MS = 200
FETCH_PARTITION_BYTES = 8 * 1024 * 1024


class SamsaDataLossError(RuntimeError):
    """Offsets a query needs are gone from the log (and ``failOnDataLoss`` is true)."""


OWN_ERRORS = (
    SamsaBrokerError,
    SamsaOptionError,
    SamsaDataLossError,
)  # their message says all (connection doc)
shortened = short_errors(OWN_ERRORS)


TP = tuple[str, int]


def discover_partitions(client: SyncClient, opts: SourceOptions, *, strict: bool = True) -> list[TP]:
    """The partitions the subscription names, checked against metadata (unknown topics fail with its option)."""
    sub = opts.subscription
    try:
        if sub.pattern is not None:
            meta = client.metadata(None)
        else:
            names = sorted({t for t, _ in sub.assigned} if sub.assigned else set(sub.topics))
            meta = client.metadata(names)
    except SamsaBrokerError:
        raise
    except Exception as exc:
        raise broker_error(opts.bootstrap_servers, exc) from None
    found: list[TP] = []
    for name, topic in sorted(meta.topics.items()):
        if not sub.matches(name) or topic.error_code == UNKNOWN_TOPIC_OR_PARTITION:
            continue
        if sub.pattern is not None and getattr(topic, "internal", False):
            continue
        found.extend((name, p) for p in sorted(topic.partitions))
    known = {t for t, _ in found}
    if strict:
        if sub.topics:
            missing = [t for t in sub.topics if t not in known]
            if missing:
                raise SamsaOptionError(
                    f"option 'subscribe': unknown topic(s) {missing} on {opts.bootstrap_servers}; create "
                    f"{'them' if len(missing) > 1 else 'it'} first (`samsa topics --bootstrap-server "
                    f"{opts.bootstrap_servers} --create --topic {missing[0]}`)"
                )
        if sub.assigned:
            missing_tp = [tp for tp in sub.assigned if tp not in set(found)]
            if missing_tp:
                raise SamsaOptionError(
                    f"option 'assign': unknown partition(s) {missing_tp} on {opts.bootstrap_servers}"
                )
    if sub.assigned:
        wanted = set(sub.assigned)
        found = [tp for tp in found if tp in wanted]
    return found


def list_offsets(client: SyncClient, bootstrap: str, tps: Mapping[TP, int]) -> PartitionOffsets:
    """``{tp: timestamp or -1/-2}`` to offsets (an offset of -1 for a timestamp: no record that late)."""
    if not tps:
        return {}
    from samsa.client import TopicPartition

    try:
        answer = client.list_offsets({TopicPartition(t, p): ts for (t, p), ts in tps.items()})
    except Exception as exc:
        raise broker_error(bootstrap, exc) from exc
    return {(tp.topic, tp.partition): int(v[0]) for tp, v in answer.items()}


def resolve(
    client: SyncClient, opts: SourceOptions, spec: StartSpec, tps: list[TP], option: str
) -> PartitionOffsets:
    """Offsets for ``spec`` on every partition of ``tps``; an offset JSON must name each of them."""
    latest = list_offsets(client, opts.bootstrap_servers, {tp: LATEST for tp in tps})
    if spec.mode == "earliest":
        return list_offsets(client, opts.bootstrap_servers, {tp: EARLIEST for tp in tps})
    if spec.mode == "latest":
        return latest
    if spec.mode == "offsets":
        missing = [f"{t}-{p}" for t, p in tps if (t, p) not in spec.offsets]
        if missing:
            raise SamsaOptionError(f"option {option!r} gives no offset for partition(s) {missing}")
        out = {tp: spec.offsets[tp] for tp in tps}
        special = {tp: v for tp, v in out.items() if v < 0}
        out.update(list_offsets(client, opts.bootstrap_servers, special))
        return out
    if spec.mode == "timestamp":
        assert spec.timestamp is not None
        asked = {tp: spec.timestamp for tp in tps}
    else:
        missing = [f"{t}-{p}" for t, p in tps if (t, p) not in spec.offsets]
        if missing:
            raise SamsaOptionError(f"option {option!r} gives no timestamp for partition(s) {missing}")
        asked = {tp: spec.offsets[tp] for tp in tps}
    found = list_offsets(client, opts.bootstrap_servers, asked)
    return {tp: latest[tp] if off < 0 else off for tp, off in found.items()}


@dataclass(frozen=True)
class OffsetRange(InputPartition):  # type: ignore[misc]
    """One Spark task: offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int
    bootstrap_servers: str
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    isolation_level: int = 0
    client_properties: tuple[tuple[str, str], ...] = ()  # kafka.*: security


def check_data_loss(
    client: SyncClient, opts: SourceOptions, start: PartitionOffsets, end: PartitionOffsets
) -> PartitionOffsets:
    """``start`` moved up to each log start offset; fails instead when ``failOnDataLoss``."""
    earliest = list_offsets(client, opts.bootstrap_servers, {tp: EARLIEST for tp in end})
    out = dict(start)
    for tp, first in earliest.items():
        begin = start.get(tp, first)
        if begin < first:
            message = (
                f"partition {tp[0]}-{tp[1]}: offsets [{begin}, {first}) are no longer in the log "
                f"(log start offset {first})"
            )
            if opts.fail_on_data_loss:
                raise SamsaDataLossError(
                    message + "; set failOnDataLoss=false to skip them with a warning and carry on"
                )
            log.warning("%s; skipped (failOnDataLoss=false)", message)
            begin = first
        out[tp] = begin
    return out


def plan_ranges(opts: SourceOptions, start: PartitionOffsets, end: PartitionOffsets) -> list[OffsetRange]:
    """One range per partition with data, cut further so there are at least ``minPartitions`` of them."""
    spans = {tp: (start.get(tp, 0), e) for tp, e in sorted(end.items()) if e > start.get(tp, 0)}
    total = sum(e - s for s, e in spans.values())
    ranges: list[OffsetRange] = []
    for (topic, partition), (s, e) in spans.items():
        pieces = 1
        if opts.min_partitions and total > 0 and opts.min_partitions > len(spans):
            pieces = max(1, round(opts.min_partitions * (e - s) / total))
        for lo, hi in split_range(s, e, pieces):
            ranges.append(
                OffsetRange(
                    topic,
                    partition,
                    lo,
                    hi,
                    opts.bootstrap_servers,
                    opts.include_headers,
                    opts.fail_on_data_loss,
                    opts.poll_timeout_ms,
                    opts.isolation_level,
                    opts.client_properties,
                )
            )
    return ranges


def read_range(part: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Fetch [start, end) of one partition; yields RecordBatches. Runs in a Spark executor."""
    client = connect(part.bootstrap_servers, part.isolation_level, part.client_properties)
    fetches = _Prefetcher(client, part)
    builder = RecordBatchBuilder(part.topic, part.partition, part.include_headers)
    try:
        yield from _read_into(builder, fetches, part)
    finally:
        fetches.close()
        client.close()
    if len(builder):
        yield builder.flush()


def _read_into(
    builder: RecordBatchBuilder, fetches: _Prefetcher, part: OffsetRange
) -> Iterator[pa.RecordBatch]:
    """Fetch from ``part.start`` until ``part.end`` is reached, yielding the RecordBatches ``builder`` fills; fail
    when no record arrives within ``kafkaConsumer.pollTimeoutMs``."""
    position = part.start
    deadline = time.monotonic() + part.poll_timeout_ms / 1000
    aborted = AbortedTransactions()
    while position < part.end:
        fetched = fetches.get(position)
        if fetched.error_code == OFFSET_OUT_OF_RANGE:
            position = _skip_lost_records(part, position, fetched)
            continue
        if fetched.error_code:
            raise SamsaBrokerError(
                f"partition {part.topic}-{part.partition}: fetch at offset {position} failed with error "
                f"code {fetched.error_code}"
            )
        views = [v for v in iter_batches(fetched.records) if v.next_offset > position]
        if views and views[-1].next_offset < part.end:  # fetch the next chunk while this one decodes
            fetches.prefetch(views[-1].next_offset)
        if fetched.aborted_transactions:
            aborted.learn(fetched.aborted_transactions)
        skip = aborted.skip if aborted.known else None
        position, advanced = yield from _take(builder, views, position, part.end, skip)
        if advanced:
            deadline = time.monotonic() + part.poll_timeout_ms / 1000
        elif position < part.end and time.monotonic() > deadline:
            raise SamsaBrokerError(
                f"partition {part.topic}-{part.partition}: no records at offset {position} (expected up to "
                f"{part.end}) within kafkaConsumer.pollTimeoutMs={part.poll_timeout_ms}"
            )


def _skip_lost_records(part: OffsetRange, position: int, fetched: FetchedPartition) -> int:
    """Where to go on after OFFSET_OUT_OF_RANGE at ``position``: the log start offset, when ``failOnDataLoss`` is
    false and it is ahead; a SamsaDataLossError otherwise."""
    first = fetched.log_start_offset
    message = (
        f"partition {part.topic}-{part.partition}: offset {position} is out of range "
        f"(log start offset {first}, high watermark {fetched.high_watermark})"
    )
    if part.fail_on_data_loss or first <= position:
        raise SamsaDataLossError(message)
    log.warning("%s; skipping to %d (failOnDataLoss=false)", message, first)
    return first


def _take(
    builder: RecordBatchBuilder,
    views: list[BatchView],
    position: int,
    end: int,
    skip: Callable[[BatchView], bool] | None = None,
) -> Generator[pa.RecordBatch, None, tuple[int, bool]]:
    """Append the records of ``views`` from ``position`` up to ``end`` (control batches skipped, and those
    ``skip`` names: aborted data), yielding the RecordBatches that fills; returns the new position and whether a
    batch below ``end`` was reached."""
    advanced = False
    for view in views:
        if view.base_offset >= end:
            return end, advanced
        advanced = True
        dropped = skip is not None and skip(view)
        if not dropped and not (view.magic >= 2 and view.is_control):
            yield from builder.add_range(view, position, end)
        position = min(view.next_offset, end)
        if position >= end:
            break
    return position, advanced


class AbortedTransactions:
    """What a read_committed reader drops (as Kafka's consumers do): the fetch answers name aborted transactions by
    producer id and first offset; from that offset on, that producer's transactional batches are dropped up to
    its ABORT marker. Batches are shown in offset order, once each."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, int]] = []  # (first offset, producer id), sorted, not reached yet
        self.seen: set[tuple[int, int]] = set()
        self.aborting: set[int] = set()

    @property
    def known(self) -> bool:
        return bool(self.pending or self.aborting)

    def learn(self, transactions: Iterable[tuple[int, int]]) -> None:
        for producer_id, first_offset in transactions:
            if (first_offset, producer_id) not in self.seen:
                self.seen.add((first_offset, producer_id))
                self.pending.append((first_offset, producer_id))
        self.pending.sort()

    def skip(self, batch: BatchView) -> bool:
        """Whether ``batch`` is aborted data (an ABORT marker ends its producer's aborted transaction)."""
        while self.pending and self.pending[0][0] <= batch.last_offset:
            self.aborting.add(self.pending.pop(0)[1])
        if batch.magic < 2 or batch.producer_id not in self.aborting:
            return False
        if batch.is_control:
            from samsa.records.control import ControlRecordType, batch_control_type

            if batch_control_type(batch) is ControlRecordType.ABORT:
                self.aborting.discard(batch.producer_id)
            return False
        return batch.is_transactional


class _Prefetcher:
    """Fetches of one partition on a background thread, so the next chunk arrives while this one decodes. One per
    ``read_range``; not thread-safe."""

    def __init__(self, client: SyncClient, part: OffsetRange) -> None:
        from samsa.client import TopicPartition

        self._client = client
        self._bootstrap_servers = part.bootstrap_servers
        self._tp = TopicPartition(part.topic, part.partition)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="samsa-prefetch")
        self._pending: tuple[int, Future[FetchedPartition]] | None = None

    def prefetch(self, at: int) -> None:
        """Start fetching at offset ``at``."""
        self._pending = (at, self._pool.submit(self._fetch, at))

    def get(self, at: int) -> FetchedPartition:
        """The fetch at offset ``at``: the prefetched one when it started there, else a new one."""
        if self._pending is None or self._pending[0] != at:
            self.prefetch(at)
        assert self._pending is not None
        fetched = self._pending[1].result()
        self._pending = None
        return fetched

    def close(self) -> None:
        if self._pending is not None:
            self._pending[1].cancel()
        self._pool.shutdown(wait=True)

    def _fetch(self, at: int) -> FetchedPartition:
        try:
            return self._client.fetch(
                {self._tp: at}, max_wait_ms=FETCH_MAX_WAIT_MS, partition_max_bytes=FETCH_PARTITION_BYTES
            )[self._tp]
        except Exception as exc:
            raise broker_error(self._bootstrap_servers, exc) from exc


class BrokerBatchReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    @shortened
    def partitions(self) -> list[OffsetRange]:
        client = connect(self.opts.bootstrap_servers, self.opts.isolation_level, self.opts.client_properties)
        try:
            tps = discover_partitions(client, self.opts)
            start = resolve(client, self.opts, self.opts.starting, tps, "startingOffsets")
            end = resolve(client, self.opts, self.opts.ending, tps, "endingOffsets")
            start = check_data_loss(client, self.opts, start, end)
        finally:
            client.close()
        return plan_ranges(self.opts, start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):  # PySpark's InputPartition(None) when partitions() is []
            return iter(())
        return short_iteration(read_range(partition), OWN_ERRORS)


class BrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Micro-batches over the broker. One long-lived instance on the driver; ``read`` runs on pickled copies."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._client: SyncClient | None = None
        self._available_now: PartitionOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    def _conn(self) -> SyncClient:
        if self._client is None:
            self._client = connect(
                self.opts.bootstrap_servers, self.opts.isolation_level, self.opts.client_properties
            )
        return self._client

    @shortened
    def initialOffset(self) -> dict[str, dict[str, int]]:
        client = self._conn()
        tps = discover_partitions(client, self.opts)
        return offsets_json(resolve(client, self.opts, self.opts.starting, tps, "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    @shortened
    def prepareForTriggerAvailableNow(self) -> None:
        client = self._conn()
        tps = discover_partitions(client, self.opts, strict=False)
        self._available_now = list_offsets(client, self.opts.bootstrap_servers, {tp: LATEST for tp in tps})

    @shortened
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        client = self._conn()
        begin = offsets_from_json(start)
        tps = discover_partitions(client, self.opts, strict=False)
        gone = [tp for tp in begin if tp not in set(tps)]
        if gone:
            message = f"partition(s) {[f'{t}-{p}' for t, p in gone]} disappeared from the broker"
            if self.opts.fail_on_data_loss:
                raise SamsaDataLossError(message + "; set failOnDataLoss=false to carry on without them")
            log.warning("%s; dropped (failOnDataLoss=false)", message)
        latest = list_offsets(client, self.opts.bootstrap_servers, {tp: LATEST for tp in tps})
        if self._available_now is not None:
            latest = {tp: min(v, self._available_now.get(tp, v)) for tp, v in latest.items()}
        new = [tp for tp in latest if tp not in begin]
        if new:  # partitions found while running start at earliest
            begin.update(list_offsets(client, self.opts.bootstrap_servers, {tp: EARLIEST for tp in new}))
        latest = {tp: max(v, begin.get(tp, v)) for tp, v in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = cap_offsets(begin, latest, int(limit.max_rows))
        if latest == {tp: begin[tp] for tp in latest} and not new and not gone:
            return offsets_json(begin)
        return offsets_json(latest)

    @shortened
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[OffsetRange]:
        begin = offsets_from_json(start)
        finish = offsets_from_json(end)
        if begin == {tp: finish.get(tp) for tp in begin} and set(begin) == set(finish):
            return []
        begin = check_data_loss(self._conn(), self.opts, begin, finish)
        return plan_ranges(self.opts, begin, finish)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, OffsetRange)
        return short_iteration(read_range(partition), OWN_ERRORS)

    def commit(self, end: dict[str, Any]) -> None:
        """Spark's checkpoint holds the offsets; nothing to do on the broker."""


class SamsaDataSource(DataSource):  # type: ignore[misc]
    """``format("samsa")``: the broker source and sink (module doc; the sink is in ``samsa.spark.sink``)."""

    @classmethod
    def name(cls) -> str:
        return "samsa"

    def schema(self) -> str:
        from .options import _bool

        return spark_ddl(_bool(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return BrokerBatchReader(SourceOptions.parse(self.options, batch=True))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return BrokerStreamReader(SourceOptions.parse(self.options, batch=False))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .sink import SamsaBatchWriter, SinkOptions

        if overwrite:
            raise SamsaOptionError("format('samsa') sink appends only; use .mode('append')")
        opts = SinkOptions.parse(self.options, schema)
        if opts.exactly_once:
            raise SamsaOptionError(
                "deliveryGuarantee=exactly-once is for streaming queries (writeStream): a batch write has no "
                "checkpoint to make its commit safe across a crash"
            )
        return SamsaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .sink import SamsaExactlyOnceStreamWriter, SamsaStreamWriter, SinkOptions

        opts = SinkOptions.parse(self.options, schema)
        return SamsaExactlyOnceStreamWriter(opts) if opts.exactly_once else SamsaStreamWriter(opts)
