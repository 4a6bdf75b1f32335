"""An Apache Kafka 3.9 broker in ZooKeeper mode (the last Kafka with it), started from the fetched jars, to share one
ZooKeeper with Samsa brokers in a mixed cluster: ``kafka.Kafka server.properties`` with ``zookeeper.connect``,
``broker.id`` and ``inter.broker.protocol.version=3.9``, on a free loopback port (or the port given, so a broker
restarted keeps its address), its log dir where the test says (a Samsa broker may take it over).

Heap 512 MiB and the serial collector (two cores shared); Kafka's log4j output goes to ``kafka.out`` beside
``server.properties``. Not thread-safe: one owner (the test).
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from samsa.cluster.launcher import accepts_connections
from tests.clients.harness import free_port, stop_process

from .jars import SMALL_INTERNAL_TOPICS, KafkaJars

KAFKA_MAIN = "kafka.Kafka"


@dataclass
class KafkaZkBroker:
    """One Kafka 3.9 ZooKeeper-mode broker process (``start``/``stop``/``kill``), ready once its port answers."""

    jars: KafkaJars
    directory: Path
    zookeeper_connect: str
    broker_id: int
    log_dir: Path
    port: int = 0
    settings: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def output(self) -> Path:
        return self.directory / "kafka.out"

    def properties(self) -> dict[str, str]:
        return {
            "broker.id": str(self.broker_id),
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.session.timeout.ms": "6000",
            "inter.broker.protocol.version": "3.9",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.log_dir),
            **SMALL_INTERNAL_TOPICS,
            "replica.lag.time.max.ms": "10000",
            **self.settings,
        }

    def start(self, timeout: float = 60.0) -> None:
        self.port = self.port or free_port()
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        command = self.jars.command(KAFKA_MAIN, str(config))
        command[1:1] = ["-Xmx512m", f"-Dlog4j.configuration=file:{self._log4j()}"]
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Kafka exited {self.process.returncode}:\n{self.tail()}")
            if accepts_connections(self.port):
                return
            time.sleep(0.3)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"Kafka did not start in {timeout} s:\n{self.tail()}")

    def _log4j(self) -> Path:
        path = self.directory / "log4j.properties"
        path.write_text(
            "log4j.rootLogger=INFO, out\n"
            "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.org.apache.zookeeper=WARN\n"
            "log4j.logger.kafka.log.LogCleaner=WARN\n"
        )
        return path

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.output.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        code = stop_process(self.process, sig, timeout)
        self.process = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)
