"""Suite-wide checks: a test module leaves no librdkafka client running behind it.

A confluent-kafka ``Producer``, ``Consumer`` or ``AdminClient`` (an ``rdkafka#producer-N`` handle underneath) that a
module keeps referenced after its tests, typically through a thread that never ended, goes on connecting to brokers
the module already stopped, for the rest of the worker's run: its log lines then land in other tests' output. Each
handle runs one ``rdk:main`` thread; after a module (and a garbage collection) there must be no more of them than
before it, or the module is named in a warning.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

TASKS = Path(f"/proc/{os.getpid()}/task")


class LeakedClientWarning(UserWarning):
    """A test module left a librdkafka client handle alive."""


def rdkafka_handles() -> int:
    """How many librdkafka handles this process runs (their ``rdk:main`` threads); 0 where /proc is not there."""
    count = 0
    for comm in TASKS.glob("*/comm"):
        try:
            if comm.read_text().strip() == "rdk:main":
                count += 1
        except OSError:
            continue  # the thread ended while we looked
    return count


@pytest.fixture(scope="module", autouse=True)
def no_rdkafka_client_left(request: pytest.FixtureRequest) -> Iterator[None]:
    before = rdkafka_handles()
    yield
    gc.collect()
    left = rdkafka_handles() - before
    if left > 0:
        warnings.warn(
            LeakedClientWarning(f"{request.node.nodeid} left {left} librdkafka client(s) running"),
            stacklevel=1,
        )
