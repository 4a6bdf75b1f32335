"""Kafka's ACL checks on the admin, cluster and inter-broker APIs, with real clients as ``User:ANONYMOUS``: the
principal is denied every cluster operation, everything on topic ``t`` and Delete on group ``g``, and each API
answers Kafka's error for what it needs (confluent-kafka's admin client where it has the call, samsa's client for the rest); topic ``open`` is still served."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)

from samsa.embedded import Broker
from samsa.protocol.api_keys import ApiKey

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_DENIED = [
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.ALTER_CONFIGS,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.CLUSTER_ACTION,
]
TOPIC_AUTH = KafkaError.TOPIC_AUTHORIZATION_FAILED
CLUSTER_AUTH = KafkaError.CLUSTER_AUTHORIZATION_FAILED


def _deny(kind: ResourceType, name: str, operation: AclOperation) -> AclBinding:
    return AclBinding(
        kind, name, ResourcePatternType.LITERAL, ANONYMOUS, "*", operation, AclPermissionType.DENY
    )


@pytest.fixture
def denied(samsa_broker_factory: Callable[..., Broker]) -> Broker:
    broker = samsa_broker_factory(config=AUTHORIZER)
    broker.create_topic("t")
    broker.create_topic("open")
    bindings = [_deny(ResourceType.BROKER, "kafka-cluster", op) for op in CLUSTER_DENIED]
    bindings += [
        _deny(ResourceType.TOPIC, "t", AclOperation.ALL),
        _deny(ResourceType.GROUP, "g", AclOperation.DELETE),
    ]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_acls(bindings).values():
        assert future.result(10) is None
    return broker


def _code(future: Any) -> int:
    try:
        future.result(10)
    except KafkaException as e:
        return int(e.args[0].code())
    return 0


def test_configs_partitions_and_elections_with_confluent_kafka(denied: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": denied.bootstrap_servers})
    topic_t = ConfigResource(ConfigResource.Type.TOPIC, "t")
    topic_open = ConfigResource(ConfigResource.Type.TOPIC, "open")
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    described = admin.describe_configs([topic_t, topic_open, broker])
    assert {r.name: _code(f) for r, f in described.items()} == {"t": TOPIC_AUTH, "open": 0, "1": CLUSTER_AUTH}

    retention = ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    altered = admin.incremental_alter_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, n, incremental_configs=[retention]) for n in ("t", "open")]
    )
    assert {r.name: _code(f) for r, f in altered.items()} == {"t": TOPIC_AUTH, "open": 0}
    set_broker = ConfigEntry("log.retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
    altered = admin.incremental_alter_configs(
        [ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[set_broker])]
    )
    assert [_code(f) for f in altered.values()] == [CLUSTER_AUTH]

    grown = admin.create_partitions([NewPartitions("t", 2), NewPartitions("open", 2)])
    assert {n: _code(f) for n, f in grown.items()} == {"t": TOPIC_AUTH, "open": 0}

    from confluent_kafka import ElectionType

    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("open", 0)])
    assert _code(elected) == CLUSTER_AUTH

    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert not cluster.authorized_operations  # Kafka lists none without Describe on the cluster


def test_alter_configs_checks_the_topic_and_the_cluster(denied: Broker) -> None:
    """AlterConfigs (33), which confluent-kafka and kafka-python 3 no longer send as it is."""
    from samsa.protocol.messages.alter_configs import (
        AlterableConfig,
        AlterConfigsRequest,
        AlterConfigsResource,
    )

    retention = [AlterableConfig("retention.ms", "1000")]
    resources = [AlterConfigsResource(2, n, retention) for n in ("t", "open")]
    resources.append(AlterConfigsResource(4, "1", []))
    response = _send(denied, AlterConfigsRequest(resources=resources), ApiKey.ALTER_CONFIGS)
    codes = {r.resource_name: r.error_code for r in response.responses}
    assert codes == {"t": TOPIC_AUTH, "open": 0, "1": CLUSTER_AUTH}


def _send(broker: Broker, request: Any, api_key: int) -> Any:
    from samsa.client import KafkaClient

    async def go() -> Any:
        async with KafkaClient(broker.bootstrap_servers) as client:
            return await client.send(request, api_key=api_key)

    return asyncio.run(go())


def test_cluster_apis_answer_cluster_authorization_failed(denied: Broker) -> None:
    from samsa.protocol.messages.alter_client_quotas import (
        AlterClientQuotasRequest,
        AlterClientQuotasRequestEntityData,
        AlterClientQuotasRequestEntryData,
        OpData,
    )
    from samsa.protocol.messages.alter_partition import AlterPartitionRequest
    from samsa.protocol.messages.alter_partition_reassignments import AlterPartitionReassignmentsRequest
    from samsa.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
    from samsa.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
    from samsa.protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest

    log_dirs = _send(denied, DescribeLogDirsRequest(topics=None), ApiKey.DESCRIBE_LOG_DIRS)
    assert (log_dirs.error_code, log_dirs.results) == (CLUSTER_AUTH, [])
    listed = _send(denied, ListPartitionReassignmentsRequest(), ApiKey.LIST_PARTITION_REASSIGNMENTS)
    assert listed.error_code == CLUSTER_AUTH
    moved = _send(denied, AlterPartitionReassignmentsRequest(), ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    assert moved.error_code == CLUSTER_AUTH
    assert _send(denied, AlterPartitionRequest(), ApiKey.ALTER_PARTITION).error_code == CLUSTER_AUTH
    quotas = _send(denied, DescribeClientQuotasRequest(components=[]), ApiKey.DESCRIBE_CLIENT_QUOTAS)
    assert quotas.error_code == CLUSTER_AUTH
    entry = AlterClientQuotasRequestEntryData(
        entity=[AlterClientQuotasRequestEntityData("user", "alice")],
        ops=[OpData("producer_byte_rate", 1024.0, False)],
    )
    altered = _send(denied, AlterClientQuotasRequest(entries=[entry]), ApiKey.ALTER_CLIENT_QUOTAS)
    assert [e.error_code for e in altered.entries] == [CLUSTER_AUTH]


def test_offset_apis_check_the_topic_and_group(denied: Broker) -> None:
    from samsa.protocol.messages.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteRequestPartition,
        OffsetDeleteRequestTopic,
    )
    from samsa.protocol.messages.offset_for_leader_epoch import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderPartition,
        OffsetForLeaderTopic,
    )

    epochs = OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[OffsetForLeaderTopic(t, [OffsetForLeaderPartition(0, -1, 0)]) for t in ("t", "open")],
    )
    response = _send(denied, epochs, ApiKey.OFFSET_FOR_LEADER_EPOCH)
    assert {t.topic: t.partitions[0].error_code for t in response.topics} == {"t": TOPIC_AUTH, "open": 0}

    topics = [OffsetDeleteRequestTopic(t, [OffsetDeleteRequestPartition(0)]) for t in ("t", "open")]
    group_denied = _send(denied, OffsetDeleteRequest("g", topics), ApiKey.OFFSET_DELETE)
    assert group_denied.error_code == KafkaError.GROUP_AUTHORIZATION_FAILED
    other = _send(denied, OffsetDeleteRequest("other", topics), ApiKey.OFFSET_DELETE)
    # no such group: the coordinator's answer, after the topic check
    assert other.error_code in (0, KafkaError.GROUP_ID_NOT_FOUND)
    if other.error_code == 0:
        assert {t.name: t.partitions[0].error_code for t in other.topics}["t"] == TOPIC_AUTH
