"""One picture of the cluster, straight from ``gather``: groups' committed offsets batched (OffsetFetch v8) and
one group at a time (what an older broker gets) give the same picture."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, TopicPartition

import samsa
from samsa.client import KafkaClient
from samsa.console import cluster_state


def picture(bootstrap: str) -> cluster_state.ClusterState:
    async def run() -> cluster_state.ClusterState:
        async with KafkaClient(bootstrap) as client:
            return await cluster_state.gather(client)

    return asyncio.run(run())


def test_groups_batched_and_one_by_one(samsa_broker: samsa.Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    samsa_broker.create_topic("t", partitions=2)
    for group, offsets in {"a": {0: 0, 1: 0}, "b": {1: 0}}.items():
        consumer = Consumer({"bootstrap.servers": samsa_broker.bootstrap_servers, "group.id": group})
        consumer.commit(offsets=[TopicPartition("t", p, o) for p, o in offsets.items()], asynchronous=False)
        consumer.close()
    batched = picture(samsa_broker.bootstrap_servers)
    monkeypatch.setattr(cluster_state, "BATCHED_OFFSET_FETCH", 99)
    one_by_one = picture(samsa_broker.bootstrap_servers)
    assert batched.groups == one_by_one.groups
    assert [(g["group_id"], [(o["partition"], o["lag"]) for o in g["offsets"]]) for g in batched.groups] == [
        ("a", [(0, 0), (1, 0)]),
        ("b", [(1, 0)]),
    ]
    assert all(g["coordinator"] == 1 and g["error"] is None for g in batched.groups)
