"""Consumer-group administration over ``KafkaClient.send``: find the coordinator, list, describe and delete groups,
read committed offsets and commit new ones as a standalone (member-less) client, as Kafka's admin client does.

Members' assignments are decoded from the consumer protocol (``ConsumerProtocolAssignment``: int16 version, then
an int32-counted array of (topic, int32-counted partition array) and user data); an assignment of another
protocol, or one that cannot be read, gives no partitions.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from samsa.protocol import ApiKey
from samsa.protocol.messages.consumer_protocol import CONSUMERPROTOCOLASSIGNMENT_DECODERS
from samsa.protocol.messages.delete_groups import DeleteGroupsRequest
from samsa.protocol.messages.describe_groups import DescribeGroupsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.list_groups import ListGroupsRequest
from samsa.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from samsa.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from samsa.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic

from .client import KafkaClient
from .errors import BrokerError
from .types import TopicPartition

NONE = 0


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


def decode_assignment(data: bytes) -> tuple[TopicPartition, ...]:
    """The partitions of a consumer-protocol assignment; () when it is empty or not readable."""
    if len(data) < 2:
        return ()
    (version,) = struct.unpack_from(">h", data)
    if version < 0:
        return ()
    decoder = CONSUMERPROTOCOLASSIGNMENT_DECODERS[min(version, max(CONSUMERPROTOCOLASSIGNMENT_DECODERS))]
    try:
        assignment, _ = decoder(memoryview(data), 2)
    except Exception:
        return ()
    return tuple(TopicPartition(tp.topic, p) for tp in assignment.assigned_partitions for p in tp.partitions)


@dataclass(frozen=True, slots=True)
class Coordinator:
    node_id: int
    host: str
    port: int


async def coordinator_of(client: KafkaClient, group_id: str) -> Coordinator:
    """The broker coordinating the group (raises BrokerError)."""
    response = await client.send(
        FindCoordinatorRequest(key=group_id, key_type=0), api_key=ApiKey.FIND_COORDINATOR, version=2
    )
    if response.error_code != NONE:
        raise BrokerError.from_code(response.error_code, response.error_message)
    return Coordinator(int(response.node_id), response.host, int(response.port))


async def find_coordinator(client: KafkaClient, group_id: str) -> int:
    """The node id of the group's coordinator (raises BrokerError)."""
    return (await coordinator_of(client, group_id)).node_id


async def list_groups(client: KafkaClient) -> list[GroupListing]:
    """Every group of every broker, by group id."""
    cluster = await client.metadata([])
    out: dict[str, GroupListing] = {}
    for node_id in cluster.brokers:
        response = await client.send(ListGroupsRequest(), api_key=ApiKey.LIST_GROUPS, node_id=node_id)
        if response.error_code != NONE:
            raise BrokerError.from_code(response.error_code)
        for g in response.groups:
            out[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state)
    return [out[g] for g in sorted(out)]


async def describe_group(client: KafkaClient, group_id: str) -> GroupDescription:
    node = await find_coordinator(client, group_id)
    response = await client.send(
        DescribeGroupsRequest(groups=[group_id]), api_key=ApiKey.DESCRIBE_GROUPS, node_id=node
    )
    [group] = response.groups
    if group.error_code != NONE:
        raise BrokerError.from_code(group.error_code)
    consumer = group.protocol_type == "consumer"
    members = tuple(
        MemberDescription(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            decode_assignment(bytes(m.member_assignment)) if consumer else (),
        )
        for m in group.members
    )
    return GroupDescription(
        group.group_id, group.group_state, group.protocol_type, group.protocol_data, members
    )


async def committed_offsets(
    client: KafkaClient, group_id: str, partitions: Iterable[TopicPartition] | None = None
) -> dict[TopicPartition, int]:
    """Committed offsets of the group (None: every partition it has committed); partitions with none are left out."""
    node = await find_coordinator(client, group_id)
    topics: list[OffsetFetchRequestTopic] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [OffsetFetchRequestTopic(t, ps) for t, ps in by_topic.items()]
    response = await client.send(
        OffsetFetchRequest(group_id=group_id, topics=topics),
        api_key=ApiKey.OFFSET_FETCH,
        node_id=node,
        version=7,
    )
    if response.error_code != NONE:
        raise BrokerError.from_code(response.error_code)
    out: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for p in topic.partitions:
            if p.error_code != NONE:
                raise BrokerError.from_code(p.error_code)
            if p.committed_offset >= 0:
                out[TopicPartition(topic.name, p.partition_index)] = p.committed_offset
    return out


async def commit_offsets(
    client: KafkaClient, group_id: str, offsets: Mapping[TopicPartition, int], metadata: str = ""
) -> dict[TopicPartition, int]:
    """Commit as a standalone client (no member, generation -1): only an inactive group accepts it.
    Returns the error code per partition (0 for success)."""
    node = await find_coordinator(client, group_id)
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitRequestPartition(tp.partition, offset, committed_metadata=metadata)
        )
    request = OffsetCommitRequest(
        group_id=group_id, topics=[OffsetCommitRequestTopic(t, ps) for t, ps in by_topic.items()]
    )
    response = await client.send(request, api_key=ApiKey.OFFSET_COMMIT, node_id=node, version=7)
    return {
        TopicPartition(topic.name, p.partition_index): p.error_code
        for topic in response.topics
        for p in topic.partitions
    }


async def delete_groups(client: KafkaClient, group_ids: Sequence[str]) -> dict[str, int]:
    """Delete groups; the error code per group (0 for success)."""
    out: dict[str, int] = {}
    for group_id in group_ids:
        node = await find_coordinator(client, group_id)
        response = await client.send(
            DeleteGroupsRequest(groups_names=[group_id]), api_key=ApiKey.DELETE_GROUPS, node_id=node
        )
        for result in response.results:
            out[result.group_id] = result.error_code
    return out


async def delete_offsets(
    client: KafkaClient, group_id: str, partitions: Sequence[TopicPartition]
) -> tuple[int, dict[TopicPartition, int]]:
    """Delete the group's committed offsets of ``partitions`` (OffsetDelete): the group's error code and the
    error code per partition (0 for success)."""
    node = await find_coordinator(client, group_id)
    by_topic: dict[str, list[OffsetDeleteRequestPartition]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(OffsetDeleteRequestPartition(tp.partition))
    request = OffsetDeleteRequest(
        group_id=group_id, topics=[OffsetDeleteRequestTopic(t, ps) for t, ps in by_topic.items()]
    )
    response = await client.send(request, api_key=ApiKey.OFFSET_DELETE, node_id=node, version=0)
    return response.error_code, {
        TopicPartition(topic.name, p.partition_index): p.error_code
        for topic in response.topics
        for p in topic.partitions
    }
