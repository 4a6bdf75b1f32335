"""Real clients' produce requests take the fast paths: counted, not timed. confluent-kafka, kafka-python and aiokafka
produce through a broker in this process (so the test can count inside it), plain, compressed and idempotent.

- The log's one-batch append (``Log._append_lone_batch``), not the general path: before the produce path handed
  the log a writable view of the request frame with its header read once, it was taken only for a ``bytearray``
  (the benchmark), and every real produce went the general way.
- The dispatcher's dataclass-free path (``handlers.produce.answer_raw``, the codec's ``read_produce_request`` and
  ``produce_answer_frame``): an embedded broker's test hook used to send every request through the general
  ``handle``; a transactional produce still takes it (KIP-890's verification).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import samsa
from samsa.storage.log import Log
from tests.clients.harness import Message, ak_produce, ck_consume, ck_produce, kp_produce

MESSAGES = [Message(f"k{i}".encode(), f"v{i}".encode() * 20) for i in range(50)]

Produce = Callable[..., list[tuple[int, int]]]


class Appends:
    """Leader appends to the topic's logs, by the path they took."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, topic: str) -> None:
        self.offered = 0
        self.general = 0
        real_append = Log.append_as_leader
        real_general = Log._append_as_leader

        def mine(log: Log) -> bool:
            return log.directory.name.startswith(f"{topic}-")

        def offered(log: Log, *args: Any, **kwargs: Any) -> Any:
            self.offered += mine(log)
            return real_append(log, *args, **kwargs)

        def general(log: Log, *args: Any, **kwargs: Any) -> Any:
            self.general += mine(log)
            return real_general(log, *args, **kwargs)

        monkeypatch.setattr(Log, "append_as_leader", offered)
        monkeypatch.setattr(Log, "_append_as_leader", general)


@pytest.mark.parametrize(
    ("produce", "codec", "extra"),
    [
        (ck_produce, "none", {}),
        (ck_produce, "lz4", {"linger.ms": 20}),
        (ck_produce, "none", {"enable.idempotence": True}),
        (kp_produce, "none", {}),
        (kp_produce, "gzip", {"linger_ms": 20}),
        (kp_produce, "none", {"enable_idempotence": True, "acks": "all"}),
    ],
    ids=["ck", "ck-lz4", "ck-idempotent", "kafka-python", "kafka-python-gzip", "kafka-python-idempotent"],
)
def test_a_real_clients_produce_takes_the_fast_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, produce: Produce, codec: str, extra: dict[str, object]
) -> None:
    appends = Appends(monkeypatch, "fast")
    with samsa.Broker(tmp_path / "data") as broker:
        broker.create_topic("fast", partitions=2)
        acked = _produce(produce, broker.bootstrap_servers, MESSAGES, codec, extra)
        assert sorted(offset for _, offset in acked) == list(range(len(MESSAGES)))
        consumed = ck_consume(broker.bootstrap_servers, "fast", len(MESSAGES), partition=1)
        assert [(c.offset, c.key, c.value) for c in consumed] == [
            (i, m.key, m.value) for i, m in enumerate(MESSAGES)
        ]
    assert appends.offered > 0
    assert appends.general == 0, f"{appends.general} of {appends.offered} appends took the general path"


def _produce(
    produce: Produce, bootstrap: str, messages: Sequence[Message], codec: str, extra: dict[str, object]
) -> list[tuple[int, int]]:
    return produce(bootstrap, "fast", messages, codec, partition=1, **extra)


class Codec:
    """Produce requests and answers by the codec that read or wrote them: the hand-written one
    (``samsa.protocol.produce_codec``: the fast path's ``read_produce_request`` and ``produce_answer_frame``) or,
    when it declined, the generated one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import samsa.protocol.produce_codec as codec

        self.versions: set[int] = set()
        self.decoded = self.declined_decode = self.encoded = self.declined_encode = 0
        real_read, real_write = codec.read_produce_request, codec.produce_answer_frame

        def read(frame: memoryview, start: tuple[int, int, int]) -> Any:
            result = real_read(frame, start)
            self.versions.add(start[1])
            if result is None:
                self.declined_decode += 1
            else:
                self.decoded += 1
            return result

        def write(correlation_id: int, version: int, answers: Any) -> Any:
            frame = real_write(correlation_id, version, answers)
            if frame is not None:
                self.encoded += 1
            else:
                self.declined_encode += 1
            return frame

        monkeypatch.setattr(codec, "read_produce_request", read)
        monkeypatch.setattr(codec, "produce_answer_frame", write)


class Served:
    """Produce requests by the way the dispatcher served them: the fast path (``answer_raw``, from the codec's
    tuples) or the general one (the handler's ``handle``, from the request's dataclasses)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from samsa.broker.handlers import produce

        self.fast = self.general = 0
        real_fast, real_general = produce.answer_raw, produce.handle

        def fast(*args: Any, **kwargs: Any) -> Any:
            self.fast += 1
            return real_fast(*args, **kwargs)

        async def general(*args: Any, **kwargs: Any) -> Any:
            self.general += 1
            return await real_general(*args, **kwargs)

        monkeypatch.setattr(produce, "answer_raw", fast)
        monkeypatch.setattr(produce, "handle", general)


@pytest.mark.parametrize(
    ("produce", "extra"),
    [
        (ck_produce, {}),
        (ck_produce, {"enable.idempotence": True}),
        (kp_produce, {"acks": "all"}),
        (ak_produce, {}),
    ],
    ids=["confluent-kafka", "confluent-kafka-idempotent", "kafka-python", "aiokafka"],
)
def test_a_real_clients_produce_is_served_without_dataclasses_by_the_hand_written_codec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, produce: Produce, extra: dict[str, object]
) -> None:
    served, codec = Served(monkeypatch), Codec(monkeypatch)
    with samsa.Broker(tmp_path / "data") as broker:
        broker.create_topic("fast", partitions=2)
        acked = _produce(produce, broker.bootstrap_servers, MESSAGES, "none", extra)
        assert sorted(offset for _, offset in acked) == list(range(len(MESSAGES)))
        consumed = ck_consume(broker.bootstrap_servers, "fast", len(MESSAGES), partition=1)
        assert [(c.value, c.offset) for c in consumed] == [(m.value, i) for i, m in enumerate(MESSAGES)]
    assert served.fast > 0
    assert served.general == 0, f"{served.general} produce requests took the general path"
    assert codec.decoded > 0 and codec.encoded > 0, codec.versions
    assert (codec.declined_decode, codec.declined_encode) == (0, 0), codec.versions


def test_a_transactional_produce_takes_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request naming a transactional id is verified with its coordinator (KIP-890): the general path."""
    from confluent_kafka import Producer

    served = Served(monkeypatch)
    with samsa.Broker(tmp_path / "data") as broker:
        broker.create_topic("fast", partitions=1)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "t-fast"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for message in MESSAGES[:5]:
            producer.produce("fast", message.value, message.key, partition=0)
        producer.commit_transaction(30)
    assert served.general > 0
    assert served.fast == 0
