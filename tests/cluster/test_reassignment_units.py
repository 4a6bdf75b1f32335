"""Reassignment's pure parts: the replica sets of a move, the reassignment JSON, and the replication quota."""

from __future__ import annotations

import json

import pytest

from samsa.cli.reassign_partitions import ReassignError, parse_plan, plan_json, throttled_replicas
from samsa.cluster.reassignment import replica_sets
from samsa.cluster.replication_quota import ReplicationQuota, throttled
from samsa.topic_partition import TopicPartition


def test_replica_sets_of_a_move() -> None:
    sets = replica_sets([3, 4, 2], [1, 2, 3])  # the example of KIP-455
    assert (sets.replicas, sets.adding, sets.removing) == ((3, 4, 2, 1), (4,), (1,))
    assert (sets.origin, sets.target) == ((3, 2, 1), (3, 4, 2))
    assert sets.moving
    same = replica_sets([2, 1], [1, 2])  # a new order only: nothing to copy or delete
    assert (same.replicas, same.adding, same.removing, same.moving) == ((2, 1), (), (), False)
    back = replica_sets(sets.origin, sets.origin)  # a cancel: back to the origin, whose order is not restored
    assert back.replicas == (3, 2, 1) and not back.moving


def test_reassignment_json_round_trip_and_refusals() -> None:
    plan = {TopicPartition("t", 1): [2, 3], TopicPartition("a", 0): [1]}
    text = plan_json(plan)
    assert json.loads(text) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [1], "log_dirs": ["any"]},
            {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
        ],
    }
    assert parse_plan(text) == plan
    bad = [
        '{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}',
        '{"version":1,"partitions":[]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any","any"]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["relative"]}]}',
        '{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}',
        "not json",
    ]
    for text in bad:
        with pytest.raises(ReassignError):
            parse_plan(text)


def test_throttle_lists() -> None:
    lists = throttled_replicas({TopicPartition("t", 0): [1, 2], TopicPartition("t", 3): [4]})
    assert lists == {"t": "0:1,0:2,3:4"}
    assert throttled(lists["t"], 0, 2) and throttled(lists["t"], 3, 4)
    assert not throttled(lists["t"], 3, 1) and not throttled("", 0, 1) and not throttled(None, 0, 1)
    assert throttled("*", 7, 9)


def test_quota_over_the_rate_until_the_window_passes() -> None:
    quota = ReplicationQuota()
    quota.record(10_000_000, 0)
    assert not quota.over(0)  # no limit set
    quota.rate = 1000
    assert quota.over(500)  # 10 MB within the first second
    quota.rate = 10_000_000
    assert not quota.over(1000)  # 10 MB in 1 s is the rate, not over it
    quota.rate = 1000
    assert quota.over(10_999)
    assert not quota.over(11_000)  # the sample left the 11 s window


def test_quota_delay_is_when_the_rate_is_back_within_the_limit() -> None:
    quota = ReplicationQuota()
    quota.rate = 1000
    assert quota.delay_ms(0) == 0
    quota.record(3000, 0)
    assert quota.over(1000) and quota.delay_ms(1000) == 2000  # 3000 B over 3 s is the rate
    assert not quota.over(3000) and quota.delay_ms(3000) == 0
    quota.record(100_000, 3000)
    assert quota.delay_ms(3000) == 8000  # the first sample leaves the window at 11 s, before 103 s
