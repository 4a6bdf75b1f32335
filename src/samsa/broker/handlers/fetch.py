"""Fetch (1): read each partition from its fetch offset, long-polling until ``min_bytes`` or ``max_wait_ms``.

Record data leaves as file slices of the segments (see ``dispatch``: they are sent with ``sendfile``). Incremental
fetch sessions (KIP-227) are offered to followers naming topics by name (``samsa.broker.fetch_sessions``);
consumers get session id 0, which tells them to send full fetch requests, as a broker with no session slots does.

A fetch with a replica id is a follower's (cluster mode): it reads to the log end, moves that follower's position
on the leader (the ISR and the high watermark follow), and when the follower's last fetched epoch ended earlier
here, the answer carries no records but the diverging epoch, so the follower truncates (KIP-595).

From v13 topics are named by id (KIP-516), both ways; an id this broker does not know answers UNKNOWN_TOPIC_ID.
From v15 a follower's id is in ``replica_state`` instead of ``replica_id`` (KIP-903). Kafka's ZooKeeper-mode
followers send the version their ``inter.broker.protocol.version`` fixes (v17 for 3.9) without asking ApiVersions,
so a mixed cluster needs these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from samsa.protocol.primitives import records_size
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage import FetchIsolation
from samsa.storage.topic import TopicPartition

from ..context import RequestContext
from ..fetch_sessions import SESSION_VERSIONS
from ..replica_manager import FetchRequestPartition, FetchResult

if TYPE_CHECKING:
    from samsa.metrics.broker_metrics import BrokerMetrics


def replica_of(request: FetchRequest) -> int:
    """The fetching follower's broker id, -1 for a consumer: ``replica_id`` up to v14, ``replica_state`` from v15
    (the field a version does not carry keeps its default, -1)."""
    return max(request.replica_id, request.replica_state.replica_id)


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    replica_id = replica_of(request)
    if replica_id >= 0:
        isolation = FetchIsolation.LOG_END
    elif request.isolation_level == 1:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    by_id = ctx.api_version >= 13
    named, unknown_ids = _named_by_id(ctx, request) if by_id else (request, [])
    wanted, denied = _authorized(ctx, replica_id, requested_partitions(named, replica_id))
    sessions = ctx.services.fetch_sessions
    context = sessions.context(
        request.session_id,
        request.session_epoch,
        wanted,
        forgotten_partitions(request) if not by_id else (),
        offered=replica_id >= 0 and ctx.api_version in SESSION_VERSIONS,
    )
    if isinstance(context, ErrorCode):
        # an incremental fetch in a session this broker does not have (any more), or not at that epoch
        return FetchResponse(error_code=context, session_id=0, responses=[])
    max_bytes = request.max_bytes if ctx.api_version >= 3 else 2**31 - 1
    results = await ctx.services.replica_manager.fetch(
        context.partitions,
        max_wait_ms=request.max_wait_ms,
        min_bytes=request.min_bytes,
        max_bytes=max_bytes,
        isolation=isolation,
        replica_id=replica_id,
        hard_max_bytes=ctx.api_version < 3,
    )
    if ctx.services.metrics is not None:
        _measure(ctx.services.metrics, replica_id, context.partitions, results)
    responses: list[FetchableTopicResponse] = []
    for want, result in sessions.answered(context, results):
        data = PartitionData(
            partition_index=want.tp.partition,
            error_code=result.error,
            high_watermark=result.high_watermark,
            last_stable_offset=result.last_stable_offset,
            log_start_offset=result.log_start_offset,
            aborted_transactions=_aborted(request.isolation_level, result),
            records=result.records if result.records is not None else b"",
        )
        if result.diverging_epoch is not None:
            data = dataclasses.replace(data, diverging_epoch=EpochEndOffset(*result.diverging_epoch))
        if responses and responses[-1].topic == want.tp.topic:
            responses[-1].partitions.append(data)
        else:
            responses.append(_topic_response(ctx, by_id, want.tp.topic, data))
    for want in denied:
        data = PartitionData(
            partition_index=want.tp.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        responses.append(_topic_response(ctx, by_id, want.tp.topic, data))
    for topic in unknown_ids:
        errors = [PartitionData(p.partition, ErrorCode.UNKNOWN_TOPIC_ID) for p in topic.partitions]
        responses.append(FetchableTopicResponse(topic_id=topic.topic_id, partitions=errors))
    return FetchResponse(error_code=ErrorCode.NONE, session_id=context.session_id, responses=responses)


def forgotten_partitions(request: FetchRequest) -> list[TopicPartition]:
    """The partitions an incremental fetch drops from its session (topics by name, v7-v12)."""
    return [TopicPartition(t.topic, p) for t in request.forgotten_topics_data for p in t.partitions]


def _topic_response(
    ctx: RequestContext, by_id: bool, topic: str, data: PartitionData
) -> FetchableTopicResponse:
    if by_id:
        return FetchableTopicResponse(
            topic=topic, topic_id=ctx.services.metadata_store.topic_id(topic), partitions=[data]
        )
    return FetchableTopicResponse(topic=topic, partitions=[data])


def _named_by_id(ctx: RequestContext, request: FetchRequest) -> tuple[FetchRequest, list[FetchTopic]]:
    """(the request with each topic's name filled in from its id, the topics whose id is unknown here)."""
    named: list[FetchTopic] = []
    unknown: list[FetchTopic] = []
    for topic in request.topics:
        name = ctx.services.metadata_store.topic_name(topic.topic_id)
        if name is None:
            unknown.append(topic)
        else:
            named.append(dataclasses.replace(topic, topic=name))
    return dataclasses.replace(request, topics=named), unknown


def _aborted(isolation_level: int, result: FetchResult) -> list[AbortedTransaction] | None:
    """A read_committed answer lists the aborted transactions its records overlap (null for read_uncommitted)."""
    if isolation_level == 0:
        return None
    return [AbortedTransaction(t.producer_id, t.first_offset) for t in result.aborted_transactions or ()]


def _measure(
    metrics: BrokerMetrics,
    replica_id: int,
    wanted: list[FetchRequestPartition],
    results: Sequence[FetchResult],
) -> None:
    """Count the request in the broker's metrics: a consumer's bytes out and fetches per partition (failed ones
    too), a follower's bytes as replication."""
    for want, result in zip(wanted, results, strict=True):
        size = records_size(result.records) if result.records is not None else 0
        if replica_id >= 0:
            metrics.replication_bytes_out += size
        else:
            metrics.fetched(want.tp.topic, size, failed=result.error != 0)


def _authorized(
    ctx: RequestContext, replica_id: int, wanted: list[FetchRequestPartition]
) -> tuple[list[FetchRequestPartition], list[FetchRequestPartition]]:
    """(allowed, denied): a follower needs ClusterAction on the cluster, a consumer Read on each topic (denied
    partitions answer TOPIC_AUTHORIZATION_FAILED, as Kafka's)."""
    if ctx.services.authorizer is None:
        return wanted, []
    if replica_id >= 0:
        return (wanted, []) if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION) else ([], wanted)
    readable = {
        t: ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t) for t in {w.tp.topic for w in wanted}
    }
    return [w for w in wanted if readable[w.tp.topic]], [w for w in wanted if not readable[w.tp.topic]]


def requested_partitions(request: FetchRequest, replica_id: int) -> list[FetchRequestPartition]:
    """The request's partitions as the replica manager reads them, in request order."""
    return [
        FetchRequestPartition(
            TopicPartition(topic.topic, p.partition),
            p.fetch_offset,
            p.partition_max_bytes,
            p.current_leader_epoch,
            replica_id,
            p.last_fetched_epoch,
        )
        for topic in request.topics
        for p in topic.partitions
    ]
