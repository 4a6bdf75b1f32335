"""Compaction over transactional data (Kafka's ``CleanedTransactionMetadata`` rules): an aborted transaction's
records go and never shadow a committed record of the same key; its ABORT marker and ``.txnindex`` entry stay while
its data is still being removed, then the marker gets a delete horizon and goes after ``delete.retention.ms``;
COMMIT markers go once their transaction's data is gone; what a read_committed reader sees is unchanged by each
cleaning, and no transaction still open (above the LSO) is touched."""

from __future__ import annotations

from pathlib import Path

from storage_helpers import decode_all
from test_cleaner import RETENTION, compact_config, keyed, run_clean

from samsa.clock import ManualClock
from samsa.records.batch import build_end_txn_marker_batch
from samsa.records.batch_view import iter_batches
from samsa.records.control import ControlRecordType, EndTransactionMarker, batch_control_type
from samsa.storage.log import FetchIsolation, Log
from samsa.storage.txn_index import AbortedTxn

COMMITTER, ABORTER, OPEN = 7, 8, 9


class Producers:
    def __init__(self, log: Log, clock: ManualClock) -> None:
        self.log = log
        self.clock = clock
        self.sequences: dict[int, int] = {}

    def data(self, pid: int, items: list[tuple[bytes, bytes | None]]) -> int:
        seq = self.sequences.get(pid, 0)
        batch = keyed(
            items,
            self.clock.milliseconds(),
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
            is_transactional=True,
        )
        self.sequences[pid] = seq + len(items)
        return self._append(batch)

    def end(self, pid: int, commit: bool) -> int:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        batch = build_end_txn_marker_batch(
            EndTransactionMarker(kind, 0),
            producer_id=pid,
            producer_epoch=0,
            timestamp=self.clock.milliseconds(),
        )
        return self._append(batch)

    def plain(self, items: list[tuple[bytes, bytes | None]]) -> int:
        return self._append(keyed(items, self.clock.milliseconds()))

    def _append(self, batch: bytes) -> int:
        info = self.log.append_as_leader(bytearray(batch))
        self.log.update_high_watermark(self.log.log_end_offset)
        self.clock.advance(1)
        return info.first_offset


def read_committed(log: Log) -> dict[bytes, bytes | None]:
    """What a read_committed consumer ends with, key -> last value, reading from the log start to the LSO with the
    aborted transactions the log names (as clients filter: a producer's records from an aborted transaction's first
    offset up to its ABORT marker are dropped)."""
    data = b""
    position = log.log_start_offset
    while position < log.last_stable_offset:  # fetch after fetch: a read stays within one segment
        info = log.read(position, 1 << 24, FetchIsolation.TXN_COMMITTED)
        if not info.records.size:
            break
        chunk = info.read_bytes()
        data += chunk
        position = max(b.last_offset for b in iter_batches(chunk)) + 1
    aborted = sorted(
        log.collect_aborted_transactions(log.log_start_offset, log.last_stable_offset),
        key=lambda t: t.first_offset,
    )
    dropping: set[int] = set()
    state: dict[bytes, bytes | None] = {}
    for batch in iter_batches(data):
        while aborted and aborted[0].first_offset <= batch.last_offset:
            dropping.add(aborted.pop(0).producer_id)
        if batch.is_control:
            if batch_control_type(batch) is ControlRecordType.ABORT:
                dropping.discard(batch.producer_id)
            continue
        if batch.producer_id in dropping:
            continue
        for record in decode_all(bytes(batch.raw())):
            assert record.key is not None
            state[record.key] = record.value
    return {k: v for k, v in state.items() if v is not None}


def markers(log: Log) -> list[tuple[int, int, ControlRecordType]]:
    found = []
    for segment in log.segments:
        for _, batch in segment.log.batches():
            if batch.is_control:
                found.append((batch.base_offset, batch.producer_id, batch_control_type(batch)))
    return found


def keys_at(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.key, r.value)
        for segment in log.segments
        for r in decode_all(segment.log.read(0, segment.size))
        if r.key is None or len(r.key) != 4  # control records' keys are 4 bytes; data keys here are longer
    ]


def txn_index_entries(log: Log) -> list[AbortedTxn]:
    return [t for segment in log.segments for t in segment.txn_index.entries]


def test_aborted_data_goes_markers_follow_and_readers_see_the_same(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    p = Producers(log, clock)
    p.data(COMMITTER, [(b"key-a", b"committed-a1"), (b"key-b", b"committed-b1")])  # 0-1
    p.end(COMMITTER, commit=True)  # 2
    p.data(ABORTER, [(b"key-a", b"aborted-a"), (b"key-c", b"aborted-c")])  # 3-4
    p.end(ABORTER, commit=False)  # 5
    p.plain([(b"key-d", b"plain-d")])  # 6
    log.roll()
    p.plain([(b"key-e", b"plain-e")])  # 7: the active segment, never cleaned
    # each producer's last batch stays (as an empty batch) while the producer lives: put it past the cleaning
    p.data(ABORTER, [(b"key-f", b"f")])  # 8
    p.end(ABORTER, commit=True)  # 9
    p.data(COMMITTER, [(b"key-g", b"g")])  # 10
    p.end(COMMITTER, commit=True)  # 11
    before = read_committed(log)
    assert before == {
        b"key-a": b"committed-a1",
        b"key-b": b"committed-b1",
        b"key-d": b"plain-d",
        b"key-e": b"plain-e",
        b"key-f": b"f",
        b"key-g": b"g",
    }
    assert txn_index_entries(log) == [AbortedTxn(ABORTER, 3, 5, 6)]

    run_clean(log, clock, None)
    assert read_committed(log) == before  # the aborted key-a did not shadow the committed one
    assert [(o, k) for o, k, _ in keys_at(log) if o < 7] == [(0, b"key-a"), (1, b"key-b"), (6, b"key-d")]
    # this pass removed the aborted data: its marker and index entry stay for readers of the old data
    assert [(o, t) for o, _, t in markers(log) if o < 7] == [
        (2, ControlRecordType.COMMIT),
        (5, ControlRecordType.ABORT),
    ]
    assert txn_index_entries(log) == [AbortedTxn(ABORTER, 3, 5, 6)]

    run_clean(log, clock, None)  # nothing of the aborted transaction left: its marker gets a delete horizon
    assert [(o, t) for o, _, t in markers(log) if o < 7] == [
        (2, ControlRecordType.COMMIT),
        (5, ControlRecordType.ABORT),
    ]
    assert txn_index_entries(log) == []
    horizon = next(
        b.delete_horizon_ms for s in log.segments for _, b in s.log.batches() if b.base_offset == 5
    )
    assert horizon == clock.milliseconds() + RETENTION
    assert read_committed(log) == before

    clock.advance(RETENTION)
    run_clean(log, clock, None)
    assert [(o, t) for o, _, t in markers(log) if o < 7] == [
        (2, ControlRecordType.COMMIT)
    ]  # its data is still there
    assert read_committed(log) == before


def test_a_commit_marker_goes_once_its_data_is_compacted_away(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    p = Producers(log, clock)
    p.data(COMMITTER, [(b"key-a", b"old")])  # 0
    p.end(COMMITTER, commit=True)  # 1
    p.plain([(b"key-a", b"new")])  # 2: supersedes the committed record
    log.roll()
    p.plain([(b"key-z", b"z")])  # 3
    p.data(COMMITTER, [(b"key-y", b"y")])  # 4: the producer's last batch, past the cleaning
    p.end(COMMITTER, commit=True)  # 5
    run_clean(log, clock, None)  # the old record goes; its marker saw it in this pass, so it stays
    assert [(o, k) for o, k, _ in keys_at(log) if k == b"key-a"] == [(2, b"key-a")]
    assert [o for o, _, _ in markers(log)] == [1, 5]
    run_clean(log, clock, None)  # no data of its transaction left: a delete horizon
    assert [o for o, _, _ in markers(log)] == [1, 5]
    clock.advance(RETENTION)
    run_clean(log, clock, None)
    assert [o for o, _, _ in markers(log)] == [5]
    assert read_committed(log) == {b"key-a": b"new", b"key-z": b"z", b"key-y": b"y"}


def test_an_open_transaction_is_not_cleaned(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    p = Producers(log, clock)
    p.plain([(b"key-a", b"1")])  # 0
    p.data(OPEN, [(b"key-a", b"open")])  # 1: open, so the LSO stays at 1
    p.plain([(b"key-a", b"2")])  # 2
    log.roll()
    p.plain([(b"key-q", b"q")])
    assert log.last_stable_offset == 1
    run_clean(log, clock, None)
    assert [o for o, k, _ in keys_at(log) if k == b"key-a"] == [
        0,
        1,
        2,
    ]  # nothing at or above the LSO is cleaned
    p.end(OPEN, commit=False)
    log.roll()
    p.plain([(b"key-r", b"r")])
    run_clean(log, clock, None)
    assert [(o, v) for o, k, v in keys_at(log) if k == b"key-a"] == [(2, b"2")]
    assert read_committed(log) == {b"key-a": b"2", b"key-q": b"q", b"key-r": b"r"}


def test_cleaned_txn_index_survives_a_restart(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    log = Log.open(tmp_path / "compacted-0", compact_config(), clock)
    p = Producers(log, clock)
    p.data(ABORTER, [(b"key-a", b"x")])
    p.plain([(b"key-b", b"b")])
    p.end(ABORTER, commit=False)
    log.roll()
    p.plain([(b"key-c", b"c")])
    run_clean(log, clock, None)
    assert txn_index_entries(log) == [AbortedTxn(ABORTER, 0, 2, 3)]
    log.close()
    again = Log.open(tmp_path / "compacted-0", compact_config(), clock, had_clean_shutdown=True)
    again.update_high_watermark(again.log_end_offset)
    assert txn_index_entries(again) == [AbortedTxn(ABORTER, 0, 2, 3)]
    assert read_committed(again) == {b"key-b": b"b", b"key-c": b"c"}
    again.close()
