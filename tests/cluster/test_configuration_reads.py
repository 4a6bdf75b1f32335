"""A broker that has just registered reads its dynamic configs, ACLs and quotas from ZooKeeper. ZooKeeper going
away in that moment (a restart right after the registration; seen in the nemesis, where the broker then exited
with "the broker could not start: ConnectionLoss" and stayed down) makes it read them again once ZooKeeper is
back, not stop. The moment is too short to hit with real processes on purpose, so the ZooKeeper client here is a
stand-in that loses its connection on the first read; the rest is the broker's own code."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss

from samsa.broker.zk_broker import ZkBroker


class _FlakyZk:
    """``config_changes`` fails with ConnectionLoss the first ``failures`` times, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.reads = 0

    def config_changes(self, *_: Any) -> list[str]:
        self.reads += 1
        if self.reads <= self.failures:
            raise ConnectionLoss()
        return ["config_change_0000000007"]


def _broker(zk: _FlakyZk, connection_timeout_s: float) -> tuple[ZkBroker, list[str]]:
    broker = ZkBroker.__new__(ZkBroker)  # only what _read_configuration touches
    steps: list[str] = []

    async def step(name: str) -> None:
        steps.append(name)

    broker.zk = zk  # type: ignore[assignment]
    broker.node_id = 1
    broker.connection_timeout_s = connection_timeout_s
    broker._closing = False
    broker.acl_sync = None
    broker._config_changed = lambda: step("configs")  # type: ignore[method-assign]
    broker._apply_broker_config = lambda: step("broker config")  # type: ignore[method-assign]
    broker._apply_quotas = lambda: step("quotas")  # type: ignore[method-assign]
    return broker, steps


def test_the_configuration_is_read_again_when_zookeeper_comes_back() -> None:
    broker, steps = _broker(_FlakyZk(failures=2), connection_timeout_s=10)
    asyncio.run(broker._read_configuration())
    assert broker._last_config_change == "config_change_0000000007"
    assert steps == ["configs", "broker config", "quotas"]


def test_zookeeper_away_past_the_connection_timeout_still_fails() -> None:
    broker, _ = _broker(_FlakyZk(failures=1000), connection_timeout_s=1)
    with pytest.raises(ConnectionLoss):
        asyncio.run(broker._read_configuration())
