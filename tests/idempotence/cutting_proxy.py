"""A TCP proxy that severs Kafka connections at chosen moments, for retry tests.

It sits between a client and one broker (the broker advertises the proxy's port, so every connection goes
through it), forwards whole frames, and keeps count of Produce requests and responses over all connections. When
the count reaches a number in ``cut_requests``, it forwards only the first half of that request frame and closes
both sides (the broker never handles the request); at a number in ``cut_responses`` it forwards half of that
response (the broker has written the batch, the client never hears so) and closes both sides.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Collection
from dataclasses import dataclass, field

from samsa.protocol import ApiKey


@dataclass
class CutStats:
    produce_requests: int = 0
    produce_responses: int = 0
    cut_requests: list[int] = field(default_factory=list)
    cut_responses: list[int] = field(default_factory=list)
    connections: int = 0


class CuttingProxy:
    """Listens on ``listen_port`` and forwards to ``127.0.0.1:upstream_port`` from a private event loop thread."""

    def __init__(
        self,
        listen_port: int,
        upstream_port: int,
        cut_requests: Collection[int] = (),
        cut_responses: Collection[int] = (),
    ) -> None:
        self.listen_port = listen_port
        self.upstream_port = upstream_port
        self.cut_requests = set(cut_requests)
        self.cut_responses = set(cut_responses)
        self.stats = CutStats()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.listen_port)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        self._writers |= {client_writer, broker_writer}
        api_keys: dict[int, int] = {}  # correlation id -> api key, for this connection's requests
        upstream = asyncio.ensure_future(self._requests(client_reader, broker_writer, api_keys))
        downstream = asyncio.ensure_future(self._responses(broker_reader, client_writer, api_keys))
        await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
        for task in (upstream, downstream):
            task.cancel()
        for writer in (client_writer, broker_writer):
            writer.close()
            self._writers.discard(writer)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_keys: dict[int, int]
    ) -> None:
        while True:
            frame = await _read_frame(reader)
            if frame is None:
                return
            api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 4)
            api_keys[correlation_id] = api_key
            if api_key == ApiKey.PRODUCE:
                self.stats.produce_requests += 1
                if self.stats.produce_requests in self.cut_requests:
                    self.stats.cut_requests.append(self.stats.produce_requests)
                    writer.write(frame[: len(frame) // 2])
                    await writer.drain()
                    return
            writer.write(frame)
            await writer.drain()

    async def _responses(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_keys: dict[int, int]
    ) -> None:
        while True:
            frame = await _read_frame(reader)
            if frame is None:
                return
            (correlation_id,) = struct.unpack_from(">i", frame, 4)
            if api_keys.pop(correlation_id, None) == ApiKey.PRODUCE:
                self.stats.produce_responses += 1
                if self.stats.produce_responses in self.cut_responses:
                    self.stats.cut_responses.append(self.stats.produce_responses)
                    writer.write(frame[: len(frame) // 2])
                    await writer.drain()
                    return
            writer.write(frame)
            await writer.drain()


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
        (size,) = struct.unpack(">i", head)
        return head + await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
