"""A Log against an in-memory model: appends, rolls, reopen (clean and crashed), truncation, DeleteRecords,
retention by time, HW-bounded reads. Invariant: what the log serves equals the model, after every step."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from storage_helpers import decode_all, small_config

from samsa.clock import ManualClock
from samsa.records import Record, build_batch
from samsa.storage.log import FetchIsolation, Log

CONFIG = small_config(segment_bytes=600, index_interval_bytes=100, segment_index_bytes=800, retention_ms=-1)


@dataclass
class Model:
    batches: list[tuple[int, list[bytes]]] = field(default_factory=list)  # (base offset, values)
    log_start: int = 0
    log_end: int = 0

    def records(self) -> list[tuple[int, bytes]]:
        return [(base + i, v) for base, values in self.batches for i, v in enumerate(values)]


class LogMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="logfsm"))
        self.clock = ManualClock()
        self.log = Log.open(self.tmp / "t-0", CONFIG, self.clock, flush_on_roll=False)
        self.model = Model()
        self.counter = 0

    def teardown(self) -> None:
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(sizes=st.lists(st.integers(0, 60), min_size=1, max_size=4))
    def append(self, sizes: list[int]) -> None:
        values = [f"{self.counter}-{i}".encode() + b"x" * n for i, n in enumerate(sizes)]
        self.counter += 1
        batch = build_batch([Record(i, self.clock.milliseconds(), None, v) for i, v in enumerate(values)])
        info = self.log.append_as_leader(batch)
        assert info.first_offset == self.model.log_end
        self.model.batches.append((self.model.log_end, values))
        self.model.log_end += len(values)
        self.clock.advance(10)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(crash=st.booleans())
    def reopen(self, crash: bool) -> None:
        start, recovery_point = self.log.log_start_offset, self.log.recovery_point
        if crash:
            for segment in self.log.segments:
                segment.offset_index.flush()
                segment.time_index.flush()
                segment.close_handlers()
        else:
            self.log.flush(self.log.log_end_offset + 1)
            self.log.close()
        self.log = Log.open(
            self.tmp / "t-0",
            CONFIG,
            self.clock,
            recovery_point=recovery_point,
            log_start_offset=start,
            had_clean_shutdown=not crash,
            flush_on_roll=False,
        )

    @precondition(lambda self: len(self.model.batches) > 0)
    @rule(data=st.data())
    def truncate_at_batch_boundary(self, data: st.DataObject) -> None:
        bases = [b for b, _ in self.model.batches if b >= self.model.log_start]
        if not bases:
            return
        target = data.draw(st.sampled_from(bases))
        self.log.truncate_to(target)
        self.model.batches = [(b, v) for b, v in self.model.batches if b < target]
        self.model.log_end = target
        self.model.log_start = min(self.model.log_start, target)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)
        new_start = data.draw(st.integers(self.model.log_start, self.model.log_end))
        self.log.maybe_increment_log_start_offset(new_start)
        self.log.delete_old_segments()
        self.model.log_start = new_start
        first = self.log.segments.first_base_offset()
        self.model.batches = [(b, v) for b, v in self.model.batches if b + len(v) > first]

    @rule(hw=st.integers(0, 200))
    def high_watermark_bounds_reads(self, hw: int) -> None:
        set_to = self.log.update_high_watermark(hw)
        assert self.model.log_start <= set_to <= self.model.log_end
        offset = self.model.log_start
        while True:
            got = [
                r.offset for r in decode_all(self.log.read(offset, 10**6).read_bytes()) if r.offset >= offset
            ]
            if not got:
                break
            assert got[-1] < set_to
            offset = got[-1] + 1

    @invariant()
    def matches_model(self) -> None:
        if not hasattr(self, "log"):
            return
        log, model = self.log, self.model
        assert (log.log_start_offset, log.log_end_offset) == (model.log_start, model.log_end)
        served: list[tuple[int, bytes]] = []
        offset = model.log_start
        while offset < model.log_end:
            info = log.read(offset, 700, FetchIsolation.LOG_END)
            got = [(r.offset, r.value or b"") for r in decode_all(info.read_bytes()) if r.offset >= offset]
            if not got:
                break
            served.extend(got)
            offset = got[-1][0] + 1
        assert served == [r for r in model.records() if r[0] >= model.log_start]


LogMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
TestLogMachine = LogMachine.TestCase
