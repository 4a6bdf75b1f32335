"""ACLs in ZooKeeper as Kafka's ZooKeeper authorizer (``AclAuthorizer``) keeps them, read and written as raw JSON
(``samsa.broker.zk_acls`` turns them into bindings)::

    /kafka-acl/<ResourceType>/<name>                          LITERAL patterns
    /kafka-acl-extended/prefixed/<ResourceType>/<name>        PREFIXED patterns
        {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
    /kafka-acl-changes/acl_changes_<10-digit seq>             a LITERAL resource changed: "TOPIC:<name>" (UTF-8)
    /kafka-acl-extended-changes/acl_changes_<10-digit seq>    another pattern changed:
        {"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}

``<ResourceType>`` in a path is Kafka's name (``Topic``, ``Group``, ``Cluster``, ``TransactionalId``,
``DelegationToken``); in a change notification the Java enum's (``TOPIC``, ``TRANSACTIONAL_ID``), which Kafka
reads back case-insensitively. A resource without ACLs has no znode (it is deleted with its last ACL). Every
broker watches both change paths and re-reads the resources they name; notifications older than 15 minutes are
deleted, as Kafka's ``ZkNodeChangeNotificationListener`` does.

Thread: these are blocking kazoo calls (one ZooKeeper round trip each); callers on the event loop run the reads
in a thread, and a write blocks for its round trips (CreateAcls and DeleteAcls are rare administration).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

__all__ = [
    "ACL_CHANGE_PATHS",
    "EXTENDED_CHANGES",
    "LITERAL_CHANGES",
    "AclWriteConflict",
    "AclZNodes",
    "ResourceKey",
]

LITERAL_ACLS = "/kafka-acl"
EXTENDED_ACLS = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PATHS = (LITERAL_CHANGES, EXTENDED_CHANGES)
CHANGE_PREFIX = "acl_changes_"

ResourceKey = tuple[str, str, str]
"""(pattern type ``LITERAL``/``PREFIXED``, resource type as Kafka names it in paths, resource name)."""


class AclWriteConflict(Exception):
    """A resource's znode changed since it was read (another broker wrote it): read it again and retry."""


ABSENT = -1
"""The version ``read_versioned`` gives a resource without a znode."""


def _base(pattern_type: str) -> str:
    return LITERAL_ACLS if pattern_type == "LITERAL" else f"{EXTENDED_ACLS}/{pattern_type.lower()}"


def enum_name(kafka_name: str) -> str:
    """``TransactionalId`` -> ``TRANSACTIONAL_ID`` (the Java enum's name Kafka writes in notifications)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kafka_name).upper()


class AclZNodes:
    """The ACL znodes of one ZooKeeper session (module doc)."""

    def __init__(self, kazoo: KazooClient) -> None:
        self.kazoo = kazoo

    def ensure_paths(self) -> None:
        for path in (LITERAL_ACLS, f"{EXTENDED_ACLS}/prefixed", *ACL_CHANGE_PATHS):
            self.kazoo.ensure_path(path)

    def read_all(self) -> dict[ResourceKey, bytes]:
        """Every resource's ACL JSON."""
        found: dict[ResourceKey, bytes] = {}
        for pattern_type in ("LITERAL", "PREFIXED"):
            base = _base(pattern_type)
            for resource_type in self._children(base):
                for name in self._children(f"{base}/{resource_type}"):
                    data = self.read((pattern_type, resource_type, name))
                    if data:
                        found[(pattern_type, resource_type, name)] = data
        return found

    def read(self, key: ResourceKey) -> bytes | None:
        pattern_type, resource_type, name = key
        try:
            data, _ = self.kazoo.get(f"{_base(pattern_type)}/{resource_type}/{name}")
        except NoNodeError:
            return None
        return bytes(data) if data else None

    def read_versioned(self, key: ResourceKey) -> tuple[bytes | None, int]:
        """One resource's ACL JSON and its znode's version (``ABSENT`` without a znode)."""
        pattern_type, resource_type, name = key
        try:
            data, stat = self.kazoo.get(f"{_base(pattern_type)}/{resource_type}/{name}")
        except NoNodeError:
            return None, ABSENT
        return (bytes(data) if data else None), stat.version

    def write(self, key: ResourceKey, data: bytes | None, version: int) -> None:
        """Set one resource's ACL JSON (None: it has none, its znode goes) if its znode is still at ``version``
        (``ABSENT``: it has none), else AclWriteConflict; then tell every broker."""
        pattern_type, resource_type, name = key
        path = f"{_base(pattern_type)}/{resource_type}/{name}"
        try:
            if data is None and version != ABSENT:
                self.kazoo.delete(path, version=version)
            elif data is not None and version == ABSENT:
                self.kazoo.create(path, data, makepath=True)
            elif data is not None:
                self.kazoo.set(path, data, version=version)
        except (BadVersionError, NoNodeError, NodeExistsError) as exc:
            raise AclWriteConflict(f"{path} changed meanwhile ({type(exc).__name__})") from None
        if pattern_type == "LITERAL":
            change_path, body = LITERAL_CHANGES, f"{enum_name(resource_type)}:{name}".encode()
        else:
            change_path = EXTENDED_CHANGES
            event = {"version": 1, "resourceType": enum_name(resource_type), "name": name,
                     "patternType": pattern_type}  # fmt: skip
            body = json.dumps(event, separators=(",", ":")).encode()
        self.kazoo.create(f"{change_path}/{CHANGE_PREFIX}", body, sequence=True, makepath=True)

    def purge(self, change_path: str, names: list[str], created_before_ms: int) -> int:
        """Delete the notifications among ``names`` created before ``created_before_ms`` (ZooKeeper's ctime), as
        Kafka's brokers purge theirs after 15 minutes; how many went."""
        gone = 0
        for name in names:
            stat = self.kazoo.exists(f"{change_path}/{name}")
            if stat is not None and stat.ctime < created_before_ms:
                try:
                    self.kazoo.delete(f"{change_path}/{name}")
                    gone += 1
                except NoNodeError:
                    pass  # another broker purged it first
        return gone

    def changes(self, change_path: str, watch: Callable[..., object] | None = None) -> list[str]:
        """The notifications' names under one change path, oldest first (the watch fires on a new one)."""
        try:
            return sorted(self.kazoo.get_children(change_path, watch=watch))
        except NoNodeError:
            self.kazoo.ensure_path(change_path)
            return sorted(self.kazoo.get_children(change_path, watch=watch))

    def change(self, change_path: str, name: str) -> ResourceKey | None:
        """The resource a notification names (its type as written: ``TOPIC`` or ``Topic``); None when it was
        purged meanwhile or cannot be read."""
        try:
            data, _ = self.kazoo.get(f"{change_path}/{name}")
        except NoNodeError:
            return None
        text = bytes(data).decode("utf-8", "replace")
        if change_path == LITERAL_CHANGES:
            resource_type, sep, resource_name = text.partition(":")
            return ("LITERAL", resource_type, resource_name) if sep else None
        try:
            event = json.loads(text)
            return (str(event["patternType"]).upper(), str(event["resourceType"]), str(event["name"]))
        except (ValueError, KeyError, TypeError):
            return None

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self.kazoo.get_children(path))
        except NoNodeError:
            return []
