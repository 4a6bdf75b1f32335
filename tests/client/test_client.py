"""samsa.client against a real broker process: produce/fetch in every codec, offsets, admin, SyncClient."""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from samsa.client import BrokerError, KafkaClient, KafkaError, NewTopic, SyncClient, TopicPartition
from samsa.client.records import ConsumerRecord, ProducerRecord, build_batch, iter_consumer_records
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from tests.clients.harness import BrokerProcess, free_port

T = TypeVar("T")
BASE_TS = 1_700_000_000_000


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(broker: BrokerProcess, body: Callable[[KafkaClient], Awaitable[T]]) -> T:
    async def main() -> T:
        async with KafkaClient(broker.bootstrap, request_timeout_ms=10000) as client:
            return await body(client)

    return asyncio.run(main())


async def create(client: KafkaClient, name: str, partitions: int = 1, **configs: str) -> None:
    result = await client.create_topics([NewTopic(name, partitions, 1, configs)])
    assert result == {name: None}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_fetch_round_trip(broker: BrokerProcess, codec: str) -> None:
    topic = topic_name(f"rt-{codec}")
    tp = TopicPartition(topic, 0)
    records = [
        ProducerRecord(b"k0", b"v0" * 100, (("h1", b"x"), ("h2", None)), BASE_TS),
        ProducerRecord(None, b"no-key", (), BASE_TS + 5),
        ProducerRecord(b"tombstone", None, (), BASE_TS + 10),
    ]

    async def body(client: KafkaClient) -> tuple[int, int, list[ConsumerRecord], int]:
        await create(client, topic)
        first = await client.produce(tp, build_batch(records, codec))
        second = await client.produce(tp, build_batch(records[:1], codec))
        fetched = (await client.fetch({tp: 0}, max_wait_ms=100))[tp]
        assert fetched.error_code == 0
        got = list(iter_consumer_records(fetched.records, topic, 0))
        return first[0], second[0], got, fetched.high_watermark

    first, second, got, high_watermark = run(broker, body)
    assert (first, second, high_watermark) == (0, 3, 4)
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in got] == [
        (0, BASE_TS, 0, b"k0", b"v0" * 100, (("h1", b"x"), ("h2", None))),
        (1, BASE_TS + 5, 0, None, b"no-key", ()),
        (2, BASE_TS + 10, 0, b"tombstone", None, ()),
        (3, BASE_TS, 0, b"k0", b"v0" * 100, (("h1", b"x"), ("h2", None))),
    ]
    assert {(r.topic, r.partition) for r in got} == {(topic, 0)}


def test_fetch_from_middle_skips_earlier_records_of_the_batch(broker: BrokerProcess) -> None:
    topic = topic_name("middle")
    tp = TopicPartition(topic, 0)

    async def body(client: KafkaClient) -> list[int]:
        await create(client, topic)
        await client.produce(tp, build_batch([ProducerRecord(None, b"%d" % i) for i in range(5)], "gzip"))
        fetched = (await client.fetch({tp: 3}, max_wait_ms=100))[tp]
        return [r.offset for r in iter_consumer_records(fetched.records, topic, 0, start_offset=3)]

    assert run(broker, body) == [3, 4]


def test_list_offsets(broker: BrokerProcess) -> None:
    topic = topic_name("offsets")
    tp = TopicPartition(topic, 0)

    async def body(client: KafkaClient) -> list[dict[TopicPartition, tuple[int, int]]]:
        await create(client, topic)
        for i in range(4):
            await client.produce(tp, build_batch([ProducerRecord(None, b"x", (), BASE_TS + i * 1000)]))
        return [
            await client.list_offsets({tp: -1}),
            await client.list_offsets({tp: -2}),
            await client.list_offsets({tp: BASE_TS + 1500}),
            await client.list_offsets({tp: BASE_TS + 99_000}),
            await client.list_offsets({tp: -3}),
        ]

    latest, earliest, by_time, after_all, max_ts = run(broker, body)
    assert latest[tp][0] == 4
    assert earliest[tp][0] == 0
    assert by_time[tp] == (2, BASE_TS + 2000)
    assert after_all[tp] == (-1, -1)
    assert max_ts[tp] == (3, BASE_TS + 3000)


def test_unknown_partition_raises_broker_error(broker: BrokerProcess) -> None:
    async def body(client: KafkaClient) -> None:
        await client.list_offsets({TopicPartition(topic_name("missing"), 0): -1})

    with pytest.raises(BrokerError) as info:
        run(broker, body)
    assert info.value.name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert info.value.exception_name == "UnknownTopicOrPartitionException"


def test_metadata(broker: BrokerProcess) -> None:
    topic = topic_name("meta")

    async def body(client: KafkaClient) -> tuple[object, object]:
        await create(client, topic, 3)
        return await client.metadata([topic]), await client.metadata()

    one, every = run(broker, body)
    assert one.brokers == {1: ("127.0.0.1", broker.port, None)}  # type: ignore[attr-defined]
    assert one.controller_id == 1  # type: ignore[attr-defined]
    meta = one.topics[topic]  # type: ignore[attr-defined]
    assert meta.error_code == 0 and meta.topic_id is not None
    assert sorted(meta.partitions) == [0, 1, 2]
    assert {(p.leader, p.replicas, p.isr) for p in meta.partitions.values()} == {(1, (1,), (1,))}
    assert topic in every.topics  # type: ignore[attr-defined]


def test_admin_create_describe_alter_delete(broker: BrokerProcess) -> None:
    topic = topic_name("admin")

    async def body(client: KafkaClient) -> None:
        await create(client, topic, 2, **{"retention.ms": "123456"})
        again = await client.create_topics([NewTopic(topic, 2, 1)])
        assert again[topic] is not None and again[topic].name == "TOPIC_ALREADY_EXISTS"
        assert again[topic].exception_name == "TopicExistsException"

        configs = (await client.describe_configs([topic]))[topic]
        assert configs["retention.ms"].value == "123456" and not configs["retention.ms"].is_default
        assert configs["cleanup.policy"].is_default

        assert await client.incremental_alter_configs({topic: {"retention.ms": "999"}}) == {topic: None}
        assert (await client.describe_configs([topic]))[topic]["retention.ms"].value == "999"

        assert await client.create_partitions({topic: 4}) == {topic: None}
        shrink = await client.create_partitions({topic: 1})
        assert shrink[topic] is not None and shrink[topic].name == "INVALID_PARTITIONS"
        assert sorted((await client.metadata([topic])).topics[topic].partitions) == [0, 1, 2, 3]

        tp = TopicPartition(topic, 0)
        await client.produce(tp, build_batch([ProducerRecord(None, b"%d" % i) for i in range(5)]))
        assert await client.delete_records({tp: 3}) == {tp: 3}
        assert (await client.list_offsets({tp: -2}))[tp][0] == 3

        dirs = await client.describe_log_dirs({topic: [0, 1]})
        assert list(dirs) == [1]
        (log_dir,) = dirs[1]
        assert log_dir.error_code == 0
        assert set(log_dir.partitions) == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
        assert log_dir.partitions[tp].size > 0

        deleted = await client.delete_topics([topic, topic + "-nope"])
        assert deleted[topic] is None
        assert deleted[topic + "-nope"] is not None
        assert deleted[topic + "-nope"].name == "UNKNOWN_TOPIC_OR_PARTITION"
        assert topic not in (await client.metadata()).topics

    run(broker, body)


def test_generic_send(broker: BrokerProcess) -> None:
    async def body(client: KafkaClient) -> object:
        return await client.send(ApiVersionsRequest(), api_key=18, version=0)

    response = run(broker, body)
    keys = {k.api_key for k in response.api_keys}  # type: ignore[attr-defined]
    assert {0, 1, 2, 3, 18, 19} <= keys


def test_sync_client_from_plain_threads(broker: BrokerProcess) -> None:
    topic = topic_name("sync")
    results: dict[int, tuple[int, int]] = {}
    errors: list[BaseException] = []
    with SyncClient(broker.bootstrap) as client:
        assert client.create_topics([NewTopic(topic, 1, 1)]) == {topic: None}
        tp = TopicPartition(topic, 0)

        def worker(index: int) -> None:
            try:
                results[index] = client.produce(tp, build_batch([ProducerRecord(None, b"%d" % index)]))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sorted(offset for offset, _ in results.values()) == [0, 1, 2, 3]
        fetched = client.fetch({tp: 0}, max_wait_ms=100)[tp]
        values = sorted(r.value or b"" for r in iter_consumer_records(fetched.records, topic, 0))
        assert values == [b"0", b"1", b"2", b"3"]
        assert client.list_offsets({tp: -1}) == {tp: (4, -1)}
    with pytest.raises(RuntimeError):
        client.metadata()


def test_connection_refused_is_a_clear_kafka_error() -> None:
    port = free_port()

    async def main() -> None:
        async with KafkaClient(f"127.0.0.1:{port}", request_timeout_ms=2000) as client:
            await client.metadata()

    with pytest.raises(KafkaError, match=f"cannot connect to broker 127.0.0.1:{port}"):
        asyncio.run(main())


def test_bad_bootstrap_string() -> None:
    with pytest.raises(KafkaError, match="not host:port"):
        KafkaClient("localhost")


def test_silent_broker_times_out_with_a_clear_error() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        async def main() -> None:
            async with KafkaClient(f"127.0.0.1:{port}", request_timeout_ms=300) as client:
                await client.metadata()

        with pytest.raises(KafkaError, match=f"to broker 127.0.0.1:{port} timed out after 300 ms"):
            asyncio.run(main())


def test_sync_client_reconnects_after_a_broker_restart(tmp_path: Path) -> None:
    proc = BrokerProcess(data_dir=tmp_path / "data")
    proc.start()
    try:
        with SyncClient(proc.bootstrap, request_timeout_ms=5000) as client:
            topic = topic_name("restart")
            assert client.create_topics([NewTopic(topic, 1, 1)]) == {topic: None}
            tp = TopicPartition(topic, 0)
            client.produce(tp, build_batch([ProducerRecord(None, b"before")]))
            proc.stop()
            with pytest.raises(KafkaError):
                client.list_offsets({tp: -1})
            proc.start()
            assert client.produce(tp, build_batch([ProducerRecord(None, b"after")]))[0] == 1
            fetched = client.fetch({tp: 0}, max_wait_ms=50)[tp]
            assert [r.value for r in iter_consumer_records(fetched.records, topic, 0)] == [
                b"before",
                b"after",
            ]
    finally:
        proc.stop()
