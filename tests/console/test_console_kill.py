"""``kill -9`` of a broker process under the console's eyes (three ``samsa serve`` processes over ZooKeeper): while
the dead broker is still in the metadata its partitions say their offsets are unavailable, then it shows down and
its leaderships have moved; never a stack trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from samsa.cluster.launcher import LocalCluster
from tests.cluster.conftest import zk_connect, zookeeper  # noqa: F401 (fixtures)
from tests.console.browser import cells, text, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.clients,
    pytest.mark.xdist_group("cluster"),
    pytest.mark.timeout(240),
]


@pytest.fixture
def processes(zk_connect: str, tmp_path: Path) -> Iterator[LocalCluster]:  # noqa: F811
    cluster = LocalCluster(tmp_path / "cluster", zookeeper=zk_connect).up(3)
    try:
        yield cluster
    finally:
        cluster.down()


def test_a_killed_broker(processes: LocalCluster, console_factory: Any, browser: Any) -> None:
    admin = AdminClient({"bootstrap.servers": processes.bootstrap_servers})
    admin.create_topics([NewTopic("orders", 6, 3)])["orders"].result(60)
    console = console_factory(processes.bootstrap_servers)
    browser.get(console.url + "#/topic/orders")
    wait_until(
        "six partitions with full ISRs", lambda: cells(browser, "#partitions td.status") == ["ok"] * 6, 60
    )
    controller = int(admin.list_topics(timeout=10).controller_id)
    leaders = cells(browser, "#partitions td.leader")
    victim = next(int(leader) for leader in leaders if int(leader) != controller)

    processes.kill(victim)

    # until its ZooKeeper session expires (6 s) the metadata still names it leader: its partitions say why
    # their offsets are missing
    wait_until(
        "the dead leader's partitions explained",
        lambda: any(f"broker {victim}:" in status for status in cells(browser, "#partitions td.status")),
        timeout=5,
    )

    wait_until(
        "no partition led by the killed broker",
        lambda: (shown := cells(browser, "#partitions td.leader")) and str(victim) not in shown,
        timeout=60,
    )
    wait_until("every ISR without it", lambda: all(
        str(victim) not in isr.split(",") for isr in cells(browser, "#partitions td.isr")
    ), timeout=60)  # fmt: skip
    assert "Traceback" not in browser.page_source
    browser.get(console.url)
    wait_until(
        "the broker down", lambda: cells(browser, f"#brokers tr[data-broker='{victim}'] td.state") == ["down"]
    )
    assert text(browser, "#brokers-up") == "2 / 3"
