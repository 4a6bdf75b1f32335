"""ProducerStateManager: the idempotence rules, the snapshot format, and a stateful comparison with a model."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from samsa.records import build_batch
from samsa.records.batch_view import BatchView
from samsa.storage.producer_state import (
    INT32_MAX,
    NUM_BATCHES_TO_RETAIN,
    PRODUCER_ID_EXPIRATION_MS,
    BatchMetadata,
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidSequenceError,
    OutOfOrderSequenceError,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
    snapshot_file,
)

NOW = 1_700_000_000_000


def batch(pid: int, epoch: int, seq: int, count: int = 1, timestamp: int = NOW) -> BatchView:
    raw = bytearray(
        build_batch(
            [b"x"] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, timestamp=timestamp
        )
    )
    return BatchView(memoryview(raw), 0)


class Appender:
    """Drives a manager the way ``Log.append_as_leader`` does, assigning offsets from ``next_offset``."""

    def __init__(self, manager: ProducerStateManager) -> None:
        self.manager = manager
        self.next_offset = 0

    def append(self, pid: int, epoch: int, seq: int, count: int = 1) -> tuple[str, int]:
        view = batch(pid, epoch, seq, count)
        duplicate = self.manager.find_duplicate([view])
        if duplicate is not None:
            return "duplicate", duplicate.first_offset
        try:
            pending = self.manager.validate_append([view])
        except OutOfOrderSequenceError:
            return "out_of_order", -1
        except InvalidProducerEpochError:
            return "fenced", -1
        first = self.next_offset
        view.set_base_offset(first)
        self.next_offset += count
        self.manager.complete_append(pending, self.next_offset)
        return "appended", first


@pytest.fixture
def appender(tmp_path: Path) -> Appender:
    return Appender(ProducerStateManager(tmp_path))


def test_in_order_batches_are_appended_and_a_retry_gets_its_original_offset(appender: Appender) -> None:
    assert appender.append(1, 0, 0, 3) == ("appended", 0)
    assert appender.append(1, 0, 3, 2) == ("appended", 3)
    assert appender.append(1, 0, 0, 3) == ("duplicate", 0)
    assert appender.append(1, 0, 3, 2) == ("duplicate", 3)
    assert appender.append(1, 0, 5, 1) == ("appended", 5)


def test_only_the_last_five_batches_are_recognised(appender: Appender) -> None:
    for i in range(NUM_BATCHES_TO_RETAIN + 1):
        assert appender.append(1, 0, i) == ("appended", i)
    assert appender.append(1, 0, 0) == ("out_of_order", -1)  # too old to be answered: Kafka says out of order
    for i in range(1, NUM_BATCHES_TO_RETAIN + 1):
        assert appender.append(1, 0, i) == ("duplicate", i)


def test_a_gap_is_out_of_order_and_a_partial_overlap_is_not_a_duplicate(appender: Appender) -> None:
    appender.append(1, 0, 0, 3)
    assert appender.append(1, 0, 4) == ("out_of_order", -1)
    assert appender.append(1, 0, 1, 2) == ("out_of_order", -1)
    assert appender.append(1, 0, 3) == ("appended", 3)


def test_an_older_epoch_is_fenced_and_a_new_epoch_starts_at_zero(appender: Appender) -> None:
    appender.append(1, 3, 0)
    assert appender.append(1, 2, 1) == ("fenced", -1)
    assert appender.append(1, 4, 5) == ("out_of_order", -1)
    assert appender.append(1, 4, 0) == ("appended", 1)
    assert appender.append(1, 3, 1) == ("fenced", -1)
    assert appender.append(1, 3, 0) == ("fenced", -1)  # no duplicates across epochs


def test_an_unknown_producer_may_start_at_any_sequence(appender: Appender) -> None:
    assert appender.append(9, 0, 42) == ("appended", 0)
    assert appender.append(9, 0, 44) == ("out_of_order", -1)
    assert appender.append(9, 0, 43) == ("appended", 1)


def test_sequences_wrap_after_int_max(appender: Appender) -> None:
    assert appender.append(1, 0, INT32_MAX - 1, 2) == ("appended", 0)
    assert appender.append(1, 0, 0, 1) == ("appended", 2)
    assert appender.append(1, 0, INT32_MAX - 1, 2) == ("duplicate", 0)


def test_batches_in_one_append_are_checked_against_each_other(tmp_path: Path) -> None:
    manager = ProducerStateManager(tmp_path)
    Appender(manager).append(1, 0, 0)
    with pytest.raises(OutOfOrderSequenceError):
        manager.validate_append([batch(1, 0, 1), batch(1, 0, 3)])
    assert len(manager.validate_append([batch(1, 0, 1), batch(1, 0, 2)])) == 2
    assert manager.last_entry(1) is not None and manager.last_entry(1).last_seq == 0  # nothing applied yet


def test_a_producer_batch_without_a_sequence_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidSequenceError):
        ProducerStateManager(tmp_path).validate_append([batch(1, 0, -1)])


def test_batches_without_a_producer_id_are_ignored(appender: Appender) -> None:
    view = BatchView(
        memoryview(bytearray(build_batch([b"a"], base_sequence=0))), 0
    )  # aiokafka: pid -1, seq 0
    assert appender.manager.validate_append([view]) == []
    assert appender.manager.find_duplicate([view]) is None


# --- snapshots ------------------------------------------------------------------------------------------------


def test_snapshot_bytes_follow_kafkas_layout(tmp_path: Path) -> None:
    entry = ProducerStateEntry(1234, 3, last_timestamp=NOW)
    entry.add_batch(3, BatchMetadata(last_seq=9, last_offset=100, offset_delta=4, timestamp=NOW))
    data = encode_snapshot([entry])
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, len(data)) == (1, 1, 10 + 46)
    assert crc == crc32c.crc32c(data[6:])
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (1234, 3, 9, 100, 4, NOW, -1, -1)
    (decoded,) = decode_snapshot(data, tmp_path / "x")
    assert decoded.producer_epoch == 3 and list(decoded.batches) == [BatchMetadata(9, 100, 4, NOW)]
    assert decoded.batches[0].first_seq == 5 and decoded.batches[0].first_offset == 96


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:-1],
        lambda d: d[:4],
        lambda d: b"\x00\x02" + d[2:],
        lambda d: d[:20] + bytes([d[20] ^ 1]) + d[21:],
    ],
    ids=["short", "header cut", "version", "bit flip"],
)
def test_a_damaged_snapshot_is_refused(tmp_path: Path, damage: object) -> None:
    entry = ProducerStateEntry(7, 0)
    entry.add_batch(0, BatchMetadata(0, 0, 0, NOW))
    data = damage(encode_snapshot([entry]))  # type: ignore[operator]
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(data, tmp_path / "x")


def test_reload_uses_the_latest_readable_snapshot(tmp_path: Path) -> None:
    appender = Appender(ProducerStateManager(tmp_path))
    appender.append(1, 0, 0)
    appender.manager.take_snapshot()  # at 1
    appender.append(1, 0, 1)
    appender.manager.take_snapshot()  # at 2
    assert snapshot_file(tmp_path, 2).exists()
    snapshot_file(tmp_path, 2).write_bytes(b"garbage!!!!!")
    fresh = ProducerStateManager(tmp_path)
    fresh.truncate_and_reload(0, 2, NOW)
    assert fresh.map_end_offset == 1
    assert fresh.snapshot_offsets() == [1]  # the corrupt one is gone
    assert not snapshot_file(tmp_path, 2).exists()
    entry = fresh.last_entry(1)
    assert entry is not None and entry.last_seq == 0


def test_expired_producers_are_not_loaded_and_are_removed(tmp_path: Path) -> None:
    appender = Appender(ProducerStateManager(tmp_path))
    appender.append(1, 0, 0)
    appender.manager.take_snapshot()
    fresh = ProducerStateManager(tmp_path)
    fresh.truncate_and_reload(0, 1, NOW + PRODUCER_ID_EXPIRATION_MS + 1)
    assert fresh.is_empty
    assert appender.manager.remove_expired_producers(NOW + PRODUCER_ID_EXPIRATION_MS) == 0
    assert appender.manager.remove_expired_producers(NOW + PRODUCER_ID_EXPIRATION_MS + 1) == 1


def test_stray_snapshots_are_removed_but_the_latest_beyond_the_segments_is_kept(tmp_path: Path) -> None:
    for offset in (0, 5, 7, 10, 12, 15):
        snapshot_file(tmp_path, offset).write_bytes(encode_snapshot([]))
    manager = ProducerStateManager(tmp_path)
    manager.remove_stray_snapshots([0, 10, 12])
    assert manager.snapshot_offsets() == [0, 10, 12, 15]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        snapshot_file(tmp_path, o).name for o in (0, 10, 12, 15)
    ]
    assert read_snapshot(snapshot_file(tmp_path, 15)) == []


# --- stateful comparison with a model -------------------------------------------------------------------------


class Model:
    """Every accepted batch of every producer, newest last; the rules derived from that history."""

    def __init__(self) -> None:
        self.history: dict[
            int, list[tuple[int, int, int, int]]
        ] = {}  # pid -> [(epoch, first seq, last seq, offset)]
        self.next_offset = 0

    def expect(self, pid: int, epoch: int, seq: int, count: int) -> tuple[str, int]:
        accepted = self.history.get(pid, [])
        if not accepted:
            return "appended", self.next_offset
        current_epoch = accepted[-1][0]
        same_epoch = [b for b in accepted if b[0] == current_epoch][-NUM_BATCHES_TO_RETAIN:]
        for b_epoch, first, last, offset in same_epoch:
            if b_epoch == epoch and (first, last) == (seq, seq + count - 1):
                return "duplicate", offset
        if epoch < current_epoch:
            return "fenced", -1
        if epoch > current_epoch:
            return ("appended", self.next_offset) if seq == 0 else ("out_of_order", -1)
        last_seq = same_epoch[-1][2] if same_epoch else -1
        return ("appended", self.next_offset) if seq == last_seq + 1 else ("out_of_order", -1)

    def apply(self, pid: int, epoch: int, seq: int, count: int, outcome: tuple[str, int]) -> None:
        if outcome[0] == "appended":
            self.history.setdefault(pid, []).append((epoch, seq, seq + count - 1, self.next_offset))
            self.next_offset += count

    def forget_all_but_last(self) -> None:
        """What a reload from a snapshot keeps: each producer's epoch and last batch."""
        self.history = {pid: batches[-1:] for pid, batches in self.history.items()}


class ProducerStateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.directory = Path(tempfile.mkdtemp(prefix="producer-state-"))
        self.appender = Appender(ProducerStateManager(self.directory))

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _next_seq(self, pid: int, epoch: int) -> int:
        accepted = self.model.history.get(pid, [])
        if not accepted or accepted[-1][0] != epoch:
            return 0
        return accepted[-1][2] + 1

    @rule(
        pid=st.sampled_from([1, 2]),
        epoch=st.integers(0, 2),
        how=st.sampled_from(["next", "next", "next", "retry", "random"]),
        back=st.integers(0, 7),
        random_seq=st.integers(0, 12),
        count=st.integers(1, 3),
    )
    def append(self, pid: int, epoch: int, how: str, back: int, random_seq: int, count: int) -> None:
        if how == "next":
            seq = self._next_seq(pid, epoch)
        elif how == "retry":
            same = [b for b in self.model.history.get(pid, []) if b[0] == epoch]
            if not same:
                return
            _, seq, last, _ = same[max(0, len(same) - 1 - back)]
            count = last - seq + 1
        else:
            seq = random_seq
        expected = self.model.expect(pid, epoch, seq, count)
        got = self.appender.append(pid, epoch, seq, count)
        assert got == expected, (pid, epoch, seq, count, self.model.history.get(pid))
        self.model.apply(pid, epoch, seq, count, got)

    @rule()
    def snapshot_and_reload(self) -> None:
        manager = self.appender.manager
        manager.map_end_offset = self.appender.next_offset
        manager.take_snapshot()
        fresh = ProducerStateManager(self.directory)
        fresh.truncate_and_reload(0, self.appender.next_offset, NOW)
        assert fresh.map_end_offset == self.appender.next_offset
        self.appender.manager = fresh
        self.model.forget_all_but_last()

    @invariant()
    def epochs_match(self) -> None:
        for pid, accepted in self.model.history.items():
            entry = self.appender.manager.last_entry(pid)
            assert entry is not None and entry.producer_epoch == accepted[-1][0]
            assert entry.last_seq == accepted[-1][2]


ProducerStateMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_producer_state_against_model = ProducerStateMachine.TestCase
