"""WriteTxnMarkers (27): a transaction coordinator asks this broker, as partition leader, to end transactions by
appending COMMIT/ABORT control batches (``ReplicaManager.write_txn_markers``, acks=all)."""

from __future__ import annotations

from samsa.broker.replica_manager import TxnMarkerEntry
from samsa.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


async def handle(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    entries = [
        TxnMarkerEntry(
            m.producer_id,
            m.producer_epoch,
            m.transaction_result,
            m.coordinator_epoch,
            tuple(TopicPartition(t.name, p) for t in m.topics for p in t.partition_indexes),
        )
        for m in request.markers
    ]
    answers = await ctx.services.replica_manager.write_txn_markers(entries)
    results = []
    for m in request.markers:
        topics = [
            WritableTxnMarkerTopicResult(
                t.name,
                [
                    WritableTxnMarkerPartitionResult(
                        p, int(answers[(m.producer_id, TopicPartition(t.name, p))])
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in m.topics
        ]
        results.append(WritableTxnMarkerResult(m.producer_id, topics))
    return WriteTxnMarkersResponse(markers=results)
