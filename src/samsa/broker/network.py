"""The broker's socket layer: accept connections, split frames, write responses.

A Kafka frame is ``int32 size`` followed by ``size`` bytes. A connection is served strictly in order: one request
is read, handled and answered before the next is read, which is how Kafka keeps responses in request order (it
mutes a channel while a request is in flight). A response is a sequence of parts: ``bytes`` written to the socket,
and file regions (a segment's ``FileSlice``) sent with ``sendfile`` straight from the page cache, never copied
through Python; a region of at most ``SMALL_REGION_BYTES`` (a caught-up reader's) is read and leaves in one
``send`` with the bytes around it (``write_parts``).

Frames are received straight into the buffers requests decode from (``FrameProtocol``, an asyncio
``BufferedProtocol``): a produced batch is copied at most once in user space between the socket and the file.

Connections take turns: a connection yields to the event loop when it has no received frame left, and after
``TURN_REQUESTS`` requests in a row otherwise, so one client pipelining thousands of requests cannot starve the
others. The answers to a pipelining client are held back while its next requests are already received
(``HeldResponses``, at most 64 KiB and 1 ms), so that several go out in one send.

Bad input ends only the offending connection: a size below zero or above ``socket.request.max.bytes`` closes it
(as Kafka's ``InvalidReceiveException`` does), and so does any exception a handler lets escape, which is logged.

Limits, with Kafka's keys and defaults (``ConnectionLimits``, shared by every listener of a broker): a connection
waiting for its next request longer than ``connections.max.idle.ms`` (10 minutes) is closed; a new connection
beyond ``max.connections.per.ip`` (and its ``max.connections.per.ip.overrides``, ``host:n,host:n``) or beyond
``max.connections`` is closed at once (Kafka's acceptor waits for a free slot instead; closing keeps the
loop simple and the client retries).

File descriptors: the server runs its own accept loop (a reader callback on the non-blocking listening socket,
not asyncio's ``start_server``, which accepts a whole burst before any admission check can run). Each accepted
socket is admitted or closed before the next ``accept``, and a connection that would leave fewer than
``descriptor_reserve()`` descriptors free under RLIMIT_NOFILE is closed at once (free descriptors are counted from
``/proc/self/fd`` now and then, not per connection). The broker so keeps descriptors for its segments and
checkpoints, and existing clients are served throughout. Should ``accept`` itself fail (for want of resources:
EMFILE, ENFILE, ENOBUFS, ENOMEM; or otherwise), the listener stops accepting for a second. Refusals of either kind are logged
once a minute, with the count of those not logged.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import resource
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, cast

from samsa.framing import FrameProtocol
from samsa.log_throttle import LogThrottle
from samsa.protocol.errors import FrameError
from samsa.protocol.primitives import FileRegionLike

if TYPE_CHECKING:
    from samsa.security.scram import ScramServer

    from .sasl import SaslSettings

log = logging.getLogger(__name__)


ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"
"""Kafka's principal for a connection that has not authenticated (a PLAINTEXT or SSL listener without client
certificates)."""

# A byte range of an open file: what a fetch response carries instead of copied bytes (sent with sendfile).
FileRegion = FileRegionLike

ResponsePart = bytes | bytearray | memoryview | FileRegion


@dataclass(slots=True)
class ConnectionInfo:
    """Who is on the other end of a connection: its address, the listener it came in on, and the principal it
    authenticated as (Kafka's ``KafkaPrincipal`` string, ``User:ANONYMOUS`` before and without authentication)."""

    connection_id: str
    client_host: str
    client_port: int
    listener: str
    principal: str = ANONYMOUS_PRINCIPAL
    throttled_until: float = 0.0  # time.monotonic(): a client over its quota is not read from before it
    sasl: SaslSettings | None = None  # a SASL listener's mechanisms and users; None: no SASL here
    authenticated: bool = True  # False on a SASL listener until SaslAuthenticate succeeded
    sasl_mechanism: str | None = None  # what SaslHandshake chose
    sasl_unwrapped: bool = False  # SaslHandshake v0: the next frame is a bare SASL token, not a request
    sasl_exchange: ScramServer | None = None  # a SCRAM exchange between its client-first and client-final
    session_expires_at: float = 0.0  # time.monotonic() after which only re-authentication is served; 0: never
    close_after_response: bool = False  # the connection ends once its answer is written (a failed login)


Handler = Callable[[ConnectionInfo, memoryview], Awaitable[Sequence[ResponsePart] | None]]


class TlsFrameProtocol(FrameProtocol):
    """``FrameProtocol`` under TLS: a TLS transport cannot stay half-open after the peer's close_notify (asyncio
    warns at each close when ``eof_received`` asks it to); the frames already received are still answered (the
    reader sees the end after them)."""

    def eof_received(self) -> bool | None:
        super().eof_received()
        return None


class ConnectionClosedByHandler(Exception):
    """A handler's way to drop its connection (a request that cannot be answered), logged at info level."""


TLS_HANDSHAKE_TIMEOUT_S = 10.0
"""How long a client on an SSL listener has to finish its handshake (a silent one is then closed)."""

HOLD_BYTES = 2**16
"""Response bytes held back at most while a pipelining client's next requests wait (``HeldResponses``)."""
HOLD_S = 0.001
"""The longest a response is held back: past it, it is written whatever the requests after it are doing."""


TURN_REQUESTS = 8
"""Requests a pipelining connection is served in a row, from frames already received, before the others get a turn."""


class HeldResponses:
    """Responses to a pipelining client, held back while its next requests are already received, so that several
    go out in one ``send``: on loopback a send costs the broker tens of microseconds, as much as serving a small
    produce. Only byte parts are held (a file region is sent after them, in order, by ``write_parts``), at most
    ``HOLD_BYTES`` and ``HOLD_S``: a request that waits (acks=all, a long-poll fetch) does not hold back the
    answers before it for longer. Event-loop thread only."""

    def __init__(self, writer: asyncio.StreamWriter, loop: asyncio.AbstractEventLoop) -> None:
        self._writer = writer
        self._loop = loop
        self._parts: list[bytes | bytearray | memoryview] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None

    def hold(self, parts: Sequence[ResponsePart]) -> bool:
        """Hold ``parts`` when they are bytes alone and there is room; False (nothing held) otherwise."""
        size = self._size
        for part in parts:
            if not isinstance(part, (bytes, bytearray, memoryview)):
                return False
            size += part.nbytes if isinstance(part, memoryview) else len(part)
        if size > HOLD_BYTES:
            return False
        self._parts.extend(cast(Sequence[bytes | bytearray | memoryview], parts))
        self._size = size
        if self._timer is None:  # one timer outlives the parts it was made for: a later hold's fire no later
            self._timer = self._loop.call_later(HOLD_S, self._expire)
        return True

    def take(self) -> list[bytes | bytearray | memoryview]:
        """The held parts, no longer held (to write before the next response). The timer stays: made and
        cancelled per held burst, it cost the loop as much as the hold saved."""
        parts, self._parts, self._size = self._parts, [], 0
        return parts

    def release(self) -> None:
        """Write the held parts now (flow control applies at the next response's ``drain``)."""
        parts = self.take()
        if parts and not self._writer.transport.is_closing():
            self._writer.writelines(parts)

    def close(self) -> None:
        """Release what is held and drop the timer (the connection ends)."""
        self.release()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        self.release()


SMALL_REGION_BYTES = 16 * 1024
"""File regions up to this size are read and written with the bytes around them, in one ``send`` (``write_parts``)."""


async def write_parts(writer: asyncio.StreamWriter, parts: Sequence[ResponsePart]) -> None:
    """Write a response: consecutive byte parts in one write, file regions with sendfile. ConnectionResetError
    when the client has gone, also between parts (the connection ends; writing on would only make asyncio warn
    for each write).

    A region of at most ``SMALL_REGION_BYTES`` is read (``pread``) and joins the byte parts' write: a caught-up
    follower's or consumer's answer, one small batch between its header and its tail, then leaves in one
    ``send`` where sendfile took three, and each ``send`` wakes the reader, whose loop turns three times for one
    answer. Copying 16 KiB costs less than two ``send`` calls and their wake-ups (``docs/benchmarks.md``);
    larger regions, a catching-up reader's, still go with ``sendfile``. A region longer than its file (truncated
    under us) is read up to the file's end, as sendfile stops there."""
    pending: list[bytes | bytearray | memoryview] = []
    for part in parts:
        if isinstance(part, (bytes, bytearray, memoryview)):
            pending.append(part)
            continue
        if part.size <= 0:
            continue
        if part.size <= SMALL_REGION_BYTES:
            pending.append(os.pread(part.fd, part.size, part.position))
            continue
        if pending:
            _write(writer, pending)
            pending = []
        _check_open(writer)
        await _sendfile(writer, part)
    if pending:
        _write(writer, pending)
    await writer.drain()


def _write(writer: asyncio.StreamWriter, parts: list[bytes | bytearray | memoryview]) -> None:
    _check_open(writer)
    writer.writelines(parts)


def _check_open(writer: asyncio.StreamWriter) -> None:
    if writer.transport.is_closing():
        raise ConnectionResetError("the client closed the connection")


async def _sendfile(writer: asyncio.StreamWriter, region: FileRegion) -> None:
    """Send a file region on the connection without copying it through Python.

    While nothing is queued on the transport, ``os.sendfile`` goes straight to the socket (``_sendfile_now``);
    what the socket does not take then goes through the event loop's own ``sendfile`` on the transport: it waits
    until the transport's buffer is empty (so bytes stay in order), then calls ``os.sendfile`` with an explicit
    offset, waiting for the socket to become writable whenever its buffer fills, until the whole region is sent.
    Afterwards the loop sets the fd's file position, which nothing else uses (storage reads and writes with
    ``pread``/``pwrite``). A region longer than the file (truncated under us) stops at the end of the file: the
    client sees a partial batch, which it tolerates. uvloop has no ``loop.sendfile`` of its own: there,
    ``_uvloop_sendfile`` sends what the socket takes at once. Where neither applies (a TLS or non-socket
    transport), the region is read and queued on the transport.
    """
    loop = asyncio.get_running_loop()
    transport = writer.transport
    sock = transport.get_extra_info("socket")
    if sock is None or transport.get_extra_info("ssl_object") is not None:  # TLS: the bytes must be encrypted
        writer.write(os.pread(region.fd, region.size, region.position))
    elif _is_uvloop(loop):
        _uvloop_sendfile(writer, sock.fileno(), region)
    else:
        position, size = region.position, region.size
        if transport.get_write_buffer_size() == 0:
            sent = _sendfile_now(sock.fileno(), region.fd, position, size)
            if sent is None:
                return  # the file ends before the region does
            position += sent
            size -= sent
            if size == 0:
                return
        try:
            file = cast(IO[bytes], _RegionFile(region.fd))
            await loop.sendfile(transport, file, position, size, fallback=False)
        except (asyncio.SendfileNotAvailableError, RuntimeError, NotImplementedError):
            # raised before any byte of the rest was sent
            writer.write(os.pread(region.fd, size, position))


def _sendfile_now(sock_fd: int, fd: int, position: int, size: int) -> int | None:
    """``os.sendfile`` straight to the socket, as much as its buffer takes now: the bytes sent (0 when it takes
    none or sendfile does not apply to this file or socket), None at the file's end. Called only while nothing is
    queued on the transport, so the bytes stay in order.

    On asyncio's loop this is the common case of a whole fetch answer: ``loop.sendfile`` would first pause reading,
    then after a send that took everything still wait for the socket to turn writable before it finishes (an
    extra loop turn and four ``epoll_ctl`` calls per region)."""
    try:
        sent = os.sendfile(sock_fd, fd, position, size)
    except (BlockingIOError, InterruptedError):
        return 0
    except ConnectionError as exc:
        raise ConnectionResetError("the client closed the connection") from exc
    except OSError:
        return 0  # no sendfile for this file or socket: the caller's other way sends it
    return sent if sent > 0 else None


def _uvloop_sendfile(writer: asyncio.StreamWriter, sock_fd: int, region: FileRegion) -> None:
    """On uvloop: ``_sendfile_now`` while nothing is queued on the transport; what the socket does not take at
    once is read and queued on the transport, which sends it when the socket drains. libuv writes a queue-less
    transport's bytes directly too."""
    position, size = region.position, region.size
    if writer.transport.get_write_buffer_size() == 0:
        sent = _sendfile_now(sock_fd, region.fd, position, size)
        if sent is None:
            return  # the file ends before the region does
        position += sent
        size -= sent
    if size > 0:
        writer.write(os.pread(region.fd, size, position))


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
"""The fewest file descriptors a broker keeps for itself beyond its connections: a new connection that would leave
fewer free than ``descriptor_reserve()`` is refused, so running out never reaches the logs."""


def descriptor_reserve(soft_limit: int) -> int:
    """Descriptors kept from connections under an RLIMIT_NOFILE of ``soft_limit``: a sixteenth of it, at least
    ``DESCRIPTOR_RESERVE``. They are what the logs may still open once connections have taken the rest: three per
    new segment (.log, .index, .timeindex), checkpoints written beside a file and renamed, the code a first request
    imports, and the one a refused connection holds until it is closed. 1,250 under this machine's 20,000."""
    return max(DESCRIPTOR_RESERVE, soft_limit // 16)


ACCEPT_PAUSE_S = 1.0  # how long a listener stops accepting after accept() itself failed


def _free_descriptors() -> tuple[int, int]:
    """Open-file slots left under RLIMIT_NOFILE (counted from /proc/self/fd; a large number where unknown), and how
    many of them are kept from connections."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        used = len(os.listdir("/proc/self/fd"))
    except OSError:
        return 1 << 30, DESCRIPTOR_RESERVE
    soft = 1 << 30 if soft == resource.RLIM_INFINITY else soft
    return soft - used, descriptor_reserve(soft)


@dataclass(slots=True)
class ConnectionLimits:
    """Kafka's connection limits for one broker, and the connections open now (every listener counts).

    Free descriptors are counted again once half of the headroom seen at the last count could have been used by
    new connections, and at every new connection once fewer than the reserve are free; while short, a
    refused connection counts again only after a connection closed or ``recount_every_s`` passed, so a flood of
    refused attempts does not list /proc/self/fd for each."""

    max_idle_ms: int = 600_000
    max_connections: int = 2**31 - 1
    max_per_ip: int = 2**31 - 1
    per_ip_overrides: dict[str, int] | None = None
    open_total: int = 0
    open_by_ip: dict[str, int] | None = None
    recount_at: int = 0  # open connections at which free descriptors are counted again
    # socket.listen.backlog.size: also the most connections accepted in one turn of the loop
    backlog: int = 50
    short_since: float | None = None  # when descriptors were last found short (None: not short)
    recount_every_s: float = 0.5

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

    def admit(self, host: str, now: float) -> str | None:
        """Count a new connection from ``host`` (already accepted, so holding a descriptor); None, or why it is
        refused (then it is not counted)."""
        by_ip = self.open_by_ip if self.open_by_ip is not None else {}
        self.open_by_ip = by_ip
        cap = (self.per_ip_overrides or {}).get(host, self.max_per_ip)
        if by_ip.get(host, 0) >= cap:
            return f"{host} already has {by_ip.get(host, 0)} connections (max.connections.per.ip {cap})"
        if self.open_total >= self.max_connections:
            return f"the broker already has {self.open_total} connections (max.connections)"
        refused = self._check_descriptors(now)
        if refused is not None:
            return refused
        by_ip[host] = by_ip.get(host, 0) + 1
        self.open_total += 1
        return None

    def _check_descriptors(self, now: float) -> str | None:
        if self.short_since is not None and now - self.short_since < self.recount_every_s:
            return "file descriptors are short, the rest are kept for the logs (raise the open files limit)"
        if self.open_total < self.recount_at:
            return None
        free, reserve = _free_descriptors()
        if free < reserve:
            self.short_since, self.recount_at = now, self.open_total
            return f"only {free} file descriptors are left, kept for the logs (raise the open files limit)"
        self.short_since = None
        self.recount_at = self.open_total + (free - reserve) // 2
        return None

    def release(self, host: str) -> None:
        by_ip = self.open_by_ip or {}
        left = by_ip.get(host, 0) - 1
        if left > 0:
            by_ip[host] = left
        else:
            by_ip.pop(host, None)
        self.open_total -= 1
        self.short_since = None  # a descriptor came back: count again at the next connection


def _listening_sockets(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Non-blocking listening sockets for every address ``host`` names ("" for all), on one port."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            try:
                sock = socket.socket(family, kind, proto)
            except OSError:
                continue  # a family this host does not have (IPv6 turned off), as asyncio skips it
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # one port for every address, as the first was given
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            try:
                sock.bind(address)
            except OSError as exc:  # name the address: "Address already in use" alone does not say which
                raise OSError(exc.errno, f"cannot listen on {host or '*'}:{port}: {exc.strerror}") from None
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"no socket could be opened for {host or '*'}:{port}")
    return sockets


class Server:
    """Accepts connections on one listener and serves each with ``handler``. Event-loop thread only."""

    def __init__(
        self,
        handler: Handler,
        *,
        listener: str,
        max_request_size: int,
        limits: ConnectionLimits | None = None,
        tls: ssl.SSLContext | None = None,
        principal_rules: str = "DEFAULT",
        sasl: SaslSettings | None = None,
    ) -> None:
        self._handler = handler
        self._sasl = sasl  # a SASL listener's settings: its connections must authenticate first
        self._tls = tls  # an SSL listener's context (samsa.broker.tls); None: PLAINTEXT
        self._principal_rules = principal_rules
        self._tls_failures = LogThrottle(RESOURCE_LOG_INTERVAL_S)
        self._listener = listener
        self._max_request_size = max_request_size
        self._limits = limits if limits is not None else ConnectionLimits()
        self._sockets: list[socket.socket] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._transported: set[socket.socket] = set()  # accepted sockets a transport owns (and closes)
        self._idle_since: dict[
            asyncio.Task[None], float
        ] = {}  # connections waiting for a request, since when
        self._sweeper: asyncio.Task[None] | None = None
        self._resume: list[asyncio.TimerHandle] = []
        self._refusals = LogThrottle(RESOURCE_LOG_INTERVAL_S)
        self._next_id = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, host: str, port: int, accepting: bool = True) -> tuple[str, int]:
        """Listen on ``host:port`` (port 0: any free one) and return the address bound. With ``accepting`` false
        the socket listens but nothing is accepted until ``accept_connections``: a client's connection is made
        (the kernel completes it into the backlog) and its first request waits there, as Kafka's broker binds its
        listeners before it registers and serves only after."""
        self._loop = asyncio.get_running_loop()
        self._sockets = _listening_sockets(host, port, self._limits.backlog)
        if accepting:
            self.accept_connections()
        sockname = self._sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    def accept_connections(self) -> None:
        """Start accepting (and serving) the connections of the listening sockets; once only."""
        loop = self._loop
        assert loop is not None, "accept_connections before start"
        if self._sweeper is not None:
            return
        for sock in self._sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)
        self._sweeper = asyncio.create_task(self._close_idle_connections(), name="samsa-idle-sweeper")

    def _accept(self, listening: socket.socket) -> None:
        """The listening socket is readable: accept up to a backlog's worth, admitting or closing each before the
        next, so the connections in hand never outrun the descriptor budget."""
        loop = self._loop
        assert loop is not None
        for _ in range(self._limits.backlog):
            try:
                sock, peer = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
                    continue  # the client gave up before it was accepted
                # out of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) or anything else: not at once again
                self._log_refusal(f"accept() failed: {exc}")
                self._pause(listening)
                return
            host = str(peer[0])
            refused = self._limits.admit(host, loop.time())
            if refused is not None:
                sock.close()
                self._log_refusal(refused)
                continue
            task = loop.create_task(self._serve(sock, host, int(peer[1])))
            self._connections.add(task)
            task.add_done_callback(functools.partial(self._ended, sock=sock, host=host))

    def _ended(self, task: asyncio.Task[None], sock: socket.socket, host: str) -> None:
        """A connection's task is done (even one cancelled before it ran): its slot comes back, and its socket is
        closed here unless a transport took it (the transport closes it, once it is off the selector)."""
        self._connections.discard(task)
        self._limits.release(host)
        if sock in self._transported:
            self._transported.discard(sock)
        else:
            sock.close()

    def _pause(self, listening: socket.socket) -> None:
        loop = self._loop
        assert loop is not None
        loop.remove_reader(listening.fileno())

        def resume() -> None:
            if listening in self._sockets:
                loop.add_reader(listening.fileno(), self._accept, listening)

        self._resume.append(loop.call_later(ACCEPT_PAUSE_S, resume))

    async def _close_idle_connections(self) -> None:
        """Close connections that waited for a request longer than ``connections.max.idle.ms``."""
        idle_s = self._limits.max_idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(max(min(idle_s / 4, 30.0), 0.05))
            deadline = loop.time() - idle_s
            idle = [task for task, since in self._idle_since.items() if since <= deadline]
            for task in idle:
                task.cancel()
            if idle:  # one line a sweep, not one a connection (2,000 idle clients made 2,000 lines)
                log.info(
                    "closed %d connection%s idle for more than %d ms",
                    len(idle),
                    "" if len(idle) == 1 else "s",
                    self._limits.max_idle_ms,
                )

    async def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for handle in self._resume:
            handle.cancel()
        sockets, self._sockets = self._sockets, []
        for sock in sockets:
            if self._loop is not None:
                self._loop.remove_reader(sock.fileno())
            sock.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _serve(self, sock: socket.socket, host: str, port: int) -> None:
        """Serve one admitted connection (``_ended`` gives its slot back)."""
        loop = asyncio.get_running_loop()
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            protocol = (FrameProtocol if self._tls is None else TlsFrameProtocol)(
                self._max_request_size, loop
            )
            if self._tls is not None:
                self._transported.add(sock)  # the SSL transport closes it, even after a failed handshake
            if self._tls is None:
                transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock)
            else:
                transport, _ = await loop.connect_accepted_socket(
                    lambda: protocol, sock, ssl=self._tls, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S
                )
        except (OSError, asyncio.CancelledError) as exc:
            if self._tls is not None and not isinstance(exc, asyncio.CancelledError):
                self._log_tls_failure(host, port, exc)
            return
        self._transported.add(sock)
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        principal = ANONYMOUS_PRINCIPAL
        if self._tls is not None:
            from .tls import principal_of

            principal = principal_of(transport.get_extra_info("peercert"), self._principal_rules)
        await self._serve_admitted(protocol, writer, (host, port), principal)

    def _log_tls_failure(self, host: str, port: int, exc: BaseException) -> None:
        """A TLS handshake that failed (a plaintext client, an untrusted certificate, garbage): one line, at most
        once a minute with the count since."""
        assert self._loop is not None
        unlogged = self._tls_failures.due(self._loop.time())
        if unlogged is None:
            return
        log.info(
            "TLS handshake with %s:%d on listener %s failed: %s (%d more failed since the last report; said once "
            "a minute)",
            host,
            port,
            self._listener,
            exc or type(exc).__name__,
            unlogged,
        )

    def _log_refusal(self, reason: str) -> None:
        assert self._loop is not None
        unlogged = self._refusals.due(self._loop.time())
        if unlogged is None:
            return
        log.warning(
            "refusing new connections: %s (%d more refused since the last report; said once a minute; "
            "existing connections are served)",
            reason,
            unlogged,
        )

    async def _serve_admitted(
        self,
        reader: FrameProtocol,
        writer: asyncio.StreamWriter,
        peer: tuple[str, int],
        principal: str = ANONYMOUS_PRINCIPAL,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        self._next_id += 1
        info = ConnectionInfo(
            f"{self._listener}-{self._next_id}",
            str(peer[0]),
            int(peer[1]),
            self._listener,
            principal,
            sasl=self._sasl,
            authenticated=self._sasl is None,
        )
        held = HeldResponses(writer, loop)
        streak = 0  # requests served from the buffer since this connection last let the others take a turn
        try:
            idle_since = self._idle_since
            while True:
                if (
                    info.throttled_until
                ):  # over a client quota: nothing is read until its throttle time passed
                    delay = info.throttled_until - time.monotonic()
                    info.throttled_until = 0.0
                    if delay > 0:
                        held.release()
                        await asyncio.sleep(delay)
                frame = reader.next_frame()  # a received frame: nothing to wait for, not idle
                if frame is None:
                    idle_since[task] = loop.time()
                    frame = await reader.read_frame()
                    del idle_since[task]
                if frame is None:
                    break
                parts = await self._handler(info, frame)
                if parts and not (reader.frames_waiting and held.hold(parts)):
                    await write_parts(writer, [*held.take(), *parts])
                elif not reader.frames_waiting:
                    held.release()
                if info.close_after_response:
                    break
                # let other connections take a turn: a client pipelining requests whose frames are already
                # buffered would otherwise be served without the loop ever switching to anyone else. When none
                # is buffered, the next read waits and the loop turns anyway; a turn costs a loop iteration (an
                # epoll call), as much as a small request, so a pipeline is served TURN_REQUESTS at a time
                streak = streak + 1 if reader.frames_waiting else 0
                if streak >= TURN_REQUESTS:
                    streak = 0
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
            self._idle_since.pop(task, None)
            held.close()  # the answers before a request that ended the connection
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass
