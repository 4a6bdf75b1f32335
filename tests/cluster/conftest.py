"""A real ZooKeeper server for the cluster tests: one per test module, on a free loopback port, stopped after."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from samsa.cluster.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperServer) -> str:
    """A connect string with a chroot of its own, so tests sharing the server never see each other's znodes."""
    return f"{zookeeper.connect_string}/samsa-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def zk_data_dir(zookeeper: ZooKeeperServer) -> Path:
    return zookeeper.data_dir


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group the cluster tests for one xdist worker (`--dist loadgroup`): each starts ZooKeeper and several brokers
    with timing that matters (session expiry, ISR lag), and two such clusters at once on two cores starve each
    other. Under pytest 9 and xdist 3.8 the group takes no effect and `make test` distributes by module (see
    Makefile)."""
    for item in items:
        if "tests/cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.xdist_group("cluster"))
