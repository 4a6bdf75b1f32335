"""Fixtures of the Apache Kafka compatibility tests: Kafka's jars (one fetched classpath per session) and a Samsa
broker process per module. Every test here is marked ``kafka`` and grouped for one xdist worker (each starts JVMs,
and two of them at once on two cores slow each other down more than they gain); under pytest 9 and xdist 3.8 the
group takes no effect and `make test` distributes by module (see Makefile)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.clients.harness import BrokerProcess, running_broker

from .jars import KAFKA_3, KAFKA_4, KAFKA_APPS, JarsMissing, KafkaJars, ensure_apps_jars, ensure_jars


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/apache_kafka/" in str(item.fspath):
            item.add_marker(pytest.mark.kafka)
            item.add_marker(pytest.mark.xdist_group("kafka"))


def _jars(version: str, apps: bool = False) -> KafkaJars:
    try:
        return KafkaJars(version, ensure_apps_jars(version) if apps else ensure_jars(version))
    except JarsMissing as missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the Kafka compatibility tests: {missing}")
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def kafka4() -> KafkaJars:
    """The newest Kafka 4.x's jars."""
    return _jars(KAFKA_4)


@pytest.fixture(scope="session")
def kafka3() -> KafkaJars:
    """Kafka 3.9's jars (the last with ZooKeeper mode)."""
    return _jars(KAFKA_3)


@pytest.fixture(scope="session")
def kafka_apps() -> KafkaJars:
    """Kafka Streams (with its examples) and Kafka Connect (with the file connectors), Kafka 4.3.1's."""
    return _jars(KAFKA_APPS, apps=True)


@pytest.fixture(scope="module")
def samsa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One Samsa broker process per test module; tests use distinct topic and group names."""
    with running_broker(tmp_path_factory.mktemp("samsa-data")) as proc:
        yield proc
