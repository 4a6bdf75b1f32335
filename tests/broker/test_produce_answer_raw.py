"""The dispatcher's fast Produce path (``handlers.produce.answer_raw``, from the codec's tuples) under the
replication rules, on real logs and a manual clock: acks=1 is answered at once, acks=all only once the in-sync
followers fetched past the records (an awaitable), acks=0 with nothing, and a refused partition with its error
beside the appended one. ``tests/clients/test_produce_fast_path.py`` shows real clients take this path."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.broker.replication_leader import F2, F3, TP, Leader

from samsa.broker.handlers.produce import answer_raw, answers_of
from samsa.protocol.errors import ErrorCode
from samsa.records import build_batch


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    made = Leader(tmp_path)
    yield made
    made.logs.shutdown()


def _serve(leader: Leader, acks: int, *partitions: tuple[int, object]) -> Any:
    services: Any = SimpleNamespace(replica_manager=leader.manager, metrics=None)
    return answer_raw(services, 9, acks, 30_000, [(TP.topic, list(partitions))])


def _batch(count: int) -> memoryview:
    return memoryview(bytearray(build_batch([b"v"] * count)))


def test_acks_1_is_answered_at_once_with_the_offsets_and_a_refusal_beside_them(leader: Leader) -> None:
    results = _serve(leader, 1, (0, _batch(3)), (7, b"not a batch"))
    assert isinstance(results, list)
    [(topic, [(i0, first), (i7, refused)])] = results
    assert (i0, i7) == (0, 7)
    assert (topic, first.error, first.base_offset, first.last_offset) == (TP.topic, ErrorCode.NONE, 0, 2)
    assert refused.error == ErrorCode.INVALID_RECORD
    assert answers_of(results) == [
        (TP.topic, [(0, 0, 0, -1, 0, None), (7, ErrorCode.INVALID_RECORD, -1, -1, -1, refused.message)])
    ]


def test_a_topic_without_partitions_beside_one_appended_partition_is_answered_with_both(
    leader: Leader,
) -> None:
    """One partition appended, but two topics: the answer names both, as the request did (Kafka answers a topic
    whose partition array is empty with an empty array)."""
    services: Any = SimpleNamespace(replica_manager=leader.manager, metrics=None)
    results = answer_raw(services, 9, 1, 30_000, [("nothing", []), (TP.topic, [(0, _batch(2))])])
    assert isinstance(results, list)
    [(empty, no_partitions), (topic, [(index, appended)])] = results
    assert (empty, no_partitions) == ("nothing", [])
    assert (topic, index, appended.error, appended.base_offset) == (TP.topic, 0, ErrorCode.NONE, 0)


def test_acks_all_is_answered_once_the_isr_fetched_past_the_records(leader: Leader) -> None:
    async def scenario() -> None:
        await leader.catch_up(F2, F3)
        waiting = _serve(leader, -1, (0, _batch(2)))
        assert not isinstance(waiting, list)  # the ISR has not the records yet: something to await
        task = asyncio.ensure_future(waiting)
        await leader.fetch(F2, 2)
        await asyncio.sleep(0)
        assert not task.done()
        await leader.fetch(F3, 2)
        [(_, [(_, result)])] = await asyncio.wait_for(task, 5)
        assert (result.error, result.base_offset) == (ErrorCode.NONE, 0)

    asyncio.run(scenario())


def test_acks_0_is_answered_with_nothing(leader: Leader) -> None:
    assert _serve(leader, 0, (0, _batch(1))) is None
    assert leader.log.log_end_offset == 1
