"""The capture proxy relays whatever descriptor numbers its sockets get: a test process that has run a thousand tests
holds more than 1,024 descriptors, and ``select()`` refuses those (the proxy then ended every connection at once,
and every live-capture test failed in CI only)."""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from .capture import REQUEST, RESPONSE, CaptureProxy


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)


def test_a_connection_with_a_descriptor_above_1024_is_relayed_and_recorded(many_descriptors: None) -> None:
    upstream = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        conn, _ = upstream.accept()
        with conn:
            frame = conn.recv(64)
            conn.sendall(frame[:4] + frame[4:].upper())

    threading.Thread(target=answer, daemon=True).start()
    with (
        CaptureProxy(upstream.getsockname()[1]) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port)) as c,
    ):
        assert c.fileno() > 1024
        c.sendall(struct.pack(">i", 5) + b"hello")
        c.settimeout(10)
        assert c.recv(64) == struct.pack(">i", 5) + b"HELLO"
        assert [(x.direction, x.frame) for x in proxy.snapshot()] == [
            (REQUEST, b"hello"),
            (RESPONSE, b"HELLO"),
        ]
    upstream.close()
