"""ACLs on transactions, as Kafka checks them, with confluent-kafka as ``User:ANONYMOUS``: a denied Write on the
transactional id stops ``init_transactions`` (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a denied Describe hides the id
from FindCoordinator and the transaction tools, a denied Read on the group stops ``send_offsets_to_transaction``
(GROUP_AUTHORIZATION_FAILED), and with the bindings lifted the same producer commits."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from samsa.embedded import Broker
from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_transactions import DescribeTransactionsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.badinput.wire import Connection

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


def _deny(resource: int, name: str, operation: int) -> AclBinding:
    return AclBinding(
        resource, name, ResourcePatternType.LITERAL, "User:ANONYMOUS", "*", operation, AclPermissionType.DENY
    )


def _producer(broker: Broker, tid: str) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid})


def test_transactional_ids_and_groups_are_checked(
    samsa_broker_factory: Callable[..., Broker], tmp_path: Path
) -> None:
    broker = samsa_broker_factory(log_dir=tmp_path / "data", config=AUTHORIZER)
    broker.create_topic("payments")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    locked, group = f"locked-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    bindings = [
        _deny(ResourceType.TRANSACTIONAL_ID, locked, AclOperation.WRITE),
        _deny(ResourceType.TRANSACTIONAL_ID, locked, AclOperation.DESCRIBE),
        _deny(ResourceType.GROUP, group, AclOperation.READ),
    ]
    for future in admin.create_acls(bindings).values():
        assert future.result(10) is None

    with pytest.raises(KafkaException) as caught:
        _producer(broker, locked).init_transactions(10)
    assert caught.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
    with Connection(port) as conn:
        found = conn.request(10, 3, FindCoordinatorRequest(key=locked, key_type=1))
        described = conn.request(65, 0, DescribeTransactionsRequest([locked]))
    assert found.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert described.transaction_states[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    free = _producer(broker, f"free-{uuid.uuid4().hex[:6]}")
    free.init_transactions(10)
    free.begin_transaction()
    free.produce("payments", b"v", partition=0)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    with pytest.raises(KafkaException) as caught:
        free.send_offsets_to_transaction(
            [CkTopicPartition("payments", 0, 1)], consumer.consumer_group_metadata(), 10
        )
    assert caught.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    free.abort_transaction(10)

    filters = [
        AclBindingFilter(
            b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
        )
        for b in bindings
    ]
    for future in admin.delete_acls(filters).values():
        future.result(10)
    again = _producer(broker, locked)
    again.init_transactions(10)  # allowed now
    again.begin_transaction()
    again.produce("payments", b"w", partition=0)
    again.send_offsets_to_transaction(
        [CkTopicPartition("payments", 0, 1)], consumer.consumer_group_metadata(), 10
    )
    again.commit_transaction(10)
    consumer.close()
