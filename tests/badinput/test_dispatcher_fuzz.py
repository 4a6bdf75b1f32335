"""Well-formed but semantically odd requests through a real broker's ``RequestDispatcher.handle``.

Every served API at every advertised version gets hypothesis-built requests whose names, partitions, counts,
config keys, values and record sets are drawn from pools of troublemakers (unknown, empty, invalid, negative,
huge, corrupt). The answer must be a response frame that decodes for that API and version, no response (acks=0),
or a closed connection (``ConnectionClosedByHandler``); never another exception. Afterwards the broker still serves over a real socket and a
guard topic the fuzzing never names still holds its data.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.broker.handlers import HANDLERS
from samsa.broker.network import ConnectionClosedByHandler, ConnectionInfo, ResponsePart
from samsa.protocol import ApiKey, RequestHeader, api_schema, decode_response, encode_request
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from samsa.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from tests.clients.harness import free_port
from tests.protocol.protocol_strategies import message_strategy

from . import wire

FUZZ = settings(
    max_examples=int(os.environ.get("SAMSA_FUZZ_EXAMPLES", "50")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
TOPICS = ["fz", "fz", "fz-two", "", "bad/name", "x" * 250, "__consumer_offsets", "fresh-topic", "ünï"]
GUARD = "guard"
CONFIG_KEYS = ["retention.ms", "cleanup.policy", "segment.bytes", "max.message.bytes", "no.such.key", ""]
CONFIG_VALUES = ["-1", "0", "1", "abc", "", "delete", "compact,delete", "9" * 30, None]
PARTITIONS = [-1, 0, 1, 2, 99, 2**31 - 1, -(2**31)]
COUNTS = [-5, -1, 0, 1, 2, 3, 20_001, 2**31 - 1]  # 20,001: over the 10,000 new-partition cap from any start
HANDLE_TIMEOUT_S = 10.0  # every wait a request can ask for is bounded well below this by oddify
INFO = ConnectionInfo("fuzz-1", "127.0.0.1", 1, "PLAINTEXT")


def record_sets() -> st.SearchStrategy[Any]:
    good = wire.batch(b"fuzz")
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    return st.sampled_from([good, bytes(bad_crc), good[:-4], b"", good + good, b"\0" * 61]) | st.binary(
        max_size=80
    )


class Running:
    """A started in-process broker on its own event loop (the loop runs only inside ``run``)."""

    def __init__(self, log_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.port = free_port()
        config = KafkaConfig.from_properties(
            {
                "node.id": "1",
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "log.dirs": str(log_dir),
                "num.partitions": "2",
                "group.initial.rebalance.delay.ms": "0",
            }
        )
        self.broker = KafkaServer(config)
        self.run(self.broker.start())

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def stop(self) -> None:
        self.run(self.broker.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    running = Running(tmp_path_factory.mktemp("dispatch-fuzz"))
    try:
        for name, partitions in [("fz", 2), ("fz-two", 1), (GUARD, 1)]:
            result = running.run(
                call(running, 19, 5, CreateTopicsRequest([CreatableTopic(name, partitions, 1)]))
            )
            assert result.topics[0].error_code == 0
        produced = running.run(call(running, 0, 7, guard_produce()))
        assert produced.responses[0].partition_responses[0].error_code == 0
        yield running
    finally:
        running.stop()


def guard_produce() -> Any:
    from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

    data = [TopicProduceData(GUARD, [PartitionProduceData(0, wire.batch(b"guarded", b"data"))])]
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=data)


async def call(running: Running, key: int, version: int, message: Any) -> Any:
    frame = encode_request(RequestHeader(key, version, 99, "fuzz"), message)
    parts = await running.broker.dispatcher.handle(INFO, memoryview(bytearray(frame[4:])))
    assert parts is not None
    header, response = decode_response(join(parts)[4:], key, version)
    assert header.correlation_id == 99
    return response


def join(parts: Any) -> bytes:
    """A response's bytes, reading file regions as ``sendfile`` would send them."""
    out = bytearray()
    for part in parts:
        if isinstance(part, (bytes, bytearray, memoryview)):
            out += part
        else:
            out += os.pread(part.fd, part.size, part.position)
    (size,) = struct.unpack_from(">i", out)
    assert size == len(out) - 4
    return bytes(out)


def oddify(data: st.DataObject, value: Any, owner: str = "") -> Any:
    """The same message with names, partitions, counts, configs and record sets swapped for troublemakers."""
    if isinstance(value, list):
        return [oddify(data, item, owner) for item in value]
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    is_config = "Config" in type(value).__name__
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        current = getattr(value, f.name)
        if isinstance(current, list) or dataclasses.is_dataclass(current):
            if f.name == "topic_names":
                changes[f.name] = [data.draw(st.sampled_from(TOPICS)) for _ in current]
            elif f.name == "configuration_keys" or f.name == "broker_ids":
                continue
            elif f.name == "partitions" and current and isinstance(current[0], int):
                changes[f.name] = [data.draw(st.sampled_from(PARTITIONS)) for _ in current]
            else:
                changes[f.name] = oddify(data, current, type(value).__name__)
        elif f.name in ("name", "topic", "resource_name") and isinstance(current, str):
            changes[f.name] = data.draw(st.sampled_from(CONFIG_KEYS if is_config else TOPICS))
        elif f.name == "value" and is_config:
            changes[f.name] = data.draw(st.sampled_from(CONFIG_VALUES))
        elif f.name in ("partition", "partition_index", "index"):
            changes[f.name] = data.draw(st.sampled_from(PARTITIONS))
        elif f.name in ("num_partitions", "count"):
            changes[f.name] = data.draw(st.sampled_from(COUNTS))
        elif f.name == "replication_factor":
            changes[f.name] = data.draw(st.sampled_from([-1, 0, 1, 3]))
        elif f.name == "acks":
            changes[f.name] = data.draw(st.sampled_from([-1, 0, 1, 2, -2]))
        elif f.name in ("session_timeout_ms", "rebalance_timeout_ms"):
            changes[f.name] = data.draw(st.sampled_from([-1, 0, 10]))  # a join never waits on other members
        elif f.name == "max_wait_ms":
            changes[f.name] = data.draw(st.sampled_from([-1, 0, 5]))  # no test waits seconds on a long poll
        elif f.name == "records" and current is not None:
            changes[f.name] = data.draw(record_sets())
        elif f.name == "resource_type":
            changes[f.name] = data.draw(st.sampled_from([2, 2, 4, 0, -1, 99]))
    return dataclasses.replace(value, **changes)


def served_versions(key: int) -> list[int]:
    low, high = HANDLERS[key].versions
    return list(range(low, high + 1))


@pytest.mark.parametrize("key", sorted(HANDLERS))
@FUZZ
@given(data=st.data())
def test_odd_requests_get_a_response_or_a_closed_connection(
    running: Running, key: int, data: st.DataObject
) -> None:
    version = data.draw(st.sampled_from(served_versions(key)))
    message = oddify(data, data.draw(message_strategy(api_schema(key).request_type, version)))
    frame = encode_request(RequestHeader(key, version, 4321, "odd"), message)

    async def handle() -> list[ResponsePart] | None:
        handling = running.broker.dispatcher.handle(INFO, memoryview(bytearray(frame[4:])))
        parts = await asyncio.wait_for(handling, HANDLE_TIMEOUT_S)
        return None if parts is None else list(parts)

    try:
        parts = running.run(handle())
    except ConnectionClosedByHandler:
        return
    if parts is None:
        assert key == 0 and message.acks == 0
        return
    header, response = decode_response(join(parts)[4:], key, version)
    assert header.correlation_id == 4321
    assert type(response) is api_schema(key).response_type


def test_broker_still_serves_after_the_fuzzing(running: Running) -> None:
    """Runs after the fuzz tests of this module (same fixture): a real socket, and the guard data intact."""

    async def over_socket() -> tuple[int, list[bytes | None]]:
        return await asyncio.to_thread(talk)

    def talk() -> tuple[int, list[bytes | None]]:
        with wire.Connection(running.port) as conn:
            versions = conn.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("after", "1"))
            return versions.error_code, wire.fetch_values(conn, GUARD)

    error, values = running.run(over_socket())
    assert error == 0
    assert values == [b"guarded", b"data"]
