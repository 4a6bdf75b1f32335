"""The election strategies of ``samsa.cluster.elections`` as pure functions: each scans the assignment in order."""

from __future__ import annotations

from samsa.cluster.elections import (
    controlled_shutdown_leader,
    imbalanced_partitions,
    offline_leader,
    preferred_leader,
)
from samsa.topic_partition import TopicPartition


def alive(*brokers: int):  # type: ignore[no-untyped-def]
    return lambda b: b in brokers


def test_offline_election_takes_the_first_live_isr_member_in_assignment_order() -> None:
    assert offline_leader((3, 1, 2), (1, 2), alive(1, 2), unclean=False) == (1, (1, 2))
    assert offline_leader((3, 1, 2), (1, 2), alive(2, 3), unclean=False) == (2, (2,))


def test_offline_election_without_a_live_isr_member_needs_unclean_and_leaves_the_leader_alone_in_the_isr() -> (
    None
):
    assert offline_leader((1, 2, 3), (1,), alive(2, 3), unclean=False) is None
    assert offline_leader((1, 2, 3), (1,), alive(3, 2), unclean=True) == (2, (2,))
    assert offline_leader((1, 2), (1,), alive(), unclean=True) is None


def test_preferred_election_is_the_first_replica_only_when_live_and_in_sync() -> None:
    assert preferred_leader((2, 1, 3), (1, 2, 3), alive(1, 2, 3)) == 2
    assert preferred_leader((2, 1, 3), (1, 3), alive(1, 2, 3)) is None
    assert preferred_leader((2, 1, 3), (1, 2, 3), alive(1, 3)) is None


def test_controlled_shutdown_election_skips_shutting_down_brokers_and_drops_them_from_the_isr() -> None:
    assert controlled_shutdown_leader((1, 2, 3), (1, 2, 3), (1, 2, 3), (1,)) == (2, (2, 3))
    assert controlled_shutdown_leader((1, 2, 3), (1, 3), (1, 2, 3), (1,)) == (3, (3,))
    assert controlled_shutdown_leader((1, 2, 3), (1,), (1, 2, 3), (1,)) is None  # nobody else in sync
    assert (
        controlled_shutdown_leader((1, 2, 3), (1, 2, 3), (1, 3), (1, 3)) is None
    )  # 2 is gone, 3 leaving too


def test_rebalance_picks_a_brokers_partitions_only_above_the_imbalance_percentage() -> None:
    tps = [TopicPartition("t", p) for p in range(20)]
    # broker 1 prefers 10 partitions and leads 9 of them: 10 % not led is not above 10 %
    states = {tp: ((1, 2), 1 if p < 9 else 2, (1, 2)) for p, tp in enumerate(tps[:10])}
    states.update({tp: ((2, 1), 2, (1, 2)) for tp in tps[10:]})
    assert imbalanced_partitions(states, alive(1, 2), 10) == []
    states[tps[8]] = ((1, 2), 2, (1, 2))  # now 20 %
    assert imbalanced_partitions(states, alive(1, 2), 10) == [tps[8], tps[9]]
    states[tps[9]] = ((1, 2), 2, (2,))  # not in sync: not handed back
    assert imbalanced_partitions(states, alive(1, 2), 10) == [tps[8]]
    assert imbalanced_partitions(states, alive(2), 10) == []  # the preferred broker is not live
