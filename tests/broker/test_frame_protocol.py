"""``FrameProtocol``: frames received straight into the buffers requests decode from, on asyncio's loop and uvloop.

Frames of every size, cut at every place by the sender, come out whole and in order; a frame that fits the receive
buffer is a view of it (no copy); a bad size is raised after the frames before it; an end of stream inside a frame
is an IncompleteReadError, between frames None.
"""

from __future__ import annotations

import asyncio
import mmap
import random
import socket
import struct

import pytest
from tests.broker.event_loops import LOOPS, accepted_connection, run_on

from samsa.framing import HEAP_FRAME, READ_CHUNK
from samsa.protocol.errors import FrameError


async def _send(loop: asyncio.AbstractEventLoop, sock: socket.socket, data: bytes, pieces: int) -> None:
    cuts = sorted(random.Random(len(data)).sample(range(1, len(data)), min(pieces, len(data) - 1)))
    start = 0
    for cut in [*cuts, len(data)]:
        await loop.sock_sendall(sock, data[start:cut])
        start = cut
        await asyncio.sleep(0)


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


async def _received(bodies: list[bytes], pieces: int) -> list[tuple[bytes, bool, type]]:
    """Send ``bodies`` as frames in ``pieces`` cuts; each frame received as (bytes, read-only, buffer type), then
    the clean end of stream."""
    loop = asyncio.get_running_loop()
    protocol, theirs, transport = await accepted_connection()
    sender = asyncio.create_task(_send(loop, theirs, b"".join(map(_frame, bodies)), pieces))
    got = []
    for _ in bodies:
        frame = await asyncio.wait_for(protocol.read_frame(), 10)
        assert frame is not None
        got.append((bytes(frame), frame.readonly, type(frame.obj)))
    await sender
    theirs.close()
    assert await asyncio.wait_for(protocol.read_frame(), 10) is None
    transport.close()
    return got


@pytest.mark.parametrize("loop_name", LOOPS)
def test_frames_come_out_whole_and_in_order(loop_name: str) -> None:
    sizes = [0, 1, 100, READ_CHUNK - 4, READ_CHUNK, 3 * READ_CHUNK + 7, 5, 70_000, 17] * 3
    bodies = [bytes(random.Random(i).randbytes(size)) for i, size in enumerate(sizes)]
    got = run_on(loop_name, lambda: _received(bodies, 60))
    assert [body for body, _, _ in got] == bodies
    assert not any(readonly for _, readonly, _ in got)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_frame_that_fits_is_a_view_of_the_receive_buffer(loop_name: str) -> None:
    async def scenario() -> None:
        protocol, theirs, transport = await accepted_connection()
        theirs.send(_frame(b"a" * 100) + _frame(b"b" * 200))
        first = await asyncio.wait_for(protocol.read_frame(), 10)
        second = await asyncio.wait_for(protocol.read_frame(), 10)
        assert first is not None and second is not None
        assert first.obj is second.obj  # both views of one receive buffer: no copy was made
        assert (bytes(first), bytes(second)) == (b"a" * 100, b"b" * 200)
        theirs.close()
        transport.close()

    run_on(loop_name, scenario)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_large_frame_is_received_into_reused_heap_memory_a_huge_one_into_a_mapping(loop_name: str) -> None:
    """A 1 MB frame (librdkafka's batch.size) gets a bytearray, whose memory the allocator reuses frame after
    frame (a fresh mapping faulted in 256 pages per frame); one above HEAP_FRAME an anonymous mapping, so a size
    prefix alone does not make the broker hold that much."""
    bodies = [b"m" * 1_000_000, b"h" * (HEAP_FRAME + 1)]
    got = run_on(loop_name, lambda: _received(bodies, 8))
    assert [body for body, _, _ in got] == bodies
    assert [kind for _, _, kind in got] == [bytearray, mmap.mmap]


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_bad_size_is_raised_after_the_frames_before_it(loop_name: str) -> None:
    async def scenario() -> None:
        protocol, theirs, transport = await accepted_connection(max_size=1000)
        theirs.send(_frame(b"ok") + struct.pack(">i", 1001) + b"x" * 50)
        assert bytes(await asyncio.wait_for(protocol.read_frame(), 10) or b"") == b"ok"
        with pytest.raises(FrameError):
            await asyncio.wait_for(protocol.read_frame(), 10)
        theirs.close()
        transport.close()

    run_on(loop_name, scenario)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_end_inside_a_frame_is_an_incomplete_read(loop_name: str) -> None:
    async def scenario() -> None:
        protocol, theirs, transport = await accepted_connection()
        theirs.send(_frame(b"whole") + struct.pack(">i", 10) + b"part")
        theirs.close()
        assert bytes(await asyncio.wait_for(protocol.read_frame(), 10) or b"") == b"whole"
        with pytest.raises(asyncio.IncompleteReadError):
            await asyncio.wait_for(protocol.read_frame(), 10)
        transport.close()

    run_on(loop_name, scenario)
