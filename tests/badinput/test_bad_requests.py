"""Well-framed requests carrying bad content: Kafka's error code for the bad part only, nothing else disturbed.

Corrupt or oversized batches fail their own partition and leave it unchanged; bad topic names and configs fail
their own topic with a message; nothing is half-created. After each test conftest checks that the broker still
serves and that data acknowledged before is fetched byte for byte.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.alter_configs import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from samsa.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from samsa.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from samsa.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from samsa.protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncrementalConfig,
)
from samsa.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncrementalResource,
)
from samsa.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
)
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import CompressionType, build_batch, build_legacy_message_set
from tests.clients.harness import BrokerProcess

from . import wire
from .conftest import MAX_MESSAGE

TOPIC_RESOURCE = 2


def corrupt(batch: bytes) -> bytes:
    """The same batch with one payload bit flipped: its CRC no longer matches."""
    out = bytearray(batch)
    out[-2] ^= 0x10
    return bytes(out)


@pytest.fixture(scope="module")
def conn(broker: BrokerProcess) -> Iterator[wire.Connection]:
    with wire.Connection(broker.port, client_id="bad-requests") as connection:
        yield connection


def fresh_topic(conn: wire.Connection, name: str, partitions: int = 1, **configs: str) -> str:
    result = wire.create_topic(conn, name, partitions, **configs).topics[0]
    assert (result.name, result.error_code) == (name, 0), result
    return name


# --- produce --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 7, 8, 9])
def test_corrupt_batch_fails_its_partition_only(conn: wire.Connection, version: int) -> None:
    topic = fresh_topic(conn, f"crc-v{version}", 3)
    assert wire.produce(conn, topic, {1: wire.batch(b"old")}) == {1: (0, 0)}
    response = wire.produce_response(
        conn,
        topic,
        {0: wire.batch(b"p0"), 1: corrupt(wire.batch(b"broken", b"crc")), 2: wire.batch(b"p2a", b"p2b")},
        version=version,
    )
    answers = {p.index: p for p in response.responses[0].partition_responses}
    assert {i: (p.error_code, p.base_offset) for i, p in answers.items()} == {
        0: (0, 0),
        1: (ErrorCode.CORRUPT_MESSAGE, -1),
        2: (0, 0),
    }
    if version >= 8:
        assert answers[1].error_message and "crc" in answers[1].error_message.lower()
    assert wire.fetch_values(conn, topic, 0) == [b"p0"]
    assert wire.fetch_values(conn, topic, 1) == [b"old"]
    assert wire.fetch_values(conn, topic, 2) == [b"p2a", b"p2b"]


def test_batch_over_max_message_bytes_is_message_too_large(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "too-large", 2)
    big = wire.batch(b"x" * (MAX_MESSAGE + 100))
    response = wire.produce_response(conn, topic, {0: big, 1: wire.batch(b"small")}, version=9)
    answers = {p.index: p for p in response.responses[0].partition_responses}
    assert (answers[0].error_code, answers[0].base_offset) == (ErrorCode.MESSAGE_TOO_LARGE, -1)
    assert answers[0].error_message
    assert (answers[1].error_code, answers[1].base_offset) == (0, 0)
    assert wire.fetch_records(conn, topic, 0) == (0, b"")
    assert wire.fetch_values(conn, topic, 1) == [b"small"]


def test_topic_max_message_bytes_override_applies(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "small-max", 1, max_message_bytes="500")
    assert wire.produce(conn, topic, {0: wire.batch(b"y" * 600)}) == {0: (ErrorCode.MESSAGE_TOO_LARGE, -1)}
    assert wire.produce(conn, topic, {0: wire.batch(b"y" * 100)}) == {0: (0, 0)}


def test_produce_to_unknown_topic_and_partition(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "known", 1)
    assert wire.produce(conn, topic, {0: wire.batch(b"a"), 5: wire.batch(b"b"), -1: wire.batch(b"c")}) == {
        0: (0, 0),
        5: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        -1: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    assert wire.produce(conn, "no-such-topic", {0: wire.batch(b"a")}) == {
        0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    }


def test_invalid_acks_is_answered_per_partition(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "bad-acks", 1)
    assert wire.produce(conn, topic, {0: wire.batch(b"a")}, acks=2)[0] == (
        ErrorCode.INVALID_REQUIRED_ACKS,
        -1,
    )
    assert wire.fetch_records(conn, topic, 0) == (0, b"")


BAD_RECORD_SETS = {
    "empty": b"",
    "cut-batch": build_batch([b"abcdef"], timestamp=1)[:-3],
    "ten-zero-bytes": b"\0" * 10,
    "legacy-magic-1": build_legacy_message_set(1, [b"old"], timestamp=5),
    "two-batches": build_batch([b"a"], timestamp=1) + build_batch([b"b"], timestamp=1),
}


@pytest.mark.parametrize("name", sorted(BAD_RECORD_SETS))
def test_record_set_that_is_not_one_v2_batch_is_invalid_record(conn: wire.Connection, name: str) -> None:
    topic = fresh_topic(conn, f"invalid-record-{name}", 2)
    result = wire.produce(conn, topic, {0: BAD_RECORD_SETS[name], 1: wire.batch(b"fine")}, version=8)
    assert result[1] == (0, 0)
    assert result[0] == (ErrorCode.INVALID_RECORD, -1)
    assert wire.fetch_records(conn, topic, 0) == (0, b"")


def test_zstd_below_produce_v7_is_unsupported_compression(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "zstd-v5", 1)
    zstd = build_batch([b"z" * 100], compression=CompressionType.ZSTD, timestamp=1)
    assert wire.produce(conn, topic, {0: zstd}, version=5) == {
        0: (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, -1)
    }


def test_acks_zero_with_a_corrupt_batch_closes_the_connection(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as conn:
        topic = fresh_topic(conn, "acks0-corrupt", 1)
        request = ProduceRequest(
            acks=0,
            timeout_ms=1000,
            topic_data=[TopicProduceData(topic, [PartitionProduceData(0, corrupt(wire.batch(b"x")))])],
        )
        conn.send(ApiKey.PRODUCE, 7, request)
        conn.sock.settimeout(2.0)
        assert conn.closed_by_broker()
    with wire.Connection(broker.port) as conn:
        assert wire.fetch_records(conn, topic, 0) == (0, b"")


# --- fetch ----------------------------------------------------------------------------------------------------


def test_fetch_errors_are_per_partition(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "fetch-errors", 1)
    assert wire.produce(conn, topic, {0: wire.batch(b"v")}) == {0: (0, 0)}
    request = FetchRequest(
        max_wait_ms=0,
        max_bytes=1_000_000,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(0, fetch_offset=0, partition_max_bytes=100_000),
                    FetchPartition(1, fetch_offset=0, partition_max_bytes=100_000),
                    FetchPartition(0, fetch_offset=-5, partition_max_bytes=100_000),
                    FetchPartition(0, fetch_offset=99, partition_max_bytes=-1),
                ],
            ),
            FetchTopic(topic="no-such-topic", partitions=[FetchPartition(0, partition_max_bytes=100)]),
        ],
    )
    response = conn.request(ApiKey.FETCH, 11, request)
    codes = [(t.topic, p.partition_index, p.error_code) for t in response.responses for p in t.partitions]
    assert codes == [
        (topic, 0, 0),
        (topic, 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (topic, 0, ErrorCode.OFFSET_OUT_OF_RANGE),
        (topic, 0, ErrorCode.OFFSET_OUT_OF_RANGE),
        ("no-such-topic", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert wire.batch_values(bytes(response.responses[0].partitions[0].records)) == [b"v"]


# --- topics and configs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["", ".", "..", "bad/name", "sp ace", "ünï", "x" * 250, "tab\there"], ids=repr
)
def test_bad_topic_name_is_invalid_topic_exception(conn: wire.Connection, name: str) -> None:
    result = wire.create_topic(conn, name).topics[0]
    assert result.name == name
    assert result.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert result.error_message
    assert wire.metadata(conn).topics == [] or name not in {t.name for t in wire.metadata(conn).topics}


def test_bad_name_fails_its_topic_only(conn: wire.Connection) -> None:
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic("good-one", 1, 1),
            CreatableTopic("bad/one", 1, 1),
            CreatableTopic("good-two", 2, 1),
        ]
    )
    response: CreateTopicsResponse = conn.request(ApiKey.CREATE_TOPICS, 7, request)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("good-one", 0),
        ("bad/one", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("good-two", 0),
    ]
    meta = wire.metadata(conn, "good-one", "good-two")
    assert [(t.name, t.error_code, len(t.partitions)) for t in meta.topics] == [
        ("good-one", 0, 1),
        ("good-two", 0, 2),
    ]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("retention.ms", "abc"),
        ("retention.ms", "99999999999999999999999"),
        ("cleanup.policy", "shred"),
        ("max.message.bytes", "-5"),
        ("segment.bytes", "1"),
        ("no.such.config", "1"),
    ],
)
@pytest.mark.parametrize("validate_only", [False, True])
def test_bad_config_is_invalid_config_with_a_message(
    conn: wire.Connection, key: str, value: str, validate_only: bool
) -> None:
    name = f"cfg-{key}-{abs(hash(value)) % 10_000}-{validate_only}".replace(".", "-")
    topic = CreatableTopic(name, 1, 1, configs=[CreatableTopicConfig(key, value)])
    response: CreateTopicsResponse = conn.request(
        ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], validate_only=validate_only)
    )
    (result,) = response.topics
    assert result.error_code == ErrorCode.INVALID_CONFIG
    assert result.error_message and key in result.error_message
    meta = wire.metadata(conn, name)
    assert meta.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # nothing half-created


@pytest.mark.parametrize("count", [10_002, 2**31 - 1])
def test_excessive_partition_count_is_refused_quickly(conn: wire.Connection, count: int) -> None:
    """As Kafka's controller: more than 10,000 new partitions in one request is POLICY_VIOLATION for all."""
    started = time.monotonic()
    request = CreateTopicsRequest(topics=[CreatableTopic("huge", count, 1), CreatableTopic("tiny", 1, 1)])
    response: CreateTopicsResponse = conn.request(ApiKey.CREATE_TOPICS, 5, request)
    assert time.monotonic() - started < 2
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("huge", ErrorCode.POLICY_VIOLATION),
        ("tiny", ErrorCode.POLICY_VIOLATION),
    ]
    assert all(t.error_message for t in response.topics)
    assert {t.error_code for t in wire.metadata(conn, "huge", "tiny").topics} == {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    topic = fresh_topic(conn, f"grow-{count}", 1)
    grow = conn.request(
        ApiKey.CREATE_PARTITIONS, 1, CreatePartitionsRequest(topics=[CreatePartitionsTopic(topic, count)])
    )
    assert [(r.name, r.error_code) for r in grow.results] == [(topic, ErrorCode.POLICY_VIOLATION)]
    assert len(wire.metadata(conn, topic).topics[0].partitions) == 1
    assert time.monotonic() - started < 4


def topic_config(conn: wire.Connection, topic: str, key: str) -> str | None:
    response = conn.request(
        ApiKey.DESCRIBE_CONFIGS,
        1,
        DescribeConfigsRequest(resources=[DescribeConfigsResource(TOPIC_RESOURCE, topic, [key])]),
    )
    (result,) = response.results
    assert result.error_code == 0
    values = {c.name: c.value for c in result.configs}
    return values[key]


def test_alter_configs_with_a_bad_value_changes_nothing(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "alter-bad", 1, retention_ms="1234567")
    request = AlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                TOPIC_RESOURCE,
                topic,
                [AlterableConfig("retention.ms", "7"), AlterableConfig("segment.ms", "x")],
            )
        ]
    )
    response = conn.request(ApiKey.ALTER_CONFIGS, 1, request)
    assert [(r.resource_name, r.error_code) for r in response.responses] == [
        (topic, ErrorCode.INVALID_CONFIG)
    ]
    assert response.responses[0].error_message and "segment.ms" in response.responses[0].error_message
    assert topic_config(conn, topic, "retention.ms") == "1234567"


def test_incremental_alter_configs_bad_operation_and_value(conn: wire.Connection) -> None:
    topic = fresh_topic(conn, "incr-bad", 1, retention_ms="1234567")
    for config, expected in [
        (IncrementalConfig("retention.ms", 7, "1"), ErrorCode.INVALID_REQUEST),
        (IncrementalConfig("retention.ms", 0, None), ErrorCode.INVALID_CONFIG),
        (IncrementalConfig("retention.ms", 0, "soon"), ErrorCode.INVALID_CONFIG),
    ]:
        request = IncrementalAlterConfigsRequest(
            resources=[IncrementalResource(TOPIC_RESOURCE, topic, [config])]
        )
        response = conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, request)
        assert [(r.resource_name, r.error_code) for r in response.responses] == [(topic, expected)]
        assert response.responses[0].error_message
    assert topic_config(conn, topic, "retention.ms") == "1234567"


def test_metadata_auto_create_with_a_bad_name_is_invalid_topic(conn: wire.Connection) -> None:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="bad/auto"), MetadataRequestTopic(name="")],
        allow_auto_topic_creation=True,
    )
    response = conn.request(ApiKey.METADATA, 4, request)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("bad/auto", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("", ErrorCode.INVALID_TOPIC_EXCEPTION),
    ]
