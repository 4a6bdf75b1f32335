"""Kafka's checkpoint text files and the clean-shutdown marker.

Every checkpoint is UTF-8 text, one item per line, ``\\n`` line ends:

    line   content
    1      format version, a decimal integer (0 for every offset checkpoint)
    2      entry count N, a decimal integer
    3..    N entry lines, fields separated by single spaces when written (any whitespace when read)

Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``) hold ``<topic> <partition> <offset>`` lines;
``leader-epoch-checkpoint`` (per partition) holds ``<epoch> <startOffset>`` lines. ``CheckpointFile`` is the one
reader/writer; an ``EntryFormat`` says how a line maps to a value.

Reading: an empty file, or one without a count line, is empty; a bad version, a malformed line or a count that
disagrees with the lines raises ``CheckpointError`` naming the file and the line. Writing: the text goes to
``<file>.tmp``, is fsynced, renamed over the target and the directory is fsynced, so a reader sees the old file
or the new one, never a torn one.

``.kafka_cleanshutdown`` sits in each log directory while the broker is stopped after a clean shutdown: JSON
``{"version":0,"brokerEpoch":N}``. Only its presence matters to recovery.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from .errors import StorageError
from .topic import TopicPartition

_log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
CLEAN_SHUTDOWN_VERSION = 0

K = TypeVar("K")
V = TypeVar("V")


class CheckpointError(StorageError):
    """A checkpoint file that cannot be read: ``path``, the 1-based ``line`` (0 = the whole file) and why."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        where = f"{path}" if line == 0 else f"{path}, line {line}"
        super().__init__(f"malformed checkpoint file {where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class EntryFormat(Generic[K, V]):
    """How one entry line maps to a (key, value) pair: field count, parse and format functions."""

    fields: int
    parse: Callable[[list[str]], tuple[K, V]]
    format: Callable[[K, V], str]


def _parse_offset_entry(parts: list[str]) -> tuple[TopicPartition, int]:
    return TopicPartition(parts[0], int(parts[1])), int(parts[2])


def _format_offset_entry(tp: TopicPartition, offset: int) -> str:
    return f"{tp.topic} {tp.partition} {offset}"


def _parse_epoch_entry(parts: list[str]) -> tuple[int, int]:
    return int(parts[0]), int(parts[1])


def _format_epoch_entry(epoch: int, start_offset: int) -> str:
    return f"{epoch} {start_offset}"


OFFSET_ENTRIES: EntryFormat[TopicPartition, int] = EntryFormat(3, _parse_offset_entry, _format_offset_entry)
EPOCH_ENTRIES: EntryFormat[int, int] = EntryFormat(2, _parse_epoch_entry, _format_epoch_entry)


class CheckpointFile(Generic[K, V]):
    """One checkpoint file: ``read()`` gives its entries in file order, ``write()`` replaces them atomically.

    Not thread-safe: the owner (LogManager, a Log) serialises calls. A missing file reads as empty.
    """

    def __init__(self, path: Path, version: int, entry_format: EntryFormat[K, V]) -> None:
        self.path = path
        self.version = version
        self.entry_format = entry_format

    def write(self, entries: Iterable[tuple[K, V]] | Mapping[K, V]) -> None:
        items = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        lines = [str(self.version), str(len(items))]
        lines.extend(self.entry_format.format(key, value) for key, value in items)
        write_atomically(self.path, ("\n".join(lines) + "\n").encode("utf-8"))

    def read(self) -> list[tuple[K, V]]:
        try:
            text = self.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError as exc:
            raise CheckpointError(self.path, 0, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        lines = text.splitlines()
        if not lines or not lines[0].strip():
            return []
        version = self._integer(lines[0], 1, "version")
        if version != self.version:
            raise CheckpointError(self.path, 1, f"unrecognised version {version}, expected {self.version}")
        if len(lines) < 2:
            return []
        count = self._integer(lines[1], 2, "entry count")
        entries: list[tuple[K, V]] = []
        for number, line in enumerate(lines[2:], start=3):
            if not line.strip() and number > count + 2:
                continue  # trailing blank lines
            parts = line.split()
            if len(parts) != self.entry_format.fields:
                raise CheckpointError(
                    self.path,
                    number,
                    f"malformed line {line!r}: {len(parts)} fields, expected {self.entry_format.fields}",
                )
            try:
                entries.append(self.entry_format.parse(parts))
            except ValueError as exc:
                raise CheckpointError(self.path, number, f"malformed line {line!r}: {exc}") from exc
        if len(entries) != count:
            raise CheckpointError(self.path, 2, f"declared {count} entries but found {len(entries)}")
        return entries

    def read_dict(self) -> dict[K, V]:
        return dict(self.read())

    def _integer(self, line: str, number: int, what: str) -> int:
        try:
            return int(line.strip())
        except ValueError:
            raise CheckpointError(self.path, number, f"{what} {line!r} is not an integer") from None


def offset_checkpoint(path: Path) -> CheckpointFile[TopicPartition, int]:
    """A ``topic partition offset`` checkpoint (recovery points, log start offsets, high watermarks)."""
    return CheckpointFile(path, OFFSET_CHECKPOINT_VERSION, OFFSET_ENTRIES)


def read_offsets_or_empty(path: Path) -> dict[TopicPartition, int]:
    """An offset checkpoint's entries; a missing or unreadable file is treated as empty, as Kafka does."""
    try:
        return offset_checkpoint(path).read_dict()
    except FileNotFoundError:
        return {}
    except (CheckpointError, OSError) as exc:
        _log.warning("ignoring %s, which cannot be read (%s): treated as empty", path, exc)
        return {}


def leader_epoch_checkpoint(path: Path) -> CheckpointFile[int, int]:
    """A partition's ``epoch startOffset`` checkpoint."""
    return CheckpointFile(path, LEADER_EPOCH_CHECKPOINT_VERSION, EPOCH_ENTRIES)


# --- atomic replace ----------------------------------------------------------------------------------------


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``<path>.tmp``, fsync it, rename it over ``path`` and fsync the directory."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()  # a full disk leaves no half-written file behind
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """fsync a directory so a rename or a new file in it survives a crash; a missing directory is tolerated."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- clean-shutdown marker ---------------------------------------------------------------------------------


def clean_shutdown_path(log_dir: Path) -> Path:
    return log_dir / CLEAN_SHUTDOWN_FILE


def write_clean_shutdown(log_dir: Path, broker_epoch: int = -1) -> None:
    import json  # start-up time: a first start reads no marker

    body = json.dumps({"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":"))
    write_atomically(clean_shutdown_path(log_dir), body.encode("utf-8"))


def has_clean_shutdown(log_dir: Path) -> bool:
    return clean_shutdown_path(log_dir).exists()


def read_clean_shutdown_epoch(log_dir: Path) -> int | None:
    """The broker epoch recorded in the marker, or None when it is missing or unreadable (presence is what counts)."""
    import json  # start-up time: a first start reads no marker

    try:
        document = json.loads(clean_shutdown_path(log_dir).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    epoch = document.get("brokerEpoch") if isinstance(document, dict) else None
    return epoch if isinstance(epoch, int) else None


def consume_clean_shutdown(log_dir: Path) -> bool:
    """True if the marker was present; it is deleted at once, so a crash while loading counts as unclean."""
    path = clean_shutdown_path(log_dir)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_directory(log_dir)
    return True
