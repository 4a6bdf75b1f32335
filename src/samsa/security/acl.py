"""Kafka's ACL model, pure: resource types, pattern types, operations, permissions, bindings and filters, with
Kafka's wire codes (the ``AclOperation``/``ResourceType``/``PatternType``/``AclPermissionType`` bytes of the ACL
APIs) and Kafka's names (``kafka-acls.sh`` and the ``/kafka-acl`` JSON).

A binding is (resource pattern, entry): the pattern is (resource type, name, LITERAL or PREFIXED), where a
LITERAL name ``*`` matches every resource of its type; the entry is (principal ``User:alice`` or ``User:*``,
host or ``*``, operation, ALLOW or DENY). Filters use ANY/MATCH and None for "any value".

No I/O, no clock: immutable values, safe anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name (``Topic``, ``TransactionalId``...), as in ``/kafka-acl/<type>`` and kafka-acls.sh."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> ResourceType:
        for member in cls:
            if member.kafka_name.lower() == name.lower() or member.name == name.upper():
                return member
        raise ValueError(f"unknown resource type {name!r}")


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14

    @property
    def kafka_name(self) -> str:
        """Kafka's name (``Read``, ``ClusterAction``, ``IdempotentWrite``...)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> AclOperation:
        wanted = name.replace("_", "").lower()
        for member in cls:
            if member.kafka_name.lower() == wanted:
                return member
        raise ValueError(f"unknown operation {name!r}")


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3

    @property
    def kafka_name(self) -> str:
        return self.name.capitalize()


# An ALLOW of one of these also allows DESCRIBE (or DESCRIBE_CONFIGS), as Kafka's authorizer decides
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this stored pattern covers the resource ``(resource_type, name)``."""
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name == name or self.name == WILDCARD


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def invalid_reason(self) -> str | None:
        """Why Kafka refuses to create this binding, or None."""
        p, e = self.pattern, self.entry
        if p.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return "resource type must be specific"
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return "pattern type must be LITERAL or PREFIXED"
        if e.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return "operation must be specific"
        if e.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            return "permission type must be ALLOW or DENY"
        if not p.name:
            return "resource name must not be empty"
        if p.resource_type is ResourceType.CLUSTER and p.name != "kafka-cluster":
            return "the cluster resource's name is kafka-cluster"
        if ":" not in e.principal:
            return f"principal {e.principal!r} is not TYPE:NAME"
        return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which bindings DescribeAcls lists and DeleteAcls removes (None: any value)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding.pattern) and self._matches_entry(binding.entry)

    def _matches_pattern(self, p: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type is not p.resource_type:
            return False
        if self.pattern_type is PatternType.MATCH:
            # the stored patterns that would apply to the resource named by the filter
            return self.name is None or p.matches(p.resource_type, self.name)
        if self.pattern_type is not PatternType.ANY and self.pattern_type is not p.pattern_type:
            return False
        return self.name is None or self.name == p.name

    def _matches_entry(self, e: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == e.principal)
            and (self.host is None or self.host == e.host)
            and (self.operation is AclOperation.ANY or self.operation is e.operation)
            and (self.permission is AclPermissionType.ANY or self.permission is e.permission)
        )

    def invalid_reason(self) -> str | None:
        if AclOperation.UNKNOWN in (self.operation,) or self.resource_type is ResourceType.UNKNOWN:
            return "filter has an UNKNOWN element"
        if self.pattern_type is PatternType.UNKNOWN or self.permission is AclPermissionType.UNKNOWN:
            return "filter has an UNKNOWN element"
        return None


def entry_allows(entry: AccessControlEntry, principal: str, host: str, operation: AclOperation) -> bool:
    """Whether ``entry`` (of either permission) applies to ``principal`` at ``host`` doing ``operation``; an ALLOW
    entry also covers the operations it implies (``IMPLIED_BY``), a DENY entry only its own and ALL."""
    if entry.principal not in (principal, WILDCARD_PRINCIPAL) or entry.host not in (host, WILDCARD):
        return False
    if entry.operation is AclOperation.ALL or entry.operation is operation:
        return True
    return entry.permission is AclPermissionType.ALLOW and entry.operation in IMPLIED_BY.get(operation, ())


# The operations that apply to each resource type (Kafka's AclEntry.supportedOperations): what a Metadata,
# DescribeCluster or DescribeGroups answer lists as authorized operations, all of them when authorization is off.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's int32 of authorized operations: bit ``code`` set for each operation."""
    field = 0
    for operation in operations:
        field |= 1 << operation.value
    return field
