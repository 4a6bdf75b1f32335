"""A raw-socket Kafka client for tests: encode requests with ``samsa.protocol``, read frames, notice closes.

Nothing here retries or hides a broker's behaviour: a test sees exactly what came back on the socket, or that
the broker closed the connection.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from samsa.protocol import ApiKey, RequestHeader, api_schema, decode_response, encode_request
from samsa.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from samsa.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from samsa.records import build_batch, decode_batch, iter_records
from samsa.records.batch_view import iter_batches

TIMEOUT_S = 10.0


class Connection:
    """One TCP connection to a broker, speaking whole frames."""

    def __init__(
        self,
        port: int,
        client_id: str = "samsa-badinput",
        timeout: float = TIMEOUT_S,
        host: str = "127.0.0.1",
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, api_key: int, version: int, message: Any) -> int:
        """Encode and send a request; return its correlation id."""
        self._correlation += 1
        self.sock.sendall(
            encode_request(RequestHeader(api_key, version, self._correlation, self.client_id), message)
        )
        return self._correlation

    def read_frame(self) -> bytes | None:
        """The next response frame without its size prefix, or None if the broker closed the connection."""
        head = self._read_exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        body = self._read_exactly(size)
        assert body is not None, "the broker closed the connection in the middle of a response"
        return body

    def request(self, api_key: int, version: int, message: Any) -> Any:
        """Send a request and decode its response (asserting the correlation id matches)."""
        correlation = self.send(api_key, version, message)
        frame = self.read_frame()
        assert frame is not None, (
            f"the broker closed the connection instead of answering api {api_key} v{version}"
        )
        header, response = decode_response(frame, api_key, version)
        assert header.correlation_id == correlation
        assert type(response) is api_schema(api_key).response_type
        return response

    def closed_by_broker(self) -> bool:
        """True when the broker has closed this connection (EOF or reset) without sending anything more."""
        try:
            data = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        return data == b""

    def _read_exactly(self, size: int) -> bytes | None:
        chunks = bytearray()
        while len(chunks) < size:
            try:
                chunk = self.sock.recv(size - len(chunks))
            except ConnectionResetError:
                return None
            if not chunk:
                if not chunks:
                    return None
                raise AssertionError(f"connection closed after {len(chunks)} of {size} bytes")
            chunks += chunk
        return bytes(chunks)


# --- requests used by many tests ----------------------------------------------------------------------------------


def create_topic(conn: Connection, name: str, partitions: int = 1, **configs: str) -> CreateTopicsResponse:
    from samsa.protocol.messages.create_topics import CreatableTopicConfig

    topic = CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=1,
        configs=[CreatableTopicConfig(k.replace("_", "."), v) for k, v in configs.items()],
    )
    response: CreateTopicsResponse = conn.request(
        ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(topics=[topic], timeout_ms=10_000)
    )
    return response


def produce(
    conn: Connection, topic: str, batches: dict[int, bytes], *, acks: int = -1, version: int = 7
) -> dict[int, tuple[int, int]]:
    """Produce one record set per partition; partition -> (error code, base offset)."""
    request = ProduceRequest(
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                topic, [PartitionProduceData(index, records) for index, records in batches.items()]
            )
        ],
    )
    response: ProduceResponse = conn.request(ApiKey.PRODUCE, version, request)
    assert [t.name for t in response.responses] == [topic]
    return {p.index: (p.error_code, p.base_offset) for p in response.responses[0].partition_responses}


def produce_response(
    conn: Connection, topic: str, batches: dict[int, bytes], version: int = 7
) -> ProduceResponse:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                topic, [PartitionProduceData(index, records) for index, records in batches.items()]
            )
        ],
    )
    response: ProduceResponse = conn.request(ApiKey.PRODUCE, version, request)
    return response


def fetch_request(
    topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 0
) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=10_000_000,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition, fetch_offset=offset, partition_max_bytes=10_000_000)],
            )
        ],
    )


def fetch_records(conn: Connection, topic: str, partition: int = 0, offset: int = 0) -> tuple[int, bytes]:
    """(error code, the raw record bytes) of one partition, read from ``offset`` with Fetch v11."""
    response: FetchResponse = conn.request(ApiKey.FETCH, 11, fetch_request(topic, partition, offset))
    (topic_response,) = response.responses
    (data,) = topic_response.partitions
    return data.error_code, bytes(data.records or b"")


def fetch_values(conn: Connection, topic: str, partition: int = 0) -> list[bytes | None]:
    error, raw = fetch_records(conn, topic, partition)
    assert error == 0, error
    return [record.value for view in iter_batches(raw) for record in iter_records(view)]


def metadata(conn: Connection, *topics: str, version: int = 4) -> MetadataResponse:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False
    )
    response: MetadataResponse = conn.request(ApiKey.METADATA, version, request)
    return response


def batch(*values: bytes, timestamp: int = 1_700_000_000_000) -> bytes:
    return build_batch(list(values), timestamp=timestamp)


def batch_values(raw: bytes) -> list[bytes | None]:
    return [r.value for r in decode_batch(raw).records]
