"""ACLs end to end with real clients, as ``User:ANONYMOUS`` (every client until SASL/TLS set a principal):
confluent-kafka's admin creates, lists and deletes bindings; its producer, kafka-python's producer and consumer,
aiokafka's producer and kcat are refused on a denied topic and served on an allowed one; Metadata hides what may
not be described; the bindings survive a restart."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
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

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
DENY_SECRET = AclBinding(
    ResourceType.TOPIC,
    "secret",
    ResourcePatternType.LITERAL,
    "User:ANONYMOUS",
    "*",
    AclOperation.ALL,
    AclPermissionType.DENY,
)
ANY_TOPIC = AclBindingFilter(
    ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
)


def _admin(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def _produce_error(broker: Broker, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 5000, "retries": 0})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(10)
    return errors[0]


def test_acls_decide_for_each_client_and_survive_a_restart(
    samsa_broker_factory: Callable[..., Broker], tmp_path: Path
) -> None:
    broker = samsa_broker_factory(log_dir=tmp_path / "data", config=AUTHORIZER)
    broker.create_topic("secret")
    broker.create_topic("open")
    admin = _admin(broker)
    for future in admin.create_acls([DENY_SECRET]).values():
        assert future.result(10) is None
    assert admin.describe_acls(ANY_TOPIC).result(10) == [DENY_SECRET]

    err = _produce_error(broker, "secret")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce_error(broker, "open") is None
    topics = admin.list_topics(timeout=10).topics
    assert "open" in topics and "secret" not in topics  # hidden: no Describe

    _kafka_python_denied(broker)
    asyncio.run(_aiokafka_denied(broker))
    _kcat_denied(broker)

    broker.stop_thread()
    broker = samsa_broker_factory(log_dir=tmp_path / "data", config=AUTHORIZER)
    admin = _admin(broker)
    assert admin.describe_acls(ANY_TOPIC).result(10) == [DENY_SECRET]
    err = _produce_error(broker, "secret")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    deleted = admin.delete_acls([ANY_TOPIC])
    assert [f.result(10) for f in deleted.values()] == [[DENY_SECRET]]
    assert _produce_error(broker, "secret") is None


def _kafka_python_denied(broker: Broker) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, retries=0)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("secret", b"v").get(timeout=10)
        producer.send("open", b"v").get(timeout=10)
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition("open", 0)])
        consumer.seek_to_beginning()
        assert next(iter(consumer)).value == b"v"
        assert "secret" not in consumer.topics()
    finally:
        consumer.close()


async def _aiokafka_denied(broker: Broker) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError

    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=5000)
    await producer.start()
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            await producer.send_and_wait("secret", b"v")
        await producer.send_and_wait("open", b"v")
    finally:
        await producer.stop()


def _kcat_denied(broker: Broker) -> None:
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap_servers, "-C", "-t", "secret", "-c", "1", "-e", "-o", "beginning"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert out.returncode != 0
    assert "authoriz" in (out.stderr + out.stdout).lower()


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(samsa_broker: Broker) -> None:
    """kafka-python's admin raises Kafka's error (librdkafka's describe_acls turns it into an empty list)."""
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KResourceType
    from kafka.errors import SecurityDisabledError

    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers)
    flt = ACLFilter(
        None,
        "*",
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(KResourceType.TOPIC, None, ACLResourcePatternType.ANY),
    )
    try:
        with pytest.raises(SecurityDisabledError):
            admin.describe_acls(flt)
    finally:
        admin.close()


def test_groups_and_admin_are_denied_per_resource(samsa_broker_factory: Callable[..., Broker]) -> None:
    """A consumer of a denied group gets GROUP_AUTHORIZATION_FAILED, a group allowed by a PREFIXED binding
    consumes; deleting a denied topic answers TOPIC_AUTHORIZATION_FAILED; creating one under a denied prefix too."""
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    broker = samsa_broker_factory(config=AUTHORIZER)
    broker.create_topic("t")
    assert _produce_error(broker, "t") is None
    admin = _admin(broker)
    deny = [
        AclBinding(ResourceType.GROUP, "blocked", ResourcePatternType.LITERAL, "User:*", "*",
                   AclOperation.READ, AclPermissionType.DENY),
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                   AclOperation.DELETE, AclPermissionType.DENY),
        # an ACL on "t" ends "no ACL found" for it: reading it now needs its own ALLOW
        AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        # Create on the cluster first (open: no ACL there), then on the topic
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                   AclOperation.CREATE, AclPermissionType.DENY),
        AclBinding(ResourceType.TOPIC, "tmp-", ResourcePatternType.PREFIXED, "User:ANONYMOUS", "*",
                   AclOperation.CREATE, AclPermissionType.DENY),
    ]  # fmt: skip
    for future in admin.create_acls(deny).values():
        future.result(10)

    blocked = KafkaConsumer("t", bootstrap_servers=broker.bootstrap_servers, group_id="blocked")
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                blocked.poll(500)
    finally:
        blocked.close()
    allowed = KafkaConsumer(
        "t", bootstrap_servers=broker.bootstrap_servers, group_id="ok", auto_offset_reset="earliest"
    )
    try:
        records: list[object] = []
        for _ in range(40):
            records += [r for rs in allowed.poll(500).values() for r in rs]
            if records:
                break
        assert records
    finally:
        allowed.close()

    from confluent_kafka.admin import NewTopic

    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        admin.delete_topics(["t"])["t"].result(10)
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        admin.create_topics([NewTopic("tmp-x", 1, 1)])["tmp-x"].result(10)
    admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(10)


def test_list_offsets_of_a_denied_topic_answers_topic_authorization_failed(
    samsa_broker_factory: Callable[..., Broker],
) -> None:
    from samsa.client import KafkaClient
    from samsa.protocol.api_keys import ApiKey
    from samsa.protocol.messages.list_offsets import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )

    broker = samsa_broker_factory(config=AUTHORIZER)
    broker.create_topic("secret")
    broker.create_topic("open")
    admin = _admin(broker)
    for future in admin.create_acls([DENY_SECRET]).values():
        future.result(10)

    async def codes() -> dict[str, int]:
        async with KafkaClient(broker.bootstrap_servers) as client:
            request = ListOffsetsRequest(
                replica_id=-1,
                topics=[ListOffsetsTopic(t, [ListOffsetsPartition(0, -1, -1)]) for t in ("secret", "open")],
            )
            response = await client.send(request, api_key=ApiKey.LIST_OFFSETS)
            return {t.name: t.partitions[0].error_code for t in response.topics}

    assert asyncio.run(codes()) == {"secret": KafkaError.TOPIC_AUTHORIZATION_FAILED, "open": 0}
