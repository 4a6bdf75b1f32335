"""WriteTxnMarkers (27): a transaction coordinator asks this broker, as partition leader, to end transactions by
appending COMMIT/ABORT control batches (``ReplicaManager.write_txn_markers``, acks=all). A marker written to a
``__consumer_offsets`` partition also applies (commit) or drops (abort) the producer's offsets this broker's group
coordinator holds pending from TxnOffsetCommit. Only a broker (ClusterAction on the cluster) may send it."""

from __future__ import annotations

from samsa.broker.replica_manager import TxnMarkerEntry
from samsa.protocol import ErrorCode
from samsa.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from samsa.security.acl import AclOperation
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

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
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return WriteTxnMarkersResponse(
            markers=[
                WritableTxnMarkerResult(
                    m.producer_id,
                    [
                        WritableTxnMarkerTopicResult(
                            t.name,
                            [
                                WritableTxnMarkerPartitionResult(p, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                                for p in t.partition_indexes
                            ],
                        )
                        for t in m.topics
                    ],
                )
                for m in request.markers
            ]
        )
    answers = await ctx.services.replica_manager.write_txn_markers(entries)
    groups = ctx.services.group_coordinator_made
    if groups is not None:
        for entry in entries:
            if any(
                tp.topic == CONSUMER_OFFSETS_TOPIC and answers.get((entry.producer_id, tp)) == ErrorCode.NONE
                for tp in entry.partitions
            ):
                groups.complete_txn_offsets(entry.producer_id, entry.commit)
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
