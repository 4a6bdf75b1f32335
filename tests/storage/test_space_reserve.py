"""The space reserve of a log directory on a real, small tmpfs filled to its last block: a topic's config (a lower
retention) and a clean stop are still written, a config write that fails leaves the topic's config as it was, and
the reserve is taken back once space is freed. Needs root (to mount the tmpfs); skipped otherwise."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.small_disk import fill, small_tmpfs

from samsa.clock import ManualClock
from samsa.storage.checkpoint import clean_shutdown_path
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
from samsa.storage.space_reserve import RELEASE_STEP, RESERVE_BYTES, RESERVE_FILE, SpaceReserve, is_disk_full
from samsa.storage.topic import TopicPartition


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", 4) as mount:
        yield mount


def manager_on(log_dir: Path) -> LogManager:
    manager = LogManager([log_dir], LogConfig.from_properties({"segment.bytes": 64 * 1024}), ManualClock())
    manager.startup()
    return manager


def test_a_lower_retention_is_written_on_a_disk_full_to_its_last_block(disk: Path) -> None:
    manager = manager_on(disk / "data")
    reserve = disk / "data" / RESERVE_FILE
    assert reserve.stat().st_size == RESERVE_BYTES
    assert reserve.stat().st_blocks * 512 >= RESERVE_BYTES, "the reserve holds real blocks, not a sparse file"
    manager.create_topic("orders", 1)
    fill(disk / "ballast")
    with pytest.raises(OSError):  # the disk is full: what the reserve is not for still fails
        (disk / "data" / "other").write_bytes(b"x" * 8192)

    manager.update_topic_config("orders", {"retention.ms": "60000"})

    assert manager.topic_config("orders").retention_ms == 60000
    assert "retention.ms=60000" in (disk / "data" / "topic-config.orders.properties").read_text()
    assert reserve.stat().st_size == RESERVE_BYTES - RELEASE_STEP

    # a clean stop on the full disk still writes its checkpoints and its marker
    assert manager.shutdown() == []
    assert clean_shutdown_path(disk / "data").exists()

    # space freed: the next start takes the reserve back, and the config is there
    (disk / "ballast").unlink()
    again = manager_on(disk / "data")
    try:
        assert reserve.stat().st_size == RESERVE_BYTES
        assert again.topic_config("orders").retention_ms == 60000
    finally:
        again.shutdown()


def test_a_config_write_the_disk_refuses_leaves_the_topic_config_as_it_was(disk: Path) -> None:
    manager = manager_on(disk / "data")
    try:
        manager.create_topic("orders", 1, {"retention.ms": "7200000"})
        log_dir = manager._dirs[0]
        assert log_dir.reserve is not None
        while log_dir.reserve.release_step("a test that spends it"):
            pass
        fill(disk / "ballast")
        with pytest.raises(OSError) as raised:
            manager.update_topic_config("orders", {"retention.ms": "60000"})
        assert is_disk_full(raised.value)
        assert manager.topic_config("orders").retention_ms == 7200000
        log = manager.get_log(TopicPartition("orders", 0))
        assert log is not None and log.config.retention_ms == 7200000
        assert "retention.ms=7200000" in (disk / "data" / "topic-config.orders.properties").read_text()
    finally:
        manager.shutdown()


def test_a_spent_reserve_is_taken_back_once_the_disk_has_room_for_it_twice(disk: Path) -> None:
    manager = manager_on(disk / "data")
    try:
        log_dir = manager._dirs[0]
        assert log_dir.reserve is not None
        for _ in range(3):
            log_dir.reserve.release_step("a test")
        spent = log_dir.reserve.size
        assert spent == RESERVE_BYTES - 3 * RELEASE_STEP
        fill(disk / "ballast")
        manager.refill_space_reserves()  # no room at all
        assert log_dir.reserve.size == spent
        with open(disk / "ballast", "r+b") as ballast:  # room for the reserve once, not twice
            ballast.truncate(os.path.getsize(disk / "ballast") - RESERVE_BYTES)
        manager.refill_space_reserves()
        assert log_dir.reserve.size == spent and (disk / "data" / RESERVE_FILE).stat().st_size == spent
        (disk / "ballast").unlink()
        manager.refill_space_reserves()
        assert log_dir.reserve.full
        assert (disk / "data" / RESERVE_FILE).stat().st_size == RESERVE_BYTES
    finally:
        manager.shutdown()


def test_a_reserve_file_longer_than_the_reserve_is_cut_to_it(tmp_path: Path) -> None:
    (tmp_path / RESERVE_FILE).write_bytes(b"\0" * (RESERVE_BYTES + 12345))
    reserve = SpaceReserve(tmp_path)
    try:
        assert reserve.full and (tmp_path / RESERVE_FILE).stat().st_size == RESERVE_BYTES
        assert reserve.release_step("a test")
        assert reserve.size == RESERVE_BYTES - RELEASE_STEP
    finally:
        reserve.close()


def test_is_disk_full_follows_the_cause() -> None:
    full = OSError(errno.ENOSPC, "No space left on device")
    try:
        raise RuntimeError("wrapped") from full
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)
    assert is_disk_full(OSError(errno.EDQUOT, "quota"))
    assert not is_disk_full(OSError(errno.EIO, "I/O error"))
