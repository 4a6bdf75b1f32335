"""An Apache Kafka broker started from the fetched jars: KRaft combined mode (broker and controller in one JVM), one
node, on free loopback ports, its log dir formatted by Kafka's ``StorageTool`` first. Used as the reference the
tools' outputs against Samsa are compared with, and as the writer of log dirs Samsa must serve.

Heap 512 MiB and the serial collector (two cores shared); Kafka logs nothing (no SLF4J binding is on the classpath).
"""

from __future__ import annotations

import base64
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from samsa.cluster.launcher import accepts_connections
from tests.clients.harness import free_port, stop_process

from .jars import SMALL_INTERNAL_TOPICS, STORAGE, TOPICS, KafkaJars


def random_cluster_id() -> str:
    """A Kafka Uuid as ``kafka-storage random-uuid`` prints it (base64url, no padding, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class KafkaBroker:
    jars: KafkaJars
    directory: Path
    port: int = 0
    controller_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.directory / "logs"

    def format(self) -> None:
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            **SMALL_INTERNAL_TOPICS,
            **self.settings,
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "server.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in properties.items())
        )
        self.jars.run(STORAGE, "format", "-t", random_cluster_id(),
                      "-c", str(self.directory / "server.properties"))  # fmt: skip

    def start(self, timeout: float = 60.0) -> None:
        if not (self.directory / "server.properties").exists():
            self.format()
        command = self.jars.command("kafka.Kafka", str(self.directory / "server.properties"))
        command[1:1] = ["-Xmx512m"]
        self.process = subprocess.Popen(
            command,
            stdout=(self.directory / "kafka.out").open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.directory / "kafka.out").read_text()[-3000:]
            if self._answers_metadata():
                return
            time.sleep(0.5)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"Kafka did not start in {timeout} s")

    def _answers_metadata(self) -> bool:
        """Kafka listens before it serves; a ready broker lists topics (one JVM run of kafka-topics)."""
        if not accepts_connections(self.port):
            return False
        done = self.jars.run(
            TOPICS, "--bootstrap-server", self.bootstrap, "--list",
            "--command-config", "/dev/null", timeout=60, check=False,
        )  # fmt: skip
        return done.returncode == 0

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        code = stop_process(self.process, sig, timeout)
        self.process = None
        return code
