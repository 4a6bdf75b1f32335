"""The broker's own accept loop (``broker.network``): when ``accept`` itself fails (EMFILE here, injected), the
listener pauses instead of spinning, says so once however often it fails, and accepts again afterwards; a
connection refused by the limits is closed before the next one is accepted."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket

import pytest

from samsa.broker import network
from samsa.broker.network import ConnectionInfo, ConnectionLimits, ResponsePart, Server


async def echo(info: ConnectionInfo, frame: memoryview) -> list[ResponsePart]:
    return [len(frame).to_bytes(4, "big"), bytes(frame)]


class FailingAccepts:
    """A listening socket whose next ``failures`` accepts fail with EMFILE."""

    def __init__(self, sock: socket.socket, failures: int) -> None:
        self.sock = sock
        self.failures = failures
        self.attempts = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def accept(self) -> tuple[socket.socket, object]:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise OSError(errno.EMFILE, "Too many open files")
        return self.sock.accept()

    def close(self) -> None:
        self.sock.close()


async def request(port: int, payload: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(len(payload).to_bytes(4, "big") + payload)
    size = int.from_bytes(await reader.readexactly(4), "big")
    answer = await reader.readexactly(size)
    writer.close()
    return answer


def test_accept_failures_pause_the_listener_and_are_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(network, "ACCEPT_PAUSE_S", 0.1)

    async def scenario() -> FailingAccepts:
        server = Server(echo, listener="PLAINTEXT", max_request_size=1024)
        _, port = await server.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        real = server._sockets[0]
        failing = FailingAccepts(real, failures=5)
        loop.remove_reader(real.fileno())
        server._sockets = [failing]  # type: ignore[list-item]
        loop.add_reader(real.fileno(), server._accept, failing)
        started = loop.time()
        answer = await asyncio.wait_for(request(port, b"hello"), timeout=5)
        waited = loop.time() - started
        await server.close()
        assert answer == b"hello"
        assert waited >= 5 * 0.1 * 0.9  # five pauses
        return failing

    with caplog.at_level(logging.WARNING, logger="samsa.broker.network"):
        failing = asyncio.run(scenario())
    assert failing.failures == 0
    # one attempt per pause, not a busy loop: five failures, the accept that worked, the one finding none waiting
    assert failing.attempts == 7
    refusals = [r for r in caplog.records if "refusing new connections" in r.getMessage()]
    assert len(refusals) == 1 and "Too many open files" in refusals[0].getMessage()


def test_refused_connections_are_closed_and_served_ones_answer() -> None:
    async def scenario() -> None:
        limits = ConnectionLimits(max_connections=2)
        server = Server(echo, listener="PLAINTEXT", max_request_size=1024, limits=limits)
        _, port = await server.start("127.0.0.1", 0)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        extra_reader, extra_writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(extra_reader.read(1), timeout=5) == b""  # closed at once
        extra_writer.close()
        reader, writer = held[0]
        writer.write(b"\0\0\0\x02hi")
        assert await asyncio.wait_for(reader.readexactly(6), timeout=5) == b"\0\0\0\x02hi"
        for _, w in held:
            w.close()
        await asyncio.sleep(0.1)
        assert limits.open_total == 0  # every slot given back
        await server.close()

    asyncio.run(scenario())
