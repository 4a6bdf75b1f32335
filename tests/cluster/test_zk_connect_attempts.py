"""How long one ZooKeeper connection attempt waits for the server's answer, and the log it leaves.

A restarted ZooKeeper binds its port before it reads connections, so a connection can be made that the server
never answers. Kazoo waits the session timeout divided by the number of hosts for the answer to its
ConnectRequest (6 s for one host and a 6 s session: the whole session). Samsa lists each host several times so an
attempt gives up after about a second; here a listener that takes connections and never answers shows it, and the
log filter that keeps kazoo's per-attempt lines to one a second is checked with an injected clock.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

from samsa.cluster.zk_client import CONNECT_ATTEMPT_S, ReconnectLogFilter, ZkClient, attempts_per_host


def test_each_host_is_listed_so_an_attempt_waits_about_a_second() -> None:
    assert attempts_per_host(6.0, 1) == 6
    assert attempts_per_host(18.0, 3) == 6
    assert attempts_per_host(0.5, 1) == 1
    client = ZkClient("127.0.0.1:1,127.0.0.2:2/chroot", session_timeout_ms=6000)
    hosts = client.kazoo.hosts
    assert sorted(set(hosts)) == [("127.0.0.1", 1), ("127.0.0.2", 2)]
    assert 6.0 / len(hosts) <= CONNECT_ATTEMPT_S  # what kazoo waits for one attempt's answer


def test_an_unanswered_connection_is_given_up_after_about_a_second() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[float] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(time.monotonic())
            held.append(conn)  # read nothing, answer nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    client = ZkClient(f"127.0.0.1:{port}", session_timeout_ms=6000)
    client.kazoo.start_async()
    try:
        time.sleep(4.0)
    finally:
        client.kazoo.stop()
        client.kazoo.close()
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
    # kazoo alone would still be waiting on its first connection (6 s)
    assert len(accepted) >= 3, accepted


def test_the_reconnect_lines_are_kept_to_one_a_second() -> None:
    now = [0.0]
    keep = ReconnectLogFilter(interval_s=1.0, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("kazoo.client", logging.INFO, __file__, 1, msg, ("h", "h", 1, False), None)

    connecting = "Connecting to %s(%s):%s, use_ssl: %r"
    assert keep.filter(record(connecting))
    assert not keep.filter(record(connecting))
    assert not keep.filter(record(connecting))
    assert keep.filter(record("Session has expired"))  # anything else passes
    now[0] = 1.5
    again = record(connecting)
    assert keep.filter(again)
    assert "(and 2 like it since the last)" in again.getMessage()
