"""Producer id allocation for a single broker.

Kafka allocates producer ids in blocks from the controller. A lone broker needs only uniqueness across its own
restarts: ids are handed out from a block whose start is persisted in ``producer-id-block`` in the first log dir
before any id of the block is used, so a crash can skip ids but never repeat one.

The file alone is not trusted with that. An id handed out again would meet the partitions' producer state, which
still holds the first owner's sequence numbers: the new producer's first batches would be answered as duplicates
of the old one's, acknowledged and never stored. So a block never starts below an id any partition knows, and
the file is read in every log dir (the first dir changes when one is added in front of it). A file that is
missing where producers exist, or that cannot be read as a number, is said at ERROR with its path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from samsa.storage.checkpoint import write_atomically

_log = logging.getLogger(__name__)

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdsUnavailableError(RuntimeError):
    """No producer id can be handed out now (cluster mode: the block is used up and ZooKeeper did not answer)."""


class ProducerIdManager:
    """Not thread-safe; the event loop owns it."""

    def __init__(self, log_dirs: Sequence[Path], highest_known: Callable[[], int] = lambda: -1) -> None:
        """``highest_known``: the highest producer id any partition's producer state holds (-1: none)."""
        self._paths = [Path(d) / FILE_NAME for d in log_dirs]
        self._path = self._paths[0]
        self._highest_known = highest_known
        self._next = 0
        self._block_end = 0

    def _load_next_block_start(self) -> int:
        """Where the next block may start: past what every log dir's file says and past every id the partitions
        know (module doc)."""
        stored = -1
        for path in self._paths:
            try:
                stored = max(stored, int(path.read_text().strip()))
            except FileNotFoundError:
                continue
            except (ValueError, UnicodeDecodeError):
                _log.error("%s is damaged (not a number): producer ids go on above those in use", path)
        floor = self._highest_known() + 1
        if floor > max(stored, 0):
            said = (
                f"says producer ids start at {stored}"
                if stored >= 0
                else "is missing or damaged in every log dir"
            )
            _log.error(
                "%s %s, but the partitions hold producer id %d: producer ids go on from %d, so none is given twice",
                self._path,
                said,
                floor - 1,
                floor,
            )
        return max(stored, floor, 0)

    def next_id(self) -> int:
        if self._next >= self._block_end:
            start = max(self._load_next_block_start(), self._block_end)
            write_atomically(self._path, f"{start + BLOCK_SIZE}\n".encode())
            self._next, self._block_end = start, start + BLOCK_SIZE
        pid = self._next
        self._next += 1
        return pid
