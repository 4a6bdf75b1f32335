"""A pipelining client's buffered requests are served ``TURN_REQUESTS`` in a row before the connection lets the
others take a turn (a loop turn per request cost as much as a small produce): counted, not timed. That the others
still get their turns is ``tests/badinput/test_bad_frames.py::test_a_pipelining_client_does_not_starve_the_others``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path
from typing import Any

import pytest

import samsa
import samsa.broker.network as network
from samsa.protocol import RequestHeader, encode_request
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch

REQUESTS = 64


class CountedTurns:
    """``asyncio`` as the network module sees it, counting the turns it gives up (``sleep(0)``)."""

    def __init__(self) -> None:
        self.turns = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def sleep(self, delay: float, *args: Any) -> Any:
        if delay == 0:
            self.turns += 1
        return asyncio.sleep(delay, *args)


def test_a_pipeline_of_buffered_requests_is_served_several_at_a_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = CountedTurns()
    batch = build_batch([Record(0, 1_700_000_000_000, None, b"v" * 100)])
    frames = b"".join(
        encode_request(
            RequestHeader(0, 9, i, "pipeline"),
            ProduceRequest(None, 1, 10_000, [TopicProduceData("turns", [PartitionProduceData(0, batch)])]),
        )
        for i in range(REQUESTS)
    )
    with samsa.Broker(tmp_path / "data") as broker:
        broker.create_topic("turns", partitions=1)
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        monkeypatch.setattr(network, "asyncio", counted)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(frames)  # every request at once: they wait in the broker's receive buffer
            stream = sock.makefile("rb")
            correlations = []
            for _ in range(REQUESTS):
                size = struct.unpack(">i", stream.read(4))[0]
                correlations.append(struct.unpack(">i", stream.read(size)[:4])[0])
    assert correlations == list(range(REQUESTS))
    assert counted.turns <= REQUESTS // network.TURN_REQUESTS, counted.turns
