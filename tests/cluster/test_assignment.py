"""Replica assignment against the examples Kafka's own docs and tests give, and its properties for any input."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samsa.cluster.assignment import (
    AssignmentError,
    InvalidPartitionCountError,
    InvalidReplicationFactorError,
    assign_replicas,
    rack_alternated,
)

RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def no_racks(n: int) -> dict[int, str | None]:
    return dict.fromkeys(range(n))


def test_five_brokers_ten_partitions_as_kafkas_table() -> None:
    got = assign_replicas(no_racks(5), 10, 3, start_index=0)
    assert got == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_seed_rule_holds_for_the_first_n_partitions_at_start_zero(n: int) -> None:
    rf = min(3, n)
    got = assign_replicas(no_racks(n), n, rf, start_index=0)
    assert got == {i: [(i + j) % n for j in range(rf)] for i in range(n)}


def test_broker_ids_are_used_sorted_not_as_positions() -> None:
    got = assign_replicas({30: None, 10: None, 20: None}, 3, 2, start_index=0)
    assert got == {0: [10, 20], 1: [20, 30], 2: [30, 10]}


def test_rack_alternated_list() -> None:
    assert rack_alternated(RACKS) == [0, 3, 1, 5, 4, 2]


def test_rack_aware_as_kafkas_test() -> None:
    got = assign_replicas(RACKS, 7, 3, start_index=0)
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_mixed_racks_refused() -> None:
    with pytest.raises(AssignmentError, match=r"rack information \(none for \[2\]\)"):
        assign_replicas({0: "a", 1: "b", 2: None}, 3, 2)


@pytest.mark.parametrize(
    ("partitions", "rf", "error"),
    [
        (0, 1, InvalidPartitionCountError),
        (3, 0, InvalidReplicationFactorError),
        (3, 4, InvalidReplicationFactorError),
    ],
)
def test_bad_arguments(partitions: int, rf: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        assign_replicas(no_racks(3), partitions, rf)


def test_added_partitions_are_numbered_on_and_shift_only_at_their_own_wraps() -> None:
    # CreatePartitions: partition 7 onward; the follower shift grows first at partition 8 (8 % 4 == 0)
    tail = assign_replicas(no_racks(4), 2, 3, start_index=1, replica_shift=2, first_partition=7)
    assert tail == {7: [0, 3, 1], 8: [1, 2, 3]}


def test_random_start_is_drawn_from_the_injected_rng() -> None:
    a = assign_replicas(no_racks(5), 10, 3, rng=random.Random(7))
    b = assign_replicas(no_racks(5), 10, 3, rng=random.Random(7))
    starts = {assign_replicas(no_racks(5), 1, 1, rng=random.Random(seed))[0][0] for seed in range(40)}
    assert a == b
    assert starts == set(range(5))


brokers_st = st.lists(st.integers(0, 1000), min_size=1, max_size=9, unique=True)


@given(brokers=brokers_st, data=st.data())
def test_properties_rack_unaware(brokers: list[int], data: st.DataObject) -> None:
    n = len(brokers)
    rf = data.draw(st.integers(1, n))
    partitions = data.draw(st.integers(1, 40))
    start = data.draw(st.integers(0, n - 1))
    shift = data.draw(st.integers(0, n - 1))
    got = assign_replicas(dict.fromkeys(brokers), partitions, rf, start_index=start, replica_shift=shift)
    assert sorted(got) == list(range(partitions))
    ordered = sorted(brokers)
    for p, replicas in got.items():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(brokers)
        assert replicas[0] == ordered[(p + start) % n]  # leaders round-robin from the start index
    leaders = Counter(replicas[0] for replicas in got.values())
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1  # leaders spread evenly


@given(data=st.data())
def test_properties_rack_aware(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 9))
    racks = {b: data.draw(st.sampled_from("abcd")) for b in range(n)}
    rf = data.draw(st.integers(1, n))
    partitions = data.draw(st.integers(1, 30))
    got = assign_replicas(racks, partitions, rf, rng=random.Random(data.draw(st.integers(0, 99))))
    rack_count = len(set(racks.values()))
    for replicas in got.values():
        assert len(set(replicas)) == rf
        used = Counter(racks[b] for b in replicas)
        if rf >= rack_count:
            assert len(used) == rack_count  # every rack holds a replica
        else:
            assert max(used.values()) == 1  # no rack holds two
