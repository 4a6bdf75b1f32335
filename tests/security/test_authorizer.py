"""The authorizer's decision as Kafka's (super users, no ACL found, Deny wins, implied operations, wildcards,
prefixes, hosts), checked case by case and against a one-line model with hypothesis; and the file store."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samsa.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from samsa.security.authorizer import AclAuthorizer, AclStoreError, FileAclStore, MemoryAclStore

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
Op = AclOperation


def acl(
    name: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    pattern: PatternType = PatternType.LITERAL,
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(principal, host, op, perm))


def authorizer(*bindings: AclBinding, **kwargs: object) -> AclAuthorizer:
    a = AclAuthorizer(MemoryAclStore(), **kwargs)  # type: ignore[arg-type]
    assert a.create(list(bindings)) == [None] * len(bindings)
    return a


def test_no_acl_found_follows_allow_everyone() -> None:
    assert not authorizer().authorize("User:alice", "h", Op.READ, TOPIC, "t")
    assert authorizer(allow_everyone_if_no_acl_found=True).authorize("User:alice", "h", Op.READ, TOPIC, "t")
    # an ACL on the resource for someone else: no longer "no ACL found"
    a = authorizer(acl("t", Op.READ, principal="User:bob"), allow_everyone_if_no_acl_found=True)
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "t")


def test_super_user_may_do_anything_even_when_denied() -> None:
    a = authorizer(acl("t", Op.ALL, DENY, principal="User:admin"), super_users=["User:admin"])
    assert a.authorize("User:admin", "h", Op.DELETE, TOPIC, "t")


def test_deny_wins_over_allow() -> None:
    a = authorizer(acl("t", Op.READ), acl("t", Op.READ, DENY, principal="User:*"))
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "t")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_read_write_delete_alter_imply_describe(granted: AclOperation) -> None:
    a = authorizer(acl("t", granted))
    assert a.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "t")
    assert not a.authorize("User:alice", "h", Op.CREATE, TOPIC, "t")


def test_alter_configs_implies_describe_configs_and_deny_of_read_does_not_deny_describe() -> None:
    a = authorizer(acl("t", Op.ALTER_CONFIGS), acl("t", Op.WRITE), acl("t", Op.READ, DENY))
    assert a.authorize("User:alice", "h", Op.DESCRIBE_CONFIGS, TOPIC, "t")
    assert a.authorize("User:alice", "h", Op.DESCRIBE, TOPIC, "t")
    assert not a.authorize("User:alice", "h", Op.READ, TOPIC, "t")


def test_wildcard_prefixed_and_host() -> None:
    a = authorizer(
        acl("*", Op.READ),
        acl("pay", Op.WRITE, pattern=PatternType.PREFIXED),
        acl("t", Op.WRITE, principal="User:bob", host="10.0.0.1"),
    )
    assert a.authorize("User:alice", "h", Op.READ, TOPIC, "anything")
    assert a.authorize("User:alice", "h", Op.WRITE, TOPIC, "payments")
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "orders")
    assert a.authorize("User:bob", "10.0.0.1", Op.WRITE, TOPIC, "t")
    assert not a.authorize("User:bob", "10.0.0.2", Op.WRITE, TOPIC, "t")
    assert not a.authorize("User:alice", "h", Op.READ, GROUP, "anything")  # other type


def test_invalid_bindings_are_refused_with_a_reason() -> None:
    a = AclAuthorizer(MemoryAclStore())
    reasons = a.create(
        [
            acl("t", Op.ANY),
            acl("t", Op.READ, pattern=PatternType.MATCH),
            acl("c", Op.ALTER, rtype=ResourceType.CLUSTER),
            acl("t", Op.READ, principal="alice"),
            acl("t", Op.READ),
        ]
    )
    assert [r is None for r in reasons] == [False, False, False, False, True]


def test_describe_and_delete_by_filter() -> None:
    a = authorizer(
        acl("t", Op.READ), acl("t", Op.WRITE, principal="User:bob"), acl("g", Op.READ, rtype=GROUP)
    )
    assert len(a.describe(AclBindingFilter())) == 3
    assert a.describe(AclBindingFilter(resource_type=GROUP)) == [acl("g", Op.READ, rtype=GROUP)]
    match = AclBindingFilter(resource_type=TOPIC, name="t", pattern_type=PatternType.MATCH)
    assert len(a.describe(match)) == 2
    removed = a.delete([AclBindingFilter(principal="User:bob")])
    assert removed == [[acl("t", Op.WRITE, principal="User:bob")]]
    assert len(a.bindings()) == 2


def test_denials_are_logged_once_a_minute_per_resource(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    a = AclAuthorizer(MemoryAclStore(), now_ms=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="samsa.authorizer"):
        for _ in range(5):
            a.authorize("User:eve", "10.1.1.1", Op.WRITE, TOPIC, "t")
        now[0] = 60_000
        a.authorize("User:eve", "10.1.1.1", Op.WRITE, TOPIC, "t")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Principal = User:eve is Denied Operation = Write from host = 10.1.1.1 on resource = Topic:t",
        "Principal = User:eve is Denied Operation = Write from host = 10.1.1.1 on resource = Topic:t"
        " (4 more since the last line)",
    ]


def test_file_store_keeps_bindings_in_kafkas_json(tmp_path: Path) -> None:
    path = tmp_path / "acls.json"
    a = AclAuthorizer(FileAclStore(path))
    bindings = [acl("t", Op.READ), acl("pay", Op.WRITE, DENY, pattern=PatternType.PREFIXED, host="1.2.3.4")]
    a.create(bindings)
    text = path.read_text()
    assert '"Topic:PREFIXED:pay"' in text and '"permissionType": "Deny"' in text
    assert AclAuthorizer(FileAclStore(path)).bindings() == set(bindings)


# -- against a model: the decision is Kafka's rule stated in one expression

PRINCIPALS = ["User:alice", "User:bob", "User:*"]
NAMES = ["a", "ab", "b", "*"]
OPS = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]

bindings_st = st.lists(
    st.builds(
        acl,
        st.sampled_from(NAMES),
        st.sampled_from(OPS),
        st.sampled_from([ALLOW, DENY]),
        st.sampled_from(PRINCIPALS),
        st.sampled_from(["*", "h1"]),
        st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    ),
    max_size=6,
)


def model(
    bindings: list[AclBinding], principal: str, host: str, op: AclOperation, name: str, everyone: bool
) -> bool:
    def covers(b: AclBinding) -> bool:
        p = b.pattern
        if p.pattern_type is PatternType.PREFIXED:
            return name.startswith(p.name)
        return p.name in (name, "*")

    def applies(b: AclBinding, allow: bool) -> bool:
        e = b.entry
        ops = {op, Op.ALL}
        if allow and op is Op.DESCRIBE:
            ops |= {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
        if allow and op is Op.DESCRIBE_CONFIGS:
            ops |= {Op.ALTER_CONFIGS}
        return e.principal in (principal, "User:*") and e.host in (host, "*") and e.operation in ops

    relevant = [b for b in bindings if covers(b)]
    if not relevant:
        return everyone
    if any(b.entry.permission is DENY and applies(b, allow=False) for b in relevant):
        return False
    return any(b.entry.permission is ALLOW and applies(b, allow=True) for b in relevant)


@given(
    bindings_st,
    st.sampled_from(PRINCIPALS[:2]),
    st.sampled_from(["h1", "h2"]),
    st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.DELETE]),
    st.sampled_from(["a", "ab", "abc", "b"]),
    st.booleans(),
)
def test_decision_matches_the_model(
    bindings: list[AclBinding], principal: str, host: str, op: AclOperation, name: str, everyone: bool
) -> None:
    a = authorizer(*bindings, allow_everyone_if_no_acl_found=everyone)
    assert a.would_allow(principal, host, op, TOPIC, name) == model(
        bindings, principal, host, op, name, everyone
    )


class FailingStore(MemoryAclStore):
    """A store that cannot keep anything (ZooKeeper away)."""

    def save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None:
        raise AclStoreError("ZooKeeper is away")


def test_a_store_that_cannot_save_leaves_the_bindings_as_they_were() -> None:
    kept = acl("t", Op.READ)
    a = authorizer(kept)
    a.store = FailingStore()
    with pytest.raises(AclStoreError):
        a.create([acl("t", Op.WRITE)])
    with pytest.raises(AclStoreError):
        a.delete([AclBindingFilter(TOPIC, None, PatternType.ANY, None, None, Op.ANY, AclPermissionType.ANY)])
    assert a.bindings() == {kept}
    assert not a.authorize("User:alice", "h", Op.WRITE, TOPIC, "t")
