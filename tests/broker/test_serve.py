"""`samsa serve` as a process: bad configuration is refused clearly; SIGTERM stops it cleanly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "samsa.cli", "serve", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("num.partitions=0", "num.partitions"),
        ("listeners=nonsense", "NAME://host:port"),
        ("log.cleanup.policy=shred", "must be one of"),
        ("no-equals-sign", "KEY=VALUE"),
    ],
)
def test_bad_configuration_is_refused_with_its_name(tmp_path: Path, override: str, fragment: str) -> None:
    result = serve("--override", f"log.dirs={tmp_path}", "--override", override)
    assert result.returncode == 2
    assert fragment in result.stderr


def test_missing_properties_file_is_named(tmp_path: Path) -> None:
    result = serve(str(tmp_path / "server.properties"))
    assert result.returncode == 2
    assert "server.properties" in result.stderr


def test_properties_file_and_override(tmp_path: Path) -> None:
    from tests.clients.harness import free_port

    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(f"node.id=7\nlisteners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'logs'}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "samsa.cli", "serve", str(props), "--override", "num.partitions=3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = next(line for line in proc.stdout if "[SamsaServer" in line or "ERROR" in line)
        assert "[SamsaServer id=7] started" in line
        assert f"127.0.0.1:{port}" in line
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    assert (tmp_path / "logs" / ".kafka_cleanshutdown").exists()
    assert "node.id=7" in (tmp_path / "logs" / "meta.properties").read_text()


def test_zookeeper_connect_warns_and_a_controller_listener_is_not_served(tmp_path: Path) -> None:
    import socket

    from tests.clients.harness import free_port

    from samsa.client import SyncClient

    port, controller_port = free_port(), free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "samsa.cli", "serve",
            "--override", f"log.dirs={tmp_path}",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "--override", "controller.listener.names=CONTROLLER",
            "--override", "zookeeper.connect=127.0.0.1:2181",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"PLAINTEXT://127.0.0.1:{port}" in line and "CONTROLLER" not in line
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", controller_port), timeout=5).close()
        with SyncClient(f"127.0.0.1:{port}") as client:
            assert [(host, p) for host, p, _ in client.metadata([]).brokers.values()] == [("127.0.0.1", port)]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "zookeeper.connect=127.0.0.1:2181 is set, but cluster mode is not available yet" in stderr
    assert "listener CONTROLLER is a KRaft controller listener: it is not opened" in stderr


def test_only_controller_listeners_is_refused(tmp_path: Path) -> None:
    result = serve(
        "--override", f"log.dirs={tmp_path}", "--override", "listeners=CONTROLLER://127.0.0.1:0"
    )  # fmt: skip
    assert result.returncode == 2
    assert "no listener is left for clients" in result.stderr
