"""The broker's socket layer: accept connections, split frames, write responses.

A Kafka frame is ``int32 size`` followed by ``size`` bytes. A connection is served strictly in order: one request
is read, handled and answered before the next is read, which is how Kafka keeps responses in request order (it
mutes a channel while a request is in flight). A response is a sequence of parts: ``bytes`` written to the socket,
and file regions (a segment's ``FileSlice``) sent with ``sendfile`` straight from the page cache, never copied
through Python.

Connections take turns: after each request a connection yields to the event loop, so one client pipelining
thousands of requests cannot starve the others.

Bad input ends only the offending connection: a size below zero or above ``socket.request.max.bytes`` closes it
(as Kafka's ``InvalidReceiveException`` does), and so does any exception a handler lets escape, which is logged.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import IO, Protocol, cast

from samsa.protocol.errors import FrameError
from samsa.protocol.frames import frame_size

log = logging.getLogger(__name__)


class FileRegion(Protocol):
    """A byte range of an open file: what a fetch response carries instead of copied bytes."""

    @property
    def fd(self) -> int: ...

    @property
    def position(self) -> int: ...

    @property
    def size(self) -> int: ...


ResponsePart = bytes | bytearray | memoryview | FileRegion


@dataclass(slots=True)
class ConnectionInfo:
    """Who is on the other end of a connection."""

    connection_id: str
    client_host: str
    client_port: int
    listener: str


Handler = Callable[[ConnectionInfo, memoryview], Awaitable[Sequence[ResponsePart] | None]]


class ConnectionClosedByHandler(Exception):
    """A handler's way to drop its connection (a request that cannot be answered), logged at info level."""


async def read_frame(reader: asyncio.StreamReader, max_size: int) -> memoryview | None:
    """Read one frame; None at a clean end of stream between frames."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return None
    size = frame_size(head, max_size)  # FrameError when negative or above socket.request.max.bytes
    # a writable copy: the produce path patches base offsets and leader epochs in place
    return memoryview(bytearray(await reader.readexactly(size)))


async def write_parts(writer: asyncio.StreamWriter, parts: Sequence[ResponsePart]) -> None:
    """Write a response: consecutive byte parts in one write, file regions with sendfile."""
    pending: list[bytes | bytearray | memoryview] = []
    for part in parts:
        if isinstance(part, (bytes, bytearray, memoryview)):
            pending.append(part)
            continue
        if part.size <= 0:
            continue
        if pending:
            writer.writelines(pending)
            pending = []
        await _sendfile(writer, part)
    if pending:
        writer.writelines(pending)
    await writer.drain()


async def _sendfile(writer: asyncio.StreamWriter, region: FileRegion) -> None:
    """Send a file region on the connection without copying it through Python.

    This is the event loop's own ``sendfile`` on the transport: it waits until the transport's buffer is empty
    (so bytes stay in order), then calls ``os.sendfile`` with an explicit offset, waiting for the socket to become
    writable whenever its buffer fills, until the whole region is sent. Afterwards the loop sets the fd's file
    position, which nothing else uses (storage reads and writes with ``pread``/``pwrite``). A region longer than
    the file (truncated under us) stops at the end of the file: the client sees a partial batch, which it
    tolerates. Where native sendfile is not available (uvloop, which exposes no socket; a non-socket transport),
    the region is read and queued on the transport.
    """
    loop = asyncio.get_running_loop()
    transport = writer.transport
    if transport.get_extra_info("socket") is not None and not _is_uvloop(loop):
        try:
            file = cast(IO[bytes], _RegionFile(region.fd))
            await loop.sendfile(transport, file, region.position, region.size, fallback=False)
            return
        except (asyncio.SendfileNotAvailableError, RuntimeError, NotImplementedError):
            pass  # raised before any byte was sent
    writer.write(os.pread(region.fd, region.size, region.position))


class _RegionFile:
    """The file-object face that ``loop.sendfile`` needs around a bare fd."""

    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


def _is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    return type(loop).__module__.startswith("uvloop")


class Server:
    """Accepts connections on one listener and serves each with ``handler``. Event-loop thread only."""

    def __init__(self, handler: Handler, *, listener: str, max_request_size: int) -> None:
        self._handler = handler
        self._listener = listener
        self._max_request_size = max_request_size
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._next_id = 0

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host or None, port, reuse_address=True)
        sockname = self._server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        sock: socket.socket | None = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id += 1
        info = ConnectionInfo(f"{self._listener}-{self._next_id}", str(peer[0]), int(peer[1]), self._listener)
        try:
            while True:
                frame = await read_frame(reader, self._max_request_size)
                if frame is None:
                    break
                parts = await self._handler(info, frame)
                if parts:
                    await write_parts(writer, parts)
                # let other connections take a turn: a client pipelining requests whose frames are already
                # buffered would otherwise be served without the loop ever switching to anyone else
                await asyncio.sleep(0)
        except FrameError as exc:
            log.warning(
                "closing connection %s from %s:%s: frame size %d is outside 0..%d (socket.request.max.bytes)",
                info.connection_id,
                *peer[:2],
                exc.size,
                self._max_request_size,
            )
        except ConnectionClosedByHandler as exc:
            log.info("closing connection %s: %s", info.connection_id, exc)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("closing connection %s after an unexpected error", info.connection_id)
        finally:
            self._connections.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass
