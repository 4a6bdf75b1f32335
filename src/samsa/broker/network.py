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

Limits, with Kafka's keys and defaults (``ConnectionLimits``, shared by every listener of a broker): a connection
waiting for its next request longer than ``connections.max.idle.ms`` (10 minutes) is closed; a new connection
beyond ``max.connections.per.ip`` (and its ``max.connections.per.ip.overrides``, ``host:n,host:n``) or beyond
``max.connections`` is closed at once (Kafka's acceptor waits for a free slot instead; closing keeps the
loop simple and the client retries). File descriptors: a new connection that would leave fewer than
``DESCRIPTOR_RESERVE`` free under RLIMIT_NOFILE is closed too (counted from ``/proc/self/fd`` now and then, not
per connection), so the broker keeps descriptors for its segments and checkpoints and existing clients are served
throughout; should accept itself still fail (EMFILE, ENFILE), that is logged once a minute, not once per attempt
(asyncio waits a second before accepting again). Refusals are logged once a minute.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
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


RESOURCE_LOG_INTERVAL_S = 60.0
DESCRIPTOR_RESERVE = 32
"""File descriptors a broker keeps for itself (segments, checkpoints, the code a first request imports), beyond
one accept burst (``socket.listen.backlog.size``: asyncio accepts up to that many at once before any is served):
a new connection that would leave fewer free is refused, so running out never reaches the logs."""


def _free_descriptors() -> int:
    """Open-file slots left under RLIMIT_NOFILE (counted from /proc/self/fd; a large number where unknown)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        return 1 << 30
    return (1 << 30 if soft == resource.RLIM_INFINITY else soft) - used


ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"


@dataclass(slots=True)
class ConnectionLimits:
    """Kafka's connection limits for one broker, and the connections open now (every listener counts)."""

    max_idle_ms: int = 600_000
    max_connections: int = 2**31 - 1
    max_per_ip: int = 2**31 - 1
    per_ip_overrides: dict[str, int] | None = None
    open_total: int = 0
    open_by_ip: dict[str, int] | None = None
    recount_at: int = 0  # open connections at which free descriptors are counted again
    backlog: int = 50  # socket.listen.backlog.size: also the largest accept burst

    @staticmethod
    def parse_overrides(text: str) -> dict[str, int]:
        """``host:n,host:n`` (Kafka's ``max.connections.per.ip.overrides``)."""
        out: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            host, _, count = item.rpartition(":")
            if not host or not count.isdigit():
                raise ValueError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
            out[host] = int(count)
        return out

    def admit(self, host: str) -> str | None:
        """Count a new connection from ``host``; None, or why it is refused (then it is not counted)."""
        by_ip = self.open_by_ip if self.open_by_ip is not None else {}
        self.open_by_ip = by_ip
        cap = (self.per_ip_overrides or {}).get(host, self.max_per_ip)
        if by_ip.get(host, 0) >= cap:
            return f"{host} already has {by_ip.get(host, 0)} connections (max.connections.per.ip {cap})"
        if self.open_total >= self.max_connections:
            return f"the broker already has {self.open_total} connections (max.connections)"
        if self.open_total >= self.recount_at:
            free = _free_descriptors()
            if free < DESCRIPTOR_RESERVE:
                self.recount_at = self.open_total  # count again at the next connection
                return (
                    f"only {free} file descriptors are left, kept for the logs (raise the open files limit)"
                )
            self.recount_at = self.open_total + (free - DESCRIPTOR_RESERVE) // 2
        by_ip[host] = by_ip.get(host, 0) + 1
        self.open_total += 1
        return None

    def release(self, host: str) -> None:
        by_ip = self.open_by_ip or {}
        left = by_ip.get(host, 0) - 1
        if left > 0:
            by_ip[host] = left
        else:
            by_ip.pop(host, None)
        self.open_total -= 1


class _RateLimitedAcceptErrors:
    """A loop exception handler that turns asyncio's per-attempt "out of system resource" reports on accept
    (EMFILE, ENFILE) into one line a minute, and passes everything else on."""

    def __init__(
        self, previous: Callable[[asyncio.AbstractEventLoop, dict[str, object]], object] | None
    ) -> None:
        self.previous = previous
        self.last_logged = -RESOURCE_LOG_INTERVAL_S
        self.suppressed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        if context.get("message") != ACCEPT_OUT_OF_RESOURCES:
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = loop.time()
        if now - self.last_logged < RESOURCE_LOG_INTERVAL_S:
            self.suppressed += 1
            return
        log.error(
            "cannot accept new connections: %s (%d more refused since the last report); existing connections "
            "are served, accepting resumes when descriptors are free",
            context.get("exception"),
            self.suppressed,
        )
        self.last_logged, self.suppressed = now, 0


def _install_accept_error_limiter(loop: asyncio.AbstractEventLoop) -> None:
    current = loop.get_exception_handler()
    if not isinstance(current, _RateLimitedAcceptErrors):
        loop.set_exception_handler(_RateLimitedAcceptErrors(current))


class Server:
    """Accepts connections on one listener and serves each with ``handler``. Event-loop thread only."""

    def __init__(
        self,
        handler: Handler,
        *,
        listener: str,
        max_request_size: int,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._handler = handler
        self._listener = listener
        self._max_request_size = max_request_size
        self._limits = limits if limits is not None else ConnectionLimits()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._idle_since: dict[
            asyncio.Task[None], float
        ] = {}  # connections waiting for a request, since when
        self._sweeper: asyncio.Task[None] | None = None
        self._refusals_logged = -RESOURCE_LOG_INTERVAL_S
        self._next_id = 0

    async def start(self, host: str, port: int) -> tuple[str, int]:
        _install_accept_error_limiter(asyncio.get_running_loop())
        self._server = await asyncio.start_server(
            self._serve, host or None, port, reuse_address=True, backlog=self._limits.backlog
        )
        self._sweeper = asyncio.create_task(self._close_idle_connections(), name="samsa-idle-sweeper")
        sockname = self._server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def _close_idle_connections(self) -> None:
        """Close connections that waited for a request longer than ``connections.max.idle.ms``."""
        idle_s = self._limits.max_idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(max(min(idle_s / 4, 30.0), 0.05))
            deadline = loop.time() - idle_s
            for task, since in list(self._idle_since.items()):
                if since <= deadline:
                    log.info("closing a connection idle for more than %d ms", self._limits.max_idle_ms)
                    task.cancel()

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("?", 0)
        refused = self._limits.admit(str(peer[0]))
        if refused is not None:
            self._log_refusal(refused)
            writer.close()
            return
        try:
            await self._serve_admitted(reader, writer, peer)
        finally:
            self._limits.release(str(peer[0]))

    def _log_refusal(self, reason: str) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._refusals_logged >= RESOURCE_LOG_INTERVAL_S:
            log.warning("refusing new connections: %s (said once a minute)", reason)
            self._refusals_logged = now

    async def _serve_admitted(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: tuple[str, int]
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        loop = asyncio.get_running_loop()
        sock: socket.socket | None = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id += 1
        info = ConnectionInfo(f"{self._listener}-{self._next_id}", str(peer[0]), int(peer[1]), self._listener)
        try:
            idle_since = self._idle_since
            while True:
                idle_since[task] = loop.time()
                frame = await read_frame(reader, self._max_request_size)
                del idle_since[task]
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
            self._idle_since.pop(task, None)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass
