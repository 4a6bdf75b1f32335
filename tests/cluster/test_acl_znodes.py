"""The ACL znodes against a real ZooKeeper: two brokers' stores changing one resource from stale views both keep
their changes (the version-checked write), a resource's last ACL takes its znode with it, and every write leaves
Kafka's notification."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from samsa.broker.zk_acls import ZkAclStore
from samsa.cluster.acl_znodes import AclZNodes
from samsa.cluster.zk_client import ZkClient
from samsa.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

TOPIC = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)


def allow(principal: str) -> AclBinding:
    return AclBinding(TOPIC, AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW))


@pytest.fixture
def sessions(zk_connect: str) -> Iterator[tuple[ZkClient, ZkClient]]:
    one, two = ZkClient(zk_connect), ZkClient(zk_connect)
    one.start()
    two.start()
    try:
        yield one, two
    finally:
        one.close()
        two.close()


def stored(zk: ZkClient) -> list[str]:
    data, _ = zk.kazoo.get("/kafka-acl/Topic/orders")
    return sorted(acl["principal"] for acl in json.loads(data)["acls"])


def test_two_stale_stores_both_keep_their_change(sessions: tuple[ZkClient, ZkClient]) -> None:
    one, two = sessions
    first, second = ZkAclStore(AclZNodes(one.kazoo)), ZkAclStore(AclZNodes(two.kazoo))
    first.nodes.ensure_paths()
    first.save({allow("User:alice")}, {TOPIC})
    second.save({allow("User:bob")}, {TOPIC})  # its view has not seen alice's
    assert stored(one) == ["User:alice", "User:bob"]
    first.save(set(), {TOPIC})  # alice's removed; bob's stays
    assert stored(one) == ["User:bob"]
    second.save(set(), {TOPIC})
    assert not one.kazoo.exists("/kafka-acl/Topic/orders")
    changes = one.kazoo.get_children("/kafka-acl-changes")
    assert len(changes) == 4
    assert {one.kazoo.get(f"/kafka-acl-changes/{n}")[0] for n in changes} == {b"TOPIC:orders"}


def test_notifications_older_than_the_cutoff_are_purged(sessions: tuple[ZkClient, ZkClient]) -> None:
    one, _ = sessions
    nodes = AclZNodes(one.kazoo)
    nodes.ensure_paths()
    ZkAclStore(nodes).save({allow("User:alice")}, {TOPIC})
    names = nodes.changes("/kafka-acl-changes")
    assert nodes.purge("/kafka-acl-changes", names, created_before_ms=0) == 0  # none is that old
    assert nodes.purge("/kafka-acl-changes", names, created_before_ms=int(time.time() * 1000) + 60_000) == 1
    assert nodes.changes("/kafka-acl-changes") == []
