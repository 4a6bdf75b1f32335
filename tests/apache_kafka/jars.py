"""Apache Kafka's jars for the compatibility tests, and running their main classes.

The jars are fetched by ``tools/kafka/fetch.sh`` (``make kafka-jars``, a prerequisite of ``make test``) into
``.cache/kafka/<version>/``; a version's directory is complete when it holds the ``.complete`` stamp. A test asks for
them through the ``kafka_jars`` fixture (conftest), which fetches them itself when Maven is there, skips when it is not,
and fails in CI (``CI=true``), where a missing jar is a broken build, not a reason to skip.

Each ``java`` run is a JVM start-up (about a second here): tests run few of them, with the client JIT only
(``-XX:TieredStopAtLevel=1``) and the serial collector, which start faster on two cores.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Kafka's tools by their main classes (the kafka-*.sh scripts run these)
TOPICS = "org.apache.kafka.tools.TopicCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
STORAGE = "kafka.tools.StorageTool"


ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = ROOT / "tools" / "kafka" / "fetch.sh"
CACHE = Path(os.environ.get("SAMSA_KAFKA_CACHE", ROOT / ".cache" / "kafka"))
# The newest Kafka 4.x (KRaft only) and the last 3.x (ZooKeeper mode too); fetch.sh has the same list.
KAFKA_4 = "4.4.0"
KAFKA_3 = "3.9.2"
# Kafka Streams (with kafka-streams-examples) and Kafka Connect (with connect-file), `fetch.sh apps`: 4.3.1, the
# newest version of which Maven Central serves the examples and the file connectors (tools/kafka/apps-pom.xml)
APPS_CACHE = Path(os.environ.get("SAMSA_KAFKA_APPS_CACHE", ROOT / ".cache" / "kafka-apps"))
KAFKA_APPS = "4.3.1"
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss1m")
# A test broker's internal topics: one replica (whatever the cluster's size), few partitions, no join delay
SMALL_INTERNAL_TOPICS = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


class JarsMissing(Exception):
    """The jars of a Kafka version are not in the cache and cannot be fetched here (the reason is the message)."""


def jar_dir(version: str) -> Path:
    return CACHE / version


def ensure_jars(version: str) -> Path:
    """The directory of ``version``'s jars, fetching them first when Maven can; ``JarsMissing`` otherwise."""
    directory = jar_dir(version)
    if (directory / ".complete").exists():
        return directory
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise JarsMissing(
            f"Kafka {version} jars not in {directory} and no mvn/java to fetch them (make kafka-jars)"
        )
    done = subprocess.run(
        ["bash", str(FETCH_SCRIPT), version], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0 or not (directory / ".complete").exists():
        raise JarsMissing(f"fetching Kafka {version} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return directory


def ensure_apps_jars(version: str = KAFKA_APPS) -> Path:
    """The directory of Kafka Streams' and Connect's jars (``fetch.sh apps``), fetched first when Maven can."""
    directory = APPS_CACHE / version
    if (directory / ".complete").exists():
        return directory
    if shutil.which("mvn") is None or shutil.which("java") is None:
        raise JarsMissing(f"Kafka Streams/Connect jars not in {directory} and no mvn/java (make kafka-jars)")
    done = subprocess.run(
        ["bash", str(FETCH_SCRIPT), "apps"], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0 or not (directory / ".complete").exists():
        raise JarsMissing(
            f"fetching Kafka Streams/Connect failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return directory


@dataclass(frozen=True)
class KafkaJars:
    """One fetched Kafka version: runs its main classes as the ``kafka-*.sh`` scripts do."""

    version: str
    directory: Path

    @property
    def classpath(self) -> str:
        return f"{self.directory}/*"

    def command(self, main_class: str, *args: str) -> list[str]:
        return ["java", *JVM_FLAGS, "-cp", self.classpath, main_class, *args]

    def run(
        self, main_class: str, *args: str, timeout: float = 120.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``main_class`` to its end; stdout as the tool prints it, SLF4J's start-up notes dropped from stderr."""
        done = subprocess.run(
            self.command(main_class, *args), capture_output=True, text=True, timeout=timeout, check=False
        )
        stderr = "".join(line for line in done.stderr.splitlines(True) if not line.startswith("SLF4J:"))
        done = subprocess.CompletedProcess(done.args, done.returncode, done.stdout, stderr)
        if check and done.returncode != 0:
            raise AssertionError(
                f"{main_class} {' '.join(args)} exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{stderr}"
            )
        return done
