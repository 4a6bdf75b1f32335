"""The test checkers' rule for records an idempotent producer sent again under a new epoch (``resends.py``)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st
from tests.cluster.resends import IN_FLIGHT, resent_values, unexplained_resends, without_resent

from samsa.records import Record, build_batch


def batch(values: list[bytes], producer: int = 7, epoch: int = 0) -> bytes:
    return build_batch(
        [Record(i, 1_700_000_000_000, None, v) for i, v in enumerate(values)],
        producer_id=producer,
        producer_epoch=epoch,
        base_sequence=0,
    )


def test_copies_under_a_later_epoch_of_the_same_producer_are_resends_and_the_first_copies_stay() -> None:
    # librdkafka #4953: a and b appended under epoch 0 but answered NOT_LEADER_OR_FOLLOWER, then numbered anew
    # under epoch 1 with c, and written again; d under epoch 2 resends nothing
    log = batch([b"a", b"b"]) + batch([b"a", b"b", b"c"], epoch=1) + batch([b"d"], epoch=2)
    resent = resent_values(log)
    assert resent == Counter({b"a": 1, b"b": 1})
    assert without_resent([b"a", b"b", b"a", b"b", b"c", b"d"], resent) == [b"a", b"b", b"c", b"d"]


def test_copies_under_the_same_epoch_or_another_producer_are_duplicates_not_resends() -> None:
    same_epoch = batch([b"a"]) + batch([b"a"])
    other_producer = batch([b"a"]) + batch([b"a"], producer=8, epoch=1)
    older_epoch = batch([b"a"], epoch=1) + batch([b"a"], epoch=0)
    not_idempotent = batch([b"a"], producer=-1, epoch=-1) + batch([b"a"], producer=-1, epoch=-1)
    for log in (same_epoch, other_producer, older_epoch, not_idempotent):
        assert resent_values(log) == Counter()
        assert without_resent([b"a", b"a"], resent_values(log)) == [b"a", b"a"]  # left for the test to catch


def test_a_resend_and_a_duplicate_of_the_same_value_leave_the_duplicate() -> None:
    log = batch([b"a"]) + batch([b"a"]) + batch([b"a"], epoch=1)
    assert resent_values(log) == Counter({b"a": 1})
    assert without_resent([b"a", b"a", b"a"], resent_values(log)) == [b"a", b"a"]


@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), max_size=30))
def test_leaving_out_resends_keeps_the_order_of_first_copies(first: list[int], again: list[int]) -> None:
    """A producer writes ``first`` (distinct values) under one epoch, then some of them again under the next:
    what is kept is ``first``, in its order, then the values new under the next epoch."""
    first = list(dict.fromkeys(first))
    again = list(dict.fromkeys(again))
    values = [str(v).encode() for v in first + again]
    log = (batch([str(v).encode() for v in first]) if first else b"") + (
        batch([str(v).encode() for v in again], epoch=1) if again else b""
    )
    kept = without_resent(values, resent_values(log))
    assert kept == list(dict.fromkeys(values))


def test_a_resend_of_a_batch_in_flight_at_the_bump_is_explained() -> None:
    # the bump came with the last IN_FLIGHT batches of epoch 0 unacknowledged: resending any of them is #4953
    old = [bytes([65 + i]) for i in range(IN_FLIGHT + 3)]
    log = b"".join(batch([v]) for v in old) + batch(old[3:], epoch=1)
    assert resent_values(log) == Counter({v: 1 for v in old[3:]})
    assert unexplained_resends(log) == []


def test_a_resend_of_a_batch_older_than_the_in_flight_window_is_not() -> None:
    old = [bytes([65 + i]) for i in range(IN_FLIGHT + 3)]
    log = b"".join(batch([v]) for v in old) + batch([old[2], *old[3:]], epoch=1)
    (line,) = unexplained_resends(log)
    assert line.startswith("'C' at offset ") and f"repeats batch 3 of {IN_FLIGHT + 3}" in line


def test_resends_after_two_bumps_are_judged_against_the_epoch_they_repeat() -> None:
    log = batch([b"a"]) + batch([b"b"]) + batch([b"a", b"b"], epoch=1) + batch([b"a"], epoch=2)
    assert resent_values(log) == Counter({b"a": 2, b"b": 1})
    assert unexplained_resends(log, in_flight=2) == []
    # one in flight: epoch 1's copy of a repeats epoch 0's first batch of two, epoch 2's repeats epoch 1's only one
    (line,) = unexplained_resends(log, in_flight=1)
    assert "repeats batch 1 of 2 that producer 7 wrote under epoch 0" in line
