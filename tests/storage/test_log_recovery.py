"""Loading and recovery (spec 7.3-7.6, 12.7): torn tails, garbage, damaged indexes, leftovers of swaps.

Oracle: after any damage past a point, a reopened log holds exactly the complete batches before the damage,
and every segment's ``.index`` / ``.timeindex`` equals one computed from the ``.log`` by the rule of 7.4.
"""

from __future__ import annotations

import errno
import logging
import os
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import decode_all, leader_batch, log_records, small_config, v2

from samsa.clock import ManualClock
from samsa.records import iter_batches
from samsa.storage import index as index_module
from samsa.storage.file_records import FileRecords
from samsa.storage.log import FetchIsolation, Log
from samsa.storage.segment import LogSegment

INTERVAL = 150
CONFIG = small_config(segment_bytes=1200, index_interval_bytes=INTERVAL, segment_index_bytes=4096)


def build(directory: Path, clock: ManualClock, batches: int = 40) -> list[bytes]:
    """A crashed log (no close) of ``batches`` batches of 1-3 records; returns the batches as written."""
    log = Log.open(directory, CONFIG, clock, flush_on_roll=False)
    rng = random.Random(5)
    for i in range(batches):
        n = rng.randint(1, 3)
        log.append_as_leader(
            v2(list(range(n)), [1000 + i] * n, [os.urandom(rng.randint(0, 40)) for _ in range(n)]),
            leader_epoch=i // 10,
        )
    crash(log)
    return [bytes(b.raw()) for s in sorted(directory.glob("*.log")) for b in iter_batches(s.read_bytes())]


def crash(log: Log) -> None:
    """Release files without trimming, as a killed process leaves them."""
    for segment in log.segments:
        segment.offset_index.flush()
        segment.time_index.flush()
        segment.close_handlers()


def expected_indexes(data: bytes, base: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Offset and time index entries for a .log's bytes, by the recovery rule (7.4)."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    valid = last_entry = 0
    max_ts, max_off = -1, base
    for batch in iter_batches(data):
        if batch.max_timestamp > max_ts:
            max_ts, max_off = batch.max_timestamp, batch.last_offset
        if valid - last_entry > INTERVAL:
            offsets.append((batch.last_offset, valid))
            if not times or max_ts > times[-1][0]:
                times.append((max_ts, max_off))
            last_entry = valid
        valid += batch.size_in_bytes
    if max_ts >= 0 and (not times or max_ts > times[-1][0]):
        times.append((max_ts, max_off))
    return offsets, times


def check_indexes(log: Log) -> None:
    for segment in log.segments:
        data = segment.log.read(0, segment.size)
        offsets, times = expected_indexes(data, segment.base_offset)
        got_offsets = [
            (e.offset, e.position)
            for e in (segment.offset_index.entry(i) for i in range(segment.offset_index.entries))
        ]
        got_times = [
            (e.timestamp, e.offset)
            for e in (segment.time_index.entry(i) for i in range(segment.time_index.entries))
        ]
        assert got_offsets == offsets, segment
        assert got_times == times, segment


def reopen(directory: Path, clock: ManualClock, recovery_point: int = 0, clean: bool = False) -> Log:
    return Log.open(
        directory, CONFIG, clock, recovery_point=recovery_point, had_clean_shutdown=clean, flush_on_roll=False
    )


def expected_offsets(batches: list[bytes]) -> list[int]:
    out: list[int] = []
    for raw in batches:
        (b,) = iter_batches(raw)
        out.extend(range(b.base_offset, b.last_offset + 1))
    return out


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    directory = tmp_path_factory.mktemp("pristine") / "t-0"
    batches = build(directory, ManualClock())
    return directory, batches


def copy(pristine: tuple[Path, list[bytes]], tmp_path: Path, name: str = "t-0") -> Path:
    target = tmp_path / name
    shutil.copytree(pristine[0], target)
    return target


def last_log(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def test_unclean_reopen_without_damage(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    log = reopen(directory, clock)
    assert [r.offset for r in log_records(log)] == expected_offsets(pristine[1])
    assert log.log_end_offset == len(expected_offsets(pristine[1]))
    assert len(log.segments) > 3
    check_indexes(log)
    epochs = [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()]
    assert epochs[0] == (0, 0) and [e for e, _ in epochs] == [0, 1, 2, 3]


def test_cut_at_every_byte_of_the_last_batches(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    source = last_log(pristine[0])
    data = source.read_bytes()
    batches = list(iter_batches(data))
    assert len(batches) >= 2
    start = batches[-2].position
    complete_before = [bytes(b.raw()) for b in batches]
    earlier = [b for b in pristine[1] if b not in complete_before]
    work = copy(pristine, tmp_path)
    saved = {p.name: p.read_bytes() for p in work.iterdir()}
    for cut in range(start, len(data) + 1):
        for p in work.iterdir():
            if p.is_file():
                p.unlink()
        for name, content in saved.items():
            (work / name).write_bytes(content)
        with open(work / source.name, "r+b") as f:
            f.truncate(cut)
        log = reopen(work, clock)
        kept = [bytes(b.raw()) for b in batches if b.end <= cut]
        assert [r.offset for r in log_records(log)] == expected_offsets(earlier + kept), cut
        check_indexes(log)
        crash(log)


@pytest.mark.parametrize(
    "garbage", [b"\0" * 100, b"\xff" * 7, b"\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x40garbage", None]
)
def test_garbage_after_the_last_batch(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock, garbage: bytes | None
) -> None:
    directory = copy(pristine, tmp_path)
    tail = garbage if garbage is not None else random.Random(1).randbytes(500)
    with open(last_log(directory), "ab") as f:
        f.write(tail)
    log = reopen(directory, clock, recovery_point=log_end(pristine))
    assert [r.offset for r in log_records(log)] == expected_offsets(pristine[1])
    check_indexes(log)
    log.append_as_leader(v2([0]))
    assert log.log_end_offset == log_end(pristine) + 1


def log_end(pristine: tuple[Path, list[bytes]]) -> int:
    return len(expected_offsets(pristine[1]))


DAMAGES = {
    "deleted": None,
    "zeros": lambda n: b"\0" * n,
    "random": lambda n: random.Random(n).randbytes(n),
    "wrong size": lambda n: b"\0\0\0",
    "two spaces": lambda n: b"  ",
}


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("which", [0, -1])
def test_damaged_index_is_rebuilt(
    pristine: tuple[Path, list[bytes]],
    tmp_path: Path,
    clock: ManualClock,
    damage: str,
    suffix: str,
    which: int,
) -> None:
    directory = copy(pristine, tmp_path)
    target = sorted(directory.glob("*" + suffix))[which]
    make = DAMAGES[damage]
    if make is None:
        target.unlink()
    else:
        target.write_bytes(make(max(1, target.stat().st_size)))
    log = reopen(directory, clock)
    assert [r.offset for r in log_records(log)] == expected_offsets(pristine[1])
    check_indexes(log)
    for offset in range(0, log.log_end_offset, 7):
        info = log.read(offset, 1, FetchIsolation.LOG_END, min_one_message=True)
        assert any(r.offset == offset for r in decode_all(info.read_bytes()))
    found = log.fetch_offset_by_timestamp(1000)
    assert found is not None and found.offset == 0
    last = log.fetch_offset_by_timestamp(1039)
    assert last is not None and last.timestamp == 1039


def test_missing_index_below_recovery_point_is_recovered(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    first = sorted(directory.glob("*.index"))[0]
    first.unlink()
    log = reopen(directory, clock, recovery_point=log_end(pristine))
    assert first.exists()
    segment = log.segments.first_segment()
    assert segment is not None
    offsets, _ = expected_indexes(segment.log.read(0, segment.size), segment.base_offset)
    assert [
        (e.offset, e.position)
        for e in (segment.offset_index.entry(i) for i in range(segment.offset_index.entries))
    ] == offsets


def test_missing_time_index_below_recovery_point_is_empty(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock)
    for i in range(30):
        log.append_as_leader(v2([0, 1], [i, i]))
    log.close()
    first = sorted(directory.glob("*.timeindex"))[0]
    first.unlink()
    again = reopen(directory, clock, recovery_point=60, clean=True)
    assert first.exists() and first.stat().st_size == 0
    assert [r.offset for r in log_records(again)] == list(range(60))


def test_corruption_in_a_middle_segment_sets_the_later_ones_aside(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    logs = sorted(directory.glob("*.log"))
    middle = logs[1]
    data = bytearray(middle.read_bytes())
    batches = list(iter_batches(bytes(data)))
    data[batches[2].position + 40] ^= 0xFF  # flip a CRC-covered byte of the third batch
    middle.write_bytes(bytes(data))
    later = {path: path.read_bytes() for path in logs[2:]}
    claimed = max(b.next_offset for path in logs[2:] for b in iter_batches(later[path]))
    log = reopen(directory, clock)
    kept = [bytes(b.raw()) for b in iter_batches(logs[0].read_bytes())] + [
        bytes(b.raw()) for b in batches[:2]
    ]
    assert [r.offset for r in log_records(log)] == expected_offsets(kept)
    # the valid later segments are renamed, byte for byte, not deleted; their offsets are never handed out again
    for path, content in later.items():
        assert not path.exists()
        assert path.with_name(path.name + ".salvage").read_bytes() == content
    assert log.log_end_offset == claimed and log.active_segment.base_offset == claimed
    check_indexes(log)
    info = log.append_as_leader(leader_batch(1))
    assert info.first_offset == claimed


def test_recovery_point_is_kept_until_flush(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    log = reopen(directory, clock, recovery_point=10)
    assert log.recovery_point == 10 and log.log_end_offset == log_end(pristine)
    log.flush(log.log_end_offset)
    assert log.recovery_point == log.log_end_offset


def test_clean_shutdown_skips_recovery(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock)
    for i in range(30):
        log.append_as_leader(v2([0], [i]))
    log.close()
    index = sorted(directory.glob("*.index"))[-1]
    before = index.read_bytes()
    again = reopen(directory, clock, recovery_point=0, clean=True)
    assert again.log_end_offset == 30 and again.recovery_point == 30
    assert index.read_bytes()[: len(before)] == before


def test_leftover_files(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock)
    for i in range(30):
        log.append_as_leader(v2([0], [i]))
    log.close()
    (directory / "00000000000000000005.index").write_bytes(b"")  # orphan index, no .log
    (directory / "00000000000000000005.timeindex").write_bytes(b"")
    (directory / "00000000000000000099.log.deleted").write_bytes(b"x")
    (directory / "00000000000000000099.log.cleaned").write_bytes(b"x")
    (directory / "00000000000000000100.log.swap").write_bytes(b"")  # >= min cleaned: an unfinished op
    (directory / "snapshot.checkpoint.deleted").write_bytes(b"kept")
    again = reopen(directory, clock, recovery_point=30, clean=True)
    names = {p.name for p in directory.iterdir()}
    assert "00000000000000000005.index" not in names and "00000000000000000005.timeindex" not in names
    assert not any(n.endswith((".deleted", ".cleaned", ".swap")) and "checkpoint" not in n for n in names)
    assert "snapshot.checkpoint.deleted" in names
    assert again.log_end_offset == 30


def test_a_segment_whose_log_is_gone_is_named_with_the_offsets_it_held(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    directory = copy(pristine, tmp_path)
    logs = sorted(directory.glob("*.log"))
    gone, after = (int(p.name[:20]) for p in logs[1:3])
    logs[1].unlink()
    with caplog.at_level(logging.WARNING, logger="samsa.storage.log_loader"):
        reopen(directory, clock, clean=True)
    said = [r.getMessage() for r in caplog.records if "has no .log" in r.getMessage()]
    assert len(said) == 1  # one line for the segment, not one per index file
    assert f"the segment at offset {gone} has no .log" in said[0]
    assert f"whatever it held, offsets {gone} to {after - 1}, is not in the log" in said[0]


def test_complete_swap_replaces_old_segments(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock, flush_on_roll=False)
    for i in range(40):
        log.append_as_leader(v2([0], [i], [b"x" * 30]))
    bases = log.segments.base_offsets()
    log.close()
    assert len(bases) >= 3
    # a "cleaned" replacement for the first two segments, crashed after the rename to .swap
    first_two = b"".join((directory / f"{b:020d}.log").read_bytes() for b in bases[:2])
    swap = LogSegment.open(directory, 0, CONFIG, clock, file_suffix=".swap")
    swap.log.append(first_two)
    swap.close()
    again = reopen(directory, clock, recovery_point=40, clean=True)
    assert again.segments.base_offsets() == [0, *bases[2:]]
    assert [r.offset for r in log_records(again)] == list(range(40))
    assert not list(directory.glob("*.swap"))


def test_log_end_below_log_start_after_reopen(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    first, *later = sorted(directory.glob("*.log"))
    for path in later:  # one segment, as in Kafka's test (later ones would be set aside and continue the log)
        path.unlink()
    for path in directory.glob("*.snapshot"):  # and no producer snapshot beyond it (one would, too)
        path.unlink()
    with open(first, "r+b") as f:
        f.truncate(70)
    log = Log.open(directory, CONFIG, clock, recovery_point=0, log_start_offset=4, had_clean_shutdown=False)
    assert log.segments.base_offsets() == [4] and log.log_end_offset == 4 and log.log_start_offset == 4
    assert first.with_name(first.name + ".salvage").exists()  # set aside, not deleted
    assert {p.suffix for p in directory.glob("00000000000000000004.*")} >= {".log", ".index", ".timeindex"}


def test_epochs_rebuilt_from_batches(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock)
    log.append_as_leader(v2([0]), leader_epoch=1)
    log.append_as_leader(v2([0, 1]), leader_epoch=2)
    log.append_as_leader(v2([0]), leader_epoch=3)
    crash(log)
    (directory / "leader-epoch-checkpoint").unlink()
    again = reopen(directory, clock)
    assert [(e.epoch, e.start_offset) for e in again.leader_epoch_cache.entries()] == [(1, 0), (2, 1), (3, 3)]
    assert (directory / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n2 1\n3 3\n"


def test_recovery_on_a_full_disk_starts_and_the_next_append_waits_for_room(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No index entry can be written at start (the rebuilt indexes, nor the entries kept in memory before the
    active segment is sized for appends): the log still opens with every batch readable; appends are refused
    while the disk is full and go on once there is room, and a clean close leaves sound indexes (a full-disk
    client test hit it)."""
    written = build(tmp_path, clock)
    real_pwrite = os.pwrite

    def full_disk(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(index_module.os, "pwrite", full_disk)
    log = Log.open(tmp_path, CONFIG, clock, recovery_point=0)
    assert [r.offset for r in log_records(log)] == expected_offsets(written)
    with pytest.raises(OSError):
        log.append_as_leader(leader_batch(1), leader_epoch=9)
    assert [r.offset for r in log_records(log)] == expected_offsets(written)
    monkeypatch.setattr(index_module.os, "pwrite", real_pwrite)
    info = log.append_as_leader(leader_batch(1), leader_epoch=9)
    assert info.first_offset == len(expected_offsets(written))
    assert [r.offset for r in log_records(log)] == [*expected_offsets(written), info.first_offset]
    log.close()
    # what the full disk held back is on disk now, indexes included
    again = reopen(tmp_path, clock, clean=True)
    assert [r.offset for r in log_records(again)] == [*expected_offsets(written), info.first_offset]
    check_indexes(again)  # those the full disk kept from being written were rebuilt at this start


def test_recover_with_empty_active_segment_without_index(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock, flush_on_roll=False)
    log.append_as_leader(v2([0, 1]))
    log.roll()
    assert not (directory / "00000000000000000002.index").exists()
    crash(log)
    again = reopen(directory, clock)
    assert (directory / "00000000000000000002.index").exists()
    assert again.active_segment.base_offset == 2 and again.active_segment.time_index.entries == 0
    assert again.log_end_offset == 2


def test_empty_log_loads_and_appends(tmp_path: Path, clock: ManualClock) -> None:
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(b"")
    (directory / "00000000000000000000.index").write_bytes(b"")
    log = reopen(directory, clock)
    assert log.log_end_offset == 0
    log.append_as_leader(v2([0]))
    assert log.log_end_offset == 1


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_damage_keeps_exactly_the_prefix(
    pristine: tuple[Path, list[bytes]], tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    directory = copy(pristine, tmp_path_factory.mktemp("rnd"))
    logs = sorted(directory.glob("*.log"))
    victim = data.draw(st.sampled_from(logs))
    content = victim.read_bytes()
    cut = data.draw(st.integers(0, len(content)))
    tail = data.draw(st.binary(max_size=80))
    victim.write_bytes(content[:cut] + tail)
    for index in directory.glob("*.index"):
        if data.draw(st.booleans()):
            index.write_bytes(data.draw(st.binary(max_size=40)))
    log = reopen(directory, ManualClock())
    before = [p for p in logs if p < victim]
    kept = [bytes(b.raw()) for p in before for b in iter_batches(p.read_bytes())]
    survivors = []
    position = 0
    damaged = content[:cut] + tail
    for b in iter_batches(content):
        raw = bytes(b.raw())
        if damaged[position : position + len(raw)] == raw:
            survivors.append(raw)
            position += len(raw)
        else:
            break
    got = [r.offset for r in log_records(log)]
    prefix = expected_offsets(kept + survivors)
    if position < len(damaged):
        assert got == prefix  # bytes were cut: nothing after the damage survives
    else:
        # a cut exactly at a batch boundary is not detected (as in Kafka): later segments stay
        later = [bytes(b.raw()) for p in logs if p > victim for b in iter_batches(p.read_bytes())]
        assert got == prefix + expected_offsets(later)
    check_indexes(log)
    crash(log)


@pytest.mark.parametrize("recovery_point", [None, 10])
def test_log_recovers_to_correct_offset(
    tmp_path: Path, clock: ManualClock, recovery_point: int | None
) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, clock, flush_on_roll=False)
    for i in range(40):
        log.append_as_leader(v2([0, 1], [5000 + i, 5000 + i]))
    leo = log.log_end_offset
    active = log.active_segment
    index_state = (active.offset_index.entries, active.offset_index.last_offset)
    crash(log)
    point = leo if recovery_point is None else recovery_point
    again = reopen(directory, clock, recovery_point=point)
    assert again.log_end_offset == leo and again.recovery_point == min(point, leo)
    new_active = again.active_segment
    assert (new_active.offset_index.entries, new_active.offset_index.last_offset) == index_state
    assert new_active.time_index.last_entry.timestamp == 5039
    assert new_active.time_index.last_entry.offset == leo - 1


def test_bytes_cut_after_a_corrupt_batch_are_kept_and_its_offsets_never_handed_out_again(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    active = last_log(directory)
    data = bytearray(active.read_bytes())
    batches = list(iter_batches(bytes(data)))
    assert len(batches) >= 3
    bad = batches[1]
    data[bad.position + 40] ^= 0xFF  # a CRC-covered byte: whole batches after it are valid
    active.write_bytes(bytes(data))
    end = log_end(pristine)
    log = reopen(directory, clock)  # after an unclean shutdown, from recovery point 0
    kept = active.with_name(f"{active.name}.cut-at-{bad.position}.salvage")
    assert kept.read_bytes() == bytes(data[bad.position :])  # the valid batches after the bad one included
    assert kept in log.load_report.set_aside
    # the valid batches in the bytes cut held offsets up to ``end``: the log goes on there, in a new segment
    assert log.log_end_offset == end and log.active_segment.base_offset == end
    assert [r.offset for r in log_records(log)] == expected_offsets(pristine[1])[: bad.base_offset]
    assert log.append_as_leader(leader_batch(1)).first_offset == end
    log.close()
    again = reopen(directory, clock, recovery_point=end, clean=True)  # and it stays that way
    assert again.log_end_offset == end + 1
    again.close()


LENGTH_DAMAGES = {
    "too large": 0x7FFFFF00,  # past the end of the file: the batches after it cannot be reached by its length
    "too small": 5,
    "a little long": None,  # its own length plus 7: every later header misread
}


@pytest.mark.parametrize("copy_fails", [False, True], ids=["copied", "copy fails"])
@pytest.mark.parametrize("length", LENGTH_DAMAGES.values(), ids=LENGTH_DAMAGES.keys())
def test_a_damaged_batch_length_hides_no_offset_from_recovery(
    pristine: tuple[Path, list[bytes]],
    tmp_path: Path,
    clock: ManualClock,
    monkeypatch: pytest.MonkeyPatch,
    length: int | None,
    copy_fails: bool,
) -> None:
    """The valid batches after a batch whose length field is damaged held offsets too: recovery finds them past
    the wrong length, and from the file itself, so a set-aside copy that fails (a full disk) changes nothing."""
    directory = copy(pristine, tmp_path)
    for path in directory.glob("*.snapshot"):
        path.unlink()  # only the bytes cut say where the log was
    active = last_log(directory)
    data = bytearray(active.read_bytes())
    batches = list(iter_batches(bytes(data)))
    bad = batches[1]
    wrong = bad.size_field + 7 if length is None else length
    data[bad.position + 8 : bad.position + 12] = wrong.to_bytes(4, "big")
    active.write_bytes(bytes(data))
    if copy_fails:

        def full_disk(*args: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(FileRecords, "copy_out", full_disk)
    end = log_end(pristine)
    log = reopen(directory, clock)
    assert [r.offset for r in log_records(log)] == expected_offsets(pristine[1])[: bad.base_offset]
    assert log.log_end_offset == end
    assert log.append_as_leader(leader_batch(1)).first_offset == end
    log.close()


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_valid_batches_are_found_past_any_damage_to_one_batch(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Model: damage inside one batch (its CRC-covered bytes overwritten, its length perhaps too) hides none of
    the batches after it from ``FileRecords.valid_batches_end``, and it finds none where there are none."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    counts = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=12))
    raws, offset = [], 100
    for n in counts:
        raws.append(
            v2(list(range(offset, offset + n)), values=[rng.randbytes(rng.randint(0, 300)) for _ in range(n)])
        )
        offset += n
    victim = data.draw(st.integers(0, len(raws) - 1))
    damaged = bytearray(raws[victim])
    start = data.draw(st.integers(21, len(damaged) - 1))
    stop = data.draw(st.integers(start + 1, len(damaged)))
    damaged[start:stop] = rng.randbytes(stop - start)
    if data.draw(st.booleans()):
        damaged[8:12] = rng.randbytes(4)
    assume_changed = bytes(damaged) != raws[victim]
    path = tmp_path_factory.mktemp("scan") / "00000000000000000100.log"
    path.write_bytes(b"".join(raws[:victim]) + bytes(damaged) + b"".join(raws[victim + 1 :]))
    records = FileRecords.open(path, writable=False)
    try:
        found = records.valid_batches_end(len(b"".join(raws[:victim])), 100, 100 + 2**31 - 1)
    finally:
        records.close_handlers()
    later = [b.next_offset for raw in raws[victim + 1 :] for b in iter_batches(raw)]
    if later:
        assert found == max(later)
    elif assume_changed:
        assert found == -1


def test_a_zero_filled_tail_is_cut_without_a_copy(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock
) -> None:
    directory = copy(pristine, tmp_path)
    active = last_log(directory)
    with open(active, "ab") as f:
        f.write(bytes(4096))
    log = reopen(directory, clock)
    assert log.log_end_offset == log_end(pristine)
    assert not list(directory.glob("*.salvage")) and log.load_report.set_aside == []
    log.close()


@pytest.mark.parametrize("replicated", [False, True])
def test_a_lost_tail_continues_after_the_checkpointed_end_unless_replicated(
    pristine: tuple[Path, list[bytes]], tmp_path: Path, clock: ManualClock, replicated: bool
) -> None:
    directory = copy(pristine, tmp_path)
    for path in directory.glob("*.snapshot"):
        path.unlink()  # only the checkpoints say where the log was
    active = last_log(directory)
    batches = list(iter_batches(active.read_bytes()))
    active.write_bytes(active.read_bytes()[: batches[-1].position])  # the last batch gone, on a boundary
    end = log_end(pristine)
    lost_from = end - (batches[-1].last_offset - batches[-1].base_offset + 1)
    log = Log.open(
        directory,
        CONFIG,
        clock,
        recovery_point=end,
        had_clean_shutdown=True,
        flush_on_roll=False,
        previous_end=end,
        replicated=replicated,
    )
    # a follower fetches what it lost from its leader: a gap would leave it without records the leader has
    assert log.log_end_offset == (lost_from if replicated else end)
    log.close()
