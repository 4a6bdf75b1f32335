"""The event loops the broker runs on, for tests that run one scenario on each: asyncio's own and uvloop
(``samsa serve --uvloop``; skipped where uvloop is not installed), and a connection accepted as the broker accepts
one."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from samsa.framing import FrameProtocol

LOOPS = ["asyncio", "uvloop"]


def run_on(loop_name: str, scenario: Callable[[], Awaitable[Any]]) -> Any:
    """``scenario()`` run to completion on a fresh loop of the kind ``loop_name`` names."""
    if loop_name == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return uvloop.run(scenario())
    return asyncio.run(scenario())


async def accepted_connection(
    max_size: int = 2**24,
) -> tuple[FrameProtocol, socket.socket, asyncio.BaseTransport]:
    """A broker-side transport with its ``FrameProtocol`` on one end of a socket pair, and the other end (the
    client's, non-blocking)."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    protocol = FrameProtocol(max_size, loop)
    transport, _ = await loop.connect_accepted_socket(lambda: protocol, ours)
    theirs.setblocking(False)
    return protocol, theirs, transport
