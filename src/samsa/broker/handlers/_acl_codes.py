"""The ACL APIs' wire codes to ``samsa.security.acl``'s enums: a code this broker does not know is UNKNOWN, as in
Kafka (a binding or filter with one is refused, never a decode failure)."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from samsa.security.acl import AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourceType

_E = TypeVar("_E", bound=IntEnum)


def enum_or_unknown(kind: type[_E], code: int) -> _E:
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN is 0 in each of Kafka's ACL enums


def acl_filter(
    resource_type: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclBindingFilter:
    return AclBindingFilter(
        enum_or_unknown(ResourceType, resource_type),
        name,
        enum_or_unknown(PatternType, pattern_type),
        principal,
        host,
        enum_or_unknown(AclOperation, operation),
        enum_or_unknown(AclPermissionType, permission),
    )
