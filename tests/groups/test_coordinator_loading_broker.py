"""A running broker whose group coordinator is loading the group's ``__consumer_offsets`` partition answers the group
APIs as Kafka's does: the ACL checks first (KafkaApis: an unauthorized client gets GROUP_AUTHORIZATION_FAILED, and
learns nothing of the group), then the group's status (GroupCoordinator.validateGroupStatus), in each API's place
for it; a real client's commit made meanwhile succeeds once the load ends.

An embedded broker runs on the test's event loop (its coordinator, handlers and ACLs are the real ones); requests
are sent on a socket from a thread (``tests.embedded.wire``), or by kafka-python and confluent-kafka. The coordinator
is made to lose and regain the leadership of the offsets partition, what LeaderAndIsr requests do in a cluster, and
the load that follows is held until the test releases it, where a long partition's replay would take its time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from samsa.coordinator import GroupCoordinator
from samsa.coordinator.offsets_log import OffsetsLog
from samsa.embedded import Broker
from samsa.protocol import RequestHeader
from samsa.protocol.api_keys import ApiKey
from samsa.protocol.errors import ErrorCode
from samsa.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from samsa.protocol.messages.delete_groups import DeleteGroupsRequest
from samsa.protocol.messages.describe_groups import DescribeGroupsRequest
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
from samsa.protocol.messages.sync_group import SyncGroupRequest
from samsa.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from samsa.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

from ..embedded.wire import WireClient

OPEN = "open-group"
DENIED = "denied-group"  # User:ANONYMOUS may do nothing with it
TOPIC = "events"
SECRET = "secret"  # a topic User:ANONYMOUS may not read
OFFSETS = TopicPartition(CONSUMER_OFFSETS_TOPIC, 0)  # every group's partition: the topic has one
CONFIG = {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED


class Leadership:
    """The broker's ``OffsetsLog`` with the partitions in ``away`` led by another broker for a while."""

    def __init__(self, inner: OffsetsLog) -> None:
        self.inner = inner
        self.away: set[TopicPartition] = set()

    def offsets_partitions(self) -> list[TopicPartition]:
        return [tp for tp in self.inner.offsets_partitions() if tp not in self.away]

    def coordinates(self, tp: TopicPartition) -> bool:
        return tp not in self.away and self.inner.coordinates(tp)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def hold_a_load(groups: GroupCoordinator, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """The coordinator loses the leadership of ``OFFSETS`` (its groups are dropped) and gains it again: the load
    of the partition starts, and waits for the event returned."""
    leadership = Leadership(groups.offsets_log)
    monkeypatch.setattr(groups, "offsets_log", leadership)
    leadership.away = {OFFSETS}
    groups.leadership_changed()
    release = asyncio.Event()
    load = groups._load_in_background

    async def held(tp: TopicPartition) -> None:
        await release.wait()
        await load(tp)

    monkeypatch.setattr(groups, "_load_in_background", held)
    leadership.away = set()
    groups.leadership_changed()
    assert groups.loading(OPEN) and groups.loading(DENIED)
    return release


async def loaded(groups: GroupCoordinator) -> None:
    while groups.loading():
        await asyncio.sleep(0.01)


def deny(resource_type: ResourceType, name: str, operation: AclOperation) -> AclCreation:
    return AclCreation(
        resource_type=resource_type,
        resource_name=name,
        resource_pattern_type=PatternType.LITERAL,
        principal="User:ANONYMOUS",
        host="*",
        operation=operation,
        permission_type=AclPermissionType.DENY,
    )


def join(group_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol("range", b"")],
    )


def commit(group_id: str, offset: int, *topics: str) -> OffsetCommitRequest:
    """A commit of partition 0 of each of ``topics`` (default ``TOPIC``) outside group management."""
    return OffsetCommitRequest(
        group_id=group_id,
        topics=[
            OffsetCommitRequestTopic(name, [OffsetCommitRequestPartition(0, offset)])
            for name in topics or [TOPIC]
        ],
    )


def committed_errors(response: Any) -> dict[str, int]:
    return {t.name: p.error_code for t in response.topics for p in t.partitions}


def fetch(*group_ids: str) -> OffsetFetchRequest:
    """v8+: several groups, each asking for partition 0 of ``TOPIC``."""
    return OffsetFetchRequest(
        groups=[OffsetFetchRequestGroup(g, topics=[OffsetFetchRequestTopics(TOPIC, [0])]) for g in group_ids]
    )


def fetch_v7(group_id: str) -> OffsetFetchRequest:
    return OffsetFetchRequest(group_id=group_id, topics=[OffsetFetchRequestTopic(TOPIC, [0])])


def test_acls_are_checked_before_the_group_is_found_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's order: an unauthorized JoinGroup, OffsetCommit, OffsetFetch or DescribeGroups is answered
    GROUP_AUTHORIZATION_FAILED while the group's partition loads, an authorized one COORDINATOR_LOAD_IN_PROGRESS
    (OffsetCommit: an unreadable topic's partition TOPIC_AUTHORIZATION_FAILED beside it); once loaded, the group
    is served."""

    async def scenario() -> None:
        async with Broker(config={**CONFIG, **AUTHORIZER}) as broker:
            broker.create_topic(TOPIC)
            broker.create_topic(SECRET)
            client = await asyncio.to_thread(WireClient, broker.bootstrap_servers)

            def ask(api: ApiKey, version: int, request: Any) -> Any:
                return asyncio.to_thread(client.call, api, version, request)

            try:
                acls = CreateAclsRequest(
                    [
                        deny(ResourceType.GROUP, DENIED, AclOperation.ALL),
                        deny(ResourceType.TOPIC, SECRET, AclOperation.READ),
                    ]
                )
                assert [r.error_code for r in (await ask(ApiKey.CREATE_ACLS, 3, acls)).results] == [0, 0]
                first = await ask(ApiKey.OFFSET_COMMIT, 8, commit(OPEN, 5))  # creates __consumer_offsets
                assert committed_errors(first) == {TOPIC: ErrorCode.NONE}
                groups = broker.core.group_coordinator
                release = hold_a_load(groups, monkeypatch)

                assert (await ask(ApiKey.JOIN_GROUP, 5, join(DENIED))).error_code == GROUP_DENIED
                joined = await ask(ApiKey.JOIN_GROUP, 5, join(OPEN))
                assert (joined.error_code, joined.member_id) == (LOADING, "")
                assert committed_errors(await ask(ApiKey.OFFSET_COMMIT, 8, commit(DENIED, 6))) == {
                    TOPIC: GROUP_DENIED
                }
                assert committed_errors(
                    await ask(ApiKey.OFFSET_COMMIT, 8, commit(OPEN, 6, TOPIC, SECRET))
                ) == {
                    TOPIC: LOADING,
                    SECRET: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                }
                assert (await ask(ApiKey.OFFSET_FETCH, 7, fetch_v7(DENIED))).error_code == GROUP_DENIED
                assert (await ask(ApiKey.OFFSET_FETCH, 7, fetch_v7(OPEN))).error_code == LOADING
                fetched = (await ask(ApiKey.OFFSET_FETCH, 8, fetch(DENIED, OPEN))).groups
                assert [(g.group_id, g.error_code, g.topics) for g in fetched] == [
                    (DENIED, GROUP_DENIED, []),
                    (OPEN, LOADING, []),
                ]
                described = (
                    await ask(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest([DENIED, OPEN]))
                ).groups
                assert [(g.group_id, g.error_code, g.group_state) for g in described] == [
                    (DENIED, GROUP_DENIED, ""),
                    (OPEN, LOADING, ""),
                ]

                release.set()
                await loaded(groups)
                assert (
                    await ask(ApiKey.JOIN_GROUP, 5, join(OPEN))
                ).error_code == ErrorCode.MEMBER_ID_REQUIRED
                (group,) = (await ask(ApiKey.OFFSET_FETCH, 8, fetch(OPEN))).groups
                assert group.error_code == ErrorCode.NONE
                assert [(p.committed_offset, p.error_code) for t in group.topics for p in t.partitions] == [
                    (5, 0)
                ]
                assert (await ask(ApiKey.JOIN_GROUP, 5, join(DENIED))).error_code == GROUP_DENIED
            finally:
                client.close()

    asyncio.run(scenario())


def test_each_group_api_answers_a_loading_group_as_kafka_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Kafka's coordinator answers while the group's partition loads: Heartbeat NONE ("respond just
    blindly"), SyncGroup REBALANCE_IN_PROGRESS (the member rejoins), OffsetFetch v0-1 the error on each partition
    (no request-level error there), ListGroups COORDINATOR_LOAD_IN_PROGRESS for the whole list, every other group
    API COORDINATOR_LOAD_IN_PROGRESS in the group's or each partition's place."""

    async def scenario() -> None:
        async with Broker(config=CONFIG) as broker:
            broker.create_topic(TOPIC)
            client = await asyncio.to_thread(WireClient, broker.bootstrap_servers)

            def ask(api: ApiKey, version: int, request: Any) -> Any:
                return asyncio.to_thread(client.call, api, version, request)

            try:
                assert committed_errors(await ask(ApiKey.OFFSET_COMMIT, 8, commit(OPEN, 5))) == {TOPIC: 0}
                groups = broker.core.group_coordinator
                release = hold_a_load(groups, monkeypatch)

                heartbeat = HeartbeatRequest(OPEN, generation_id=1, member_id="m")
                assert (await ask(ApiKey.HEARTBEAT, 4, heartbeat)).error_code == ErrorCode.NONE
                sync = SyncGroupRequest(OPEN, generation_id=1, member_id="m")
                assert (await ask(ApiKey.SYNC_GROUP, 5, sync)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
                leave = LeaveGroupRequest(OPEN, members=[MemberIdentity("m")])
                left = await ask(ApiKey.LEAVE_GROUP, 4, leave)
                assert (left.error_code, left.members) == (LOADING, [])
                old_fetch = await ask(ApiKey.OFFSET_FETCH, 1, fetch_v7(OPEN))
                assert [
                    (p.committed_offset, p.error_code) for t in old_fetch.topics for p in t.partitions
                ] == [(-1, LOADING)]
                listed = await ask(ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
                assert (listed.error_code, listed.groups) == (LOADING, [])
                deleted = (await ask(ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest([OPEN]))).results
                assert [(r.group_id, r.error_code) for r in deleted] == [(OPEN, LOADING)]
                offsets = OffsetDeleteRequest(
                    OPEN, [OffsetDeleteRequestTopic(TOPIC, [OffsetDeleteRequestPartition(0)])]
                )
                assert (await ask(ApiKey.OFFSET_DELETE, 0, offsets)).error_code == LOADING
                txn = TxnOffsetCommitRequest(
                    "txn",
                    OPEN,
                    producer_id=1,
                    topics=[TxnOffsetCommitRequestTopic(TOPIC, [TxnOffsetCommitRequestPartition(0, 9)])],
                )
                txn_errors = (await ask(ApiKey.TXN_OFFSET_COMMIT, 3, txn)).topics
                assert [(t.name, [p.error_code for p in t.partitions]) for t in txn_errors] == [
                    (TOPIC, [LOADING])
                ]

                release.set()
                await loaded(groups)
                assert (await ask(ApiKey.HEARTBEAT, 4, heartbeat)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
                listed = await ask(ApiKey.LIST_GROUPS, 4, ListGroupsRequest())
                assert (listed.error_code, [g.group_id for g in listed.groups]) == (ErrorCode.NONE, [OPEN])
                old_fetch = await ask(ApiKey.OFFSET_FETCH, 1, fetch_v7(OPEN))
                assert [
                    (p.committed_offset, p.error_code) for t in old_fetch.topics for p in t.partitions
                ] == [(5, 0)]
            finally:
                client.close()

    asyncio.run(scenario())


def commit_with_kafka_python(bootstrap: str, offset: int) -> int | None:
    """Commit ``offset`` of ``TOPIC``-0 for ``OPEN`` with kafka-python (outside group management), and read it back."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as ClientPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=OPEN, enable_auto_commit=False)
    try:
        tp = ClientPartition(TOPIC, 0)
        consumer.commit({tp: OffsetAndMetadata(offset, "", -1)}, timeout_ms=20_000)
        committed = consumer.committed(tp, metadata=True, timeout_ms=10_000)
        return None if committed is None else committed.offset
    finally:
        consumer.close()


def commit_with_confluent_kafka(bootstrap: str, offset: int) -> int | None:
    """The same with confluent-kafka (librdkafka)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as ClientPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": OPEN, "enable.auto.commit": False})
    try:
        (result,) = consumer.commit(offsets=[ClientPartition(TOPIC, 0, offset)], asynchronous=False)
        assert result.error is None
        (committed,) = consumer.committed([ClientPartition(TOPIC, 0)], timeout=10)
        return int(committed.offset)
    finally:
        consumer.close()


@pytest.mark.parametrize("commit_with", [commit_with_kafka_python, commit_with_confluent_kafka])
def test_a_client_commit_made_during_the_load_succeeds_once_it_ends(
    commit_with: Callable[[str, int], int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real client commits while the group's partition loads: the broker answers COORDINATOR_LOAD_IN_PROGRESS,
    the client retries after its backoff, and the commit succeeds once the load ends and reads back. The load is
    released when the first commit arrives: that one is answered while the partition still loads."""

    async def scenario() -> None:
        async with Broker(config=CONFIG) as broker:
            broker.create_topic(TOPIC)
            client = await asyncio.to_thread(WireClient, broker.bootstrap_servers)
            try:
                first = await asyncio.to_thread(client.call, ApiKey.OFFSET_COMMIT, 8, commit(OPEN, 5))
                assert committed_errors(first) == {TOPIC: ErrorCode.NONE}
            finally:
                client.close()
            groups = broker.core.group_coordinator
            release = hold_a_load(groups, monkeypatch)
            commits: list[bool] = []  # per OffsetCommit of the group: whether its partition was loading
            dispatcher = broker.core.dispatcher
            injections = dispatcher.interceptor

            async def watch(header: RequestHeader, request: Any) -> Any:
                if header.request_api_key == ApiKey.OFFSET_COMMIT and request.group_id == OPEN:
                    commits.append(groups.loading(OPEN))
                    release.set()  # the load goes on after this request is answered
                return None if injections is None else await injections(header, request)

            monkeypatch.setattr(dispatcher, "interceptor", watch)
            read_back = await asyncio.to_thread(commit_with, broker.bootstrap_servers, 7)
            assert commits[0] and not commits[-1]  # answered while loading; retried, and committed after it
            assert read_back == 7
            stored = groups.fetch_offsets(OPEN, [TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)]
            assert stored is not None and stored.offset == 7

    asyncio.run(scenario())
