"""LogManager: startup/shutdown, recovery after the recovery point only, topics, partitions, deletion,
two log directories, retention through the manager with a ManualClock."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import log_records

from samsa.clock import ManualClock
from samsa.records import build_batch, iter_batches
from samsa.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    offset_checkpoint,
)
from samsa.storage.config import LogConfig
from samsa.storage.log import Log
from samsa.storage.log_manager import (
    InvalidPartitionsError,
    LogDirLockedError,
    LogManager,
    TopicConfigFileError,
    TopicExistsError,
    partition_counts,
)
from samsa.storage.meta import InconsistentNodeIdError
from samsa.storage.topic import InvalidTopicError, TopicPartition

SMALL = {"segment.bytes": 1024, "index.interval.bytes": 100}


def _config(**extra: int) -> LogConfig:
    return LogConfig.from_properties({**SMALL, **extra})


def _manager(dirs: list[Path], clock: ManualClock, **kwargs: object) -> LogManager:
    manager = LogManager(dirs, _config(), clock, **kwargs)  # type: ignore[arg-type]
    manager.startup()
    return manager


def _append(
    manager: LogManager, tp: TopicPartition, batches: int, clock: ManualClock, size: int = 60
) -> None:
    log = manager.get_log(tp)
    assert log is not None
    for _ in range(batches):
        log.append_as_leader(build_batch([b"x" * size, b"y" * size], timestamp=clock.milliseconds()))
        clock.advance(10)
    log.update_high_watermark(log.log_end_offset)


def _forty_batches(directory: Path, clock: ManualClock) -> tuple[LogManager, Log]:
    """A manager on ``directory`` with topic ``t``, its one partition given 40 batches over several segments."""
    manager = _manager([directory], clock)
    manager.create_topic("t", 1)
    _append(manager, TopicPartition("t", 0), 40, clock)
    log = manager.get_log(TopicPartition("t", 0))
    assert log is not None
    return manager, log


def _segment_bases(directory: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log"))


def test_create_write_clean_shutdown_reopen(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock, node_id=1)
    logs = manager.create_topic("orders", 2)
    assert [log.log_end_offset for log in logs] == [0, 0]
    tp = TopicPartition("orders", 0)
    _append(manager, tp, 30, clock)
    assert len(_segment_bases(tmp_path / "orders-0")) > 2
    manager.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT).read_dict()[tp] == 60
    assert (tmp_path / "meta.properties").exists()

    again = _manager([tmp_path], clock, node_id=1)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()  # consumed at startup
    assert again.recovered_logs == set()
    log = again.get_log(tp)
    assert log is not None and log.log_end_offset == 60 and log.recovery_point == 60
    assert again.partitions_of("orders") == [tp, TopicPartition("orders", 1)]
    again.shutdown()


def test_lock_and_node_id(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock, node_id=1)
    with pytest.raises(LogDirLockedError):
        _manager([tmp_path], clock, node_id=1)
    manager.shutdown()
    with pytest.raises(InconsistentNodeIdError):
        _manager([tmp_path], clock, node_id=2)
    _manager([tmp_path], clock, node_id=1).shutdown()  # the failed start released its lock


def _index_bytes(directory: Path, base: int) -> bytes:
    return (directory / f"{base:020d}.index").read_bytes()


def test_unclean_shutdown_recovers_only_after_recovery_point(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("t", 1)
    tp = TopicPartition("t", 0)
    _append(manager, tp, 40, clock)
    directory = tmp_path / "t-0"
    bases = _segment_bases(directory)
    assert len(bases) >= 4
    manager.shutdown()
    early, late = bases[0], bases[-2]
    early_index, late_index = _index_bytes(directory, early), _index_bytes(directory, late)
    assert early_index and late_index

    # crash: no marker, and a recovery point between the two segments
    (tmp_path / ".kafka_cleanshutdown").unlink()
    offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT).write({tp: bases[-3]})
    garbage = b"\x7f\xff\xff\xff\x00\x00\x00\x00" * 3
    (directory / f"{early:020d}.index").write_bytes(early_index + garbage)
    (directory / f"{late:020d}.index").write_bytes(late_index + garbage)
    with open(directory / f"{bases[-1]:020d}.log", "ab") as handle:
        handle.write(b"\x00\x00\x00")  # a torn write at the end of the active segment

    again = _manager([tmp_path], clock)
    assert again.recovered_logs == {tp}
    log = again.get_log(tp)
    assert log is not None and log.log_end_offset == 80
    again.shutdown()
    assert _index_bytes(directory, early) == early_index + garbage  # below the recovery point: not touched
    assert _index_bytes(directory, late) == late_index  # at or above it: rebuilt from the log


def test_add_partitions_and_refuse_decrease(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("t", 2)
    new = manager.add_partitions("t", 5)
    assert len(new) == 3
    assert manager.partitions_of("t") == [TopicPartition("t", p) for p in range(5)]
    with pytest.raises(InvalidPartitionsError) as info:
        manager.add_partitions("t", 3)
    assert (info.value.current, info.value.requested) == (5, 3)
    assert "never removed" in str(info.value)
    with pytest.raises(InvalidPartitionsError, match="already has 5"):
        manager.add_partitions("t", 5)
    with pytest.raises(TopicExistsError):
        manager.create_topic("t", 1)
    with pytest.raises(InvalidPartitionsError):
        manager.create_topic("u", 0)
    with pytest.raises(InvalidTopicError):
        manager.create_topic("bad name", 1)
    manager.create_topic("a_b", 1)
    with pytest.raises(InvalidTopicError, match="collides"):
        manager.create_topic("a.b", 1)
    manager.shutdown()


def test_delete_topic(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("gone", 2, {"retention.ms": 1000})
    manager.create_topic("kept", 1)
    _append(manager, TopicPartition("gone", 0), 3, clock)
    renamed = manager.delete_topic("gone")
    assert all(p.name.endswith("-delete") and p.exists() for p in renamed)
    assert not (tmp_path / "gone-0").exists()
    assert manager.partitions_of("gone") == []
    assert manager.delete_pending(clock.milliseconds()) == []  # file.delete.delay.ms not yet passed
    clock.advance(60_001)
    assert sorted(manager.delete_pending(clock.milliseconds())) == sorted(renamed)
    assert not any(p.exists() for p in renamed)
    manager.shutdown()
    again = _manager([tmp_path], clock)
    assert again.topics() == {"kept"}
    assert again.topic_overrides("gone") == {}
    again.shutdown()


def test_delete_dirs_left_by_a_crash_are_removed_not_loaded(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("t", 1)
    renamed = manager.delete_log(TopicPartition("t", 0))
    manager.shutdown()
    again = _manager([tmp_path], clock)
    assert again.get_log(TopicPartition("t", 0)) is None
    assert again.pending_deletes == [renamed]
    again.cleanup_logs(clock.milliseconds())
    assert not renamed.exists()
    again.shutdown()


def test_two_log_dirs_balanced(tmp_path: Path) -> None:
    clock = ManualClock()
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = _manager(dirs, clock)
    manager.create_topic("t", 5)
    manager.create_topic("u", 3)
    counts = partition_counts(manager)
    assert sorted(counts.values()) == [4, 4]
    for tp in manager.all_logs():
        assert (manager.log_dir_of(tp) / f"{tp.topic}-{tp.partition}").is_dir()
    manager.shutdown()
    again = _manager(dirs, clock)
    assert partition_counts(again) == counts
    again.shutdown()


def test_topic_config_overrides_survive_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("t", 1, {"retention.ms": 5000})
    assert manager.topic_config("t").retention_ms == 5000
    assert manager.topic_config("other").retention_ms == _config().retention_ms
    manager.shutdown()
    again = _manager([tmp_path], clock)
    assert again.topic_overrides("t") == {"retention.ms": "5000"}
    log = again.get_log(TopicPartition("t", 0))
    assert log is not None and log.config.retention_ms == 5000
    again.shutdown()


@pytest.mark.parametrize(
    "damage", [b"", b"# topic-level config overrides for t\n", b"\xff\xfe\x00", b"retention.ms\\"]
)
def test_a_damaged_topic_config_stops_the_start_rather_than_give_the_topic_the_defaults(
    tmp_path: Path, damage: bytes
) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": "65536"})
    manager.shutdown()
    path = tmp_path / "topic-config.t.properties"
    path.write_bytes(damage)
    with pytest.raises(
        TopicConfigFileError, match=r"topic-config\.t\.properties .*restore the file, or delete it"
    ):
        _manager([tmp_path], clock)
    path.unlink()  # the operator's choice: the defaults
    again = _manager([tmp_path], clock)
    assert again.topic_overrides("t") == {}
    again.shutdown()


def test_a_damaged_topic_config_in_one_log_dir_is_read_from_another(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = _manager(dirs, clock)
    manager.create_topic("t", 2, {"cleanup.policy": "compact"})
    manager.shutdown()
    (dirs[0] / "topic-config.t.properties").write_bytes(b"")
    again = _manager(dirs, clock)
    assert again.topic_overrides("t") == {"cleanup.policy": "compact"}
    assert "holds no settings: topic t takes its config from another log dir" in caplog.text
    again.shutdown()


def test_retention_through_the_manager(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("short", 1, {"retention.ms": 60_000})
    manager.create_topic("long", 1)
    for topic in ("short", "long"):
        _append(manager, TopicPartition(topic, 0), 20, clock)
    short_before = _segment_bases(tmp_path / "short-0")
    assert manager.cleanup_logs(clock.milliseconds()) == 0
    clock.advance(61_000)
    deleted = manager.cleanup_logs(clock.milliseconds())
    assert deleted == len(short_before)  # every segment expired: rolled first, then all old ones deleted
    short = manager.get_log(TopicPartition("short", 0))
    assert short is not None and short.log_start_offset == 40 and short.log_end_offset == 40
    assert len(_segment_bases(tmp_path / "long-0")) > 1
    long = manager.get_log(TopicPartition("long", 0))
    assert long is not None and long.maybe_increment_log_start_offset(5)  # DeleteRecords inside a segment
    manager.checkpoint_log_start_offsets()
    starts = offset_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT).read_dict()
    assert starts == {TopicPartition("long", 0): 5}  # only starts above the first segment's base are kept
    manager.checkpoint_high_watermarks()
    hws = offset_checkpoint(tmp_path / REPLICATION_OFFSET_CHECKPOINT).read_dict()
    assert hws == {TopicPartition("short", 0): 40, TopicPartition("long", 0): 40}
    manager.shutdown()
    again = _manager([tmp_path], clock)
    log = again.get_log(TopicPartition("short", 0))
    assert log is not None and log.log_start_offset == 40 and log.high_watermark == 40
    long = again.get_log(TopicPartition("long", 0))
    assert long is not None and long.log_start_offset == 5
    assert again.read_high_watermarks()[TopicPartition("long", 0)] == 40
    again.shutdown()


def test_schedule_due_runs_tasks_on_their_intervals(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock, high_watermark_checkpoint_interval_ms=5000)
    manager.create_topic("t", 1)
    assert manager.schedule_due(clock.milliseconds()) == []
    clock.advance(5000)
    assert manager.schedule_due(clock.milliseconds()) == [
        "deletes",
        "reserve",
        "hw",
    ]  # every second: the first two
    assert (tmp_path / REPLICATION_OFFSET_CHECKPOINT).exists()
    clock.advance(300_000)
    assert set(manager.schedule_due(clock.milliseconds())) == {
        "retention",
        "deletes",
        "reserve",
        "recovery",
        "start",
        "hw",
    }
    manager.shutdown()


def test_clean_shutdown_checks_an_older_segment_when_it_is_first_read(tmp_path: Path) -> None:
    clock = ManualClock()
    manager, _ = _forty_batches(tmp_path, clock)
    tp = TopicPartition("t", 0)
    manager.shutdown()
    directory = tmp_path / "t-0"
    late = _segment_bases(directory)[-2]
    good = _index_bytes(directory, late)
    corrupted = good + b"\x7f\xff\xff\xff\x00\x00\x00\x00"
    (directory / f"{late:020d}.index").write_bytes(corrupted)
    again = _manager(
        [tmp_path], clock
    )  # the marker is there: no recovery at start, the active segment checked
    assert again.recovered_logs == set()
    assert _index_bytes(directory, late) == corrupted  # not read yet, so not checked yet
    log = again.get_log(tp)
    assert log is not None
    data = log.read(late, 10_000).records.read_bytes()  # the first read checks it: the bad entry is found
    assert next(b.base_offset for b in iter_batches(data)) == late
    again.shutdown()
    assert _index_bytes(directory, late) == good


def test_periodic_tasks_survive_a_full_disk_and_retention_still_frees_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock, retention_check_interval_ms=1000, flush_checkpoint_interval_ms=1000)
    manager.create_topic("short", 1, {"retention.ms": 60_000})
    _append(manager, TopicPartition("short", 0), 20, clock)
    before = len(_segment_bases(tmp_path / "short-0"))

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("samsa.storage.checkpoint.CheckpointFile.write", full)
    clock.advance(61_000)
    with caplog.at_level("WARNING"):
        for _ in range(30):  # thirty seconds of ticks: the failing checkpoint says so once
            ran = manager.schedule_due(clock.milliseconds())
            clock.advance(1000)
    assert "retention" in ran and "recovery" not in ran
    assert len(_segment_bases(tmp_path / "short-0")) < before  # retention ran and freed space
    assert sum("periodic task recovery failed" in m for m in caplog.messages) == 1
    monkeypatch.undo()
    clock.advance(1000)
    assert "recovery" in manager.schedule_due(clock.milliseconds())
    manager.shutdown()


def test_unparsable_directory_fails_startup_and_releases_the_lock(tmp_path: Path) -> None:
    from samsa.storage.log_manager import LogManagerError

    (tmp_path / "not_a_partition").mkdir()
    with pytest.raises(LogManagerError, match="not_a_partition"):
        _manager([tmp_path], ManualClock())
    (tmp_path / "not_a_partition").rmdir()
    _manager([tmp_path], ManualClock()).shutdown()


def test_flush_dirty_logs_honours_flush_ms(tmp_path: Path) -> None:
    clock = ManualClock()
    manager = _manager([tmp_path], clock)
    manager.create_topic("fast", 1, {"flush.ms": 1000, "segment.bytes": 1_000_000})
    manager.create_topic("lazy", 1, {"segment.bytes": 1_000_000})
    for topic in ("fast", "lazy"):
        _append(manager, TopicPartition(topic, 0), 3, clock)
    assert manager.flush_dirty_logs(clock.milliseconds()) == []
    clock.advance(1000)
    assert manager.flush_dirty_logs(clock.milliseconds()) == [TopicPartition("fast", 0)]
    fast, lazy = manager.get_log(TopicPartition("fast", 0)), manager.get_log(TopicPartition("lazy", 0))
    assert fast is not None and lazy is not None
    assert (fast.recovery_point, lazy.recovery_point) == (6, 0)
    manager.checkpoint_recovery_points()
    points = offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT).read_dict()
    assert points == {TopicPartition("fast", 0): 6, TopicPartition("lazy", 0): 0}
    manager.shutdown()


def test_invalid_override_creates_nothing(tmp_path: Path) -> None:
    from samsa.storage.errors import InvalidConfigError

    manager = _manager([tmp_path], ManualClock())
    with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
        manager.create_topic("t", 1, {"retention.ms": "soon"})
    assert manager.topics() == set()
    assert not list(tmp_path.glob("topic-config.*"))
    manager.shutdown()


def test_a_topic_created_beyond_the_open_files_limit_is_removed_again_and_frees_its_descriptors(
    tmp_path: Path,
) -> None:
    import os
    import resource

    manager = _manager([tmp_path / "d"], ManualClock())
    manager.create_topic("kept", 1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_before = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_before + 40, hard))  # room for about a dozen logs
    try:
        with pytest.raises(OSError):
            manager.create_topic("many", 50, {"cleanup.policy": "compact"})
        open_after = len(os.listdir("/proc/self/fd"))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert open_after <= open_before + 1  # the logs made before the failure closed again (+1: the listing)
    assert manager.partitions_of("many") == [] and "many" not in manager.topics()
    assert not list((tmp_path / "d").glob("many-*"))
    assert manager.topic_overrides("many") == {}
    manager.create_topic("many", 5)  # nothing left in the way
    assert len(manager.partitions_of("many")) == 5 and manager.get_log(TopicPartition("kept", 0)) is not None
    manager.shutdown()


def test_a_topic_is_deleted_on_a_full_disk_and_stays_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting writes nothing the deletion needs (the log's files are closed as they are, as Kafka does): a
    full disk neither stops it half-way nor brings the topic back at the next start."""
    import errno
    import os

    clock = ManualClock()
    manager = _manager([tmp_path / "d"], clock)
    manager.create_topic("junk", 2, {"retention.ms": "1000"})
    manager.create_topic("kept", 1)
    for partition in (0, 1):
        _append(manager, TopicPartition("junk", partition), 3, clock)

    def full(*args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", full)
        patch.setattr(os, "pwrite", full)
        manager.delete_topic("junk")
    assert "junk" not in manager.topics() and manager.topic_overrides("junk") == {}
    assert not list((tmp_path / "d").glob("junk-[0-9]"))  # renamed to *-delete, removed later
    manager.shutdown()
    again = _manager([tmp_path / "d"], ManualClock())
    assert again.topics() == {"kept"}
    again.shutdown()


@pytest.mark.parametrize("clean", [True, False], ids=["clean stop", "kill -9"])
def test_a_log_start_checkpoint_beyond_the_log_end_deletes_nothing(
    tmp_path: Path, clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong log-start-offset-checkpoint line once deleted every segment of the partition without a word. After
    a clean stop it is not believed (the stop checkpointed the end with it); after a crash the end may have been
    lost, so the records go as it says, but their segments are set aside, not deleted, and said at WARN."""
    clock = ManualClock()
    manager = _manager([tmp_path], clock, node_id=1)
    manager.create_topic("orders", 1)
    tp = TopicPartition("orders", 0)
    _append(manager, tp, 30, clock)
    segments = _segment_bases(tmp_path / "orders-0")
    manager.shutdown()
    if not clean:
        (tmp_path / ".kafka_cleanshutdown").unlink()
    offset_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT).write({tp: 100_000})
    again = _manager([tmp_path], clock, node_id=1)
    log = again.get_log(tp)
    assert log is not None
    if clean:
        assert log.log_start_offset == 0 and log.log_end_offset == 60
        assert [r.offset for r in log_records(log)] == list(range(60))
        assert "not believed" in caplog.text
    else:
        assert log.log_start_offset == 100_000 and log.log_end_offset == 100_000
        kept = sorted(int(p.name.split(".")[0]) for p in (tmp_path / "orders-0").glob("*.log.salvage"))
        assert kept == segments
        assert "set aside" in caplog.text and "below its log start offset 100000" in caplog.text
    again.shutdown()


def test_unreadable_checkpoints_and_snapshots_are_said_at_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Garbage in a checkpoint or a producer snapshot is treated as missing (the log is rebuilt or recovered
    without it), and said: it used to be ignored without a word."""
    clock = ManualClock()
    manager = _manager([tmp_path], clock, node_id=1)
    manager.create_topic("orders", 1)
    tp = TopicPartition("orders", 0)
    _append(manager, tp, 30, clock)
    manager.shutdown()
    damaged = [
        tmp_path / RECOVERY_POINT_CHECKPOINT,
        tmp_path / LOG_START_OFFSET_CHECKPOINT,
        tmp_path / REPLICATION_OFFSET_CHECKPOINT,
        tmp_path / "orders-0" / "leader-epoch-checkpoint",
        *sorted((tmp_path / "orders-0").glob("*.snapshot")),
    ]
    assert len(damaged) > 4
    for path in damaged:
        path.write_bytes(b"\x00garbage\nnot a checkpoint\n")
    again = _manager([tmp_path], clock, node_id=1)
    log = again.get_log(tp)
    assert log is not None and [r.offset for r in log_records(log)] == list(range(60))
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    for path in damaged:
        assert any(str(path) in line and "cannot be read" in line for line in warned), path
    again.shutdown()


def test_deleted_files_go_once_their_delay_passes_not_at_the_next_retention_check(tmp_path: Path) -> None:
    """A deleted topic's directories and segments marked by retention are removed once ``file.delete.delay.ms``
    passed, as Kafka does: a probe saw them stay up to the next retention check, five minutes by default."""
    clock = ManualClock()
    manager = _manager([tmp_path], clock, retention_check_interval_ms=300_000)
    manager.create_topic("gone", 2)
    manager.create_topic("aged", 1, {"retention.ms": 1000, "file.delete.delay.ms": 1000})
    aged = TopicPartition("aged", 0)
    _append(manager, aged, 30, clock)
    clock.advance(300_000)
    manager.schedule_due(clock.milliseconds())  # retention: the aged segments are marked
    renamed = manager.delete_topic("gone")
    marked = list((tmp_path / "aged-0").glob("*.deleted"))
    assert marked and all(p.exists() for p in renamed)
    clock.advance(1_000)
    manager.schedule_due(clock.milliseconds())
    assert not any(p.exists() for p in marked)  # a second after, not five minutes
    clock.advance(60_000)
    manager.schedule_due(clock.milliseconds())
    assert not any(p.exists() for p in renamed)
    manager.shutdown()


def test_a_lower_retention_applies_at_once_and_other_config_changes_wait_for_the_retention_check(
    tmp_path: Path,
) -> None:
    manager, log = _forty_batches(tmp_path, ManualClock())
    before = len(log.segments)
    manager.update_topic_config("t", {"max.message.bytes": "500000"})
    assert len(log.segments) == before  # nothing to do with retention: left to the periodic check
    manager.update_topic_config("t", {"max.message.bytes": "500000", "retention.bytes": "2048"})
    assert len(log.segments) < before and log.size <= 2048 + 1024  # no schedule_due called
    manager.shutdown()


def test_segments_below_a_moved_log_start_can_go_at_once(tmp_path: Path) -> None:
    manager, log = _forty_batches(tmp_path, ManualClock())
    bases = sorted(s.base_offset for s in log.segments)
    log.maybe_increment_log_start_offset(bases[2] + 1)
    assert log.delete_segments_below_log_start() == 2
    assert sorted(s.base_offset for s in log.segments)[0] == bases[2]
    manager.shutdown()
