"""``FrameProtocol``: Kafka frames (``int32 size`` then ``size`` bytes) received straight into the buffers they are
decoded from, for both ends of a connection: the broker's requests (``samsa.broker.network``) and a client's
responses (``samsa.client.connection``, which a follower's fetches take). Below the client and the broker, above
the sans-IO protocol; asyncio only.
"""

from __future__ import annotations

import asyncio
import collections
import mmap
from collections.abc import Callable
from typing import cast

from samsa.protocol.errors import FrameError
from samsa.protocol.frames import frame_size

READ_CHUNK = 2**16
"""Bytes a connection's receive buffer holds (a larger frame gets a buffer of its own size)."""
HEAP_FRAME = 2**21
"""The largest frame received into a ``bytearray`` of its own (above it, an anonymous mapping: ``_split``)."""
MIN_RECEIVE_ROOM = 2**12
"""Between frames, a receive buffer with less room left than this is replaced rather than read in small pieces."""
PAUSE_QUEUED_BYTES = 2**18
"""Received frames not yet served beyond which a connection stops reading (asyncio's StreamReader pauses at 2x
its 64 KiB limit; a pipelining client cannot make the broker buffer without bound)."""


class FrameProtocol(asyncio.BufferedProtocol):
    """One connection's frames, received straight into the buffers requests are decoded from.

    The kernel copies received bytes into a receive buffer (``get_buffer``); every whole frame in it is handed out
    as a view of that buffer, never copied, and later bytes go after it. When the frame being received cannot fit
    in the rest of the buffer, a new buffer is made (the frame's own size when that is larger than
    ``READ_CHUNK``: a ``bytearray`` up to ``HEAP_FRAME``, an anonymous mapping above) and the part of the frame already received is copied into it, once; the rest is received
    there. So a produced batch is copied at most once in user space between the socket and the file, and not
    at all when its frame fits (the produce path patches it in place and writes it with one ``pwrite``). A buffer
    is never written where a frame was handed out, so frames stay valid while they are served.

    Frames are served in order (``read_frame``, or ``take_frame`` from a ``listen`` callback); a bad size is raised
    after the frames before it. Writing (``asyncio.StreamWriter`` over this protocol) waits in ``drain`` while the
    transport's buffer is full, as asyncio's ``FlowControlMixin`` does; that class is not a base here, since uvloop
    takes any ``asyncio.Protocol`` (which it is) for a streaming protocol and would never call ``get_buffer``.
    Event-loop thread only."""

    def __init__(self, max_size: int, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._write_paused = False
        self._drain_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lost = False
        self._max_size = max_size
        self._buf: bytearray | mmap.mmap = bytearray(READ_CHUNK)
        self._start = 0  # where the frame being received starts in ``_buf``
        self._end = 0  # bytes received into ``_buf``
        self._frames: collections.deque[memoryview] = collections.deque()
        self._queued = 0  # bytes in ``_frames``
        self._failure: BaseException | None = None  # raised once the frames before it are served
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] = loop.create_future()
        self._transport: asyncio.BaseTransport | None = None
        self._reading_paused = False
        self._listener: Callable[[], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self._buf)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        if self._failure is not None:
            return  # a bad size was read: nothing after it is framed
        try:
            self._split()
        except FrameError as exc:
            self._fail(exc)
            return
        if self._queued > PAUSE_QUEUED_BYTES and not self._reading_paused:
            self._reading_paused = True
            cast(asyncio.ReadTransport, self._transport).pause_reading()
        self._wake()

    def _split(self) -> None:
        """Hand out the whole frames received; make room for the one being received."""
        buf, start, end = memoryview(self._buf), self._start, self._end
        size = -1
        while end - start >= 4:
            size = frame_size(buf, self._max_size, start)
            if end - start < 4 + size:
                break
            self._frames.append(buf[start + 4 : start + 4 + size])
            self._queued += size
            start += 4 + size
            size = -1
        self._start = start
        room = len(buf) - end
        if (size >= 0 and len(buf) - start >= 4 + size) or (size < 0 and room >= MIN_RECEIVE_ROOM):
            return  # the frame being received fits; or room enough to receive its size
        needed = 4 + size if size >= 0 else 4
        # a frame of up to HEAP_FRAME bytes gets a bytearray: the allocator hands back memory that earlier
        # frames used, where a fresh mapping faults in every page (a 1 MB frame: 256 page faults, a fifth of the
        # broker's CPU for it). A larger frame's buffer is anonymous memory, whose pages take room only as bytes
        # arrive in them: a size prefix alone (up to socket.request.max.bytes) does not make the broker hold that much
        fresh: bytearray | mmap.mmap = (
            bytearray(max(needed, READ_CHUNK)) if needed <= HEAP_FRAME else mmap.mmap(-1, needed)
        )
        fresh[: end - start] = buf[start:end]  # the one copy: a frame's start, received already
        self._buf, self._start, self._end = fresh, 0, end - start

    def eof_received(self) -> bool | None:
        self._eof = True
        self._wake()
        return True  # as asyncio's StreamReaderProtocol: the frames received are still answered

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._release_drains(None)

    async def _drain_helper(self) -> None:
        """What ``StreamWriter.drain`` awaits: the transport's buffer below its high-water mark."""
        if self._lost:
            raise ConnectionResetError("Connection lost")
        if not self._write_paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _release_drains(self, exc: Exception | None) -> None:
        while self._drain_waiters:
            waiter = self._drain_waiters.popleft()
            if waiter.done():
                continue
            if exc is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._release_drains(exc)
        if exc is not None and self._failure is None:
            self._failure = exc
        self._eof = True
        self._wake()
        if not self._closed.done():
            self._closed.set_result(None)

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future[None]:
        """What ``StreamWriter.wait_closed`` awaits."""
        return self._closed

    def _fail(self, exc: BaseException) -> None:
        self._failure = exc
        if self._transport is not None and not self._reading_paused:
            self._reading_paused = True
            cast(asyncio.ReadTransport, self._transport).pause_reading()
        self._wake()

    def _wake(self) -> None:
        if self._listener is not None:
            self._listener()
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` in the receiving callback whenever frames arrive or the stream ends or fails,
        instead of waking a reader's ``read_frame``: a client whose answers complete futures takes them there
        (``take_frame``), which saves the loop turn a reader task costs per frame."""
        self._listener = listener

    def take_frame(self) -> memoryview | None:
        """``read_frame`` without a wait: the next frame, or None while none is received and the stream goes on.
        At its end: EOFError between frames, IncompleteReadError inside one; a bad size or a lost connection's
        error is raised once the frames before it are taken."""
        if self._frames:
            return self._pop()
        if self._failure is not None:
            raise self._failure
        if self._eof:
            if self._end > self._start:
                raise asyncio.IncompleteReadError(bytes(self._buf[self._start : self._end]), None)
            raise EOFError
        return None

    @property
    def frames_waiting(self) -> bool:
        """Whether whole frames are received and not served yet (a pipelining client)."""
        return bool(self._frames)

    async def read_frame(self) -> memoryview | None:
        """The next frame, a writable view (the produce path patches base offsets and leader epochs in place);
        None at a clean end of stream between frames. FrameError for a bad size, IncompleteReadError for a
        stream that ends inside a frame."""
        while True:
            try:
                frame = self.take_frame()
            except asyncio.IncompleteReadError:
                raise
            except EOFError:
                return None  # a clean end, between frames
            if frame is not None:
                return frame
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def next_frame(self) -> memoryview | None:
        """The next received frame when one is waiting, with no await (a pipelining client's); None when none
        is (then ``read_frame`` waits for one, or says why there will be none)."""
        return self._pop() if self._frames else None

    def _pop(self) -> memoryview:
        frame = self._frames.popleft()
        self._queued -= frame.nbytes
        if self._reading_paused and self._failure is None and self._queued <= PAUSE_QUEUED_BYTES:
            self._reading_paused = False
            cast(asyncio.ReadTransport, self._transport).resume_reading()
        return frame
