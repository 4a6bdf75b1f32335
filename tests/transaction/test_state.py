"""The transaction state machine's rules (Kafka's TransactionCoordinator), with time passed by hand."""

from __future__ import annotations

import itertools

import pytest

from samsa.protocol.errors import ErrorCode
from samsa.transaction import state as st
from samsa.transaction.state import TransactionMetadata, TransactionState

MAX_TIMEOUT = 900_000


def _ids() -> itertools.count[int]:
    return itertools.count(1000)


def _init(
    meta: TransactionMetadata | None, now: int = 0, pids: itertools.count[int] | None = None
) -> st.Outcome:
    counter = pids or _ids()
    return st.init_producer_id(meta, "t", 60_000, MAX_TIMEOUT, now, lambda: next(counter))


def _fresh() -> TransactionMetadata:
    out = _init(None)
    assert out.metadata is not None
    return out.metadata


def _ongoing(now: int = 10) -> TransactionMetadata:
    out = st.add_partitions(_fresh(), 1000, 0, [("out", 0)], now)
    assert out.metadata is not None
    return out.metadata


def test_first_init_allocates_id_at_epoch_zero() -> None:
    meta = _fresh()
    assert (meta.producer_id, meta.producer_epoch, meta.state) == (1000, 0, TransactionState.EMPTY)


@pytest.mark.parametrize("timeout", [0, -1, MAX_TIMEOUT + 1])
def test_timeout_outside_bounds_is_refused(timeout: int) -> None:
    out = st.init_producer_id(None, "t", timeout, MAX_TIMEOUT, 0, lambda: 1)
    assert out.error is ErrorCode.INVALID_TRANSACTION_TIMEOUT and out.metadata is None


def test_second_init_bumps_epoch_and_fences_the_first_producer() -> None:
    meta = _init(_fresh(), 5).metadata
    assert meta is not None and (meta.producer_id, meta.producer_epoch) == (1000, 1)
    zombie = st.add_partitions(meta, 1000, 0, [("out", 0)], 6)
    assert zombie.error is ErrorCode.PRODUCER_FENCED and zombie.metadata is None
    old_client = st.end_transaction(meta, 1000, 0, True, 6, fenced_error=False)
    assert old_client.error is ErrorCode.INVALID_PRODUCER_EPOCH


def test_init_during_ongoing_fences_and_aborts_first() -> None:
    out = _init(_ongoing(), 20)
    assert out.error is ErrorCode.CONCURRENT_TRANSACTIONS and out.abort_first
    assert out.metadata is not None
    assert (out.metadata.state, out.metadata.producer_epoch) == (TransactionState.PREPARE_ABORT, 1)
    assert out.metadata.partitions == {("out", 0)}
    assert _init(out.metadata, 21).error is ErrorCode.CONCURRENT_TRANSACTIONS
    done = _init(st.complete(out.metadata, 22), 23).metadata
    assert done is not None and (done.state, done.producer_epoch) == (TransactionState.EMPTY, 2)


def test_epoch_overflow_takes_a_new_producer_id() -> None:
    meta = TransactionMetadata("t", 7, st.MAX_PRODUCER_EPOCH, 60_000, TransactionState.COMPLETE_COMMIT)
    out = _init(meta, 1, itertools.count(8))
    assert out.metadata is not None
    assert (out.metadata.producer_id, out.metadata.producer_epoch, out.metadata.previous_producer_id) == (
        8,
        0,
        7,
    )


def test_commit_path_and_retries() -> None:
    meta = _ongoing()
    again = st.add_partitions(meta, 1000, 0, [("out", 0)], 11)
    assert again.error is ErrorCode.NONE and again.metadata is None  # nothing new to write
    prep = st.end_transaction(meta, 1000, 0, True, 12).metadata
    assert prep is not None and prep.state is TransactionState.PREPARE_COMMIT
    assert st.end_transaction(prep, 1000, 0, True, 13).error is ErrorCode.CONCURRENT_TRANSACTIONS
    assert st.add_partitions(prep, 1000, 0, [("x", 1)], 13).error is ErrorCode.CONCURRENT_TRANSACTIONS
    done = st.complete(prep, 14)
    assert done.state is TransactionState.COMPLETE_COMMIT and done.partitions == frozenset()
    assert st.end_transaction(done, 1000, 0, True, 15) == st.Outcome(ErrorCode.NONE)
    assert st.end_transaction(done, 1000, 0, False, 15).error is ErrorCode.INVALID_TXN_STATE


def test_commit_without_partitions_is_invalid_state() -> None:
    assert st.end_transaction(_fresh(), 1000, 0, True, 1).error is ErrorCode.INVALID_TXN_STATE


def test_unknown_or_wrong_producer_id() -> None:
    assert st.add_partitions(None, 1, 0, [("a", 0)], 0).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert st.add_partitions(_fresh(), 999, 0, [("a", 0)], 0).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_verify_only_form() -> None:
    errors = st.verify_partitions(_ongoing(), 1000, 0, [("out", 0), ("out", 1)])
    assert errors == {("out", 0): ErrorCode.NONE, ("out", 1): ErrorCode.INVALID_TXN_STATE}
    assert st.verify_partitions(_ongoing(), 1000, 3, [("out", 0)]) == {("out", 0): ErrorCode.PRODUCER_FENCED}


def test_timeout_and_expiration() -> None:
    meta = _ongoing(now=100)
    assert not st.timed_out(meta, 100 + 60_000)
    assert st.timed_out(meta, 100 + 60_001)
    aborted = st.fence_and_abort(meta, 60_200)
    assert aborted.state is TransactionState.PREPARE_ABORT and aborted.producer_epoch == 1
    assert not st.expired(aborted, 10**12, 1000)
    done = st.complete(aborted, 60_300)
    assert not st.expired(done, 61_299, 1000) and st.expired(done, 61_300, 1000)


def test_kip360_recovery_with_expected_id() -> None:
    meta = _init(_fresh(), 1).metadata
    assert meta is not None
    ok = st.init_producer_id(meta, "t", 60_000, MAX_TIMEOUT, 2, lambda: 5, expected=(1000, 1))
    assert ok.error is ErrorCode.NONE
    stale = st.init_producer_id(ok.metadata, "t", 60_000, MAX_TIMEOUT, 3, lambda: 5, expected=(1000, 0))
    assert stale.error is ErrorCode.PRODUCER_FENCED


def test_illegal_transition_is_a_bug() -> None:
    with pytest.raises(ValueError):
        _fresh().transition(TransactionState.PREPARE_COMMIT, 1)


def test_state_names_are_kafkas() -> None:
    assert TransactionState.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"
    assert TransactionState.from_kafka_name("CompleteAbort") is TransactionState.COMPLETE_ABORT
