"""The authorized operations a Metadata, DescribeCluster or DescribeGroups answer lists when the client asks for them
(confluent-kafka's admin with ``include_authorized_operations``): every operation Kafka supports on the resource when
authorization is off, as Kafka answers (Samsa answered none, which Kafka's Java admin client prints as ``null``),
and those the ACLs allow when it is on (Describe implied by Read)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from samsa.embedded import Broker

TOPIC_OPERATIONS = {
    "READ",
    "WRITE",
    "CREATE",
    "DESCRIBE",
    "DELETE",
    "ALTER",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
}
CLUSTER_OPERATIONS = {
    "CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE",
}  # fmt: skip


def _names(operations: list[AclOperation] | None) -> set[str]:
    return {op.name for op in operations or []}


def _described(admin: AdminClient, topic: str) -> tuple[set[str], set[str]]:
    """The topic's and the cluster's authorized operations."""
    topics = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    return _names(topics[topic].result(10).authorized_operations), _names(cluster.authorized_operations)


def test_without_an_authorizer_every_supported_operation_is_listed(samsa_broker: Broker) -> None:
    samsa_broker.create_topic("listed")
    admin = AdminClient({"bootstrap.servers": samsa_broker.bootstrap_servers})
    assert _described(admin, "listed") == (TOPIC_OPERATIONS, CLUSTER_OPERATIONS)
    # DescribeGroups v3+: a group with no members is described (Dead, no error) with its operations, as in Kafka
    groups = admin.describe_consumer_groups(["nobody"], include_authorized_operations=True)
    assert _names(groups["nobody"].result(10).authorized_operations) == {"READ", "DESCRIBE", "DELETE"}


def test_with_acls_only_the_allowed_operations_are_listed(
    samsa_broker_factory: Callable[..., Broker],
) -> None:
    broker = samsa_broker_factory(
        config={
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    broker.create_topic("guarded")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    read_only = AclBinding(
        ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    for future in admin.create_acls([read_only]).values():
        future.result(10)
    # a binding on the topic: no fallback to allow-everyone there; none on the cluster: everything
    assert _described(admin, "guarded") == ({"READ", "DESCRIBE"}, CLUSTER_OPERATIONS)
