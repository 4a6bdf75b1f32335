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
