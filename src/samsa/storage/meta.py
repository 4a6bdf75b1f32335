"""``meta.properties``: the identity of a log directory.

java.util.Properties text, as Kafka writes it:

    #
    #<date comment>
    cluster.id=<id>
    node.id=<n>            (version 1, KRaft)   or   broker.id=<n>   (version 0, ZooKeeper)
    version=<0|1>

Lines starting with ``#`` or ``!`` are comments; ``key=value``, ``key:value`` and ``key value`` are accepted when
read; ``\\`` escapes are honoured for the few characters Kafka's values can hold. Written atomically (temp file,
fsync, rename). A directory whose stored node id differs from the configured one is refused, since it belongs to
another broker.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import write_atomically
from .errors import StorageError

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


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties lines (no multi-line continuations): comments, ``=``/``:``/space separators."""
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not line or line[0] in "#!":
            continue
        key_chars: list[str] = []
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i + 1])
                i += 2
                continue
            if ch in "=: \t":
                break
            key_chars.append(ch)
            i += 1
        rest = line[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        result["".join(key_chars)] = _unescape(rest)
    return result


def _unescape(value: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _escape(text: str, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch in "\\=:#!" or (ch == " " and (is_key or index == 0)):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            out.append(ch)
    return "".join(out)


def format_properties(props: dict[str, str], comment: str | None = None) -> str:
    lines = ["#"]
    lines.append(
        "#" + (comment if comment is not None else time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()))
    )
    lines.extend(f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items())
    return "\n".join(lines) + "\n"


def read_properties_file(path: Path) -> dict[str, str]:
    return parse_properties(path.read_text("utf-8"))


def write_properties_file(path: Path, props: dict[str, str], comment: str | None = None) -> None:
    write_atomically(path, format_properties(props, comment).encode("utf-8"))


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """The directory's identity, or None when it has no ``meta.properties`` yet."""
    path = log_dir / META_PROPERTIES
    try:
        props = read_properties_file(path)
    except FileNotFoundError:
        return None
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
