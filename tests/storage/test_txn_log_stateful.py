"""A Log's transactions against a simple model: transactional batches of three producers, COMMIT and ABORT markers,
plain batches, rolls, high-watermark moves, retention of whole segments, truncation, and reopening (clean, crashed,
and with the ``.txnindex`` files damaged or removed before a crashed start). Invariants after every step: the last
stable offset, what a read_committed read may return, the aborted transactions a reader is told, and the bytes of
each ``.txnindex`` (built here from the model, independently of the writer)."""

from __future__ import annotations

import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from storage_helpers import small_config

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.records.batch import build_end_txn_marker_batch
from samsa.records.control import ControlRecordType, EndTransactionMarker
from samsa.storage.log import FetchIsolation, Log
from samsa.storage.txn_index import AbortedTxn, TransactionIndex, decode_entries

CONFIG = small_config(segment_bytes=700, index_interval_bytes=100, segment_index_bytes=800, retention_ms=-1)
PRODUCERS = (1000, 1001, 1002)


@dataclass
class Model:
    log_end: int = 0
    hw: int = 0
    log_start: int = 0
    open_txns: dict[int, int] = field(default_factory=dict)  # pid -> first offset
    unreplicated: dict[int, int] = field(default_factory=dict)  # first offset -> marker offset
    aborted: list[AbortedTxn] = field(default_factory=list)
    completed: list[tuple[int, int, int]] = field(default_factory=list)  # (pid, first offset, marker offset)
    sequences: dict[int, int] = field(default_factory=dict)

    @property
    def lso(self) -> int:
        unstable = [
            *self.open_txns.values(),
            *(f for f, last in self.unreplicated.items() if last >= self.hw),
        ]
        if not unstable or min(unstable) >= self.hw:
            return self.hw
        return max(min(unstable), self.log_start)


class TxnLogMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="txnfsm"))
        self.clock = ManualClock()
        self.dir = self.tmp / "t-0"
        self.log = Log.open(self.dir, CONFIG, self.clock, flush_on_roll=False)
        self.model = Model()

    def teardown(self) -> None:
        if hasattr(self, "log"):
            self.log.close_handlers()
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(pid=st.sampled_from(PRODUCERS), count=st.integers(1, 3))
    def transactional_batch(self, pid: int, count: int) -> None:
        seq = self.model.sequences.get(pid, 0)
        batch = build_batch(
            [Record(i, self.clock.milliseconds(), None, b"t" * 20) for i in range(count)],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
            is_transactional=True,
        )
        info = self.log.append_as_leader(bytearray(batch))
        assert info.first_offset == self.model.log_end
        self.model.sequences[pid] = seq + count
        self.model.open_txns.setdefault(pid, self.model.log_end)
        self.model.log_end += count

    @rule(pid=st.sampled_from(PRODUCERS), commit=st.booleans())
    def marker(self, pid: int, commit: bool) -> None:
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        batch = build_end_txn_marker_batch(
            EndTransactionMarker(kind, 0),
            producer_id=pid,
            producer_epoch=0,
            timestamp=self.clock.milliseconds(),
        )
        self.log.append_as_leader(bytearray(batch))
        offset = self.model.log_end
        first = self.model.open_txns.pop(pid, offset)
        self.model.unreplicated[first] = offset
        self.model.completed.append((pid, first, offset))
        if not commit:
            lso = min(self.model.open_txns.values(), default=offset + 1)
            self.model.aborted.append(AbortedTxn(pid, first, offset, lso))
        self.model.log_end += 1

    @rule(count=st.integers(1, 3))
    def plain_batch(self, count: int) -> None:
        batch = build_batch([Record(i, self.clock.milliseconds(), None, b"p" * 20) for i in range(count)])
        self.log.append_as_leader(bytearray(batch))
        self.model.log_end += count

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(data=st.data())
    def move_high_watermark(self, data: st.DataObject) -> None:
        hw = data.draw(st.integers(self.model.hw, self.model.log_end))
        self.log.maybe_increment_high_watermark(hw)
        self.model.hw = hw
        self.model.unreplicated = {f: last for f, last in self.model.unreplicated.items() if last >= hw}

    @precondition(lambda self: len(self.log.segments) > 1)
    @rule()
    def delete_first_segment(self) -> None:
        """DeleteRecords up to the second segment's base (within the HW), then retention removes the first."""
        second = self.log.segments.values(0)[1].base_offset
        if second > self.model.hw:
            return
        self.log.maybe_increment_log_start_offset(second)
        self.log.delete_old_segments()
        self.model.log_start = second
        self.model.unreplicated = {f: last for f, last in self.model.unreplicated.items() if last >= second}
        self.model.aborted = [t for t in self.model.aborted if t.last_offset >= second]

    def _reopen(self, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.close_handlers()
        self.log = Log.open(
            self.dir,
            CONFIG,
            self.clock,
            flush_on_roll=False,
            had_clean_shutdown=clean,
            recovery_point=0,
            log_start_offset=self.model.log_start,
        )
        # completed transactions above the HW are not kept across a restart (nor by Kafka): the test moves the HW to
        # the end, where both agree
        self.model.hw = self.model.log_end
        self.model.unreplicated = {}
        self.log.update_high_watermark(self.model.hw)

    @rule()
    def reopen_clean(self) -> None:
        self._reopen(clean=True)

    @rule()
    def reopen_clean_without_txn_indexes(self) -> None:
        """A clean start with every ``.txnindex`` gone: rebuilt before the first read_committed read needs them."""
        self.log.close()
        for path in self.dir.glob("*.txnindex"):
            path.unlink()
        self.log = Log.open(
            self.dir,
            CONFIG,
            self.clock,
            flush_on_roll=False,
            had_clean_shutdown=True,
            recovery_point=self.model.log_end,
            log_start_offset=self.model.log_start,
        )
        self.model.hw = self.model.log_end
        self.model.unreplicated = {}
        self.log.update_high_watermark(self.model.hw)

    @rule(damage=st.sampled_from(["none", "remove", "tear", "garbage"]))
    def reopen_crashed(self, damage: str) -> None:
        """A crash recovers every segment (recovery point 0), and each ``.txnindex`` is rebuilt from its log."""
        for path in self.dir.glob("*.txnindex"):
            if damage == "remove":
                path.unlink()
            elif damage == "tear":
                path.write_bytes(path.read_bytes()[:-5])
            elif damage == "garbage":
                path.write_bytes(b"\x7f" * 34 + path.read_bytes())
        self._reopen(clean=False)

    @precondition(lambda self: self.model.log_end > self.model.hw)
    @rule(data=st.data())
    def truncate_above_high_watermark(self, data: st.DataObject) -> None:
        """A follower cuts its log back to a point at or above the HW (to a batch boundary: the model's end
        after rebuilding from the log)."""
        target = data.draw(st.integers(self.model.hw, self.model.log_end))
        # a transaction begun below the log start lives on in the producer state only (as in Kafka): open still,
        # or open again when its marker is cut
        old = self.model
        carried = {pid: first for pid, first in old.open_txns.items() if first < old.log_start}
        carried |= {pid: first for pid, first, marker in old.completed if first < old.log_start <= marker}
        self.log.truncate_to(target)
        self._rebuild_model_from_log(carried)
        self.model.hw = self.model.log_end  # as after a restart (``_reopen``)
        self.model.unreplicated = {}
        self.log.maybe_increment_high_watermark(self.model.log_end)

    def _rebuild_model_from_log(self, carried: dict[int, int]) -> None:
        """After truncation the model is replayed from the log's batches (truncation cuts whole batches), with the
        transactions ``carried`` from below the log start open at its start."""
        from samsa.records.control import batch_control_type

        model = Model(hw=self.model.hw, log_start=self.model.log_start, open_txns=dict(carried))
        for segment in self.log.segments:
            for _, batch in segment.log.batches():
                pid = batch.producer_id
                if batch.is_control:
                    first = model.open_txns.pop(pid, batch.base_offset)
                    model.unreplicated[first] = batch.base_offset
                    model.completed.append((pid, first, batch.base_offset))
                    if batch_control_type(batch) is ControlRecordType.ABORT:
                        lso = min(model.open_txns.values(), default=batch.base_offset + 1)
                        model.aborted.append(AbortedTxn(pid, first, batch.base_offset, lso))
                elif batch.is_transactional:
                    model.open_txns.setdefault(pid, batch.base_offset)
                if pid >= 0 and not batch.is_control:
                    model.sequences[pid] = batch.base_sequence + batch.last_offset_delta + 1
                model.log_end = batch.last_offset + 1
        model.log_end = max(model.log_end, self.log.log_end_offset)
        model.hw = min(model.hw, model.log_end)
        model.unreplicated = {f: last for f, last in model.unreplicated.items() if last >= model.hw}
        # the sequences of batches already deleted by retention live on in the producer state only
        for pid, entry in self.log.producer_state.producers.items():
            if entry.last_seq >= 0:
                model.sequences[pid] = entry.last_seq + 1
        model.aborted = [t for t in model.aborted if t.last_offset >= model.log_start]
        self.model = model

    @invariant()
    def offsets_agree(self) -> None:
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.model.log_end
        assert self.log.high_watermark == self.model.hw
        assert self.log.last_stable_offset == self.model.lso

    @invariant()
    def aborted_transactions_agree(self) -> None:
        if not hasattr(self, "log"):
            return
        found = self.log.collect_aborted_transactions(self.model.log_start, self.model.log_end + 1)
        assert [(t.producer_id, t.first_offset, t.last_offset) for t in found] == [
            (t.producer_id, t.first_offset, t.last_offset) for t in self.model.aborted
        ]

    @invariant()
    def txn_index_files_hold_the_model(self) -> None:
        """Each segment's file holds the aborts whose markers it holds, in Kafka's 34-byte layout."""
        if not hasattr(self, "log"):
            return
        self.log.collect_aborted_transactions(
            self.model.log_start, self.model.log_end + 1
        )  # what a reader triggers
        segments = self.log.segments.values(0)
        for i, segment in enumerate(segments):
            end = segments[i + 1].base_offset if i + 1 < len(segments) else self.model.log_end
            wanted = [t for t in self.model.aborted if segment.base_offset <= t.last_offset < end]
            path = segment.txn_index.path
            data = path.read_bytes() if path.exists() else b""
            layout = struct.Struct(">hqqqq")
            expected = b"".join(
                layout.pack(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                for t in wanted
            )
            assert data == expected, (path.name, decode_entries(data, path), wanted)

    @invariant()
    def read_committed_stops_at_the_lso(self) -> None:
        if not hasattr(self, "log") or self.model.log_start >= self.model.log_end:
            return
        info = self.log.read(self.model.log_start, 1 << 20, FetchIsolation.TXN_COMMITTED)
        if info.records.size:
            from samsa.records.batch_view import iter_batches

            last = max(b.last_offset for b in iter_batches(info.read_bytes()))
            assert last < self.model.lso


TxnLogMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_txn_log = TxnLogMachine.TestCase


def test_txn_index_collects_until_an_entry_covers_the_bound(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    for txn in (AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 9, 10), AbortedTxn(3, 12, 14, 20)):
        index.append(txn)
    assert index.collect(6, 10) == ([AbortedTxn(2, 3, 9, 10)], True)
    assert index.collect(0, 4) == ([AbortedTxn(1, 0, 5, 3), AbortedTxn(2, 3, 9, 10)], True)
    assert index.collect(15, 30) == ([], False)
    with pytest.raises(ValueError):
        index.append(AbortedTxn(4, 13, 14, 15))  # not after the last marker
    index.truncate_to(9)
    assert decode_entries(index.path.read_bytes(), index.path) == [AbortedTxn(1, 0, 5, 3)]
