"""The console's HTTP server: GET only, errors as statuses never traces, and a slow client that cannot stall it."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import samsa


def get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_get_and_head(samsa_broker: samsa.Broker, console_factory: Any, method: str) -> None:
    console = console_factory(samsa_broker.bootstrap_servers)
    status, headers, _ = get(console.url + "api/cluster", method)
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    status, headers, body = get(console.url + "api/cluster", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


def test_pages_and_unknown_paths(samsa_broker: samsa.Broker, console_factory: Any) -> None:
    console = console_factory(samsa_broker.bootstrap_servers)
    status, headers, body = get(console.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html") and b"/console.js" in body
    assert get(console.url + "console.js")[0] == 200
    assert get(console.url + "console.css")[0] == 200
    assert get(console.url + "nope")[0] == 404
    assert get(console.url + "api/topic?name=missing")[0] == 404
    assert get(console.url + "api/segments?topic=t&partition=x")[0] == 400
    assert get(console.url + "api/segments?topic=t&partition=-1")[0] == 400


@pytest.mark.parametrize("topic", ["..", "../secrets", "a/b", "%2e%2e", ""])
def test_segments_refuse_names_that_are_not_topics(
    samsa_broker: samsa.Broker, console_factory: Any, tmp_path: Path, topic: str
) -> None:
    outside = tmp_path / "secrets-0"  # a directory a crafted name could reach from the log dir
    outside.mkdir()
    (outside / "00000000000000000000.log").write_bytes(b"")
    console = console_factory(samsa_broker.bootstrap_servers, log_dirs=[tmp_path / "logs"])
    (tmp_path / "logs").mkdir()
    status, _, body = get(console.url + f"api/segments?topic={topic}&partition=0")
    assert status == 400 and "secrets" not in json.loads(body).get("reason", "")


def test_malformed_request_line(samsa_broker: samsa.Broker, console_factory: Any) -> None:
    console = console_factory(samsa_broker.bootstrap_servers)
    with socket.create_connection(("127.0.0.1", console.port), timeout=5) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")


def test_a_slow_client_does_not_stall_the_console(samsa_broker: samsa.Broker, console_factory: Any) -> None:
    console = console_factory(samsa_broker.bootstrap_servers)
    stalled = [socket.create_connection(("127.0.0.1", console.port), timeout=5) for _ in range(8)]
    try:
        for sock in stalled:
            sock.sendall(b"GET /api/cluster HTTP/1.1\r\nHost: x\r\n")  # never finishes its head
        started = time.monotonic()
        status, _, body = get(console.url + "api/cluster")
        assert status == 200 and json.loads(body)["brokers"][0]["up"] is True
        assert time.monotonic() - started < 1.0
    finally:
        for sock in stalled:
            sock.close()


def test_a_cluster_that_is_down_is_an_error_not_a_trace(console_factory: Any) -> None:
    with socket.socket() as placeholder:  # a port nobody listens on
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    console = console_factory(f"127.0.0.1:{port}")
    status, _, body = get(console.url + "api/cluster")
    data = json.loads(body)
    assert status == 200
    assert data["error"].startswith("no broker answered Metadata")
    assert "Traceback" not in data["error"]
    assert get(console.url + "api/groups")[0] == 200


def test_segments_not_available_without_local_log_dirs(
    samsa_broker: samsa.Broker, console_factory: Any, tmp_path: Any
) -> None:
    samsa_broker.create_topic("t", partitions=1)
    elsewhere = console_factory(samsa_broker.bootstrap_servers, log_dirs=[tmp_path])
    data = json.loads(get(elsewhere.url + "api/segments?topic=t&partition=0")[2])
    assert data["available"] is False and "no directory t-0" in data["reason"]

    local = console_factory(samsa_broker.bootstrap_servers)
    data = json.loads(get(local.url + "api/segments?topic=t&partition=0")[2])
    assert data["available"] is True
    assert data["replicas"][0]["owner"] == "broker 1"


def test_segments_not_available_when_the_brokers_log_dirs_are_elsewhere(tmp_path: Any) -> None:
    from samsa.console import Console
    from samsa.console.cluster_state import ClusterState

    (tmp_path / "meta.properties").write_text("node.id=7\n")  # another broker's dir, as seen from here
    console = Console("127.0.0.1:9")
    console.state = ClusterState(time_ms=0, log_dirs={1: [str(tmp_path)], 2: ["/no/such/dir"]})
    response = asyncio.run(console._segments({"topic": "t", "partition": "0"}))
    data = json.loads(response.body)
    assert data["available"] is False and data["reason"].startswith("not available")
