"""Producer id allocation for a single broker.

Kafka allocates producer ids in blocks from the controller. A lone broker needs only uniqueness across its own
restarts: ids are handed out from a block whose start is persisted in ``producer-id-block`` in the first log dir
before any id of the block is used, so a crash can skip ids but never repeat one.
"""

from __future__ import annotations

from pathlib import Path

from samsa.storage.checkpoint import write_atomically

BLOCK_SIZE = 1000
FILE_NAME = "producer-id-block"


class ProducerIdsUnavailableError(RuntimeError):
    """No producer id can be handed out now (cluster mode: the block is used up and ZooKeeper did not answer)."""


class ProducerIdManager:
    """Not thread-safe; the event loop owns it."""

    def __init__(self, log_dir: Path) -> None:
        self._path = log_dir / FILE_NAME
        self._next = 0
        self._block_end = 0

    def _load_next_block_start(self) -> int:
        try:
            return int(self._path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return 0

    def next_id(self) -> int:
        if self._next >= self._block_end:
            start = max(self._load_next_block_start(), self._block_end)
            write_atomically(self._path, f"{start + BLOCK_SIZE}\n".encode())
            self._next, self._block_end = start, start + BLOCK_SIZE
        pid = self._next
        self._next += 1
        return pid
