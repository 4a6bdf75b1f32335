"""``df.write.format("samsa")`` / ``writeStream.format("samsa")``: produce rows to a broker, as Spark's Kafka sink.

Columns: ``value`` (string or binary, required), ``key`` (string or binary), ``topic`` (string; the ``topic`` option
overrides it), ``partition`` (int; null picks one: murmur2 of the key as Kafka's default partitioner, round robin for
null keys), ``headers`` (``array<struct<key: string, value: binary>>``). Delivery is at least once (acks=all); each
task produces its rows in batches of up to ``BATCH_RECORDS`` records per partition. A topic that does not exist
is created by a broker with ``auto.create.topics.enable`` (as for Spark's own Kafka sink); otherwise the write fails
with one line naming it.

A batch write needs ``.mode("append")``. Spark's Kafka sink also takes the default mode (ErrorIfExists), but Spark
refuses any mode other than Append and Overwrite for a Python data source before it asks the source
(``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``); Overwrite is refused here, as the Kafka sink refuses it.

    df.write.format("samsa").mode("append").option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("topic", "t").save()
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from samsa.client.partitioner import partition_for_key
from samsa.protocol import ErrorCode
from samsa.records import Record, build_batch

from .arrow import headers_from_arrow
from .connection import SamsaBrokerError, broker_error, connect
from .options import SamsaOptionError

if TYPE_CHECKING:
    from samsa.client import SyncClient

BATCH_RECORDS = 2000


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType) -> SinkOptions:
        servers = options.get("kafka.bootstrap.servers")
        if not servers:
            raise SamsaOptionError("option 'kafka.bootstrap.servers' is required (host:port[,host:port])")
        names = {f.name.lower() for f in schema.fields}
        if "value" not in names:
            raise SamsaOptionError(f"the samsa sink needs a 'value' column; the query has {sorted(names)}")
        topic = options.get("topic")
        if topic is None and "topic" not in names:
            raise SamsaOptionError("the samsa sink needs the 'topic' option or a 'topic' column")
        return cls(str(servers), None if topic is None else str(topic))


@dataclass
class ProducedMessage(WriterCommitMessage):  # type: ignore[misc]
    records: int


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def topic_partition_count(
    client: SyncClient, topic: str, bootstrap_servers: str, wait_s: float = 10.0
) -> int:
    """The partition count of ``topic``, letting the broker create it when it allows (as Kafka's producer and
    Spark's Kafka sink do, through a Metadata request); a topic that stays unknown is one clear error."""
    deadline = time.monotonic() + wait_s
    while True:
        info = client.metadata([topic], allow_auto_topic_creation=True).topics.get(topic)
        if info is not None and not info.error_code and info.partitions:
            return len(info.partitions)
        unknown = info is None or info.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if unknown or time.monotonic() >= deadline:
            why = (
                "it does not exist and the broker does not create topics"
                if unknown
                else "it has no leader yet"
            )
            raise SamsaOptionError(f"sink: cannot write to topic {topic!r} on {bootstrap_servers}: {why}")
        time.sleep(0.1)


def write_rows(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> ProducedMessage:
    """Produce every row of ``batches``; returns how many. Raises on the first broker error."""
    producer = _RowProducer(opts, connect(opts.bootstrap_servers))
    try:
        for batch in batches:
            producer.add(batch)
        producer.flush()
    finally:
        producer.client.close()
    return ProducedMessage(producer.total)


class _RowProducer:
    """Rows routed to partitions and produced in batches of up to ``BATCH_RECORDS`` records per partition. One per
    task; not thread-safe."""

    def __init__(self, opts: SinkOptions, client: SyncClient) -> None:
        self.opts = opts
        self.client = client
        self.total = 0
        self._counts: dict[str, int] = {}
        self._round_robin: dict[str, int] = defaultdict(int)
        self._pending: dict[tuple[str, int], list[Record]] = defaultdict(list)

    def add(self, batch: pa.RecordBatch) -> None:
        """Route every row of ``batch`` (timestamped now), producing each partition's batch when it is full."""
        cols = {name.lower(): batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
        n = batch.num_rows
        values = cols["value"]
        keys = cols.get("key", [None] * n)
        topics = [self.opts.topic] * n if self.opts.topic is not None else cols["topic"]
        parts = cols.get("partition", [None] * n)
        headers = cols.get("headers", [None] * n)
        now = int(time.time() * 1000)
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise SamsaOptionError("sink: a row has a null 'topic' and no 'topic' option is set")
            key = _as_bytes(keys[i])
            tp = (topic, self._partition(topic, key, parts[i]))
            pending = self._pending[tp]
            pending.append(Record(0, now, key, _as_bytes(values[i]), headers_from_arrow(headers[i])))
            if len(pending) >= BATCH_RECORDS:
                self._send(tp)
            self.total += 1

    def flush(self) -> None:
        for tp in list(self._pending):
            self._send(tp)

    def _partition(self, topic: str, key: bytes | None, partition: int | None) -> int:
        """The row's own partition, else murmur2 of its key, else the next in turn (null keys). The topic's
        partition count is asked for either way: that is what creates the topic, or fails clearly."""
        if topic not in self._counts:
            self._counts[topic] = topic_partition_count(self.client, topic, self.opts.bootstrap_servers)
        count = self._counts[topic]
        if partition is not None:
            return int(partition)
        if key is not None:
            return partition_for_key(key, count)
        chosen = self._round_robin[topic] % count
        self._round_robin[topic] += 1
        return chosen

    def _send(self, tp: tuple[str, int]) -> None:
        from samsa.client import TopicPartition

        records = self._pending.pop(tp)
        batch = build_batch(
            [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
        )
        try:
            self.client.produce(TopicPartition(*tp), batch, acks=-1)
        except Exception as exc:
            raise broker_error(self.opts.bootstrap_servers, exc) from exc


class _RowsWriter:
    """``write`` for both writers. Spark shows a task's error as its Python traceback; a SamsaOptionError or
    SamsaBrokerError says all there is to say in its message, so it leaves ``write`` without the frames below it
    (nor a chained cause, which its message quotes): the message comes right under Spark's header and one frame."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ProducedMessage:
        try:
            return write_rows(self.opts, iterator)
        except (SamsaOptionError, SamsaBrokerError) as error:
            raise error.with_traceback(None) from None


class SamsaBatchWriter(_RowsWriter, DataSourceArrowWriter):  # type: ignore[misc]
    """``df.write.format("samsa")``: each task produces its rows; nothing to commit (module doc)."""


class SamsaStreamWriter(_RowsWriter, DataSourceStreamArrowWriter):  # type: ignore[misc]
    """``writeStream.format("samsa")``: each micro-batch's tasks produce their rows."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records are on the broker once ``write`` returns (acks=all)."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Produced records cannot be taken back: the sink is at least once."""
