"""Connection limits with Kafka's keys: idle connections closed, per-IP and broker-wide caps. Bounded in time;
loopback only. Running out of file descriptors (a ``samsa serve`` under a low RLIMIT_NOFILE, flooded) is in
test_descriptor_exhaustion.py."""

from __future__ import annotations

import logging
import re
import socket
import time

import pytest

import samsa
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from tests.badinput.wire import Connection

pytestmark = pytest.mark.clients


def port_of(broker: samsa.Broker) -> int:
    return int(broker.bootstrap_servers.rsplit(":", 1)[1])


def answers(conn: Connection) -> bool:
    try:
        return bool(conn.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest()).error_code == ErrorCode.NONE)
    except (OSError, ConnectionError, AssertionError):
        return False


def closed_by_broker(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def test_an_idle_connection_is_closed_and_a_busy_one_is_not() -> None:
    with samsa.Broker(config={"connections.max.idle.ms": "400"}) as broker:
        idle = socket.create_connection(("127.0.0.1", port_of(broker)))
        with Connection(port_of(broker)) as busy:
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                assert answers(busy)
                time.sleep(0.1)
            assert closed_by_broker(idle, within=2.0)
            assert answers(busy)
        idle.close()


def test_idle_connections_closed_in_one_sweep_are_logged_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="samsa.broker.network")
    with samsa.Broker(config={"connections.max.idle.ms": "400"}) as broker:
        idle = [socket.create_connection(("127.0.0.1", port_of(broker))) for _ in range(20)]
        try:
            assert all(closed_by_broker(sock, within=3.0) for sock in idle)
        finally:
            for sock in idle:
                sock.close()
    lines = [r.getMessage() for r in caplog.records if "idle for more than" in r.getMessage()]
    counts = [int(m.group(1)) for line in lines if (m := re.match(r"closed (\d+) connections? idle", line))]
    assert sum(counts) == 20, lines
    assert len(lines) <= 3, lines  # one a sweep (sweeps are 100 ms apart here), not one a connection


def test_connections_beyond_the_per_ip_cap_are_closed() -> None:
    with samsa.Broker(config={"max.connections.per.ip": "2"}) as broker:
        port = port_of(broker)
        first, second = Connection(port), Connection(port)
        assert answers(first) and answers(second)
        third = socket.create_connection(("127.0.0.1", port))
        assert closed_by_broker(third, within=5.0)
        second.close()
        time.sleep(0.2)
        with Connection(port) as again:
            assert answers(again)
        assert answers(first)
        first.close()


def test_the_broker_wide_cap() -> None:
    with samsa.Broker(config={"max.connections": "1"}) as broker, Connection(port_of(broker)) as only:
        assert answers(only)
        extra = socket.create_connection(("127.0.0.1", port_of(broker)))
        assert closed_by_broker(extra, within=5.0)
        assert answers(only)
