"""``BrokerConnection`` completes each request's future in the receiving callback (no reader task): answers that
arrive together, a connection that ends between or inside answers, and ``send``, whose future a caller may cancel.

The broker here is a small asyncio server in the test that answers ApiVersions (the connection's first request,
and the request these tests send) as its scenario says.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

import pytest

from samsa.client import KafkaError
from samsa.client.connection import BrokerConnection
from samsa.protocol import ApiKey
from samsa.protocol.api import encode_response
from samsa.protocol.headers import ResponseHeader
from samsa.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse

VERSION = 3
Scenario = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> tuple[int, int]:
    """The next request's (API version, correlation id)."""
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    body = await reader.readexactly(size)
    _, version, correlation = struct.unpack_from(">hhi", body)
    return version, correlation


def answer(version: int, correlation: int) -> bytes:
    keys = [ApiVersion(api_key=int(ApiKey.API_VERSIONS), min_version=0, max_version=VERSION)]
    message = ApiVersionsResponse(error_code=0, api_keys=keys)
    return encode_response(ResponseHeader(correlation), ApiKey.API_VERSIONS, version, message)


def run(scenario: Scenario, body: Callable[[BrokerConnection], Awaitable[None]]) -> None:
    async def main() -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            version, correlation = await read_request(reader)  # the connection's negotiation
            writer.write(answer(version, correlation))
            await scenario(reader, writer)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        connection = BrokerConnection("127.0.0.1", port, client_id="test", request_timeout_ms=5000)
        try:
            await connection.open()
            await asyncio.wait_for(body(connection), 10)
        finally:
            await connection.close()
            server.close()

    asyncio.run(main())


def probe(connection: BrokerConnection) -> Awaitable[ApiVersionsResponse]:
    return connection.request(ApiVersionsRequest(), ApiKey.API_VERSIONS, VERSION)  # type: ignore[no-any-return]


def test_answers_received_together_complete_every_request() -> None:
    async def both_in_one_write(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first, second = await read_request(reader), await read_request(reader)
        writer.write(answer(*first) + answer(*second))

    async def body(connection: BrokerConnection) -> None:
        answers = await asyncio.gather(probe(connection), probe(connection))
        assert [a.error_code for a in answers] == [0, 0]

    run(both_in_one_write, body)


def test_a_connection_closed_between_answers_fails_the_waiting_request() -> None:
    async def close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.close()

    async def body(connection: BrokerConnection) -> None:
        with pytest.raises(KafkaError, match=r"was closed by the broker$"):
            await probe(connection)
        assert connection.closed

    run(close, body)


def test_a_connection_closed_inside_an_answer_fails_the_waiting_request() -> None:
    async def half(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        whole = answer(*await read_request(reader))
        writer.write(whole[: len(whole) // 2])
        await writer.drain()
        writer.close()

    async def body(connection: BrokerConnection) -> None:
        with pytest.raises(KafkaError, match="closed by the broker mid-response"):
            await probe(connection)

    run(half, body)


def test_a_cancelled_send_drops_its_late_answer_and_the_next_request_is_answered() -> None:
    release = asyncio.Event()

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held = await read_request(reader)
        await release.wait()
        writer.write(answer(*held))  # the answer to the cancelled send, after it was cancelled
        writer.write(answer(*await read_request(reader)))

    async def body(connection: BrokerConnection) -> None:
        future = connection.send(ApiVersionsRequest(), ApiKey.API_VERSIONS, VERSION)
        await asyncio.sleep(0.05)
        future.cancel()
        release.set()
        answered = await probe(connection)
        assert answered.error_code == 0 and not connection.closed

    run(late, body)


def test_send_times_out_with_the_request_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(30)

    async def body(connection: BrokerConnection) -> None:
        connection.timeout = 0.2
        with pytest.raises(KafkaError, match="timed out after 200 ms"):
            await connection.send(ApiVersionsRequest(), ApiKey.API_VERSIONS, VERSION)

    run(silent, body)


def test_an_answer_too_short_for_its_header_fails_the_connection() -> None:
    async def short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(struct.pack(">i", 2) + b"\0\0")  # a frame of 2 bytes: no room for a correlation id
        await asyncio.sleep(30)

    async def body(connection: BrokerConnection) -> None:
        with pytest.raises(KafkaError, match="failed"):
            await probe(connection)
        assert connection.closed

    run(short, body)
