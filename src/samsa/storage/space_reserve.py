"""``SpaceReserve``: disk space a log directory holds back for an operator's way out of a full disk.

On a full disk, what frees space is retention and an operator's requests: DeleteRecords, a lower ``retention.ms``
or ``retention.bytes`` (AlterConfigs), a deleted topic. Two of those write a small file before anything is freed
(the partition's ``leader-epoch-checkpoint``; the topic's ``topic-config.<topic>.properties``), and a disk filled to
its last block refuses that write too: the operator's only way out would be deleting files by hand. So each log
directory keeps ``RESERVE_BYTES`` in ``.samsa-space-reserve``, allocated blocks (``posix_fallocate``: real blocks
on ext4, XFS, btrfs and tmpfs; ZFS cannot allocate ahead, and the zeros written there instead take no space when it
compresses, so there the reserve holds nothing). Kafka and Samsa load only directories at this level. A new topic's
config does not draw on it: creating topics frees nothing.

``LogManager.with_space_reserve`` runs such a write; when it fails for want of space (ENOSPC, EDQUOT) the reserve
gives back ``RELEASE_STEP`` bytes (``release_step``) and the write is tried again, a step at a time until it succeeds
or the reserve is spent. Whatever producers' appends take of a step, the next request has a step of its own: 16
requests from a full reserve. A clean stop's checkpoints and marker draw on it too (once, and they save the next
start a recovery); periodic checkpoints never do (retried every few seconds, they would spend it within minutes).
``refill`` takes the reserve back once the filesystem has room for it and as much again, before producers fill it.

Concurrency contract: not thread-safe; the ``LogManager``'s owner serialises calls.
"""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path

_log = logging.getLogger(__name__)

RESERVE_FILE = ".samsa-space-reserve"
RESERVE_BYTES = 1 << 20
RELEASE_STEP = 64 << 10
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from, says the filesystem has no space (or quota) left."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _FULL:
            return True
        seen = seen.__cause__
    return False


class SpaceReserve:
    """The reserve file of one log directory and how much of it is held (``size``, at most ``RESERVE_BYTES``)."""

    __slots__ = ("_fd", "path", "size")

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / RESERVE_FILE
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self.size = os.fstat(self._fd).st_size
            if self.size > RESERVE_BYTES:
                os.ftruncate(self._fd, RESERVE_BYTES)
                self.size = RESERVE_BYTES
        except BaseException:
            os.close(self._fd)
            raise
        self.refill()

    @property
    def full(self) -> bool:
        return self.size >= RESERVE_BYTES

    def refill(self) -> bool:
        """Take the reserve back to ``RESERVE_BYTES`` when the filesystem has that much free and as much again;
        True when it is full. A write that fails (the disk filled meanwhile) is cut back and tried another time."""
        if self.size >= RESERVE_BYTES:
            return True
        missing = RESERVE_BYTES - self.size
        stats = os.fstatvfs(self._fd)
        if stats.f_bavail * stats.f_frsize < 2 * RESERVE_BYTES:
            return False
        try:
            os.posix_fallocate(self._fd, self.size, missing)
        except OSError:
            os.ftruncate(self._fd, self.size)  # and any blocks a failed allocation left past it
            return False
        self.size = RESERVE_BYTES
        return True

    def release_step(self, needed_by: str) -> bool:
        """Give ``RELEASE_STEP`` bytes back to the filesystem (what is left, when less) for the write ``needed_by``
        names; False when nothing is left. The truncation is synced: ext4 reuses freed blocks only once its
        journal has committed the change."""
        if self.size <= 0:
            return False
        size = max(0, self.size - RELEASE_STEP)
        os.ftruncate(self._fd, size)
        os.fsync(self._fd)
        _log.warning(
            "the disk of %s is full: gave %d bytes of its space reserve to %s (%d bytes left, taken back once "
            "space is freed)",
            self.path.parent,
            self.size - size,
            needed_by,
            size,
        )
        self.size = size
        return True

    def close(self) -> None:
        os.close(self._fd)
