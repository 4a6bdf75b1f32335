"""Fixtures for the storage-core tests (helpers live in ``storage_helpers``)."""

from __future__ import annotations

import pytest

from samsa.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start_ms=1_700_000_000_000, seed=7)
