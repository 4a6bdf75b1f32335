"""``LeaderEpochFileCache``: a partition's leader epochs and the offset where each began.

Persisted as ``leader-epoch-checkpoint`` in the partition directory, Kafka's text checkpoint format:

    0                   format version
    2                   entry count
    0 0                 "<epoch> <startOffset>", epochs and start offsets strictly increasing
    3 1200

An entry is added when a batch with a larger epoch is appended (or found by recovery); truncating the log at
either end truncates the cache. A missing or unreadable file reads as empty (the log rebuilds it on recovery).

Concurrency contract: not thread-safe; the owning ``Log`` serialises calls.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import LEADER_EPOCH_CHECKPOINT, CheckpointError, leader_epoch_checkpoint

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """The (epoch, start offset) list of one partition, written through to its checkpoint file."""

    __slots__ = ("_entries", "_file", "latest")

    def __init__(self, directory: Path) -> None:
        self._file = leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT)
        try:
            self._entries = [EpochEntry(epoch, offset) for epoch, offset in self._file.read()]
        except FileNotFoundError:
            self._entries = []
        except (CheckpointError, OSError) as exc:  # rebuilt from the batches by recovery
            _log.warning("ignoring %s, which cannot be read (%s): treated as empty", self._file.path, exc)
            self._entries = []
        # the latest epoch: a plain field (read on every append), kept by ``_keep``
        self.latest = self._entries[-1].epoch if self._entries else None

    @property
    def path(self) -> Path:
        return self._file.path

    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def latest_epoch(self) -> int | None:
        return self.latest

    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the entry with the largest start offset <= ``offset``."""
        found: int | None = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int] | None:
        """Kafka's ``endOffsetFor`` (OffsetsForLeaderEpoch, a follower's divergence check): ``(found epoch, end
        offset)``, or None for Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET answer.

        - ``epoch`` undefined (negative), or later than every entry (an empty cache included): None;
        - ``epoch`` is the latest: ``(epoch, log_end_offset)``, the epoch still being written;
        - otherwise the end is where the first later epoch starts, and the found epoch is the largest one
          <= ``epoch``; when every entry is later (``epoch`` below the first, whose records are gone), ``epoch``
          itself with the first entry's start, so a follower replicates from the leader's start.
        """
        if epoch < 0 or self.latest is None:
            return None
        if epoch == self.latest:
            return epoch, log_end_offset
        floor: EpochEntry | None = None
        for entry in self._entries:
            if entry.epoch > epoch:
                return (floor.epoch if floor is not None else epoch), entry.start_offset
            floor = entry
        return None

    def assign(self, epoch: int, start_offset: int, best_effort: bool = False) -> None:
        """Record that ``epoch`` began at ``start_offset``; ignored unless the epoch is new and larger.

        Entries at or after ``start_offset`` with a smaller epoch are dropped (a truncated, rewritten tail).
        ``best_effort`` (recovery, which finds the epochs again at every load) keeps the entry when the
        checkpoint cannot be written, and raises.
        """
        if epoch < 0:
            return
        latest = self.latest_epoch()
        if latest is not None and epoch <= latest:
            return
        self._replace(
            [*(e for e in self._entries if e.start_offset < start_offset), EpochEntry(epoch, start_offset)],
            best_effort,
        )

    def truncate_from_end(self, end_offset: int, best_effort: bool = False) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated to it)."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._replace(kept, best_effort)

    def truncate_from_start(self, start_offset: int, best_effort: bool = False) -> None:
        """Drop entries wholly below ``start_offset``; the one covering it now starts there."""
        kept: list[EpochEntry] = []
        for i, entry in enumerate(self._entries):
            nxt = self._entries[i + 1].start_offset if i + 1 < len(self._entries) else None
            if nxt is not None and nxt <= start_offset:
                continue
            kept.append(EpochEntry(entry.epoch, max(entry.start_offset, start_offset)))
        if kept != self._entries:
            self._replace(kept, best_effort)

    def clear(self) -> None:
        if self._entries:
            self._replace([])

    def _replace(self, entries: list[EpochEntry], best_effort: bool = False) -> None:
        """Write ``entries`` to the checkpoint, then keep them: a failed write leaves the cache as it was, or
        with ``best_effort`` (load-time truncations, repeated at every load) keeps them and raises."""
        try:
            self._file.write([(e.epoch, e.start_offset) for e in entries])
        except OSError:
            if best_effort:
                self._keep(entries)
            raise
        self._keep(entries)

    def _keep(self, entries: list[EpochEntry]) -> None:
        self._entries = entries
        self.latest = entries[-1].epoch if entries else None
