"""Golden tests: request bytes from each real client decode to the expected messages, and our responses decode
in the clients' own protocol code (kafka-python's ``kafka.protocol`` classes).

Two sources of request bytes: the frames stored in ``frames/`` (regenerate with ``record_frames.py``) and a live
capture through ``CaptureProxy`` of the same scenario against a ``samsa serve`` process. Both are checked by
``check_requests``; the live capture's responses are decoded by kafka-python and by ``samsa.protocol``, and must
re-encode, in kafka-python, to exactly the bytes we sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from samsa.broker.handlers import HANDLERS
from samsa.protocol import ApiKey, RequestHeader, decode_request, decode_response, response_header_version
from samsa.protocol.schema import in_range
from samsa.records.batch_view import iter_batches
from samsa.records.iterate import iter_records
from tests.clients.harness import BrokerProcess

from . import scenarios
from .capture import REQUEST, CaptureProxy
from .record_frames import client_requests, proxied_broker, read_frames

pytestmark = [pytest.mark.clients, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def record_values(raw: Any) -> list[bytes | None]:
    data = bytes(raw or b"")
    return [r.value for view in iter_batches(data) for r in iter_records(view)]


def check_requests(client: str, requests: list[tuple[int, bytes]]) -> list[tuple[int, RequestHeader, Any]]:
    """Every request decodes, with the client's id; the opening ApiVersions, the Produce record values and the
    topics of Metadata and Fetch are what the scenario sent."""
    expect = scenarios.EXPECT[client]
    topic = scenarios.topic(client)
    decoded = []
    for connection, frame in requests:
        header, message = decode_request(frame, allow_trailing=True)
        assert header.client_id == expect.client_id
        decoded.append((connection, header, message))
    connections = sorted({c for c, _, _ in decoded})
    assert len(connections) >= 2  # a producer and a consumer at least
    for connection in connections:
        first = next(h for c, h, _ in decoded if c == connection)
        assert first.request_api_key == ApiKey.API_VERSIONS, "every connection opens with ApiVersions"
    opening = []
    for connection, header, _ in decoded:
        if connection != connections[0] or header.request_api_key != ApiKey.API_VERSIONS:
            break
        opening.append(header.request_api_version)
    assert tuple(opening) == expect.api_versions_first

    by_key: dict[int, list[Any]] = {}
    for _, header, message in decoded:
        by_key.setdefault(header.request_api_key, []).append(message)
    assert {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA, ApiKey.API_VERSIONS} <= set(by_key)
    produced: list[bytes | None] = []
    for produce in by_key[ApiKey.PRODUCE]:
        assert produce.acks == expect.acks
        assert [t.name for t in produce.topic_data] == [topic]
        for partition in produce.topic_data[0].partition_data:
            assert partition.index == 0
            produced += record_values(partition.records)
    assert produced == scenarios.values(client)
    for fetch in by_key[ApiKey.FETCH]:
        assert [(t.topic, [p.partition for p in t.partitions]) for t in fetch.topics] == [(topic, [0])]
    named = {t.name for m in by_key[ApiKey.METADATA] for t in (m.topics or [])}
    assert topic in named
    return decoded


@pytest.mark.parametrize("client", scenarios.CLIENTS)
def test_stored_frames_decode_to_the_expected_requests(client: str) -> None:
    check_requests(client, read_frames(client))


def kafka_python_request_classes() -> dict[int, Any]:
    from kafka.protocol.consumer.fetch import FetchRequest
    from kafka.protocol.consumer.offsets import ListOffsetsRequest
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest
    from kafka.protocol.metadata.metadata import MetadataRequest
    from kafka.protocol.producer.produce import ProduceRequest
    from kafka.protocol.producer.transaction import InitProducerIdRequest

    return {
        ApiKey.PRODUCE: ProduceRequest,
        ApiKey.FETCH: FetchRequest,
        ApiKey.LIST_OFFSETS: ListOffsetsRequest,
        ApiKey.METADATA: MetadataRequest,
        ApiKey.API_VERSIONS: ApiVersionsRequest,
        ApiKey.INIT_PRODUCER_ID: InitProducerIdRequest,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, uuid.UUID) and value.int == 0:
        return None  # kafka-python decodes the all-zero UUID as None
    return value


def assert_same_fields(ours: Any, theirs: Any, version: int, path: str) -> None:
    """Every field our schema has at ``version`` holds the same value in kafka-python's decoding."""
    for spec in type(ours).FIELDS:
        if not in_range(version, spec.versions):
            continue
        mine, other = getattr(ours, spec.attr), getattr(theirs, spec.attr)
        where = f"{path}.{spec.attr}"
        if spec.struct is None:
            assert _plain(mine) == _plain(other), where
        elif not spec.is_array:
            assert_same_fields(mine, other, version, where)
        else:
            assert (mine is None) == (other is None), where
            assert len(mine or []) == len(other or []), where
            for n, (a, b) in enumerate(zip(mine or [], other or [], strict=True)):
                assert_same_fields(a, b, version, f"{where}[{n}]")


@pytest.mark.parametrize("client", scenarios.CLIENTS)
def test_stored_frames_decode_the_same_in_kafka_python(client: str) -> None:
    """A differential: kafka-python's own request classes read the same header and fields from each frame."""
    classes = kafka_python_request_classes()
    compared = set()
    for _, frame in read_frames(client):
        header, ours = decode_request(frame, allow_trailing=True)
        kp_class = classes.get(header.request_api_key)
        if kp_class is None:
            continue
        theirs = kp_class.decode(frame, version=header.request_api_version, header=True)
        assert (theirs.header.correlation_id, theirs.header.client_id) == (
            header.correlation_id,
            header.client_id,
        )
        assert_same_fields(ours, theirs, header.request_api_version, kp_class.__name__)
        compared.add(header.request_api_key)
    assert {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH} <= compared


# --- live ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proxied_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, CaptureProxy]]:
    with proxied_broker(tmp_path_factory.mktemp("golden")) as pair:
        yield pair


@pytest.fixture
def proxied(proxied_pair: tuple[BrokerProcess, CaptureProxy]) -> Iterator[CaptureProxy]:
    """The proxy; a test that fails says whether the broker behind it still runs, and what the proxy saw."""
    broker, proxy = proxied_pair
    yield proxy
    assert broker.process is not None and broker.process.poll() is None, (
        f"the broker behind the proxy exited ({broker.process and broker.process.returncode}):\n"
        + "".join(broker.output[-40:])
    )
    assert not proxy.upstream_errors, f"the proxy could not reach the broker: {proxy.upstream_errors[:3]}"


def kafka_python_classes() -> dict[int, Any]:
    from kafka.protocol.consumer.fetch import FetchResponse
    from kafka.protocol.consumer.offsets import ListOffsetsResponse
    from kafka.protocol.metadata.api_versions import ApiVersionsResponse
    from kafka.protocol.metadata.metadata import MetadataResponse
    from kafka.protocol.producer.produce import ProduceResponse
    from kafka.protocol.producer.transaction import InitProducerIdResponse

    return {
        ApiKey.PRODUCE: ProduceResponse,
        ApiKey.FETCH: FetchResponse,
        ApiKey.LIST_OFFSETS: ListOffsetsResponse,
        ApiKey.METADATA: MetadataResponse,
        ApiKey.API_VERSIONS: ApiVersionsResponse,
        ApiKey.INIT_PRODUCER_ID: InitProducerIdResponse,
    }


def pair_responses(proxy: CaptureProxy, connections: set[int]) -> list[tuple[RequestHeader, bytes]]:
    """(request header, response frame) in order, for the given proxy connections."""
    waiting: dict[int, list[RequestHeader]] = {}
    pairs = []
    for item in proxy.snapshot():
        if item.connection not in connections:
            continue
        if item.direction == REQUEST:
            header, message = decode_request(item.frame, allow_trailing=True)
            if not (header.request_api_key == ApiKey.PRODUCE and message.acks == 0):
                waiting.setdefault(item.connection, []).append(header)
        else:
            pairs.append((waiting[item.connection].pop(0), item.frame))
    return pairs


def check_response(client: str, header: RequestHeader, frame: bytes, port: int) -> None:
    key, version = header.request_api_key, header.request_api_version
    topic = scenarios.topic(client)
    served = {k: h.versions for k, h in HANDLERS.items()}
    ours_version = 0 if key == ApiKey.API_VERSIONS and version > served[ApiKey.API_VERSIONS][1] else version
    decode_response(frame, key, ours_version)  # strict: no trailing bytes
    kp_class = kafka_python_classes().get(key)
    if kp_class is None:
        return
    theirs = kp_class.decode(frame, version=version, header=True)
    assert theirs.header.correlation_id == header.correlation_id
    body = frame[4 if response_header_version(key, version) == 0 else 5 :]  # our headers carry no tags
    plain = kp_class.decode(body, version=version)
    assert bytes(plain.encode()) == body  # byte for byte what kafka-python would send
    if key == ApiKey.API_VERSIONS:
        assert theirs.error_code == (35 if version > served[ApiKey.API_VERSIONS][1] else 0)
        assert {k.api_key: (k.min_version, k.max_version) for k in theirs.api_keys} == served
    elif key == ApiKey.METADATA:
        assert [(b.node_id, b.host, b.port) for b in theirs.brokers] == [(1, "127.0.0.1", port)]
        assert theirs.controller_id == 1
        for t in theirs.topics:
            assert (t.name, t.error_code) == (topic, 0)
            assert [(p.partition_index, p.leader_id, p.error_code) for p in t.partitions] == [(0, 1, 0)]
    elif key == ApiKey.PRODUCE:
        (t,) = theirs.responses
        (p,) = t.partition_responses
        assert (t.name, p.index, p.error_code) == (topic, 0, 0)
        assert 0 <= p.base_offset < len(scenarios.values(client))
    elif key == ApiKey.FETCH:
        assert theirs.error_code == 0
        (t,) = theirs.responses
        (p,) = t.partitions
        assert (t.topic, p.partition_index, p.error_code) == (topic, 0, 0)
        assert p.high_watermark == len(scenarios.values(client))
        values, expected = record_values(p.records), scenarios.values(client)
        if values:
            start = expected.index(values[0])
            assert values == expected[start : start + len(values)]
    elif key == ApiKey.LIST_OFFSETS:
        (t,) = theirs.topics
        (p,) = t.partitions
        assert (t.name, p.partition_index, p.error_code, p.offset) == (topic, 0, 0, 0)
    elif key == ApiKey.INIT_PRODUCER_ID:
        assert theirs.error_code == 0 and theirs.producer_id >= 0 and theirs.producer_epoch >= 0


@pytest.mark.parametrize("client", scenarios.CLIENTS)
def test_live_capture(proxied: CaptureProxy, client: str) -> None:
    proxied.clear()
    consumed = scenarios.run(client, f"127.0.0.1:{proxied.port}")
    assert consumed == scenarios.values(client)
    requests = client_requests(proxied.snapshot(), scenarios.EXPECT[client].client_id)
    check_requests(client, requests)
    pairs = pair_responses(proxied, _proxy_connections(proxied, scenarios.EXPECT[client].client_id))
    keys = {h.request_api_key for h, _ in pairs}
    assert {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH} <= keys
    for header, frame in pairs:
        check_response(client, header, frame, proxied.port)


def _proxy_connections(proxy: CaptureProxy, client_id: str) -> set[int]:
    found = set()
    for item in proxy.snapshot():
        if item.direction == REQUEST and item.connection not in found:
            header, _ = decode_request(item.frame, allow_trailing=True)
            if header.client_id == client_id:
                found.add(item.connection)
    return found
