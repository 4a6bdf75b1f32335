"""Regenerate tests/golden/frames/: every request frame each real client sent in its golden scenario.

    .venv/bin/python -m tests.golden.record_frames            # all clients
    .venv/bin/python -m tests.golden.record_frames kcat       # one client

Starts a ``samsa serve`` broker whose advertised listener is a ``CaptureProxy``, runs each scenario of
``scenarios.py`` through the proxy, and writes ``frames/<client>.txt``: one line per request frame (size prefix
removed), ``<connection> <api_key> <api_version> <hex>``, in the order sent. Only requests are stored: they come
from the clients and stay valid while the broker changes; responses are checked live by test_golden.py.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from samsa.protocol import decode_request
from tests.badinput import wire
from tests.clients.harness import BrokerProcess

from . import scenarios
from .capture import REQUEST, Captured, CaptureProxy

FRAMES = Path(__file__).resolve().parent / "frames"


@contextmanager
def proxied_broker(data_dir: Path) -> Iterator[tuple[BrokerProcess, CaptureProxy]]:
    """A broker process advertising a capture proxy in front of it, with every scenario's topic created."""
    proxy = CaptureProxy()
    broker = BrokerProcess(
        data_dir=data_dir, overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
    )
    broker.start()
    proxy.upstream = ("127.0.0.1", broker.port)
    proxy.start()
    try:
        with wire.Connection(broker.port) as conn:
            for client in scenarios.CLIENTS:
                assert wire.create_topic(conn, scenarios.topic(client)).topics[0].error_code == 0
        yield broker, proxy
    finally:
        proxy.stop()
        broker.stop()


def client_requests(captured: list[Captured], client_id: str) -> list[tuple[int, bytes]]:
    """The request frames of the connections opened by ``client_id``, connections renumbered from 1."""
    owners: dict[int, int] = {}
    for item in captured:
        if item.direction == REQUEST and item.connection not in owners:
            header, _ = decode_request(item.frame, allow_trailing=True)
            if header.client_id == client_id:
                owners[item.connection] = len(owners) + 1
    return [
        (owners[item.connection], item.frame)
        for item in captured
        if item.direction == REQUEST and item.connection in owners
    ]


def to_lines(requests: list[tuple[int, bytes]]) -> list[str]:
    lines = []
    for connection, frame in requests:
        header, _ = decode_request(frame, allow_trailing=True)
        lines.append(f"{connection} {header.request_api_key} {header.request_api_version} {frame.hex()}")
    return lines


def read_frames(client: str) -> list[tuple[int, bytes]]:
    """(connection, request frame) pairs stored for ``client``."""
    pairs = []
    for line in (FRAMES / f"{client}.txt").read_text().splitlines():
        connection, _, _, data = line.split()
        pairs.append((int(connection), bytes.fromhex(data)))
    return pairs


def main(clients: list[str]) -> None:
    FRAMES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, proxied_broker(Path(tmp)) as (_, proxy):
        for client in clients:
            proxy.clear()
            got = scenarios.run(client, f"127.0.0.1:{proxy.port}")
            assert got == scenarios.values(client), (client, got)
            lines = to_lines(client_requests(proxy.snapshot(), scenarios.EXPECT[client].client_id))
            (FRAMES / f"{client}.txt").write_text("\n".join(lines) + "\n")
            print(f"{client}: {len(lines)} request frames -> frames/{client}.txt")


if __name__ == "__main__":
    main(sys.argv[1:] or list(scenarios.CLIENTS))
