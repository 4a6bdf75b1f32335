"""The replication rules of ``ReplicaManager`` on real logs in a temporary directory and a manual clock: no
ZooKeeper, no sockets, no sleeps (Kafka's ``ReplicaManagerTest`` and ``PartitionTest`` check the same rules with a
mock time).

The leader is broker 1 of replicas (1, 2, 3); a follower's fetch is ``ReplicaManager.fetch`` with its replica id,
as the fetch handler calls it; ISR changes go to a list instead of the controller, and the controller's answer is
``isr_change_answered``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.broker.replication_leader import F2, F3, LAG_MS, LEADER, REPLICAS, TP, Leader

from samsa.broker.replica_manager import (
    FetchRequestPartition,
    FetchResult,
    ReplicaManager,
    ReplicaState,
)
from samsa.clock import ManualClock
from samsa.protocol.errors import ErrorCode
from samsa.records import build_batch
from samsa.storage import FetchIsolation
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    made = Leader(tmp_path)
    yield made
    made.logs.shutdown()


async def settle() -> None:
    """Let every task woken so far run (no time passes: a waiter that needs a timer stays parked)."""
    for _ in range(5):
        await asyncio.sleep(0)


# --- acks=all and the high watermark ---------------------------------------------------------------------------


def test_acks_all_completes_when_the_last_in_sync_follower_reaches_the_offset(leader: Leader) -> None:
    async def scenario() -> None:
        await leader.catch_up(F2, F3)
        last = leader.append(3)
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 30_000))
        await settle()
        await leader.fetch(F2, last + 1)
        await settle()
        assert not waiting.done()  # F3 is in the ISR and still at 0
        assert leader.log.high_watermark == 0
        await leader.fetch(F3, last + 1)
        await settle()  # completed by the fetch itself: no clock moved, no timer
        assert waiting.done() and waiting.result() == {TP: ErrorCode.NONE}
        assert leader.log.high_watermark == last + 1

    asyncio.run(scenario())


def test_acks_all_times_out_when_the_isr_does_not_reach_the_offset(leader: Leader) -> None:
    async def scenario() -> None:
        await leader.catch_up(F2, F3)
        last = leader.append()
        await leader.fetch(F2, last + 1)
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 1_000))
        await settle()
        leader.clock.advance(999)
        await settle()
        assert not waiting.done()
        leader.clock.advance(1)
        assert await asyncio.wait_for(waiting, 5) == {TP: ErrorCode.REQUEST_TIMED_OUT}

    asyncio.run(scenario())


def test_the_high_watermark_is_the_smallest_log_end_over_the_isr_and_never_goes_down(leader: Leader) -> None:
    async def scenario() -> None:
        leader.append(10, acks=1)
        await leader.fetch(F2, 7)
        assert leader.log.high_watermark == 0  # F3's position is not known yet: it holds the HW back
        await leader.fetch(F3, 4)
        assert leader.log.high_watermark == 4
        await leader.fetch(F3, 9)
        assert leader.log.high_watermark == 7
        await leader.fetch(F2, 3)  # a follower that went back (it truncated) does not move the HW down
        assert leader.log.high_watermark == 7

    asyncio.run(scenario())


def test_a_replica_outside_the_isr_does_not_hold_the_high_watermark(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        leader.append(5, acks=1)
        await leader.fetch(F2, 5)
        assert leader.log.high_watermark == 5
        await leader.fetch(F3, 2)  # behind the high watermark: not taken back into the ISR
        leader.append(5, acks=1)
        await leader.fetch(F2, 10)
        assert leader.log.high_watermark == 10 and leader.isr_changes == []

    leader = Leader(tmp_path, isr=(LEADER, F2))
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


def test_alone_the_high_watermark_follows_the_append(tmp_path: Path) -> None:
    clock = ManualClock()
    logs = LogManager([tmp_path], LogConfig(), clock)
    logs.startup()
    [plog] = logs.create_topic(TP.topic, 1)
    manager = ReplicaManager(logs, LEADER, clock)
    manager.startup()
    result = manager.append(TP, memoryview(bytearray(build_batch([b"a", b"b"]))), -1)
    assert result.error is ErrorCode.NONE and plog.high_watermark == 2
    assert not manager.acks_pending(TP, result)
    logs.shutdown()


def test_a_follower_fetch_off_the_leaders_log_is_not_its_log_end(leader: Leader) -> None:
    """A follower whose log went past the leader's (records of an epoch the leader never had) must truncate
    before its fetch offset counts: else the leader would take records it lacks as replicated."""

    async def scenario() -> None:
        diverged = await leader.fetch(F2, 4, last_fetched_epoch=0)  # 4 records of an epoch 0 we never had
        assert diverged.error is not ErrorCode.NONE or diverged.diverging_epoch is not None
        beyond = await leader.fetch(F2, 4)  # past our log end, with no epoch
        assert beyond.error is ErrorCode.OFFSET_OUT_OF_RANGE
        last = leader.append(2)
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 30_000))
        await leader.fetch(F3, 2)
        await settle()
        assert leader.log.high_watermark == 0 and not waiting.done()  # F2 holds nothing of ours yet
        await leader.fetch(F2, 2)
        await settle()
        assert waiting.done() and leader.log.high_watermark == 2

    asyncio.run(scenario())


# --- min.insync.replicas ---------------------------------------------------------------------------------------


def test_acks_all_is_refused_with_nothing_appended_while_the_isr_is_under_min_insync(tmp_path: Path) -> None:
    leader = Leader(tmp_path, isr=(LEADER,), min_isr=2)
    refused = leader.manager.append(TP, memoryview(bytearray(build_batch([b"v"]))), -1)
    assert refused.error is ErrorCode.NOT_ENOUGH_REPLICAS
    assert leader.log.log_end_offset == 0
    assert leader.append(acks=1) == 0  # acks=1 is not bound by min.insync.replicas
    leader.logs.shutdown()


def test_the_high_watermark_stays_while_the_isr_is_under_min_insync(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        leader.append(4, acks=1)
        await leader.fetch(F2, 4)
        await leader.fetch(F3, 4)
        assert leader.log.high_watermark == 0  # frozen under min.insync.replicas (Kafka 3.7+)
        assert leader.isr_changes == [frozenset({LEADER, F2})]  # F2 caught up: it is asked back in
        leader.answer((LEADER, F2))
        assert leader.log.high_watermark == 4

    leader = Leader(tmp_path, isr=(LEADER,), min_isr=2)
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


def test_a_produce_whose_isr_shrank_under_min_insync_after_its_append_is_told_so(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        await leader.catch_up(F2)
        last = leader.append()
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 30_000))
        await settle()
        await leader.fetch(F2, last + 1)  # the HW passes the records ...
        leader.answer((LEADER,))  # ... and the ISR shrinks before the produce is answered
        assert await asyncio.wait_for(waiting, 5) == {TP: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}

    leader = Leader(tmp_path, isr=(LEADER, F2), min_isr=2)
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


def test_a_waiting_produce_is_answered_when_the_broker_stops_leading(leader: Leader) -> None:
    async def scenario() -> None:
        last = leader.append()
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 30_000))
        await settle()
        state = ReplicaState(F2, leader.epoch + 1, (F2, F3), REPLICAS, 1)
        leader.manager.make_follower(TP, leader.log, state, None)
        await settle()
        assert waiting.done() and waiting.result() == {TP: ErrorCode.NOT_LEADER_OR_FOLLOWER}

    asyncio.run(scenario())


# --- the ISR: shrink and expand --------------------------------------------------------------------------------


def test_a_follower_not_caught_up_for_the_lag_time_leaves_the_isr(leader: Leader) -> None:
    async def scenario() -> None:
        await leader.catch_up(F2, F3)
        last = leader.append(5)
        waiting = asyncio.create_task(leader.manager.wait_for_acks([(TP, last)], 60_000))
        await settle()
        await leader.fetch(F2, last + 1)
        await leader.fetch(F3, 2)  # F3 fetches but stays behind
        leader.clock.advance(LAG_MS)
        leader.manager.maybe_shrink_isr()
        assert leader.isr_changes == []  # exactly the lag time: still in sync
        leader.clock.advance(1)
        leader.manager.maybe_shrink_isr()
        assert leader.isr_changes == [frozenset({LEADER, F2})]
        assert leader.partition.maximal_isr() == {LEADER, F2, F3}  # pending: F3 still counts
        assert not waiting.done()
        leader.manager.maybe_shrink_isr()
        assert len(leader.isr_changes) == 1  # one change in flight at a time
        leader.answer((LEADER, F2))
        await settle()
        assert waiting.done() and waiting.result() == {TP: ErrorCode.NONE}  # the shrink moved the HW
        assert leader.log.high_watermark == last + 1

    asyncio.run(scenario())


def test_a_follower_at_the_log_end_stays_in_the_isr_however_long_it_is_quiet(leader: Leader) -> None:
    async def scenario() -> None:
        leader.append(3, acks=1)
        await leader.catch_up(F2, F3)
        leader.clock.advance(10 * LAG_MS)
        leader.manager.maybe_shrink_isr()
        assert leader.isr_changes == []

    asyncio.run(scenario())


def test_a_follower_that_was_caught_up_at_its_previous_fetch_counts_from_then(leader: Leader) -> None:
    """Kafka's lastCaughtUpTime: a fetch that reaches the leader's log end as of the previous fetch counts as
    caught up at the previous fetch's time, even though the leader has moved on since."""

    async def scenario() -> None:
        await leader.catch_up(F2, F3)
        for _ in range(5):  # F3 always one batch behind, fetching every 3 s: never lagging by the rule
            leader.append(acks=1)
            await leader.fetch(F2, leader.log.log_end_offset)
            leader.clock.advance(3_000)
            await leader.fetch(F3, leader.log.log_end_offset)
            leader.append(acks=1)
            await leader.fetch(F2, leader.log.log_end_offset)
            leader.manager.maybe_shrink_isr()
        assert leader.isr_changes == []

    asyncio.run(scenario())


def test_a_follower_rejoins_the_isr_once_it_reaches_the_high_watermark(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        leader.append(6, acks=1)
        await leader.fetch(F2, 6)
        assert leader.log.high_watermark == 6
        await leader.fetch(F3, 5)
        assert leader.isr_changes == []  # below the high watermark
        await leader.fetch(F3, 6)
        assert leader.isr_changes == [frozenset(REPLICAS)]
        leader.append(2, acks=1)
        await leader.fetch(F2, 8)
        assert leader.log.high_watermark == 6  # the pending expansion counts F3 (maximal ISR)
        leader.answer(REPLICAS)
        assert leader.partition.isr == set(REPLICAS)

    leader = Leader(tmp_path, isr=(LEADER, F2))
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


def test_an_expansion_waits_for_the_start_of_the_leaders_epoch_and_a_live_broker(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        leader.manager.is_alive = lambda broker_id: broker_id != F3
        await leader.fetch(F3, 0)
        assert leader.isr_changes == []  # not a live broker (not in the metadata cache)
        leader.manager.is_alive = lambda broker_id: True
        leader.partition.leader_epoch_start_offset = 3  # this epoch began at offset 3
        leader.append(3, acks=1)
        await leader.fetch(F3, 2)
        assert leader.isr_changes == []  # at the HW (0) but before the epoch's start
        await leader.fetch(F3, 3)
        assert leader.isr_changes == [frozenset({LEADER, F2, F3})]

    leader = Leader(tmp_path, isr=(LEADER, F2))
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


def test_a_refused_isr_change_rolls_back_to_the_committed_isr(tmp_path: Path) -> None:
    async def scenario(leader: Leader) -> None:
        await leader.fetch(F3, 0)
        assert leader.partition.pending_isr == frozenset(REPLICAS)
        leader.manager.isr_change_answered(TP, leader.epoch, None, -1)
        assert leader.partition.pending_isr is None and leader.partition.isr == {LEADER, F2}
        leader.manager.isr_change_answered(TP, leader.epoch - 1, REPLICAS, 9)  # an older epoch's answer
        assert leader.partition.isr == {LEADER, F2}

    leader = Leader(tmp_path, isr=(LEADER, F2))
    asyncio.run(scenario(leader))
    leader.logs.shutdown()


# --- the follower: diverging epochs and out-of-range offsets ----------------------------------------------------


class Follower:
    """A replica manager following ``TP`` (leader ``LEADER``), appending the leader's batches as fetched."""

    def __init__(self, directory: Path, node_id: int = F2) -> None:
        self.clock = ManualClock()
        self.logs = LogManager([directory], LogConfig(), self.clock)
        self.logs.startup()
        [self.log] = self.logs.create_topic(TP.topic, 1)
        self.manager = ReplicaManager(self.logs, node_id, self.clock)
        self.manager.make_follower(TP, self.log, ReplicaState(LEADER, 3, REPLICAS, REPLICAS, 0), None)

    def append(self, base_offset: int, count: int, epoch: int, high_watermark: int = 0) -> None:
        batch = build_batch([b"f"] * count, base_offset=base_offset, partition_leader_epoch=epoch)
        self.manager.append_fetched(TP, memoryview(batch), high_watermark, 0)


def test_the_leader_answers_a_fetch_past_its_epochs_end_with_the_diverging_epoch(leader: Leader) -> None:
    async def scenario() -> None:
        leader.append(10, acks=1)  # epoch 1: 0-9
        leader.epoch = 3  # re-elected in epoch 3 at offset 10 (epoch 2 led elsewhere, never reached us)
        state = ReplicaState(LEADER, leader.epoch, REPLICAS, REPLICAS, 1)
        leader.manager.make_leader(TP, leader.log, state)
        leader.append(5, acks=1)  # epoch 3: 10-14
        result = await leader.fetch(F2, 12, last_fetched_epoch=2)  # F2 wrote 10, 11 as epoch 2's leader
        assert result.diverging_epoch == (1, 10) and result.records is None
        result = await leader.fetch(F2, 12, last_fetched_epoch=3)
        assert result.diverging_epoch is None and result.records is not None

    asyncio.run(scenario())


def test_a_follower_truncates_to_the_end_of_the_leaders_epoch(tmp_path: Path) -> None:
    follower = Follower(tmp_path)
    follower.append(0, 10, epoch=0)
    follower.append(10, 5, epoch=1)  # it led epoch 1 for a while; the new leader never got 10-14
    follower.manager.truncate_diverging(TP, 1, 12)
    assert follower.log.log_end_offset == 12
    follower.manager.truncate_diverging(TP, 0, 20)  # our epoch 0 ends at 10: the smaller end wins
    assert follower.log.log_end_offset == 10
    follower.logs.shutdown()


def test_a_follower_lacking_the_leaders_epoch_truncates_to_its_own_earlier_epochs_end(tmp_path: Path) -> None:
    """KIP-279: the leader names epoch 2, which this follower never had; it truncates to the end of its largest
    epoch below (here 0, ending at 10 where its epoch 3 began) and asks again with that epoch."""
    follower = Follower(tmp_path)
    follower.append(0, 10, epoch=0)
    follower.append(10, 5, epoch=3)
    follower.manager.truncate_diverging(TP, 2, 14)
    assert follower.log.log_end_offset == 10
    position = follower.manager.fetch_position(TP)
    assert position is not None and position.last_fetched_epoch == 0 and position.fetch_offset == 10
    follower.logs.shutdown()


def test_a_follower_never_truncates_below_what_the_leader_has(tmp_path: Path) -> None:
    follower = Follower(tmp_path)
    follower.append(0, 10, epoch=0, high_watermark=10)
    follower.manager.truncate_diverging(TP, 0, 10)
    assert follower.log.log_end_offset == 10  # nothing diverged
    follower.logs.shutdown()


def test_a_follower_behind_the_leaders_log_start_starts_over_there(tmp_path: Path) -> None:
    follower = Follower(tmp_path)
    follower.append(0, 5, epoch=0)
    follower.manager.reset_out_of_range(TP, 20, 30)
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (20, 20)
    follower.logs.shutdown()


def test_a_follower_past_the_leaders_log_end_truncates_to_it(tmp_path: Path) -> None:
    follower = Follower(tmp_path)
    follower.append(0, 30, epoch=0)
    follower.manager.reset_out_of_range(TP, 0, 25)
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (0, 25)
    follower.logs.shutdown()


def test_a_follower_takes_the_leaders_high_watermark_bounded_by_its_own_log_end(tmp_path: Path) -> None:
    follower = Follower(tmp_path)
    follower.append(0, 5, epoch=0, high_watermark=100)
    assert follower.log.high_watermark == 5
    follower.append(5, 5, epoch=0, high_watermark=7)
    assert follower.log.high_watermark == 7
    follower.logs.shutdown()


# --- a fetch of many partitions, most of them with nothing new ---------------------------------------------------


def test_a_fetch_at_the_log_end_answers_without_reading_the_log(
    leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caught-up follower's fetch names every partition it follows, most at their log end: those are answered
    from the log's offsets alone (a read there could only find nothing); one below the end still reads."""

    async def scenario() -> None:
        last = leader.append(3, acks=1)
        await leader.catch_up(F2, F3)

        def no_read(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("the log was read for a fetch at its end")

        with monkeypatch.context() as patch:
            patch.setattr(type(leader.log), "read", no_read)  # slotted: the class, for this block
            at_end = await leader.fetch(F2, last + 1)
        assert at_end.error is ErrorCode.NONE and at_end.records is None
        assert (at_end.high_watermark, at_end.log_start_offset) == (last + 1, 0)
        assert at_end.last_stable_offset == leader.log.last_stable_offset
        below = await leader.fetch(F2, 1)
        assert below.records is not None and below.records.size > 0

    asyncio.run(scenario())


def parked_fetch(
    leader: Leader, replica: int, offset: int, *, last_fetched_epoch: int = -1
) -> asyncio.Task[list[FetchResult]]:
    """A fetch that waits up to 60 s for bytes (a follower's when ``replica`` >= 0, else a consumer's, which
    reads below the high watermark)."""
    request = FetchRequestPartition(TP, offset, 1 << 20, leader.epoch, replica, last_fetched_epoch)
    return asyncio.create_task(
        leader.manager.fetch(
            [request],
            max_wait_ms=60_000,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation=FetchIsolation.LOG_END if replica >= 0 else FetchIsolation.HIGH_WATERMARK,
            replica_id=replica,
        )
    )


def counted_reads(leader: Leader, monkeypatch: pytest.MonkeyPatch) -> list[FetchRequestPartition]:
    """The partitions the leader reads from here on (``ReplicaManager.read``), in order."""
    reads: list[FetchRequestPartition] = []
    read = leader.manager.read

    def counted(request: FetchRequestPartition, *args: object, **kwargs: object) -> FetchResult:
        reads.append(request)
        return read(request, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(leader.manager, "read", counted)
    return reads


def test_a_high_watermark_move_wakes_a_parked_consumer_but_not_a_parked_follower(
    leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's delayed fetch: a follower counts bytes up to the log end, so a new HW gives it nothing to read
    and leaves it parked (it learns the HW with its next answer); a consumer reads below the HW, so the same
    move is new data for it. An append wakes both."""

    async def scenario() -> None:
        last = leader.append(3)
        await leader.fetch(F2, last + 1)  # F2 has everything; F3 has nothing yet
        reads = counted_reads(leader, monkeypatch)
        follower = parked_fetch(leader, F2, last + 1, last_fetched_epoch=leader.epoch)
        consumer = parked_fetch(leader, -1, 0)
        await settle()
        assert not follower.done() and not consumer.done()
        await leader.fetch(F3, last + 1)  # the HW moves from 0 to 3
        await settle()
        assert leader.log.high_watermark == last + 1
        assert consumer.done()
        [read] = consumer.result()
        assert read.records is not None and read.high_watermark == last + 1
        assert not follower.done() and [r for r in reads if r.replica_id == F2] == []  # not read again
        leader.append(2)
        await settle()
        assert follower.done()
        [fetched] = follower.result()
        assert fetched.records is not None and fetched.high_watermark == last + 1

    asyncio.run(scenario())


def test_a_caught_up_followers_fetch_waits_without_reading_then_reads_once_woken(
    leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower at the log end of every partition it fetches waits at once: a read could only find nothing.
    Woken by an append, it reads once and answers with the new records."""

    async def scenario() -> None:
        last = leader.append(3)
        await leader.catch_up(F2, F3)
        reads = counted_reads(leader, monkeypatch)
        waiting = parked_fetch(leader, F2, last + 1, last_fetched_epoch=leader.epoch)
        await settle()
        assert not waiting.done() and reads == []
        leader.append(2)
        await settle()
        [result] = waiting.result()
        assert len(reads) == 1 and result.records is not None and result.records.size > 0

    asyncio.run(scenario())


def test_a_follower_at_the_log_end_with_a_diverged_epoch_is_told_to_truncate(leader: Leader) -> None:
    """At the leader's log end is not enough to answer "nothing new": a follower whose last epoch ended earlier
    here (it wrote records the leader never had) is told where that epoch ended, as below the end."""

    async def scenario() -> None:
        leader.append(10, acks=1)  # epoch 1: 0-9
        leader.epoch = 3
        leader.manager.make_leader(TP, leader.log, ReplicaState(LEADER, 3, REPLICAS, REPLICAS, 1))
        leader.append(5, acks=1)  # epoch 3: 10-14
        at_end = leader.log.log_end_offset
        diverged = await leader.fetch(F2, at_end, last_fetched_epoch=2)
        assert diverged.diverging_epoch == (1, 10)
        caught_up = await leader.fetch(F2, at_end, last_fetched_epoch=3)
        assert caught_up.diverging_epoch is None and caught_up.records is None
        assert caught_up.error is ErrorCode.NONE

    asyncio.run(scenario())


def test_a_fetch_at_the_log_end_of_an_offline_log_is_a_storage_error(leader: Leader) -> None:
    async def scenario() -> None:
        last = leader.append(2, acks=1)
        leader.log.offline_error = OSError(5, "Input/output error")
        result = await leader.fetch(F2, last + 1)
        assert result.error is ErrorCode.KAFKA_STORAGE_ERROR

    asyncio.run(scenario())


def test_a_follower_takes_a_new_high_watermark_and_log_start_from_an_answer_without_records(
    tmp_path: Path,
) -> None:
    """The follower's shortcut for an answer with nothing new must not skip what did change: the leader's high
    watermark and log start offset arrive in answers without records too, and a fetch waiting on the follower
    (a consumer's, KIP-392) is woken by a new high watermark, not by an answer that changes nothing."""
    follower = Follower(tmp_path)
    follower.append(0, 10, epoch=0, high_watermark=4)
    assert follower.log.high_watermark == 4
    manager = follower.manager

    async def scenario() -> None:
        waiting = asyncio.create_task(
            manager.fetch_purgatory.wait([TP], follower.clock.monotonic_ms() + 60_000)
        )
        await settle()
        assert manager.append_fetched(TP, memoryview(b""), 4, 0) == 10
        await settle()
        assert not waiting.done()  # nothing changed: nobody woken
        assert manager.append_fetched(TP, memoryview(b""), 9, 0) == 10
        assert follower.log.high_watermark == 9
        assert await asyncio.wait_for(waiting, 5) is True

    asyncio.run(scenario())
    manager.append_fetched(TP, memoryview(b""), 9, 6)
    assert follower.log.log_start_offset == 6
    follower.logs.shutdown()
