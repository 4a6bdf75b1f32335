"""pytest plugin for applications tested against Samsa (registered through the ``pytest11`` entry point).

Installing Samsa is enough; a test asks for a fixture::

    def test_orders_are_published(samsa_broker):
        samsa_broker.create_topic("orders", partitions=3)
        publish_orders(bootstrap_servers=samsa_broker.bootstrap_servers)
        ...

Fixtures (function scope):

- ``samsa_broker``: a running ``samsa.Broker`` on a free port of 127.0.0.1 with a fresh log dir under pytest's
  temporary directory. Its event loop runs in a daemon thread, so it serves sync tests and async tests alike
  (whatever loop, if any, the test runs on). The test controls are methods of the broker: ``create_topic``,
  ``advance_log_start_offset``, ``inject_error``, ``inject_delay``, ``clear_injections`` (see ``samsa.embedded``).
  Stopped cleanly when the test ends.
- ``samsa_clock``: a ``samsa.clock.ManualClock``; when a test asks for it, ``samsa_broker`` runs on it, so
  LogAppendTime timestamps, segment rolls and retention follow ``samsa_clock.advance(ms)``.
- ``samsa_broker_factory``: ``samsa_broker_factory(**kwargs)`` starts another broker (kwargs as ``samsa.Broker``);
  each one is stopped when the test ends.

The ``samsa_broker`` marker passes keyword arguments to the ``samsa_broker`` fixture's broker::

    @pytest.mark.samsa_broker(config={"num.partitions": "3", "auto.create.topics.enable": "false"})
    def test_something(samsa_broker): ...

Samsa is imported only when a fixture is used, so the plugin costs nothing to test suites that do not use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from samsa.clock import ManualClock
    from samsa.embedded import Broker

__all__ = ["samsa_broker", "samsa_broker_factory", "samsa_clock"]

MARKER = "samsa_broker"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(**kwargs): keyword arguments for the samsa_broker fixture's broker "
        "(config={...}, port=..., host=..., clock=...)",
    )


@pytest.fixture
def samsa_broker_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Broker]]:
    """Start brokers on demand; all are stopped when the test ends."""
    from samsa.embedded import Broker

    started: list[Broker] = []

    def start(**kwargs: Any) -> Broker:
        if kwargs.get("log_dir") is None:
            kwargs["log_dir"] = tmp_path_factory.mktemp("samsa-log")
        broker = Broker(**kwargs).start_in_thread()
        started.append(broker)
        return broker

    yield start
    for broker in reversed(started):
        broker.stop_thread()


@pytest.fixture
def samsa_clock() -> ManualClock:
    """A manual clock; ``samsa_broker`` uses it when the test asks for both."""
    from samsa.clock import ManualClock

    return ManualClock()


@pytest.fixture
def samsa_broker(request: pytest.FixtureRequest, samsa_broker_factory: Callable[..., Broker]) -> Broker:
    """A running broker for this test (see the module doc)."""
    marker = request.node.get_closest_marker(MARKER)
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    if "samsa_clock" in request.fixturenames:
        kwargs.setdefault("clock", request.getfixturevalue("samsa_clock"))
    return samsa_broker_factory(**kwargs)
