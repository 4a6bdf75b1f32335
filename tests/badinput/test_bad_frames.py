"""Bad frames over real sockets: the offending connection is closed (or answered with Kafka's error), nobody else
notices, and data acknowledged earlier is still fetched byte for byte (checked after every test by conftest).
"""

from __future__ import annotations

import socket
import struct
import time

import pytest

from samsa.broker.handlers import HANDLERS
from samsa.protocol import ApiKey, decode_response
from samsa.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from samsa.protocol.messages.metadata import MetadataRequest
from tests.clients.harness import BrokerProcess

from . import wire
from .conftest import MAX_REQUEST, wait_for_output


def header(api_key: int, version: int, correlation: int = 7, client_id: bytes | None = b"bad") -> bytes:
    client = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">hhi", api_key, version, correlation) + client


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def assert_closed(conn: wire.Connection) -> None:
    assert conn.closed_by_broker(), "the broker kept a connection open after bad input"


# --- frames ---------------------------------------------------------------------------------------------------


def test_truncated_frame_then_close(broker: BrokerProcess) -> None:
    """Half a frame, then EOF: nothing to answer; conftest checks the broker is unharmed and logged no error."""
    with wire.Connection(broker.port) as conn:
        conn.send_raw(struct.pack(">i", 100) + header(ApiKey.METADATA, 4)[:6])
    with wire.Connection(broker.port) as conn:
        conn.send_raw(struct.pack(">i", 100)[:2])


def test_half_sent_frame_does_not_hold_up_other_connections(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as slow, wire.Connection(broker.port) as other:
        slow.send_raw(struct.pack(">i", 5000) + header(ApiKey.METADATA, 4))
        assert wire.metadata(other).brokers[0].port == broker.port
        slow.sock.settimeout(0.3)
        assert not slow.closed_by_broker(), "a frame still being received is not an error"
        assert wire.metadata(other).brokers[0].node_id == 1


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_frame_length_closes(broker: BrokerProcess, size: int) -> None:
    with wire.Connection(broker.port) as conn:
        conn.send_raw(struct.pack(">i", size) + b"\0" * 16)
        assert_closed(conn)
    wait_for_output(broker, f"frame size {size} is outside")


def test_frame_over_socket_request_max_bytes_closes_that_connection_only(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as other:
        assert wire.metadata(other).topics == []
        with wire.Connection(broker.port) as conn:
            conn.send_raw(struct.pack(">i", MAX_REQUEST + 1) + header(ApiKey.PRODUCE, 7) + b"\0" * 1000)
            assert_closed(conn)
        line = wait_for_output(broker, f"frame size {MAX_REQUEST + 1}")
        assert "socket.request.max.bytes" in line
        assert wire.metadata(other).brokers[0].port == broker.port  # the other connection carries on


def test_frame_of_exactly_the_limit_is_read_then_judged(broker: BrokerProcess) -> None:
    """The limit is inclusive: a frame of socket.request.max.bytes is read whole, then refused as malformed."""
    with wire.Connection(broker.port) as conn:
        start = header(ApiKey.METADATA, 4) + b"\x7f\xff\xff\xff"  # Metadata v4 claiming 2**31-1 topics
        conn.send_raw(struct.pack(">i", MAX_REQUEST) + start + b"\x01" * (MAX_REQUEST - len(start)))
        assert_closed(conn)
    wait_for_output(broker, "malformed request")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00",
        b"\x00\x03\x00",
        header(ApiKey.METADATA, 4)[:-1],
        b"\x00\x03\x00\x04garbagegarbage12",
        header(ApiKey.METADATA, 4)
        + b"\xff\xff\xff\x7f",  # Metadata v4: a topic array of 2**31-129 entries, then nothing
        header(ApiKey.PRODUCE, 7)
        + b"\xff\xff\x00\x01\x00\x00\x03\xe8\x00\x00\x00\x01\x00\x05",  # Produce v7 cut in a name
        header(ApiKey.CREATE_TOPICS, 5, client_id=b"\xc3\x28"),  # a client id that is not UTF-8
        header(ApiKey.API_VERSIONS, 3) + b"\x05x",  # ApiVersions v3: compact string longer than the frame
    ],
    ids=lambda b: b.hex()[:24] or "empty",
)
def test_garbage_body_closes(broker: BrokerProcess, body: bytes) -> None:
    with wire.Connection(broker.port) as conn:
        conn.send_raw(framed(body))
        assert_closed(conn)


def test_answers_before_garbage_still_arrive(broker: BrokerProcess) -> None:
    """Pipelined: a good request, then garbage. The good one is answered, then the connection is closed."""
    with wire.Connection(broker.port) as conn:
        good = header(ApiKey.API_VERSIONS, 0, correlation=41)
        conn.send_raw(framed(good) + framed(b"\x00\x12\x00\x00junk"))
        frame = conn.read_frame()
        assert frame is not None
        response_header, response = decode_response(frame, 18, 0)
        assert response_header.correlation_id == 41 and response.error_code == 0
        assert_closed(conn)


def test_many_bad_connections_at_once(broker: BrokerProcess) -> None:
    bad = [wire.Connection(broker.port) for _ in range(20)]
    try:
        with wire.Connection(broker.port) as good:
            for n, conn in enumerate(bad):
                conn.send_raw(framed(bytes([n]) * n) if n % 2 else struct.pack(">i", -n - 1))
            assert wire.metadata(good).controller_id == 1
            for conn in bad:
                assert_closed(conn)
            assert wire.metadata(good).controller_id == 1
    finally:
        for conn in bad:
            conn.close()


# --- api keys and versions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("api_key", [9999, -1, 62, 1000])
def test_unknown_or_unserved_api_key_closes(broker: BrokerProcess, api_key: int) -> None:
    """9999/-1/1000 exist nowhere; 62 (BrokerRegistration, KRaft only) is a Kafka API this broker does not serve."""
    assert api_key not in HANDLERS
    with wire.Connection(broker.port) as conn:
        conn.send_raw(framed(header(api_key, 0) + b"\0" * 8))
        assert_closed(conn)


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(3, 99), (3, -1), (1, 3), (1, 17), (19, 0), (0, 2)],
    ids=["metadata-v99", "metadata-v-1", "fetch-v3", "fetch-v17", "create-topics-v0", "produce-v2"],
)
def test_known_api_with_a_version_not_served_closes(
    broker: BrokerProcess, api_key: int, version: int
) -> None:
    """Fetch v3/v17 and CreateTopics v0 decode fine but are outside what is served; Produce v2 is advertised
    (old librdkafka needs Produce v0 in range to enable compression) but not implemented."""
    with wire.Connection(broker.port) as conn:
        conn.send_raw(framed(header(api_key, version) + b"\0" * 24))
        assert_closed(conn)


@pytest.mark.parametrize("version", [4, 99, 32767])
def test_api_versions_of_an_unknown_version_answers_in_v0_form(broker: BrokerProcess, version: int) -> None:
    """KIP-511: error 35 with the supported ranges, in a v0 body, and the connection stays usable."""
    with wire.Connection(broker.port) as conn:
        # a flexible (v2) header with a tagged-field section and a body this broker cannot know the layout of
        conn.send_raw(
            framed(
                header(ApiKey.API_VERSIONS, version, correlation=1234) + b"\x00" + b"\x0bsome-client\x021\x00"
            )
        )
        frame = conn.read_frame()
        assert frame is not None
        response_header, response = decode_response(frame, 18, 0)
        assert response_header.correlation_id == 1234
        assert isinstance(response, ApiVersionsResponse)
        assert response.error_code == 35
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert ranges == {key: handler.versions for key, handler in HANDLERS.items()}
        assert ranges[18] == (0, 3)
        # the client retries with a version from the list, on the same connection
        retry: ApiVersionsResponse = conn.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("retry", "1"))
        assert retry.error_code == 0 and {k.api_key for k in retry.api_keys} == set(ranges)


def test_every_served_version_of_metadata_still_answers_after_bad_neighbours(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as conn:
        for version in range(HANDLERS[3].versions[0], HANDLERS[3].versions[1] + 1):
            response = conn.request(ApiKey.METADATA, version, MetadataRequest(topics=[]))
            assert [b.port for b in response.brokers] == [broker.port]


# --- clients that go away -------------------------------------------------------------------------------------


def test_client_disconnects_mid_produce_request_writes_nothing(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as conn:
        assert wire.create_topic(conn, "half-produce").topics[0].error_code == 0
        assert wire.produce(conn, "half-produce", {0: wire.batch(b"before")}) == {0: (0, 0)}
    from samsa.protocol import RequestHeader, encode_request
    from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

    request = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[TopicProduceData("half-produce", [PartitionProduceData(0, wire.batch(b"never" * 100))])],
    )
    frame = encode_request(RequestHeader(ApiKey.PRODUCE, 7, 1, "half"), request)
    with wire.Connection(broker.port) as conn:
        conn.send_raw(frame[: len(frame) // 2])
    with wire.Connection(broker.port) as conn:
        sock = socket.create_connection(("127.0.0.1", broker.port))
        sock.sendall(frame[:-1])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        sock.close()
        time.sleep(0.1)
        assert wire.fetch_values(conn, "half-produce") == [b"before"]
        assert wire.produce(conn, "half-produce", {0: wire.batch(b"after")}) == {0: (0, 1)}
        assert wire.fetch_values(conn, "half-produce") == [b"before", b"after"]


def test_client_disconnects_during_a_long_poll_fetch(broker: BrokerProcess) -> None:
    with wire.Connection(broker.port) as conn:
        assert wire.create_topic(conn, "long-poll").topics[0].error_code == 0
    gone = wire.Connection(broker.port)
    gone.send(ApiKey.FETCH, 11, wire.fetch_request("long-poll", 0, 0, max_wait_ms=5000, min_bytes=1))
    waiting = wire.Connection(broker.port)
    correlation = waiting.send(
        ApiKey.FETCH, 11, wire.fetch_request("long-poll", 0, 0, max_wait_ms=5000, min_bytes=1)
    )
    time.sleep(0.2)
    gone.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    gone.close()
    time.sleep(0.1)
    started = time.monotonic()
    with wire.Connection(broker.port) as conn:
        assert wire.produce(conn, "long-poll", {0: wire.batch(b"wake")}) == {0: (0, 0)}
    frame = waiting.read_frame()
    waiting.close()
    assert frame is not None and time.monotonic() - started < 3
    response_header, response = decode_response(frame, 1, 11)
    assert response_header.correlation_id == correlation
    (data,) = response.responses[0].partitions
    assert wire.batch_values(bytes(data.records)) == [b"wake"]


def test_a_pipelining_client_does_not_starve_the_others(broker: BrokerProcess) -> None:
    """Tens of thousands of pipelined requests on one connection, whose answers are read slowly or never: the
    other connections still get each answer promptly (connections take turns), and the greedy one stalls alone
    once its socket buffers are full."""
    import threading

    request = framed(header(ApiKey.METADATA, 4) + b"\xff\xff\xff\xff\x00")  # Metadata v4, all topics
    with wire.Connection(broker.port) as greedy, wire.Connection(broker.port) as other:
        greedy.sock.settimeout(60)
        sender = threading.Thread(target=lambda: _send_ignoring_close(greedy, request * 50_000), daemon=True)
        sender.start()
        time.sleep(0.2)
        latencies = []
        for _ in range(5):
            started = time.monotonic()
            assert wire.metadata(other).brokers[0].port == broker.port
            latencies.append(time.monotonic() - started)
        assert max(latencies) < 0.5, latencies
    sender.join(5)


def _send_ignoring_close(conn: wire.Connection, data: bytes) -> None:
    try:
        conn.send_raw(data)
    except OSError:
        pass  # the test closed the socket while the send was still blocked
