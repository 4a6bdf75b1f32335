"""Sans-IO frame splitter: bytes from a socket in, complete Kafka frames out.

    frame = int32 size (big-endian, >= 0) followed by ``size`` bytes (a request or response: header + body)

Feed whatever the transport delivered; ``feed`` returns every frame completed by it, without the size prefix.
A size above ``max_frame_size`` (Kafka's ``socket.request.max.bytes``, default 100 MiB) raises
:class:`FrameTooLargeError` before any of the frame is buffered; a negative size raises :class:`FrameError`.
After either error the stream is unusable and the connection should be closed.
"""

from __future__ import annotations

from .errors import FrameError, FrameTooLargeError
from .primitives import I32

DEFAULT_MAX_FRAME_SIZE = 104_857_600
SIZE_PREFIX = 4


def frame_size(prefix: bytes | bytearray | memoryview, max_frame_size: int, offset: int = 0) -> int:
    """The size a frame's 4-byte prefix (at ``offset``) declares; FrameError or FrameTooLargeError when it cannot
    be accepted. The one reading of the prefix: ``FrameSplitter`` and ``samsa.framing.FrameProtocol`` both use it."""
    size = int(I32.unpack_from(prefix, offset)[0])
    if size < 0:
        raise FrameError(size)
    if size > max_frame_size:
        raise FrameTooLargeError(size, max_frame_size)
    return size


class FrameSplitter:
    """Buffers partial frames of one connection.

    Not thread-safe: one splitter per connection, used from the thread (event loop) that reads the socket.
    """

    __slots__ = ("_buffer", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """Add ``data`` and return the frames it completes, in order (each without its size prefix): each a
        writable buffer of its own, so that a fetched record set decoded from it is appended in place with no
        further copy.

        Each frame is copied once, out of ``data`` itself when nothing was buffered before it (the common case of
        a read that ends on a frame boundary), else out of the buffer ``data`` was added to; only a partial frame
        at the end is kept."""
        buf = self._buffer
        if buf:
            buf += data
            source: bytes | bytearray | memoryview = buf
        else:
            source = data
        frames: list[bytearray] = []
        start = 0
        with memoryview(source) as view:
            while len(view) - start >= SIZE_PREFIX:
                size = frame_size(view, self.max_frame_size, start)
                end = start + SIZE_PREFIX + size
                if end > len(view):
                    break
                frames.append(bytearray(view[start + SIZE_PREFIX : end]))
                start = end
            if source is not buf and start < len(view):
                buf += view[start:]
        if source is buf and start:
            del buf[:start]
        return frames
