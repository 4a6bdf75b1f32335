"""``TransactionIndex``: a segment's aborted transactions, ``<base offset>.txnindex`` (Kafka's ``TransactionIndex``).

One entry per transaction aborted while the segment was the active one, in the order the abort markers were
written, 34 bytes each, big-endian:

    offset  size  field
    0       2     int16  version              0
    2       8     int64  producerId
    10      8     int64  firstOffset          the transaction's first offset in this partition
    18      8     int64  lastOffset           the offset of its ABORT marker
    26      8     int64  lastStableOffset     the partition's LSO once the abort completed

A read_committed fetch from offset F that returns data up to offset U (exclusive) is answered with every aborted
transaction with ``lastOffset >= F`` and ``firstOffset < U``, looking through the segment holding F and those after
it until an entry's ``lastStableOffset >= U`` says no later segment can hold one that overlaps (``collect``).

The file is created by the first append (most segments never have one). It is rebuilt with the segment's other
indexes when the segment is recovered; an index that fails ``check`` (a torn or foreign tail) is rebuilt the same
way by the loader. A segment loaded without the file (``verified`` False) is looked at before its first
read_committed read: if its log holds an ABORT marker, the file was lost and is rebuilt (``Log``). Entries are
kept in memory once read (an abort is rare; the files are small).

Concurrency contract: not thread-safe; the owning ``Log`` serialises every call.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of a partition (module doc)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            TXN_INDEX_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )


class CorruptTxnIndexError(ValueError):
    """A ``.txnindex`` that cannot be read: why, naming the file."""


def decode_entries(data: bytes | bytearray | memoryview, path: Path) -> list[AbortedTxn]:
    """The entries of a ``.txnindex`` file's bytes; CorruptTxnIndexError for a partial entry or a bad version."""
    if len(data) % ENTRY_SIZE:
        raise CorruptTxnIndexError(f"{path} is {len(data)} bytes, not whole {ENTRY_SIZE}-byte entries")
    entries = []
    for position in range(0, len(data), ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != TXN_INDEX_VERSION:
            raise CorruptTxnIndexError(f"{path}: entry at {position} has version {version}, expected 0")
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries


class TransactionIndex:
    """A segment's ``.txnindex`` (module doc). Not thread-safe; the owning ``Log`` serialises calls."""

    __slots__ = ("_entries", "_fd", "path", "start_offset", "verified")

    def __init__(self, path: Path, start_offset: int) -> None:
        self.path = path
        self.start_offset = start_offset
        self._entries: list[AbortedTxn] | None = None
        self._fd = -1
        self.verified = True  # False: loaded without a file, not yet known to need none (module doc)

    # --- reading -----------------------------------------------------------------------------------------

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            self._entries = decode_entries(data, self.path)
        return self._entries

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), and whether the search may stop
        here (an entry's last stable offset reaches ``upper_bound``)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def check(self) -> str | None:
        """Why the file cannot be trusted (a partial entry, a bad version, an entry outside the segment or out of
        order), or None."""
        try:
            entries = self.entries
        except CorruptTxnIndexError as exc:
            self._entries = None
            return str(exc)
        previous = -1
        for txn in entries:
            if txn.last_offset < self.start_offset or txn.first_offset > txn.last_offset:
                return f"{self.path}: entry {txn} lies outside the segment from {self.start_offset}"
            if txn.last_offset <= previous:
                return f"{self.path}: entry {txn} does not follow the one before it (last offset {previous})"
            previous = txn.last_offset
        return None

    # --- writing -----------------------------------------------------------------------------------------

    def append(self, txn: AbortedTxn) -> None:
        """Add an aborted transaction; its marker must come after the last one kept (ValueError otherwise)."""
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: the aborted transaction {txn} does not follow the last one, ending at "
                f"{entries[-1].last_offset}"
            )
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        data = txn.encode()
        written = os.write(self._fd, data)
        if written != len(data):  # a full disk mid-entry: cut back to whole entries
            os.ftruncate(self._fd, len(entries) * ENTRY_SIZE)
            raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
        entries.append(txn)

    def rewrite(self, entries: list[AbortedTxn]) -> None:
        """Replace the file's content by ``entries`` (recovery, truncation); no file when there are none."""
        self.close()
        if not entries:
            self.path.unlink(missing_ok=True)
        else:
            with open(self.path, "wb") as out:
                out.write(b"".join(txn.encode() for txn in entries))
        self._entries = list(entries)
        self.verified = True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose abort marker is at ``offset`` or later (the log is cut there)."""
        entries = self.entries
        kept = [txn for txn in entries if txn.last_offset < offset]
        if len(kept) != len(entries):
            self.rewrite(kept)

    def reset(self) -> None:
        self.rewrite([])

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._entries = None
