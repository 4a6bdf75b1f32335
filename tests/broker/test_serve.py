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
        (
            "listeners=SSL://127.0.0.1:0",
            "an SSL listener needs ssl.keystore.type=PEM with ssl.keystore.location",
        ),
        ("listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms GSSAPI not supported"),
        ("listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "an SSL listener needs ssl.keystore"),
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


def test_a_controller_listener_is_not_served(tmp_path: Path) -> None:
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
    assert "listener CONTROLLER is a KRaft controller listener: it is not opened" in stderr


def test_only_controller_listeners_is_refused(tmp_path: Path) -> None:
    result = serve(
        "--override", f"log.dirs={tmp_path}", "--override", "listeners=CONTROLLER://127.0.0.1:0"
    )  # fmt: skip
    assert result.returncode == 2
    assert "no listener is left for clients" in result.stderr


@pytest.mark.parametrize(
    ("override", "allowed"),
    [
        ("log.retention.ms=-5", "at least -1"),
        ("log.roll.ms=0", "at least 1"),
        ("log.segment.bytes=abc", "expected an int"),
        ("log.cleaner.min.cleanable.ratio=2", "between 0 and 1"),
        ("compression.type=brotli", "must be one of"),
        ("log.message.timestamp.type=Wallclock", "must be one of"),
        ("node.id=-3", "at least 0"),
        ("broker.id=-1", "at least 0"),
        ("log.dirs=", "at least one directory"),
        ("num.partitions=99999999999", "expected an int"),
    ],
)
def test_bad_value_is_one_line_naming_key_value_and_what_is_allowed(
    tmp_path: Path, override: str, allowed: str
) -> None:
    key, _, value = override.partition("=")
    result = serve(
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        f"log.dirs={tmp_path / 'logs'}",
        "--override",
        override,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert key in lines[0] and repr(value) in lines[0] and allowed in lines[0]
    assert not (tmp_path / "logs").exists()  # refused before anything started


def test_log_dir_that_is_a_file_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("not a directory")
    for log_dir in (blocker, blocker / "logs"):
        result = serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={log_dir}")
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            f"samsa serve: invalid value '{log_dir}' for configuration log.dirs: {blocker} is a file, "
            "not a directory"
        ]


def test_a_log_dir_copied_and_moved_keeps_its_cluster_id_and_data(tmp_path: Path) -> None:
    import shutil

    from tests.clients.harness import BrokerProcess, Message, ck_consume, ck_produce

    def cluster_id(log_dir: Path) -> str:
        lines = (log_dir / "meta.properties").read_text().splitlines()
        return next(line.partition("=")[2] for line in lines if line.startswith("cluster.id="))

    def served_cluster_id(bootstrap: str) -> str:
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        return str(metadata.cluster_id)

    original = tmp_path / "original"
    messages = [Message(f"k{i}".encode(), f"v{i}".encode()) for i in range(50)]
    broker = BrokerProcess(original)
    broker.start()
    try:
        ck_produce(broker.bootstrap, "moved", messages)
        stored = cluster_id(original)
        assert served_cluster_id(broker.bootstrap) == stored
    finally:
        assert broker.stop() == 0
    copied = tmp_path / "elsewhere" / "copied"
    shutil.copytree(original, copied)
    moved = tmp_path / "moved"
    original.rename(moved)
    for log_dir in (copied, moved):
        again = BrokerProcess(log_dir)
        again.start()
        try:
            assert served_cluster_id(again.bootstrap) == stored
            assert [c.message().value for c in ck_consume(again.bootstrap, "moved", 50)] == [
                m.value for m in messages
            ]
        finally:
            assert again.stop() == 0
        assert cluster_id(log_dir) == stored


def test_a_damaged_meta_properties_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_bytes(b"\xff\xfe\x00garbage\x80")
    result = serve("--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "could not start" in result.stderr and "meta.properties: not UTF-8 text" in result.stderr


def test_a_log_dir_under_a_directory_that_cannot_be_entered_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as a user who may not enter a parent of the log dir, ``serve`` printed a PermissionError traceback.
    (The tests run as root, who may enter anything: the refusal is made as the kernel makes it.)"""
    from samsa.broker.config import ConfigError, KafkaConfig

    locked = tmp_path / "locked"
    real_exists = Path.exists

    def exists(path: Path, *args: object, **kwargs: object) -> bool:
        if path == locked or locked in path.parents:
            raise PermissionError(13, "Permission denied", str(path))
        return real_exists(path)

    monkeypatch.setattr(Path, "exists", exists)
    config = KafkaConfig.from_properties({"log.dirs": str(locked / "logs")})
    with pytest.raises(ConfigError, match=r"cannot be entered \(permission denied\)"):
        config.check_log_dirs()
