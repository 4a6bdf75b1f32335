"""Fixtures of the group tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A ``samsa serve`` process that accepts sessions as short as a second (the workers' are 6 s)."""
    proc = BrokerProcess(data_dir=tmp_path / "data", overrides={"group.min.session.timeout.ms": "1000"})
    proc.start()
    yield proc
    proc.stop()
