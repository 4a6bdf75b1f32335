"""OffsetFetch (9): a group's committed offsets, for named partitions or (v2+, topics null) all of them.

A partition with nothing committed answers offset -1, no metadata and no error, as Kafka does; v8+ asks for several
groups at once.
"""

from __future__ import annotations

from collections import defaultdict

from samsa.coordinator import OffsetAndMetadata
from samsa.protocol import ErrorCode
from samsa.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from samsa.storage.topic import TopicPartition

from ..context import RequestContext

API_KEY = 9
VERSIONS = (0, 8)
IMPLEMENTED = VERSIONS


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    if ctx.api_version >= 8:
        return OffsetFetchResponse(groups=[_group(ctx, g) for g in request.groups])
    wanted = (
        None
        if request.topics is None
        else [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    )
    found = ctx.broker.group_coordinator.fetch_offsets(request.group_id, wanted)
    topics = [
        OffsetFetchResponseTopic(
            name,
            [
                OffsetFetchResponsePartition(
                    p, committed.offset if committed else -1, _epoch(committed), _metadata(committed)
                )
                for p, committed in partitions
            ],
        )
        for name, partitions in _by_topic(found).items()
    ]
    return OffsetFetchResponse(topics=topics, error_code=ErrorCode.NONE)


def _group(ctx: RequestContext, group: OffsetFetchRequestGroup) -> OffsetFetchResponseGroup:
    wanted = (
        None
        if group.topics is None
        else [TopicPartition(t.name, p) for t in group.topics for p in t.partition_indexes]
    )
    found = ctx.broker.group_coordinator.fetch_offsets(group.group_id, wanted)
    topics = [
        OffsetFetchResponseTopics(
            name,
            [
                OffsetFetchResponsePartitions(
                    p, committed.offset if committed else -1, _epoch(committed), _metadata(committed)
                )
                for p, committed in partitions
            ],
        )
        for name, partitions in _by_topic(found).items()
    ]
    return OffsetFetchResponseGroup(group_id=group.group_id, topics=topics, error_code=ErrorCode.NONE)


def _by_topic(
    found: dict[TopicPartition, OffsetAndMetadata | None],
) -> dict[str, list[tuple[int, OffsetAndMetadata | None]]]:
    out: dict[str, list[tuple[int, OffsetAndMetadata | None]]] = defaultdict(list)
    for tp, committed in found.items():
        out[tp.topic].append((tp.partition, committed))
    return out


def _epoch(committed: OffsetAndMetadata | None) -> int:
    return committed.leader_epoch if committed is not None else -1


def _metadata(committed: OffsetAndMetadata | None) -> str:
    return committed.metadata if committed is not None else ""
