"""Produce (0): append each partition's record set as leader; answer per partition, or not at all for acks=0.

Versions 0-2 are advertised (old librdkafka enables compression only when Produce v0 is in range) but a request
in one of them closes its connection, as Kafka 4 does; 3+ carry record batch v2.

Idempotent producers: a batch already in the log (a retry after a lost acknowledgement) is answered with NONE and
the offsets it got the first time; a sequence gap gets OUT_OF_ORDER_SEQUENCE_NUMBER and a batch from an older
producer epoch INVALID_PRODUCER_EPOCH (the checks are the log's, ``samsa.storage.producer_state``).

Each partition's record set must be exactly one complete magic-2 batch, as Kafka requires from v3 on (else
INVALID_RECORD); zstd needs v7+ (else UNSUPPORTED_COMPRESSION_TYPE). Both are read from the batch header. With
acks=0 there is no response to carry an error, so a partition error closes the connection, as Kafka does: the
client sees the drop and refreshes its metadata.

With acks=all the response waits until the in-sync replicas have every partition's records (the high watermark
passed them), up to the request's timeout (REQUEST_TIMED_OUT); alone, the high watermark moves with the append and
nothing waits.

This is the hot path: per partition, one header read (``read_v2_header``, one unpack; the value goes down to the
log's validation, producer state and offset assignment), one append and one response entry, built once, nothing
per record (except on a compacted topic, whose log refuses records without a key: INVALID_RECORD with record
errors). The replica manager is called once per request (``ReplicaManager.produce``).

Transactions (KIP-890 part 1, ``transaction.partition.verification.enable``, on by default as in Kafka): in a
request that names its transactional id, a transactional batch whose producer has no open transaction on the partition yet (its first
batch of a transaction there) is appended only once the transaction's coordinator says the partition is in that
open transaction (``BrokerServices.verify_transaction``); otherwise the partition is answered with the
coordinator's error (INVALID_TXN_STATE for a partition never added, NOT_ENOUGH_REPLICAS while the coordinator is
away) and nothing is written. A request without a transactional id is not verified, as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from samsa.records import CompressionType
from samsa.records.batch_view import COMPRESSION_MASK, LOG_OVERHEAD, V2Header, read_v2_header
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext

if TYPE_CHECKING:
    from samsa.metrics.broker_metrics import BrokerMetrics
from ..network import ConnectionClosedByHandler
from ..replica_manager import ProduceResult

_VALID_ACKS = (0, 1, -1)
_DENIED = ProduceResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)

_ZSTD_MIN_VERSION = 7


def _check_record_set(records: object, version: int) -> tuple[memoryview, V2Header] | ProduceResult:
    """Kafka's per-request checks on a partition's record set, from the batch header alone: the record set as a
    view and its header, or the refusal."""
    if type(records) is not memoryview:
        if not isinstance(records, (bytes, bytearray)):
            return ProduceResult(ErrorCode.INVALID_RECORD, message="no record set")
        records = memoryview(records)
    assert isinstance(records, memoryview)
    header = read_v2_header(records)
    size = len(records)
    if header is None:
        return _invalid(f"Produce v{version} needs one complete record batch; got {size} bytes")
    if header.magic != 2:
        return _invalid(f"Produce v{version} needs record batches of magic 2; got magic {header.magic}")
    batch_size = header.size + LOG_OVERHEAD
    if batch_size != size:
        what = "a truncated batch" if batch_size > size else "more than one batch"
        return _invalid(f"Produce v{version} needs exactly one record batch; got {what}")
    if version < _ZSTD_MIN_VERSION and header.attributes & COMPRESSION_MASK == CompressionType.ZSTD:
        return ProduceResult(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            message=f"zstd-compressed batches need Produce v{_ZSTD_MIN_VERSION} or later; got v{version}",
        )
    return records, header


def _invalid(message: str) -> ProduceResult:
    return ProduceResult(ErrorCode.INVALID_RECORD, message=message)


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    acks = request.acks
    if acks not in _VALID_ACKS:
        return _all_failed(request, ErrorCode.INVALID_REQUIRED_ACKS)
    if request.transactional_id and not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return _all_failed(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    version = ctx.api_version
    refusals: list[ProduceResult | None] = []  # per partition in request order; None: appended
    appends: list[tuple[TopicPartition, memoryview, V2Header | None]] = []
    for topic in request.topic_data:
        allowed = ctx.authorize(AclOperation.WRITE, ResourceType.TOPIC, topic.name)
        for data in topic.partition_data:
            checked = _check_record_set(data.records, version) if allowed else _DENIED
            if isinstance(checked, ProduceResult):
                refusals.append(checked)
            else:
                refusals.append(None)
                appends.append((TopicPartition(topic.name, data.index), *checked))
    verify = ctx.services.verify_transaction
    if verify is not None and request.transactional_id and any(_transactional(h) for _, _, h in appends):
        appends = await _verified(ctx, request.transactional_id, refusals, appends)
    results, acks_done = ctx.services.replica_manager.produce(appends, acks, request.timeout_ms)
    if ctx.services.metrics is not None:
        _measure(ctx.services.metrics, request, refusals, appends, results)
    late = await acks_done if acks_done is not None else None
    outcomes = iter(refusals)
    appended = iter(results)
    responses = [
        TopicProduceResponse(
            topic.name,
            [
                _answer(topic.name, data.index, next(outcomes) or next(appended), late)
                for data in topic.partition_data
            ],
        )
        for topic in request.topic_data
    ]
    if acks == 0:
        if len(results) < len(refusals) or any(result.error for result in results):
            raise ConnectionClosedByHandler(f"acks=0 produce failed: {_first_error(responses)}")
        return None
    return ProduceResponse(responses=responses)


_TRANSACTIONAL = 0x10
_CONTROL = 0x20


def _transactional(header: V2Header | None) -> bool:
    return header is not None and header.attributes & (_TRANSACTIONAL | _CONTROL) == _TRANSACTIONAL


async def _verified(
    ctx: RequestContext,
    transactional_id: str,
    refusals: list[ProduceResult | None],
    appends: list[tuple[TopicPartition, memoryview, V2Header | None]],
) -> list[tuple[TopicPartition, memoryview, V2Header | None]]:
    """The appends whose transaction the coordinator confirms (module doc); the others become refusals in place."""
    partitions = ctx.services.replica_manager.partitions
    unverified: list[tuple[str, int]] = []
    producer: tuple[int, int] = (-1, -1)
    for tp, _, header in appends:
        if header is None or not _transactional(header):
            continue
        partition = partitions.get(tp)
        entry = partition.log.producer_state.producers.get(header.producer_id) if partition else None
        if (
            entry is None
            or entry.producer_epoch != header.producer_epoch
            or entry.current_txn_first_offset < 0
        ):
            unverified.append((tp.topic, tp.partition))
            producer = (header.producer_id, header.producer_epoch)
    if not unverified:
        return appends
    verify = ctx.services.verify_transaction
    assert verify is not None
    answers = await verify(transactional_id, producer[0], producer[1], unverified)
    failed = {tp: error for tp, error in answers.items() if error}
    if not failed:
        return appends
    kept = []
    slots = iter(i for i, refusal in enumerate(refusals) if refusal is None)
    for append in appends:
        slot = next(slots)
        tp = append[0]
        error = failed.get((tp.topic, tp.partition))
        if error is None:
            kept.append(append)
        else:
            refusals[slot] = ProduceResult(
                error, message=f"{tp} is not in the open transaction of {transactional_id!r} ({error.name})"
            )
    return kept


def _measure(
    metrics: BrokerMetrics,
    request: ProduceRequest,
    refusals: list[ProduceResult | None],
    appends: list[tuple[TopicPartition, memoryview, V2Header | None]],
    results: list[ProduceResult],
) -> None:
    """Count the request in the broker's metrics: per partition appended, its records and bytes; per partition
    refused or failed, a failed produce."""
    for (tp, records, header), result in zip(appends, results, strict=True):
        if result.error:
            metrics.produce_failed(tp.topic)
        else:
            metrics.produced(tp.topic, header.records_count if header is not None else 0, len(records))
    refused = iter(refusals)
    for topic in request.topic_data:
        for _ in topic.partition_data:
            if next(refused) is not None:
                metrics.produce_failed(topic.name)


def _answer(
    topic: str, partition: int, result: ProduceResult, late: dict[TopicPartition, ErrorCode] | None
) -> PartitionProduceResponse:
    """One partition's answer, with the error code acks=all ended with when it waited."""
    error = result.error
    if late and not error:
        error = late.get(TopicPartition(topic, partition), error)
    return PartitionProduceResponse(
        partition,
        error,
        result.base_offset,
        result.log_append_time,
        result.log_start_offset,
        [BatchIndexAndErrorMessage(i, m) for i, m in result.record_errors] if result.record_errors else [],
        error_message=result.message,
    )


def _first_error(responses: list[TopicProduceResponse]) -> str:
    for topic in responses:
        for p in topic.partition_responses:
            if p.error_code:
                return f"{topic.name}-{p.index}: error {p.error_code} {p.error_message or ''}".rstrip()
    return "unknown"


def _all_failed(request: ProduceRequest, error: ErrorCode) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                topic.name, [PartitionProduceResponse(p.index, error, -1) for p in topic.partition_data]
            )
            for topic in request.topic_data
        ]
    )
