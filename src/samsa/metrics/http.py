"""``GET /metrics`` for Prometheus, on the broker's event loop.

A tiny HTTP/1.1 server (asyncio streams): one request per connection, then close. Only ``GET`` (and ``HEAD``) of
``/metrics`` (or ``/``) is answered, 200 with the text exposition format; another method is 405, another path
404, a malformed request 400. A client has ``REQUEST_TIMEOUT_S`` to send a request head of at most
``MAX_HEAD_BYTES``, so a slow or hostile client holds one connection for a few seconds and never the loop; at most
``MAX_CONNECTIONS`` are served at once (more are closed at once).

The body is rendered on the event loop (the gauges read the broker's state, which only that thread may read): a
scrape of a broker with 1,000 partitions costs a few milliseconds of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

__all__ = ["MAX_CONNECTIONS", "MAX_HEAD_BYTES", "REQUEST_TIMEOUT_S", "MetricsServer"]

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
REQUEST_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 32
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsServer:
    """Serves ``render()`` (the exposition text) at ``http://host:port/metrics``."""

    def __init__(self, render: Callable[[], bytes]) -> None:
        self._render = render
        self._server: asyncio.Server | None = None
        self._open = 0
        self.address: tuple[str, int] | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host or None, port, limit=MAX_HEAD_BYTES)
        sockname = self._server.sockets[0].getsockname()
        self.address = (str(sockname[0]), int(sockname[1]))
        return self.address

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        try:
            if self._open > MAX_CONNECTIONS:
                return
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
            except (
                asyncio.TimeoutError,
                asyncio.IncompleteReadError,
                asyncio.LimitOverrunError,
                ConnectionError,
            ):
                return
            status, body = self._answer(head)
            reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[status]
            extra = "Allow: GET, HEAD\r\n" if status == 405 else ""
            writer.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {len(body)}\r\n"
                f"{extra}Connection: close\r\n\r\n".encode()
            )
            if not head.startswith(b"HEAD "):
                writer.write(body)
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)
        finally:
            self._open -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, head: bytes) -> tuple[int, bytes]:
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            return 400, b"malformed request\n"
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return 405, b"only GET\n"
        if target not in (b"/metrics", b"/"):
            return 404, b"not found: try /metrics\n"
        return 200, self._render()
