"""``meta.properties``: the identity of a log directory.

java.util.Properties text, as Kafka writes it:

    #
    #<date comment>
    cluster.id=<id>
    node.id=<n>            (version 1, KRaft)   or   broker.id=<n>   (version 0, ZooKeeper)
    version=<0|1>

Read and written by ``samsa.storage.properties`` (the one ``.properties`` reader, with Java's escapes and line
continuations); written atomically (temp file, fsync, rename). A directory whose stored node id differs from the configured one is refused, since it belongs to
another broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import StorageError
from .properties import parse_properties as parse_properties
from .properties import read_properties_file as read_properties_file
from .properties import write_properties_file as write_properties_file

META_PROPERTIES = "meta.properties"


class MetaPropertiesError(StorageError):
    """A ``meta.properties`` that cannot be used: ``path`` and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class InconsistentNodeIdError(MetaPropertiesError):
    """The stored node id is not the configured one (Kafka: InconsistentBrokerIdException)."""

    def __init__(self, path: Path, stored: int, configured: int) -> None:
        super().__init__(
            path,
            f"stored node id {stored} does not match the configured node id {configured}; this log directory "
            f"belongs to another broker",
        )
        self.stored = stored
        self.configured = configured


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """version 0 uses ``broker.id``, version 1 ``node.id``; ``cluster_id`` may be None in version 0."""

    version: int
    cluster_id: str | None
    node_id: int

    def to_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        props["node.id" if self.version >= 1 else "broker.id"] = str(self.node_id)
        props["version"] = str(self.version)
        return props


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """The directory's identity, or None when it has no ``meta.properties`` yet."""
    path = log_dir / META_PROPERTIES
    try:
        props = read_properties_file(path)
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise MetaPropertiesError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        version = int(props.get("version", "0"))
        key = "node.id" if version >= 1 else "broker.id"
        if key not in props and "node.id" in props:
            key = "node.id"
        if key not in props:
            raise MetaPropertiesError(path, f"missing {key}")
        return MetaProperties(version, props.get("cluster.id"), int(props[key]))
    except ValueError as exc:
        raise MetaPropertiesError(path, f"bad value: {exc}") from exc


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    write_properties_file(log_dir / META_PROPERTIES, meta.to_properties())


def ensure_meta_properties(log_dir: Path, node_id: int, cluster_id: str | None) -> MetaProperties:
    """Check the stored identity against the configured one, writing it when the directory is new (and the
    cluster id once into a version 0 file that has none).

    Raises InconsistentNodeIdError for another node's directory, MetaPropertiesError for another cluster's.
    """
    path = log_dir / META_PROPERTIES
    stored = read_meta_properties(log_dir)
    if stored is None:
        meta = MetaProperties(1, cluster_id, node_id)
        write_meta_properties(log_dir, meta)
        return meta
    if stored.node_id != node_id:
        raise InconsistentNodeIdError(path, stored.node_id, node_id)
    if cluster_id is not None and stored.cluster_id is not None and stored.cluster_id != cluster_id:
        raise MetaPropertiesError(
            path, f"stored cluster.id {stored.cluster_id!r} does not match the configured {cluster_id!r}"
        )
    if stored.cluster_id is None and cluster_id is not None:
        stored = MetaProperties(stored.version, cluster_id, stored.node_id)
        write_meta_properties(log_dir, stored)
    return stored
