"""OffsetFetch (9): a group's committed offsets, for named partitions or (v2+, topics null) all of them.

A partition with nothing committed answers offset -1, no metadata and no error, as Kafka does; v8+ asks for several
groups at once. After the Describe check on the group, the group's status (loading, not this broker's) is the
answer when it is not NONE: per group in v8+, for the request in v2-7, on each partition asked for in v0-1 (which
have no request-level error).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

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
from samsa.security.acl import AclOperation, ResourceType
from samsa.storage.topic import TopicPartition

from ..context import RequestContext


class _RequestTopic(Protocol):
    """A requested topic, in either request layout (v0-7 ``topics``, v8+ ``groups[].topics``)."""

    @property
    def name(self) -> str: ...

    @property
    def partition_indexes(self) -> list[int]: ...


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    if ctx.api_version >= 8:
        return OffsetFetchResponse(groups=[_group(ctx, g, request.require_stable) for g in request.groups])
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
        return OffsetFetchResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    # not this broker's group (a cluster's coordinator moved) or not loaded yet: the client looks it up again or
    # retries, rather than reading "no committed offset" and resetting
    status = ctx.services.group_coordinator.group_status(request.group_id)
    if status is not ErrorCode.NONE:
        if ctx.api_version >= 2:
            return OffsetFetchResponse(error_code=status)
        return OffsetFetchResponse(topics=_failed(request.topics or [], status), error_code=status)
    committed = _committed(ctx, request.group_id, request.topics)
    unstable = _unstable(ctx, request.group_id, committed) if request.require_stable else set()
    topics = [
        OffsetFetchResponseTopic(
            name,
            [OffsetFetchResponsePartition(*_partition(*p), _error(name, p[0], unstable)) for p in partitions],
        )
        for name, partitions in committed.items()
    ]
    return OffsetFetchResponse(topics=topics, error_code=ErrorCode.NONE)


def _group(
    ctx: RequestContext, group: OffsetFetchRequestGroup, require_stable: bool
) -> OffsetFetchResponseGroup:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
        return OffsetFetchResponseGroup(
            group_id=group.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
        )
    status = ctx.services.group_coordinator.group_status(group.group_id)
    if status is not ErrorCode.NONE:
        return OffsetFetchResponseGroup(group_id=group.group_id, error_code=status)
    committed = _committed(ctx, group.group_id, group.topics)
    unstable = _unstable(ctx, group.group_id, committed) if require_stable else set()
    topics = [
        OffsetFetchResponseTopics(
            name,
            [
                OffsetFetchResponsePartitions(*_partition(*p), _error(name, p[0], unstable))
                for p in partitions
            ],
        )
        for name, partitions in committed.items()
    ]
    return OffsetFetchResponseGroup(group_id=group.group_id, topics=topics, error_code=ErrorCode.NONE)


def _failed(topics: Sequence[_RequestTopic], error: ErrorCode) -> list[OffsetFetchResponseTopic]:
    """``error`` on every partition asked for, offset -1: v0-1's answer when the group cannot be read (Kafka's
    ``OffsetFetchRequest.getErrorResponse`` for those versions)."""
    return [
        OffsetFetchResponseTopic(
            t.name,
            [OffsetFetchResponsePartition(*_partition(p, None), int(error)) for p in t.partition_indexes],
        )
        for t in topics
    ]


def _committed(
    ctx: RequestContext, group_id: str, topics: Sequence[_RequestTopic] | None
) -> dict[str, list[tuple[int, OffsetAndMetadata | None]]]:
    """The group's committed offsets for ``topics`` (None: every partition it has), by topic name."""
    wanted = (
        None if topics is None else [TopicPartition(t.name, p) for t in topics for p in t.partition_indexes]
    )
    return _by_topic(ctx.services.group_coordinator.fetch_offsets(group_id, wanted))


def _unstable(
    ctx: RequestContext, group_id: str, committed: dict[str, list[tuple[int, OffsetAndMetadata | None]]]
) -> set[tuple[str, int]]:
    """The partitions an open transaction holds an offset of (require_stable: UNSTABLE_OFFSET_COMMIT, retried)."""
    coordinator = ctx.services.group_coordinator
    return {
        (topic, index)
        for topic, partitions in committed.items()
        for index, _ in partitions
        if coordinator.has_pending_txn_offsets(group_id, TopicPartition(topic, index))
    }


def _error(topic: str, index: int, unstable: set[tuple[str, int]]) -> int:
    return int(ErrorCode.UNSTABLE_OFFSET_COMMIT if (topic, index) in unstable else ErrorCode.NONE)


def _partition(index: int, committed: OffsetAndMetadata | None) -> tuple[int, int, int, str]:
    """(partition, offset, leader epoch, metadata): the fields both response layouts share, in their order."""
    if committed is None:
        return index, -1, -1, ""
    return index, committed.offset, committed.leader_epoch, committed.metadata


def _by_topic(
    found: dict[TopicPartition, OffsetAndMetadata | None],
) -> dict[str, list[tuple[int, OffsetAndMetadata | None]]]:
    out: dict[str, list[tuple[int, OffsetAndMetadata | None]]] = defaultdict(list)
    for tp, committed in found.items():
        out[tp.topic].append((tp.partition, committed))
    return out
