from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clients.harness import BrokerProcess, running_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One real ``samsa serve`` process per test module; tests use distinct topic names."""
    with running_broker(tmp_path_factory.mktemp("samsa-client")) as proc:
        yield proc
