"""``write_parts``: a response's byte parts and file regions reach the client whole and in order, on asyncio's
loop (its ``loop.sendfile``) and on uvloop (``os.sendfile`` while the transport has nothing queued, the rest read
and queued), including a region larger than the socket's buffer and one that runs past the end of its file; a
small region is read and sent with the bytes around it."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.broker.event_loops import LOOPS, accepted_connection, run_on

from samsa.broker.network import SMALL_REGION_BYTES, write_parts
from samsa.framing import FrameProtocol


@dataclass(frozen=True)
class Region:
    fd: int
    position: int
    size: int


async def _send(parts: list[Any]) -> bytes:
    """Write ``parts`` on a connected transport as the broker does; what the other end received."""
    loop = asyncio.get_running_loop()
    protocol, theirs, transport = await accepted_connection()
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    received = bytearray()

    async def read_all() -> None:
        while chunk := await loop.sock_recv(theirs, 1 << 16):
            received.extend(chunk)

    reader = asyncio.ensure_future(read_all())
    await write_parts(writer, parts)
    writer.close()
    await reader
    theirs.close()
    return bytes(received)


@pytest.fixture
def segment(tmp_path: Path) -> tuple[int, bytes]:
    data = os.urandom(6 << 20)  # larger than a socket's buffer: sendfile cannot take it in one call
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, data
    os.close(fd)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_parts_and_regions_arrive_whole_and_in_order(loop_name: str, segment: tuple[int, bytes]) -> None:
    fd, data = segment
    parts = [b"head", Region(fd, 10, 1000), b"middle", Region(fd, 4096, len(data) - 4096), b"tail"]
    got = run_on(loop_name, lambda: _send(parts))
    assert got == b"head" + data[10:1010] + b"middle" + data[4096:] + b"tail"


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_region_past_the_end_of_its_file_stops_there(loop_name: str, segment: tuple[int, bytes]) -> None:
    fd, data = segment
    parts = [b"a", Region(fd, len(data) - 100, 1000), b"b", Region(fd, len(data) + 50, 10), b"c"]
    got = run_on(loop_name, lambda: _send(parts))
    assert got == b"a" + data[-100:] + b"b" + b"c"


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_region_the_socket_takes_is_never_read_into_python(
    loop_name: str, segment: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    fd, data = segment
    reads: list[int] = []
    pread = os.pread

    def counted(fd: int, size: int, position: int) -> bytes:
        reads.append(size)
        return pread(fd, size, position)

    monkeypatch.setattr(os, "pread", counted)
    got = run_on(loop_name, lambda: _send([b"head", Region(fd, 0, 32768), b"tail"]))
    assert got == b"head" + data[:32768] + b"tail"
    assert reads == []


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_small_region_leaves_in_one_write_with_the_bytes_around_it(
    loop_name: str, segment: tuple[int, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A region of at most ``SMALL_REGION_BYTES`` (a caught-up reader's answer) is read and joins its answer's
    byte parts in one write: no ``sendfile``, and one ``writelines`` for the whole answer, where three sends
    each woke the reader."""
    fd, data = segment
    reads: list[int] = []
    sendfiles: list[int] = []
    writes: list[int] = []
    pread, sendfile = os.pread, os.sendfile

    def counted_pread(fd: int, size: int, position: int) -> bytes:
        reads.append(size)
        return pread(fd, size, position)

    def counted_sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        sendfiles.append(count)
        return sendfile(out_fd, in_fd, offset, count)

    monkeypatch.setattr(os, "pread", counted_pread)
    monkeypatch.setattr(os, "sendfile", counted_sendfile)
    writelines = asyncio.StreamWriter.writelines

    def counted_writelines(self: asyncio.StreamWriter, parts: Any) -> None:
        parts = list(parts)
        writes.append(sum(len(p) for p in parts))
        writelines(self, parts)

    monkeypatch.setattr(asyncio.StreamWriter, "writelines", counted_writelines)
    small = SMALL_REGION_BYTES
    parts = [b"head", Region(fd, 7, 170), b"mid", Region(fd, 9000, small), b"tail"]
    got = run_on(loop_name, lambda: _send(parts))
    assert got == b"head" + data[7:177] + b"mid" + data[9000 : 9000 + small] + b"tail"
    assert reads == [170, small] and sendfiles == [] and writes == [len(got)]


@pytest.mark.parametrize("loop_name", LOOPS)
def test_regions_on_a_tls_connection_arrive_encrypted_and_whole(
    loop_name: str, segment: tuple[int, bytes]
) -> None:
    """TLS: a region must go through the transport's encryption, never ``sendfile`` to the socket beneath."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    fd, data = segment

    async def scenario() -> bytes:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        protocol = FrameProtocol(2**20, loop)
        accepted = asyncio.ensure_future(
            loop.connect_accepted_socket(lambda: protocol, ours, ssl=server_context)
        )
        reader, client = await asyncio.open_connection(
            sock=theirs, ssl=client_context, server_hostname="localhost"
        )
        transport, _ = await accepted
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        await write_parts(writer, [b"head", Region(fd, 0, 100_000), b"tail"])
        got = await reader.readexactly(4 + 100_000 + 4)
        writer.close()
        client.close()
        return got

    assert run_on(loop_name, scenario) == b"head" + data[:100_000] + b"tail"


def test_on_asyncio_a_region_the_socket_takes_skips_the_loops_sendfile(segment: tuple[int, bytes]) -> None:
    """asyncio's ``loop.sendfile`` pauses reading and, after a send that took everything, waits a loop turn for
    the socket to turn writable; a region the socket's buffer takes at once is sent without it, and a region
    larger than the buffer still reaches the client whole through it."""
    fd, data = segment
    calls: list[int] = []

    async def scenario(parts: list[Any]) -> bytes:
        loop = asyncio.get_running_loop()
        loops_sendfile = loop.sendfile

        async def counted(
            transport: Any, file: Any, offset: int = 0, count: int | None = None, **kw: Any
        ) -> int:
            calls.append(offset)
            return await loops_sendfile(transport, file, offset, count, **kw)

        loop.sendfile = counted  # type: ignore[method-assign]
        return await _send(parts)

    got = run_on("asyncio", lambda: scenario([b"head", Region(fd, 0, 32768), b"tail"]))
    assert got == b"head" + data[:32768] + b"tail"
    assert calls == []
    got = run_on("asyncio", lambda: scenario([b"head", Region(fd, 0, len(data)), b"tail"]))
    assert got == b"head" + data + b"tail"
    assert len(calls) == 1 and calls[0] > 0  # the loop sent only what the first send left
