"""``AclAuthorizer``: Kafka's authorizer decision over a set of ACL bindings, and their storage.

Decision, as Kafka's: a ``super.users`` principal may do anything; otherwise the bindings whose pattern covers the
resource (LITERAL of its name, LITERAL ``*``, PREFIXED of a prefix of its name) decide: none at all ->
``allow.everyone.if.no.acl.found``; a matching DENY -> denied (Deny wins); a matching ALLOW (or one of an
operation that implies the asked one) -> allowed; else denied. Each denial is logged on ``samsa.authorizer``,
at most once a minute per (principal, operation, resource) with the count held back.

Storage (``AclStore``): the single broker keeps its bindings in ``<first log dir>/acls.json``, per resource the
JSON Kafka writes under ``/kafka-acl/<type>/<name>`` (``{"version":1,"acls":[{"principal":..,"permissionType":
"Allow","operation":"Read","host":"*"}]}``), keyed ``<type>:<pattern type>:<name>``; written whole to a temporary
file then renamed. In cluster mode they are in ZooKeeper's ``/kafka-acl`` and ``/kafka-acl-extended`` znodes,
as Kafka's ZooKeeper authorizer keeps them (``samsa.broker.zk_acls``).

Event-loop thread only; a store write is one small synchronous file write.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from samsa.log_throttle import LogThrottle

from .acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    entry_allows,
)

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "AclAuthorizer",
    "AclStore",
    "AclStoreError",
    "FileAclStore",
    "MemoryAclStore",
]

log = logging.getLogger("samsa.authorizer")

AUTHORIZER_CLASS_NAMES = frozenset(
    {
        "kafka.security.authorizer.AclAuthorizer",
        "kafka.security.auth.SimpleAclAuthorizer",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    }
)
DENIAL_LOG_INTERVAL_MS = 60_000


class AclStoreError(Exception):
    """The bindings could not be kept (ZooKeeper away, a resource written by others too often): nothing changed;
    the ACL APIs answer UNKNOWN_SERVER_ERROR with this message."""


class AclStore(Protocol):
    """Where the bindings live: ``load`` all at start, ``save`` the bindings of the patterns that changed."""

    def load(self) -> set[AclBinding]: ...

    def save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None: ...


class MemoryAclStore:
    """Bindings kept nowhere (unit tests)."""

    def load(self) -> set[AclBinding]:
        return set()

    def save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None:
        return None


def pattern_key(pattern: ResourcePattern) -> str:
    return f"{pattern.resource_type.kafka_name}:{pattern.pattern_type.name}:{pattern.name}"


def kafka_acl_json(entries: Iterable[AccessControlEntry]) -> dict[str, object]:
    """The JSON Kafka writes for one resource's entries under ``/kafka-acl``."""
    return {
        "version": 1,
        "acls": [
            {
                "principal": e.principal,
                "permissionType": e.permission.kafka_name,
                "operation": e.operation.kafka_name,
                "host": e.host,
            }
            for e in sorted(entries)
        ],
    }


def entries_from_kafka_json(data: dict[str, object]) -> list[AccessControlEntry]:
    acls = data.get("acls", [])
    assert isinstance(acls, list)
    return [
        AccessControlEntry(
            str(a["principal"]),
            str(a["host"]),
            AclOperation.from_kafka_name(str(a["operation"])),
            AclPermissionType[str(a["permissionType"]).upper()],
        )
        for a in acls
    ]


class FileAclStore:
    """The single broker's bindings in one JSON file (module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> set[AclBinding]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return set()
        out: set[AclBinding] = set()
        for key, value in data.items():
            type_name, pattern_name, _, name = _split_key(key)
            pattern = ResourcePattern(
                ResourceType.from_kafka_name(type_name), name, PatternType[pattern_name]
            )
            out.update(AclBinding(pattern, e) for e in entries_from_kafka_json(value))
        return out

    def save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None:
        by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, []).append(b.entry)
        data = {pattern_key(p): kafka_acl_json(es) for p, es in sorted(by_pattern.items())}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, self.path)


def _split_key(key: str) -> tuple[str, str, str, str]:
    type_name, pattern_name, name = key.split(":", 2)
    return type_name, pattern_name, ":", name


class AclAuthorizer:
    """Kafka's ``AclAuthorizer`` decision and ACL administration (module doc). Event-loop thread only."""

    def __init__(
        self,
        store: AclStore,
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        now_ms: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._now_ms = now_ms
        self._bindings: set[AclBinding] = store.load()
        self._denials = LogThrottle(DENIAL_LOG_INTERVAL_MS)

    # -- the decision

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        allowed = self._decide(principal, host, operation, resource_type, name)
        if not allowed:
            self._log_denial(principal, host, operation, resource_type, name)
        return allowed

    def would_allow(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """``authorize`` without the denial's log line (Metadata's hiding of topics, Kafka's ``logIfDenied``
        false)."""
        return self._decide(principal, host, operation, resource_type, name)

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether some resource of ``resource_type`` allows ``operation`` (Kafka's ``authorizeByResourceType``,
        as IdempotentWrite's fallback to Write on any topic uses it): an ALLOW binding applies and no DENY of a
        LITERAL ``*`` does."""
        if principal in self.super_users:
            return True
        relevant = [b for b in self._bindings if b.pattern.resource_type is resource_type]
        for b in relevant:
            e = b.entry
            if (
                e.permission is AclPermissionType.DENY
                and b.pattern.name == "*"
                and entry_allows(e, principal, host, operation)
            ):
                return False
        return any(
            b.entry.permission is AclPermissionType.ALLOW
            and entry_allows(b.entry, principal, host, operation)
            for b in relevant
        )

    def _decide(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        matching = [b.entry for b in self._bindings if b.pattern.matches(resource_type, name)]
        if not matching:
            return self.allow_everyone_if_no_acl_found
        denied = any(
            e.permission is AclPermissionType.DENY and entry_allows(e, principal, host, operation)
            for e in matching
        )
        if denied:
            return False
        return any(
            e.permission is AclPermissionType.ALLOW and entry_allows(e, principal, host, operation)
            for e in matching
        )

    def _log_denial(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> None:
        key = (principal, host, operation, resource_type, name)
        held = self._denials.due(self._now_ms(), key)
        if held is None:
            return
        log.info(
            "Principal = %s is Denied Operation = %s from host = %s on resource = %s:%s%s",
            principal,
            operation.kafka_name,
            host,
            resource_type.kafka_name,
            name,
            LogThrottle.held_back(held),
        )

    # -- administration (CreateAcls, DescribeAcls, DeleteAcls)

    def bindings(self) -> set[AclBinding]:
        return set(self._bindings)

    def replace_all(self, bindings: set[AclBinding]) -> None:
        """The bindings as another broker wrote them (cluster change notifications)."""
        self._bindings = set(bindings)

    def replace_resource(self, pattern: ResourcePattern, bindings: set[AclBinding]) -> None:
        """One resource pattern's bindings as the store now holds them (a change notification named it)."""
        self._bindings = {b for b in self._bindings if b.pattern != pattern} | set(bindings)

    def create(self, bindings: list[AclBinding]) -> list[str | None]:
        """Add each valid binding; per binding None or why it was refused."""
        reasons = [b.invalid_reason() for b in bindings]
        added = {b for b, reason in zip(bindings, reasons, strict=True) if reason is None}
        if added - self._bindings:
            self._save(self._bindings | added, {b.pattern for b in added})
        return reasons

    def describe(self, flt: AclBindingFilter) -> list[AclBinding]:
        return sorted(b for b in self._bindings if flt.matches(b))

    def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove the bindings each filter matches; per filter the bindings it removed."""
        removed = [[b for b in sorted(self._bindings) if f.matches(b)] for f in filters]
        gone = {b for bs in removed for b in bs}
        if gone:
            self._save(self._bindings - gone, {b.pattern for b in gone})
        return removed

    def _save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None:
        """Keep ``bindings`` (the store first: when it fails with AclStoreError, nothing changed here either)."""
        self.store.save(bindings, changed)
        self._bindings = bindings
