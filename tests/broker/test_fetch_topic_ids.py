"""Fetch v13-17 (topics by id, KIP-516; the follower in ``replica_state`` from v15, KIP-903) is served though v12
stays the advertised top: Kafka 3.9's ZooKeeper-mode followers send v17 without asking ApiVersions (a mixed
cluster, ``tests/apache_kafka/test_mixed_cluster.py``), while clients keep to v12 and topic names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

import samsa
from samsa.client import SyncClient
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from samsa.records import iter_batches


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[samsa.Broker]:
    with samsa.Broker(log_dir=tmp_path_factory.mktemp("fetch-ids") / "data") as b:
        b.create_topic("by-id", partitions=2)
        producer = Producer({"bootstrap.servers": b.bootstrap_servers})
        for i in range(10):
            producer.produce("by-id", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2)
        assert producer.flush(10) == 0
        yield b


def fetch(broker: samsa.Broker, version: int, topic_id: uuid.UUID, **fields: object) -> object:
    request = FetchRequest(
        max_wait_ms=10,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            FetchTopic(
                topic_id=topic_id,
                partitions=[FetchPartition(partition=p, partition_max_bytes=1 << 20) for p in (0, 1)],
            )
        ],
        **fields,  # type: ignore[arg-type]
    )
    with SyncClient(broker.bootstrap_servers) as client:
        return client.send(request, api_key=ApiKey.FETCH, version=version)


def topic_id(broker: samsa.Broker) -> uuid.UUID:
    request = MetadataRequest(topics=[MetadataRequestTopic(name="by-id")])
    with SyncClient(broker.bootstrap_servers) as client:
        metadata = client.send(request, api_key=ApiKey.METADATA, version=12)
    [topic] = metadata.topics
    assert topic.topic_id.int != 0
    return topic.topic_id  # type: ignore[no-any-return]


@pytest.mark.parametrize("version", [13, 15, 17])
def test_a_fetch_naming_its_topic_by_id_reads_it_and_answers_with_the_id(
    broker: samsa.Broker, version: int
) -> None:
    known = topic_id(broker)
    response = fetch(broker, version, known)
    [topic] = response.responses  # type: ignore[attr-defined]
    assert topic.topic_id == known
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in topic.partitions] == [
        (0, ErrorCode.NONE, 5),
        (1, ErrorCode.NONE, 5),
    ]
    assert sum(b.records_count for b in iter_batches(topic.partitions[0].records)) == 5


def test_an_unknown_topic_id_answers_unknown_topic_id(broker: samsa.Broker) -> None:
    response = fetch(broker, 17, uuid.uuid4(), replica_state=ReplicaState(replica_id=-1))
    [topic] = response.responses  # type: ignore[attr-defined]
    assert [p.error_code for p in topic.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID] * 2


def test_fetch_is_still_advertised_up_to_v12(broker: samsa.Broker) -> None:
    with SyncClient(broker.bootstrap_servers) as client:
        versions = client.send(ApiVersionsRequest(), api_key=ApiKey.API_VERSIONS, version=3)
    [fetch_range] = [(k.min_version, k.max_version) for k in versions.api_keys if k.api_key == ApiKey.FETCH]
    assert fetch_range == (4, 12)
