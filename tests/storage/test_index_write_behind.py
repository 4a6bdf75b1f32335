"""Index entries written behind (``index`` module doc): kept in memory at once, in the file the first at once,
then every ``WRITE_BEHIND`` entries and at flush, resize, trim and close; a write that fails drops only the entry that triggered it. Checked
against the bytes of the file and a read-only reader of it (what Kafka's dump tool and samsa-segments see)."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest

from samsa.storage import index as index_module
from samsa.storage.index import WRITE_BEHIND, OffsetIndex

BASE = 100


def on_disk(path: Path) -> list[tuple[int, int]]:
    """The entries a reader of the file finds (read-only, as the tools open it)."""
    reader = OffsetIndex(path, BASE, 1 << 20, writable=False)
    try:
        return [(entry.offset, entry.position) for entry in (reader.entry(n) for n in range(reader.entries))]
    finally:
        reader.close()


def test_entries_reach_the_file_in_groups_and_at_flush_and_close(tmp_path: Path) -> None:
    path = tmp_path / "a.index"
    index = OffsetIndex(path, BASE, 1000 * 8)
    expected = [(BASE + 1 + n, 40 * n) for n in range(2 * WRITE_BEHIND + 3)]
    for n, (offset, position) in enumerate(expected):
        index.append(offset, position)
        assert index.lookup(offset).offset == offset  # in memory at once
        assert on_disk(path)[:1] == expected[:1]  # the first entry is in the file at once
        assert n + 1 - len(on_disk(path)) < WRITE_BEHIND  # the file lags less than a group
    assert on_disk(path) == expected[: 2 * WRITE_BEHIND + 1]
    index.flush()
    assert on_disk(path) == expected
    index.append(BASE + 1000, 9999)
    index.close()
    assert on_disk(path) == [*expected, (BASE + 1000, 9999)]
    assert struct.unpack(">ii", path.read_bytes()[-8:]) == (1000, 9999)  # trimmed to the valid entries


def test_a_failed_write_drops_only_the_entry_that_triggered_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.index"
    index = OffsetIndex(path, BASE, 1000 * 8)
    for n in range(WRITE_BEHIND):  # the first is written at once, the next 31 wait
        index.append(BASE + n, 10 * n)
    real_pwrite = os.pwrite

    def full_disk(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(index_module.os, "pwrite", full_disk)
    with pytest.raises(OSError):
        index.append(BASE + 500, 5000)
    assert index.entries == WRITE_BEHIND
    assert index.lookup(BASE + 600).offset == BASE + WRITE_BEHIND - 1  # the failed entry is gone
    assert on_disk(path) == [(BASE, 0)]
    monkeypatch.setattr(index_module.os, "pwrite", real_pwrite)
    index.append(BASE + 500, 5000)  # space again: everything pending is written
    assert on_disk(path) == [*((BASE + n, 10 * n) for n in range(WRITE_BEHIND)), (BASE + 500, 5000)]
    index.close()
