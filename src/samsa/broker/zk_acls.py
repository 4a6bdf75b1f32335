"""The ACL authorizer's bindings in ZooKeeper for cluster mode (``samsa.cluster.acl_znodes`` has the znodes and
their JSON): ``ZkAclStore`` writes the resources a CreateAcls or DeleteAcls changed, with Kafka's change
notifications; ``ZkAclSync`` loads every binding when the broker joins ZooKeeper (and again with a new session) and
re-reads each resource a notification names, so an ACL created through any broker applies on every broker (within
a ZooKeeper round trip or two). Kafka's own ZooKeeper-mode brokers and tools read and write the same znodes.

Event-loop thread only; the reads run in a thread, a store's write blocks for its ZooKeeper round trips.
Concurrency between brokers, as Kafka's authorizer does it: a save applies what this broker added and removed to
the resource's znode as read just before, written only if its version is unchanged (else read again and retry),
so two brokers changing the same resource at once both keep their changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from kazoo.exceptions import KazooException

from samsa.cluster.acl_znodes import ACL_CHANGE_PATHS, AclWriteConflict, AclZNodes, ResourceKey
from samsa.security.acl import AccessControlEntry, AclBinding, PatternType, ResourcePattern, ResourceType
from samsa.security.authorizer import (
    AclAuthorizer,
    AclStoreError,
    entries_from_kafka_json,
    kafka_acl_json,
    pattern_key,
)

__all__ = ["ZkAclStore", "ZkAclSync"]

log = logging.getLogger(__name__)


def resource_key(pattern: ResourcePattern) -> ResourceKey:
    return (pattern.pattern_type.name, pattern.resource_type.kafka_name, pattern.name)


def pattern_of(key: ResourceKey) -> ResourcePattern:
    pattern_type, resource_type, name = key
    return ResourcePattern(
        ResourceType.from_kafka_name(resource_type), name, PatternType[pattern_type.upper()]
    )


def bindings_of(key: ResourceKey, data: bytes | None) -> set[AclBinding]:
    """One resource's bindings from its znode's JSON (none for no znode or unreadable JSON, logged)."""
    if not data:
        return set()
    pattern = pattern_of(key)
    try:
        return {AclBinding(pattern, entry) for entry in entries_from_kafka_json(json.loads(data))}
    except (ValueError, KeyError, AssertionError) as exc:
        log.warning("ACLs of %s in ZooKeeper cannot be read (%s): none applied", key, exc)
        return set()


WRITE_ATTEMPTS = 10
NOTIFICATION_EXPIRY_MS = 15 * 60 * 1000  # Kafka's: a change notification is purged after 15 minutes


class ZkAclStore:
    """``AclStore`` over ZooKeeper: nothing at load (``ZkAclSync`` brings the bindings once connected); a save
    applies this broker's change of each resource to its znode (module doc) and writes its notification."""

    def __init__(self, nodes: AclZNodes) -> None:
        self.nodes = nodes
        self.known: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}  # as last read or written

    def load(self) -> set[AclBinding]:
        return set()

    def save(self, bindings: set[AclBinding], changed: set[ResourcePattern]) -> None:
        """AclStoreError when ZooKeeper cannot take a change (the resources saved before it stay saved)."""
        for pattern in sorted(changed):
            local = frozenset(b.entry for b in bindings if b.pattern == pattern)
            known = self.known.get(pattern, frozenset())
            try:
                self._apply(pattern, local - known, known - local)
            except (KazooException, AclWriteConflict) as exc:
                raise AclStoreError(
                    f"the ACLs of {pattern_key(pattern)} cannot be written to ZooKeeper: {exc}"
                ) from exc

    def _apply(
        self,
        pattern: ResourcePattern,
        added: frozenset[AccessControlEntry],
        removed: frozenset[AccessControlEntry],
    ) -> None:
        key = resource_key(pattern)
        for _ in range(WRITE_ATTEMPTS):
            data, version = self.nodes.read_versioned(key)
            current = frozenset(b.entry for b in bindings_of(key, data))
            entries = (current | added) - removed
            text = json.dumps(kafka_acl_json(entries), separators=(",", ":")).encode() if entries else None
            try:
                self.nodes.write(key, text, version)
            except AclWriteConflict:
                continue
            self.known[pattern] = entries
            return
        raise AclWriteConflict(f"ACLs of {key} kept changing: {WRITE_ATTEMPTS} writes refused")


class ZkAclSync:
    """Keeps an authorizer's bindings as ZooKeeper holds them (module doc)."""

    def __init__(
        self,
        nodes: AclZNodes,
        authorizer: AclAuthorizer,
        watch: Callable[[Callable[[], Coroutine[Any, Any, None]]], Callable[[object], None]],
    ) -> None:
        self.nodes = nodes
        self.authorizer = authorizer
        self._watch = watch  # a kazoo watch that runs the coroutine function on the broker's loop
        self._seen: dict[str, str] = {}  # change path -> the last notification applied

    async def start(self) -> None:
        """Load every binding and watch both change paths (at connect, and with each new session)."""

        def read() -> tuple[dict[ResourceKey, bytes], dict[str, str]]:
            self.nodes.ensure_paths()
            last = {path: max(self.nodes.changes(path), default="") for path in ACL_CHANGE_PATHS}
            return self.nodes.read_all(), last

        resources, last = await asyncio.to_thread(read)
        bindings: set[AclBinding] = set()
        for key, data in resources.items():
            bindings |= bindings_of(key, data)
        self.authorizer.replace_all(bindings)
        if isinstance(self.authorizer.store, ZkAclStore):
            known: dict[ResourcePattern, set[AccessControlEntry]] = {}
            for b in bindings:
                known.setdefault(b.pattern, set()).add(b.entry)
            self.authorizer.store.known = {p: frozenset(es) for p, es in known.items()}
        self._seen.update(last)
        for path in ACL_CHANGE_PATHS:
            await self._changed(path)

    async def _changed(self, change_path: str) -> None:
        """Apply the notifications under ``change_path`` not applied yet, and watch for the next."""
        names = await asyncio.to_thread(
            self.nodes.changes, change_path, self._watch(lambda: self._changed(change_path))
        )
        for name in names:
            if name <= self._seen.get(change_path, ""):
                continue
            self._seen[change_path] = name
            key = await asyncio.to_thread(self.nodes.change, change_path, name)
            if key is None:
                continue
            try:
                pattern = pattern_of(key)
            except (ValueError, KeyError) as exc:
                log.warning("ACL change notification %s/%s names no resource (%s)", change_path, name, exc)
                continue
            canonical = resource_key(pattern)
            data = await asyncio.to_thread(self.nodes.read, canonical)
            found = bindings_of(canonical, data)
            self.authorizer.replace_resource(pattern, found)
            if isinstance(self.authorizer.store, ZkAclStore):
                self.authorizer.store.known[pattern] = frozenset(b.entry for b in found)
        cutoff = int(time.time() * 1000) - NOTIFICATION_EXPIRY_MS  # ZooKeeper's ctime is wall-clock time
        await asyncio.to_thread(self.nodes.purge, change_path, names, cutoff)
