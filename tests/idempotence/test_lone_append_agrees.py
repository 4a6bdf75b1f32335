"""The leader's one-batch append (``Log._append_lone_batch``: a client batch's producer state checked and recorded
from its header alone) against the general append (``Log._append_as_leader``, from batch views), as a model:
the same random appends of idempotent and transactional producers, bytes to one log (the general path) and a
writable buffer to the other (the lone path), must give the same answers (offsets, duplicates, the same refusal)
and leave the same producer state. Retries, gaps, new and fenced epochs, sequences wrapping past Int.MAX."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.clock import ManualClock
from samsa.records import build_batch
from samsa.storage.config import LogConfig
from samsa.storage.log import Log
from samsa.storage.producer_state import ProducerStateError

INT32_MAX = 2**31 - 1

APPEND = st.tuples(
    st.sampled_from([11, 12]),  # producer id
    st.integers(0, 2),  # epoch
    st.integers(-2, 3),  # first sequence: relative to the producer's next one (0: in order; < 0: a retry)
    st.integers(1, 3),  # records
    st.booleans(),  # transactional
    st.sampled_from([0, INT32_MAX - 1]),  # where the producer's sequences start (the second wraps)
)


def _outcome(log: Log, data: bytes | bytearray) -> tuple[object, ...]:
    try:
        info = log.append_as_leader(data, leader_epoch=0)
    except ProducerStateError as exc:
        return ("refused", type(exc).__name__)
    return ("appended", info.first_offset, info.last_offset, info.duplicate)


def _state(log: Log) -> dict[int, tuple[object, ...]]:
    producers = log.producer_state
    return {
        pid: (
            entry.producer_epoch,
            [(b.last_seq, b.last_offset, b.offset_delta, b.timestamp) for b in entry.batches],
            entry.current_txn_first_offset,
        )
        for pid, entry in producers.producers.items()
    } | {-1: (producers.ongoing_transactions, producers.first_unstable_offset)}


@settings(max_examples=150, deadline=None)
@given(appends=st.lists(APPEND, min_size=1, max_size=25))
def test_the_lone_append_answers_and_records_as_the_general_one(
    tmp_path_factory: object, appends: list[tuple[int, int, int, int, bool, int]]
) -> None:
    root = Path(tmp_path_factory.mktemp("lone"))  # type: ignore[attr-defined]
    clock = ManualClock()
    config = LogConfig.from_properties({"segment.bytes": 1 << 20})
    general = Log.open(root / "general-0", config, clock)
    lone = Log.open(root / "lone-0", config, clock)
    next_seq: dict[tuple[int, int], int] = {}
    try:
        for pid, epoch, shift, count, transactional, start in appends:
            expected = next_seq.get((pid, epoch), start)
            first_seq = (expected + shift) % (INT32_MAX + 1)
            batch = build_batch(
                [f"{pid}-{epoch}-{first_seq}-{i}".encode() for i in range(count)],
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=first_seq,
                is_transactional=transactional,
                timestamp=clock.milliseconds(),
            )
            answer = _outcome(general, bytes(batch))
            assert _outcome(lone, bytearray(batch)) == answer, (pid, epoch, first_seq, count)
            if answer[0] == "appended" and not answer[3]:
                next_seq[(pid, epoch)] = (first_seq + count) % (INT32_MAX + 1)
            clock.advance(1)
        assert _state(lone) == _state(general)
        assert lone.log_end_offset == general.log_end_offset
        assert lone.producer_state.map_end_offset == general.producer_state.map_end_offset
    finally:
        general.close()
        lone.close()
