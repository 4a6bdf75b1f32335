"""Each real client produces and consumes through Samsa with every codec, keys, null values, headers and
timestamps; what one client produces, every other client reads back byte-identical."""

from __future__ import annotations

import itertools
import uuid

import pytest

from .harness import (
    CONSUMERS,
    PRODUCERS,
    BrokerProcess,
    Message,
    ck_consume,
    kcat_consume,
    kcat_path,
    kcat_produce,
)

pytestmark = pytest.mark.clients

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BASE_TS = 1_700_000_000_000


def sample_messages(n: int = 50) -> list[Message]:
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"key-{i}".encode()
        # a null value (tombstone) always with a key: aiokafka refuses a record with neither
        value = None if i % 11 == 5 and key is not None else (f"value-{i}-".encode() * (1 + i % 5))
        headers = (("h1", f"v{i}".encode()), ("empty", b"")) if i % 3 == 0 else ()
        out.append(Message(key, value, headers, BASE_TS + i * 10))
    return out


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("client", sorted(PRODUCERS))
@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_same_client(broker: BrokerProcess, client: str, codec: str) -> None:
    topic = topic_name(f"rt-{client}-{codec}")
    messages = sample_messages()
    acked = PRODUCERS[client](broker.bootstrap, topic, messages, codec)
    assert [offset for _, offset in acked] == list(range(len(messages)))
    consumed = CONSUMERS[client](broker.bootstrap, topic, len(messages))
    assert [c.offset for c in consumed] == list(range(len(messages)))
    assert [c.message() for c in consumed] == messages


@pytest.mark.parametrize(("producer", "consumer"), list(itertools.permutations(sorted(PRODUCERS), 2)))
def test_cross_client_byte_identical(broker: BrokerProcess, producer: str, consumer: str) -> None:
    topic = topic_name(f"x-{producer}-{consumer}")
    messages = sample_messages(30)
    PRODUCERS[producer](broker.bootstrap, topic, messages, "lz4")
    consumed = CONSUMERS[consumer](broker.bootstrap, topic, len(messages))
    assert [c.message() for c in consumed] == messages


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_produce_consume(broker: BrokerProcess, codec: str) -> None:
    assert kcat_path() is not None, "kcat is installed by `make test` (Debian package kcat)"
    topic = topic_name(f"kcat-{codec}")
    messages = [Message(f"k{i}".encode(), f"payload {i}".encode()) for i in range(40)]
    kcat_produce(broker.bootstrap, topic, messages, codec)
    consumed = kcat_consume(broker.bootstrap, topic, len(messages))
    assert [(c.key, c.value) for c in consumed] == [(m.key, m.value) for m in messages]
    # and a librdkafka consumer in Python sees the same bytes
    assert [(c.key, c.value) for c in ck_consume(broker.bootstrap, topic, len(messages))] == [
        (m.key, m.value) for m in messages
    ]
