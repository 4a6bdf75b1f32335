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

This is the hot path: per partition, one header check, one append and one response entry, nothing per record
(except on a compacted topic, whose log refuses records without a key: INVALID_RECORD with record errors).
"""

from __future__ import annotations

import dataclasses
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
from samsa.records.view import RECORD_BATCH_OVERHEAD, BatchView
from samsa.storage.topic import TopicPartition

from ..context import RequestContext
from ..network import ConnectionClosedByHandler

if TYPE_CHECKING:
    from ..replica_manager import ReplicaManager

_VALID_ACKS = (0, 1, -1)

_ZSTD_MIN_VERSION = 7


def _check_record_set(records: memoryview, version: int) -> tuple[ErrorCode, str] | None:
    """Kafka's per-request checks on a partition's record set, from the batch header alone."""
    size = len(records)
    if size < RECORD_BATCH_OVERHEAD:
        return (
            ErrorCode.INVALID_RECORD,
            f"Produce v{version} needs one complete record batch; got {size} bytes",
        )
    batch = BatchView(records, 0)
    magic = batch.magic
    if magic != 2:
        return (
            ErrorCode.INVALID_RECORD,
            f"Produce v{version} needs record batches of magic 2; got magic {magic}",
        )
    batch_size = batch.size_in_bytes
    if batch_size != size:
        what = "a truncated batch" if batch_size > size else "more than one batch"
        return ErrorCode.INVALID_RECORD, f"Produce v{version} needs exactly one record batch; got {what}"
    if version < _ZSTD_MIN_VERSION and batch.compression == CompressionType.ZSTD:
        return (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"zstd-compressed batches need Produce v{_ZSTD_MIN_VERSION} or later; got v{version}",
        )
    return None


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    acks = request.acks
    if acks not in _VALID_ACKS:
        return _all_failed(request, ErrorCode.INVALID_REQUIRED_ACKS)
    version = ctx.api_version
    replicas = ctx.services.replica_manager
    failed = False
    responses = []
    waiting: list[tuple[TopicPartition, int, list[PartitionProduceResponse], int]] = []
    for topic in request.topic_data:
        name = topic.name
        partitions: list[PartitionProduceResponse] = []
        for data in topic.partition_data:
            tp = TopicPartition(name, data.index)
            answer, last_offset = _append(replicas, tp, data.records, acks, version)
            failed = failed or answer.error_code != ErrorCode.NONE
            if acks == -1 and last_offset >= 0:
                waiting.append((tp, last_offset, partitions, len(partitions)))
            partitions.append(answer)
        responses.append(TopicProduceResponse(name, partitions))
    if waiting:
        errors = await replicas.wait_for_acks([(tp, last) for tp, last, _, _ in waiting], request.timeout_ms)
        for tp, _, answers, index in waiting:
            if errors[tp]:
                answers[index] = dataclasses.replace(answers[index], error_code=errors[tp])
    if acks == 0:
        if failed:
            raise ConnectionClosedByHandler(f"acks=0 produce failed: {_first_error(responses)}")
        return None
    return ProduceResponse(responses=responses)


def _append(
    replicas: ReplicaManager, tp: TopicPartition, records: object, acks: int, version: int
) -> tuple[PartitionProduceResponse, int]:
    """One partition's record set appended: its answer, and the last offset an acks=all answer waits for (-1:
    nothing to wait for)."""
    if type(records) is not memoryview:
        if not isinstance(records, (bytes, bytearray)):
            return PartitionProduceResponse(
                tp.partition, ErrorCode.INVALID_RECORD, -1, error_message="no record set"
            ), -1
        records = memoryview(records)
    assert isinstance(records, memoryview)
    problem = _check_record_set(records, version)
    if problem is not None:
        return PartitionProduceResponse(tp.partition, problem[0], -1, error_message=problem[1]), -1
    result = replicas.append(tp, records, acks)
    answer = PartitionProduceResponse(
        tp.partition,
        result.error,
        result.base_offset,
        result.log_append_time,
        result.log_start_offset,
        [BatchIndexAndErrorMessage(i, m) for i, m in result.record_errors],
        error_message=result.message,
    )
    waits = acks == -1 and not result.error and replicas.acks_pending(tp, result)
    return answer, result.last_offset if waits else -1


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
