"""The console's HTTP server: GET only, a tiny router, on the console's event loop (asyncio streams).

One request per connection, then close (``Connection: close``). ``GET`` and ``HEAD`` are answered; any other
method is 405 with ``Allow: GET, HEAD``; an unknown path 404; a malformed request line 400; a handler's failure
500 with a one-line message (never a stack trace in the page: the trace goes to the log).

A slow or hostile client cannot stall the loop: it has ``REQUEST_TIMEOUT_S`` to send a head of at most
``MAX_HEAD_BYTES`` and as long again to take the answer; at most ``MAX_CONNECTIONS`` are served at once (more are
closed at once). Handlers are coroutines of the same loop; they must not block it (file reads go to a thread).

A route is ``path -> handler(query) -> Response``; ``query`` is the decoded query string (last value wins).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["MAX_CONNECTIONS", "MAX_HEAD_BYTES", "REQUEST_TIMEOUT_S", "ConsoleServer", "Response"]

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 8192
REQUEST_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 64
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Server Error"}
SECURITY_HEADERS = (
    "X-Content-Type-Options: nosniff\r\n"
    "Content-Security-Policy: default-src 'self'; style-src 'self'; img-src 'self' data:\r\n"
    "Cache-Control: no-store\r\n"
)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Handler = Callable[[Mapping[str, str]], Awaitable[Response]]


class ConsoleServer:
    """Serves ``routes`` (exact paths) on ``host:port`` (module doc). Event-loop thread only."""

    def __init__(self, routes: Mapping[str, Handler]) -> None:
        self._routes = dict(routes)
        self._server: asyncio.Server | None = None
        self._open = 0
        self.address: tuple[str, int] | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD_BYTES)
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
            response = await self._answer(head)
            self._write(writer, response, head_only=head.startswith(b"HEAD "))
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)
        finally:
            self._open -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    def _write(writer: asyncio.StreamWriter, response: Response, *, head_only: bool) -> None:
        extra = "Allow: GET, HEAD\r\n" if response.status == 405 else ""
        writer.write(
            f"HTTP/1.1 {response.status} {REASONS.get(response.status, 'Error')}\r\n"
            f"Content-Type: {response.content_type}\r\nContent-Length: {len(response.body)}\r\n"
            f"{SECURITY_HEADERS}{extra}Connection: close\r\n\r\n".encode()
        )
        if not head_only:
            writer.write(response.body)

    async def _answer(self, head: bytes) -> Response:
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            return Response(400, b"malformed request\n")
        method = parts[0]
        if method not in (b"GET", b"HEAD"):
            return Response(405, b"read-only: only GET and HEAD\n")
        try:
            target = urlsplit(parts[1].decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return Response(400, b"malformed request target\n")
        handler = self._routes.get(unquote(target.path))
        if handler is None:
            return Response(404, b"not found\n")
        query = dict(parse_qsl(target.query, keep_blank_values=True))
        try:
            return await handler(query)
        except Exception:
            log.exception("console: %s failed", target.path)
            return Response(500, b"the console failed to answer this request (see its log)\n")
