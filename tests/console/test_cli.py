"""``samsa console`` as an operator runs it: a process that serves until SIGTERM, and bad flags refused."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request

import samsa
from tests.clients.harness import free_port


def console_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "samsa.cli", "console", *args]


def test_serves_until_sigterm(samsa_broker: samsa.Broker) -> None:
    port = free_port()
    process = subprocess.Popen(
        console_command("--bootstrap-server", samsa_broker.bootstrap_servers, "--port", str(port)),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert (
            line.strip() == f"samsa console for {samsa_broker.bootstrap_servers} at http://127.0.0.1:{port}/"
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/cluster", timeout=10) as response:
            assert json.loads(response.read())["brokers"][0]["up"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0


def test_bad_flags() -> None:
    done = subprocess.run(
        console_command("--bootstrap-server", "nohostport"), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2 and "is not host:port" in done.stderr
    done = subprocess.run(
        console_command("--bootstrap-server", "127.0.0.1:9092", "--log-dirs", "/no/such/dir"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "/no/such/dir" in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = subprocess.run(
            console_command("--bootstrap-server", "127.0.0.1:9092", "--port", str(taken.getsockname()[1])),
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1 and "cannot serve on 127.0.0.1" in done.stderr
