from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One real broker process per test module; tests use distinct topic names."""
    proc = BrokerProcess(data_dir=tmp_path_factory.mktemp("samsa-data"))
    proc.start()
    yield proc
    proc.stop()
    problems = [line for line in proc.output if "ERROR" in line or "Traceback" in line or "closing" in line]
    if problems:
        print("".join(proc.output[-200:]))


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker for one test (restarts, kills)."""
    proc = BrokerProcess(data_dir=tmp_path / "data")
    yield proc
    proc.stop()
