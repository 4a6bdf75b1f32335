"""``df.write.format("samsa")`` / ``writeStream.format("samsa")``: produce rows to a broker, as Spark's Kafka sink.

Columns: ``value`` (string or binary, required), ``key`` (string or binary), ``topic`` (string; the ``topic`` option
overrides it), ``partition`` (int; null picks one: murmur2 of the key as Kafka's default partitioner, round robin for
null keys), ``headers`` (``array<struct<key: string, value: binary>>``). Delivery is at least once (acks=all); each
task produces its rows in batches of up to ``BATCH_RECORDS`` records per partition. A topic that does not exist
is created by a broker with ``auto.create.topics.enable`` (as for Spark's own Kafka sink); otherwise the write fails
with one line naming it.

**Exactly once** (streaming, ``deliveryGuarantee=exactly-once`` with ``transactionalIdPrefix=P``; Spark's own
Kafka sink has no such mode). Each task of a micro-batch writes its rows in a Kafka transaction of its own,
``transactional.id`` ``P-<Spark partition id>``, and leaves it open; it returns the transaction's handle (id,
producer id, epoch) to the driver. Spark calls the writer's ``commit(batchId)`` on the driver when every task
succeeded; only then are the transactions committed, so read_committed readers see a micro-batch's rows all at
once or not at all. The commit is made crash-safe by a decision record: before ending any transaction, the
driver appends ``{"batch": N, "transactions": [...]}`` (one record, acks=all) to the topic ``P.samsa-sink-state``;
then it commits each transaction. After a driver crash:

- before the decision record: Spark runs batch N again from its checkpoint; the new tasks' ``InitProducerId``
  with the same ids fences the dead attempt's producers and aborts their open transactions; nothing of the first
  attempt is ever visible;
- after the decision record (between it and the last EndTxn, or after every EndTxn but before Spark wrote batch
  N to its commit log): the restarted query's writer first commits every transaction the last decision lists (a
  commit already done is answered NONE); if Spark then runs batch N again, ``commit`` finds N decided and aborts
  the second attempt's transactions.

So each input row is in the output exactly once for read_committed readers. What it relies on: one query per
prefix at a time; Spark committing batches in order; transactions outliving the time between a task's write and
the driver's commit (``transactionTimeoutMs``, 900,000 by default, Kafka's ``transaction.max.timeout.ms``): a
transaction the coordinator aborted on timeout fails the batch's commit (the query stops with the error) rather
than being skipped.

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
from samsa.records import Record, build_batch, iter_batches

from .arrow import headers_from_arrow
from .connection import SamsaBrokerError, broker_error, connect
from .options import ClientProperties, SamsaOptionError, client_properties

if TYPE_CHECKING:
    from samsa.client import SyncClient
    from samsa.client.transactions import TransactionalProducer

BATCH_RECORDS = 2000


AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"
TRANSACTION_TIMEOUT_MS = 900_000


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    delivery_guarantee: str = AT_LEAST_ONCE
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS
    client_properties: ClientProperties = ()  # kafka.*: security (``options``)

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
        guarantee = str(options.get("deliveryGuarantee", AT_LEAST_ONCE)).lower()
        if guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE):
            raise SamsaOptionError(
                f"option 'deliveryGuarantee' must be {AT_LEAST_ONCE} or {EXACTLY_ONCE}, got {guarantee!r}"
            )
        prefix = options.get("transactionalIdPrefix")
        if guarantee == EXACTLY_ONCE and not prefix:
            raise SamsaOptionError(
                "deliveryGuarantee=exactly-once needs option 'transactionalIdPrefix': a name of this query's own, "
                "the same across its restarts (its transactions and its decision topic are named after it)"
            )
        timeout = options.get("transactionTimeoutMs")
        return cls(
            str(servers),
            None if topic is None else str(topic),
            guarantee,
            None if prefix is None else str(prefix),
            int(timeout) if timeout else TRANSACTION_TIMEOUT_MS,
            client_properties(options),
        )

    @property
    def exactly_once(self) -> bool:
        return self.delivery_guarantee == EXACTLY_ONCE


@dataclass
class ProducedMessage(WriterCommitMessage):  # type: ignore[misc]
    records: int
    transaction: tuple[str, int, int] | None = (
        None  # exactly once: (transactional id, producer id, epoch), open
    )


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
    """Produce every row of ``batches``; returns how many (exactly once: in a transaction left open, named in the
    answer). Raises on the first broker error."""
    producer = _RowProducer(opts, connect(opts.bootstrap_servers, 0, opts.client_properties))
    try:
        if opts.exactly_once:
            producer.begin_transaction(_task_transactional_id(opts))
        for batch in batches:
            producer.add(batch)
        producer.flush()
    finally:
        producer.client.close()
    txn = producer.transaction
    handle = (
        None
        if txn is None
        else (txn.handle.transactional_id, txn.handle.producer_id, txn.handle.producer_epoch)
    )
    return ProducedMessage(producer.total, handle)


def _task_transactional_id(opts: SinkOptions) -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    return f"{opts.transactional_id_prefix}-{partition}"


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
        self.transaction: TransactionalProducer | None = None

    def begin_transaction(self, transactional_id: str) -> None:
        from samsa.client.transactions import TransactionalProducer

        try:
            self.transaction = self.client.run(
                TransactionalProducer.begin(
                    self.client.client, transactional_id, self.opts.transaction_timeout_ms
                )
            )
        except Exception as exc:
            raise broker_error(self.opts.bootstrap_servers, exc) from exc

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
        try:
            if self.transaction is not None:
                self.client.run(self.transaction.send(TopicPartition(*tp), records))
                return
            batch = build_batch(
                [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
            )
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


class SamsaExactlyOnceStreamWriter(SamsaStreamWriter):
    """``writeStream.format("samsa")`` with ``deliveryGuarantee=exactly-once`` (module doc): the driver commits the
    tasks' transactions after its decision record. Made on the driver when the query starts, which first finishes
    the last decision a crashed run may have left half done."""

    def __init__(self, opts: SinkOptions) -> None:
        super().__init__(opts)
        assert opts.transactional_id_prefix is not None
        self.state_topic = f"{opts.transactional_id_prefix}.samsa-sink-state"
        client = connect(opts.bootstrap_servers, 0, opts.client_properties)
        try:
            self._ensure_state_topic(client)
            last = self._last_decision(client)
            if last is not None:
                self._end(client, last["transactions"], commit=True)  # roll the last decision forward
        finally:
            client.close()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        handles = [list(m.transaction) for m in messages if isinstance(m, ProducedMessage) and m.transaction]
        client = connect(self.opts.bootstrap_servers, 0, self.opts.client_properties)
        try:
            last = self._last_decision(client)
            if (
                last is not None and last["batch"] >= batchId
            ):  # decided before a crash: this is a second attempt
                self._end(client, handles, commit=False)
                return
            self._record(client, {"batch": batchId, "transactions": handles})
            self._end(client, handles, commit=True)
        finally:
            client.close()

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        handles = [list(m.transaction) for m in messages if isinstance(m, ProducedMessage) and m.transaction]
        client = connect(self.opts.bootstrap_servers, 0, self.opts.client_properties)
        try:
            self._end(client, handles, commit=False)
        finally:
            client.close()

    def _end(self, client: SyncClient, handles: list[list[Any]], *, commit: bool) -> None:
        from samsa.client.errors import BrokerError
        from samsa.client.transactions import TransactionHandle, end_transaction

        for tid, pid, epoch in handles:
            handle = TransactionHandle(str(tid), int(pid), int(epoch))
            try:
                client.run(end_transaction(client.client, handle, commit=commit))
            except BrokerError as exc:
                fenced = exc.name in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
                if commit and not fenced:
                    raise SamsaBrokerError(
                        f"sink: the transaction {tid} of a decided micro-batch cannot be committed: {exc} (was it "
                        f"open longer than transactionTimeoutMs={self.opts.transaction_timeout_ms}?)"
                    ) from None
                # fenced: a later InitProducerId of the id ended it already (committed before, or aborted)

    def _ensure_state_topic(self, client: SyncClient) -> None:
        """Create the decision topic (one partition, the broker's replication factor) unless it exists."""
        from samsa.client import NewTopic

        try:
            errors = client.create_topics([NewTopic(self.state_topic, 1, -1)])
        except Exception as exc:
            raise broker_error(self.opts.bootstrap_servers, exc) from exc
        error = errors.get(self.state_topic)
        if error is not None and error.name != "TOPIC_ALREADY_EXISTS":
            raise SamsaBrokerError(f"sink: cannot create the decision topic {self.state_topic!r}: {error}")
        topic_partition_count(client, self.state_topic, self.opts.bootstrap_servers, wait_s=30)

    def _last_decision(self, client: SyncClient) -> dict[str, Any] | None:
        import json

        from samsa.client import TopicPartition
        from samsa.records import iter_records

        tp = TopicPartition(self.state_topic, 0)
        end = int(client.list_offsets({tp: -1})[tp][0])
        if end <= 0:
            return None
        fetched = client.fetch({tp: end - 1}, max_wait_ms=0)[tp]
        last = None
        for batch in iter_batches(fetched.records):
            for record in iter_records(batch):
                if record.offset == end - 1 and record.value is not None:
                    last = json.loads(record.value)
        return last

    def _record(self, client: SyncClient, decision: dict[str, Any]) -> None:
        import json

        from samsa.client import TopicPartition

        value = json.dumps(decision, separators=(",", ":")).encode()
        batch = build_batch([Record(0, int(time.time() * 1000), None, value, ())])
        try:
            client.produce(TopicPartition(self.state_topic, 0), batch, acks=-1)
        except Exception as exc:
            raise broker_error(self.opts.bootstrap_servers, exc) from exc
