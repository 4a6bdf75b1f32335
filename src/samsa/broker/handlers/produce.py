"""Produce (0): append each partition's record set as leader; answer per partition, or not at all for acks=0.

Versions 0-2 are advertised (old librdkafka enables compression only when Produce v0 is in range) but answered
with UNSUPPORTED_VERSION, as Kafka 4 does; 3+ carry record batch v2.
"""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.produce import (
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from samsa.storage.topic import TopicPartition

from ..context import RequestContext

API_KEY = 0
VERSIONS = (0, 9)
IMPLEMENTED = (3, 9)


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    replica_manager = ctx.broker.replica_manager
    acks = request.acks
    responses = []
    for topic in request.topic_data:
        partitions = []
        for data in topic.partition_data:
            tp = TopicPartition(topic.name, data.index)
            if acks not in (0, 1, -1):
                partitions.append(PartitionProduceResponse(data.index, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            if data.records is None:
                partitions.append(PartitionProduceResponse(data.index, ErrorCode.CORRUPT_MESSAGE))
                continue
            if not isinstance(data.records, (bytes, bytearray, memoryview)):
                partitions.append(PartitionProduceResponse(data.index, ErrorCode.CORRUPT_MESSAGE))
                continue
            result = replica_manager.append(tp, memoryview(data.records), acks)
            partitions.append(
                PartitionProduceResponse(
                    index=data.index,
                    error_code=result.error,
                    base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time,
                    log_start_offset=result.log_start_offset,
                    error_message=result.message,
                )
            )
        responses.append(TopicProduceResponse(topic.name, partitions))
    if acks == 0:
        return None
    return ProduceResponse(responses=responses)
