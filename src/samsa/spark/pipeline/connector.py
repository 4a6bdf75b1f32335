"""Which Spark data source the access-log job reads and writes topics through.

``samsa``: this package's own source and sink (``format("samsa")``, registered on the session by
``samsa.spark.register``). ``kafka``: Spark's own Kafka connector (``format("kafka")``, ``spark-sql-kafka-0-10``),
whose jars must be on the JVM's class path when the session starts. The two take the same options and columns, so
the job differs only by the format name.

Where Spark's connector's jars come from, first found wins:

1. ``$SAMSA_SPARK_KAFKA_JARS``: a directory of jars;
2. ``<checkout>/.cache/spark-kafka/<version>/`` in a source checkout (it holds ``tools/kafka/fetch.sh``), complete
   when it holds ``.complete``; the script is run to fetch them there when they are missing (Maven; once);
3. otherwise Spark resolves the connector itself from its Maven coordinates (``spark.jars.packages``).

Maven Central serves no connector for PySpark 4.3: the newest it serves, 4.2.0 (Scala 2.13), works with it.
Called from the main thread before Spark starts; a fetch runs Maven in a child process (up to ten minutes).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import samsa

CONNECTORS = ("samsa", "kafka")
SPARK_KAFKA_VERSION = "4.2.0"  # tools/kafka/fetch.sh has the same
SPARK_KAFKA_PACKAGE = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_KAFKA_VERSION}"
JARS_ENV = "SAMSA_SPARK_KAFKA_JARS"
FETCH_TIMEOUT_S = 600.0


class ConnectorUnavailable(Exception):
    """Spark's Kafka connector's jars could not be had: the message says why and what to run."""


def checkout_root() -> Path:
    """The source checkout this package runs from (``src/samsa/__init__.py`` -> the checkout), if it is one."""
    return Path(samsa.__file__).resolve().parents[2]


def spark_conf(connector: str, say: Callable[[str], None] = print) -> dict[str, str]:
    """The Spark session settings ``connector`` needs: none for ``samsa``, the connector's jars for ``kafka``."""
    if connector not in CONNECTORS:
        raise ValueError(f"unknown connector {connector!r}: one of {', '.join(CONNECTORS)}")
    if connector == "samsa":
        return {}
    jars = connector_jars(say)
    if jars is None:
        say(f"Spark resolves its Kafka connector ({SPARK_KAFKA_PACKAGE}) from Maven Central itself")
        return {"spark.jars.packages": SPARK_KAFKA_PACKAGE}
    return {"spark.jars": ",".join(str(jar) for jar in jars)}


def connector_jars(say: Callable[[str], None] = print) -> list[Path] | None:
    """The connector's jar files (fetched into the checkout's cache first when missing), or None where there is
    neither ``$SAMSA_SPARK_KAFKA_JARS`` nor a checkout with the fetch script."""
    given = os.environ.get(JARS_ENV)
    if given:
        return _jar_files(Path(given))
    root = checkout_root()
    script = root / "tools" / "kafka" / "fetch.sh"
    if not script.exists():
        return None
    directory = root / ".cache" / "spark-kafka" / SPARK_KAFKA_VERSION
    if not (directory / ".complete").exists():
        say(f"fetching Spark's Kafka connector {SPARK_KAFKA_VERSION} into {directory} (once; Maven)")
        _fetch(script)
    return _jar_files(directory)


def _fetch(script: Path) -> None:
    try:
        done = subprocess.run(
            ["bash", str(script), "spark"],  # the connector only, not Kafka's own jars
            capture_output=True,
            text=True,
            timeout=FETCH_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConnectorUnavailable(f"{script} did not finish in {FETCH_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        raise ConnectorUnavailable(f"{script} failed (exit {done.returncode}):\n{tail}")


def _jar_files(directory: Path) -> list[Path]:
    jars = sorted(directory.glob("*.jar"))
    if not jars:
        raise ConnectorUnavailable(f"no Spark Kafka connector jars in {directory}")
    return jars
