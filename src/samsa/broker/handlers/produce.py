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

import functools
from collections.abc import Awaitable, Callable
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
from samsa.topic_partition import new_topic_partition

from ..context import RequestContext

if TYPE_CHECKING:
    from samsa.metrics.broker_metrics import BrokerMetrics
    from samsa.protocol.produce_codec import Answer

    from ..services import BrokerServices
from ..network import ConnectionClosedByHandler
from ..replica_manager import ProduceResult

_VALID_ACKS = (0, 1, -1)
_DENIED = ProduceResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
_BAD_ACKS = ProduceResult(ErrorCode.INVALID_REQUIRED_ACKS)

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


Topics = list[tuple[str, list[tuple[int, object]]]]
"""A request's record sets: per topic its name and per partition (index, records), as the codec reads them."""
Results = list[tuple[str, list[tuple[int, ProduceResult]]]]
"""A request's outcome in the same order: per topic its name and per partition (index, result)."""
_Appends = list[tuple[TopicPartition, memoryview, V2Header | None]]
_Authorize = Callable[[str], bool]


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    acks = request.acks
    if acks not in _VALID_ACKS:
        return _all_failed(request, ErrorCode.INVALID_REQUIRED_ACKS)
    if request.transactional_id and not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return _all_failed(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    topics: Topics = [
        (topic.name, [(data.index, data.records) for data in topic.partition_data])
        for topic in request.topic_data
    ]
    authorize = None
    if ctx.services.authorizer is not None:
        authorize = functools.partial(ctx.authorize, AclOperation.WRITE, ResourceType.TOPIC)
    refusals, appends = _checked(topics, ctx.api_version, authorize)
    verify = ctx.services.verify_transaction
    if verify is not None and request.transactional_id and any(_transactional(h) for _, _, h in appends):
        appends = await _verified(ctx, request.transactional_id, refusals, appends)
    results, acks_done = _appended(ctx.services, topics, refusals, appends, acks, request.timeout_ms)
    if acks_done is not None:
        results = _late(results, await acks_done)
    if acks == 0:
        _close_on_error(results)
        return None
    return response_of(results)


def answer_raw(
    services: BrokerServices, version: int, acks: int, timeout_ms: int, topics: Topics
) -> Results | Awaitable[Results] | None:
    """The fast path (``RequestDispatcher``): a request without a transactional id, on a broker without an
    authorizer, served from the codec's tuples with no request or answer dataclass built; the same checks,
    appends, metrics and answers as ``handle``. None for acks=0; an awaitable when acks=all waits."""
    if acks not in _VALID_ACKS:
        return [(name, [(i, _BAD_ACKS) for i, _ in partitions]) for name, partitions in topics]
    refusals, appends = _checked(topics, version, None)
    results, acks_done = _appended(services, topics, refusals, appends, acks, timeout_ms)
    if acks_done is not None:
        return _answered_late(results, acks_done)
    if acks == 0:
        _close_on_error(results)
        return None
    return results


async def _answered_late(results: Results, acks_done: Awaitable[dict[TopicPartition, ErrorCode]]) -> Results:
    return _late(results, await acks_done)


def _checked(
    topics: Topics, version: int, authorize: _Authorize | None
) -> tuple[list[ProduceResult | None], _Appends]:
    """Per partition in request order its refusal (None: to append), and the appends with their headers."""
    refusals: list[ProduceResult | None] = []
    appends: _Appends = []
    for name, partitions in topics:
        allowed = authorize is None or authorize(name)
        for index, records in partitions:
            checked = _check_record_set(records, version) if allowed else _DENIED
            if isinstance(checked, ProduceResult):
                refusals.append(checked)
            else:
                refusals.append(None)
                appends.append((new_topic_partition((name, index)), *checked))
    return refusals, appends


def _appended(
    services: BrokerServices,
    topics: Topics,
    refusals: list[ProduceResult | None],
    appends: _Appends,
    acks: int,
    timeout_ms: int,
) -> tuple[Results, Awaitable[dict[TopicPartition, ErrorCode]] | None]:
    """Append as leader (one replica manager call), count it in the metrics, and pair each partition with its
    outcome; with acks=all, also what to await."""
    appended, acks_done = services.replica_manager.produce(appends, acks, timeout_ms)
    if services.metrics is not None:
        _measure(services.metrics, topics, refusals, appends, appended)
    if (
        len(topics) == 1 and len(refusals) == 1 and len(appended) == 1
    ):  # one partition, appended: most requests
        [(name, [(index, _)])] = topics
        return [(name, [(index, appended[0])])], acks_done
    outcomes = iter(refusals)
    done = iter(appended)
    results = [
        (name, [(index, next(outcomes) or next(done)) for index, _ in partitions])
        for name, partitions in topics
    ]
    return results, acks_done


def _late(results: Results, late: dict[TopicPartition, ErrorCode]) -> Results:
    """The error codes acks=all ended with, over the appends' own."""
    if not late:
        return results
    return [
        (
            name,
            [
                (index, result)
                if result.error or (error := late.get(TopicPartition(name, index))) is None
                else (index, result._replace(error=error))
                for index, result in partitions
            ],
        )
        for name, partitions in results
    ]


def _close_on_error(results: Results) -> None:
    """acks=0 has no answer to carry an error: the connection closes (module doc)."""
    for name, partitions in results:
        for index, result in partitions:
            if result.error:
                raise ConnectionClosedByHandler(
                    f"acks=0 produce failed: {name}-{index}: error {result.error} {result.message or ''}".rstrip()
                )


def answers_of(results: Results) -> list[tuple[str, list[Answer]]] | None:
    """``results`` as the codec's ``write_produce_answers`` takes them; None when one carries record errors."""
    answers: list[tuple[str, list[Answer]]] = []
    for name, partitions in results:
        row: list[Answer] = []
        for index, r in partitions:
            if r.record_errors:
                return None
            row.append((index, r.error, r.base_offset, r.log_append_time, r.log_start_offset, r.message))
        answers.append((name, row))
    return answers


def response_of(results: Results) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(name, [_answer(index, result) for index, result in partitions])
            for name, partitions in results
        ]
    )


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
    topics: Topics,
    refusals: list[ProduceResult | None],
    appends: _Appends,
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
    for name, partitions in topics:
        for _ in partitions:
            if next(refused) is not None:
                metrics.produce_failed(name)


def _answer(partition: int, result: ProduceResult) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        partition,
        result.error,
        result.base_offset,
        result.log_append_time,
        result.log_start_offset,
        [BatchIndexAndErrorMessage(i, m) for i, m in result.record_errors] if result.record_errors else [],
        error_message=result.message,
    )


def _all_failed(request: ProduceRequest, error: ErrorCode) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                topic.name, [PartitionProduceResponse(p.index, error, -1) for p in topic.partition_data]
            )
            for topic in request.topic_data
        ]
    )
