"""Every advertised version of every group API, on the wire, with the error codes Kafka gives bad input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import samsa
from samsa.protocol import ApiKey
from samsa.protocol.errors import ErrorCode
from samsa.protocol.messages.delete_groups import DeleteGroupsRequest
from samsa.protocol.messages.describe_groups import DescribeGroupsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.heartbeat import HeartbeatRequest
from samsa.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from samsa.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
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
from samsa.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from samsa.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.embedded.wire import WireClient

CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def broker() -> Iterator[samsa.Broker]:
    with samsa.Broker(config=CONFIG) as running:
        running.create_topic("t", partitions=2)
        yield running


@pytest.fixture
def wire(broker: samsa.Broker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as client:
        yield client


def join(wire: WireClient, version: int, group: str, member_id: str = "") -> object:
    request = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000 if version >= 1 else -1,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff")],
    )
    return wire.call(ApiKey.JOIN_GROUP, version, request)


@pytest.mark.parametrize("version", range(0, 5))
def test_find_coordinator_names_this_broker(broker: samsa.Broker, wire: WireClient, version: int) -> None:
    if version >= 4:
        response = wire.call(
            ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"])
        )
        assert [(c.key, c.node_id, c.port, c.error_code) for c in response.coordinators] == [
            ("a", 1, broker.port, 0),
            ("b", 1, broker.port, 0),
        ]
    else:
        response = wire.call(ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key="a"))
        assert (response.error_code, response.port) == (ErrorCode.NONE, broker.port)


@pytest.mark.parametrize("version", range(0, 10))
def test_join_sync_heartbeat_leave_at_every_version(wire: WireClient, version: int) -> None:
    group = f"wire-{version}"
    first = join(wire, version, group)
    if version >= 4:
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id  # type: ignore[attr-defined]
        first = join(wire, version, group, first.member_id)  # type: ignore[attr-defined]
    assert first.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    member_id, generation = first.member_id, first.generation_id  # type: ignore[attr-defined]
    assert first.leader == member_id and generation == 1  # type: ignore[attr-defined]
    sync_version = min(version, 5)
    synced = wire.call(
        ApiKey.SYNC_GROUP,
        sync_version,
        SyncGroupRequest(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            protocol_type="consumer" if sync_version >= 5 else None,
            protocol_name="range" if sync_version >= 5 else None,
            assignments=[SyncGroupRequestAssignment(member_id, b"assignment")],
        ),
    )
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, b"assignment")
    hb_version = min(version, 4)
    ok = wire.call(
        ApiKey.HEARTBEAT,
        hb_version,
        HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id),
    )
    stale = wire.call(
        ApiKey.HEARTBEAT, hb_version, HeartbeatRequest(group_id=group, generation_id=0, member_id=member_id)
    )
    unknown = wire.call(
        ApiKey.HEARTBEAT,
        hb_version,
        HeartbeatRequest(group_id=group, generation_id=generation, member_id="x"),
    )
    assert (ok.error_code, stale.error_code, unknown.error_code) == (
        ErrorCode.NONE,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
    )
    leave_version = min(version, 5)
    if leave_version >= 3:
        left = wire.call(
            ApiKey.LEAVE_GROUP,
            leave_version,
            LeaveGroupRequest(group_id=group, members=[MemberIdentity(member_id), MemberIdentity("ghost")]),
        )
        assert left.error_code == ErrorCode.NONE
        assert [m.error_code for m in left.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    else:
        left = wire.call(
            ApiKey.LEAVE_GROUP, leave_version, LeaveGroupRequest(group_id=group, member_id=member_id)
        )
        assert left.error_code == ErrorCode.NONE
    described = wire.call(ApiKey.DESCRIBE_GROUPS, min(version, 5), DescribeGroupsRequest(groups=[group]))
    assert described.groups[0].group_state == "Empty"


@pytest.mark.parametrize("version", range(0, 9))
def test_commit_and_fetch_at_every_version(wire: WireClient, version: int) -> None:
    group = f"offsets-{version}"
    partitions = [
        OffsetCommitRequestPartition(0, 17, committed_metadata="m"),
        OffsetCommitRequestPartition(9, 1),
    ]
    commit = wire.call(
        ApiKey.OFFSET_COMMIT,
        version,
        OffsetCommitRequest(group_id=group, topics=[OffsetCommitRequestTopic("t", partitions)]),
    )
    assert [p.error_code for p in commit.topics[0].partitions] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    if version >= 8:
        fetched = wire.call(
            ApiKey.OFFSET_FETCH,
            version,
            OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(group_id=group, topics=[OffsetFetchRequestTopics("t", [0, 1])])
                ]
            ),
        )
        parts = fetched.groups[0].topics[0].partitions
    else:
        fetched = wire.call(
            ApiKey.OFFSET_FETCH,
            version,
            OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequestTopic("t", [0, 1])]),
        )
        parts = fetched.topics[0].partitions
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in parts] == [
        (0, 17, "m", 0),
        (1, -1, "", 0),
    ]


def test_bad_commits_and_admin_errors(wire: WireClient) -> None:
    topics = [OffsetCommitRequestTopic("t", [OffsetCommitRequestPartition(0, 5)])]
    stranger = wire.call(
        ApiKey.OFFSET_COMMIT,
        8,
        OffsetCommitRequest(
            group_id="nobody-home", generation_id_or_member_epoch=3, member_id="m", topics=topics
        ),
    )
    assert stranger.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    empty_join = join(wire, 5, "")
    assert empty_join.error_code == ErrorCode.INVALID_GROUP_ID  # type: ignore[attr-defined]
    deleted = wire.call(ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["never-seen"]))
    assert deleted.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    gone = wire.call(
        ApiKey.OFFSET_DELETE,
        0,
        OffsetDeleteRequest(
            group_id="never-seen", topics=[OffsetDeleteRequestTopic("t", [OffsetDeleteRequestPartition(0)])]
        ),
    )
    assert gone.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    described = wire.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["never-seen"]))
    assert (described.groups[0].error_code, described.groups[0].group_state) == (ErrorCode.NONE, "Dead")


def test_list_delete_and_offset_delete(wire: WireClient) -> None:
    topics = [
        OffsetCommitRequestTopic(
            "t", [OffsetCommitRequestPartition(0, 5), OffsetCommitRequestPartition(1, 6)]
        )
    ]
    wire.call(ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(group_id="to-delete", topics=topics))
    for version in range(0, 6):
        listed = wire.call(
            ApiKey.LIST_GROUPS, version, ListGroupsRequest(states_filter=["Empty"] if version >= 4 else [])
        )
        assert "to-delete" in [g.group_id for g in listed.groups]
    stable_only = wire.call(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=["Stable"]))
    assert "to-delete" not in [g.group_id for g in stable_only.groups]
    removed = wire.call(
        ApiKey.OFFSET_DELETE,
        0,
        OffsetDeleteRequest(
            group_id="to-delete", topics=[OffsetDeleteRequestTopic("t", [OffsetDeleteRequestPartition(1)])]
        ),
    )
    assert (removed.error_code, removed.topics[0].partitions[0].error_code) == (
        ErrorCode.NONE,
        ErrorCode.NONE,
    )
    fetched = wire.call(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id="to-delete", topics=None))
    assert [(p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] == [(0, 5)]
    for version in range(0, 3):
        group = f"del-{version}"
        wire.call(ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(group_id=group, topics=topics))
        result = wire.call(ApiKey.DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=[group]))
        assert result.results[0].error_code == ErrorCode.NONE
        after = wire.call(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=None))
        assert after.topics == []
