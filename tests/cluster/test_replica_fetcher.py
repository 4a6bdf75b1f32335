"""The replica fetcher against a leader in memory: a follower's ``ReplicaFetcherManager`` whose connection hands
each Fetch to the leader's ``ReplicaManager.fetch`` (as the fetch handler does), real logs in temporary
directories, a manual clock. No ZooKeeper, no sockets, no sleeps.

The follower's fetches wait up to a minute at the leader (``replica.fetch.wait.max.ms``), so anything that
completes within seconds was woken, not timed out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from samsa.broker.fetch_sessions import FetchSessions
from samsa.broker.handlers.fetch import forgotten_partitions, requested_partitions
from samsa.broker.replica_manager import ReplicaManager, ReplicaState
from samsa.clock import ManualClock
from samsa.cluster.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from samsa.protocol.errors import ErrorCode
from samsa.protocol.messages.fetch import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    PartitionData,
)
from samsa.records import build_batch
from samsa.storage import FetchIsolation
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
from samsa.storage.topic import TopicPartition

LEADER, FOLLOWER = 1, 2
REPLICAS = (LEADER, FOLLOWER)
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
PATIENT = FetcherConfig(wait_max_ms=60_000)  # a fetch parked at the leader ends only when woken


class InMemoryConnection:
    """A follower's connection to ``leader``: each Fetch is the leader's ``ReplicaManager.fetch``, in the
    leader's fetch sessions as its Fetch handler serves it; every request is kept in ``sent``."""

    def __init__(
        self, leader: ReplicaManager, opened: list[int], sessions: FetchSessions, sent: list[FetchRequest]
    ) -> None:
        self._leader = leader
        self._opened = opened
        self._sessions = sessions
        self._sent = sent
        self.closed = False

    async def open(self) -> None:
        self._opened.append(1)

    async def close(self) -> None:
        self.closed = True

    def send(self, message: FetchRequest, api_key: int, version: int) -> asyncio.Future[Any]:
        return asyncio.ensure_future(self.request(message, api_key, version))

    async def request(self, message: FetchRequest, api_key: int, version: int | None = None) -> Any:
        self._sent.append(message)
        wanted = requested_partitions(message, message.replica_id)  # as the leader's Fetch handler reads them
        context = self._sessions.context(
            message.session_id, message.session_epoch, wanted, forgotten_partitions(message), offered=True
        )
        if isinstance(context, ErrorCode):
            return FetchResponse(error_code=context)
        results = await self._leader.fetch(
            context.partitions,
            max_wait_ms=message.max_wait_ms,
            min_bytes=message.min_bytes,
            max_bytes=message.max_bytes,
            isolation=FetchIsolation.LOG_END,
            replica_id=message.replica_id,
        )
        partitions = [
            PartitionData(
                partition_index=want.tp.partition,
                error_code=result.error,
                high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset,
                diverging_epoch=EpochEndOffset(*result.diverging_epoch)
                if result.diverging_epoch is not None
                else EpochEndOffset(),
                records=result.records.read_bytes() if result.records is not None else b"",
            )
            for want, result in self._sessions.answered(context, results)
        ]
        return FetchResponse(
            session_id=context.session_id,
            responses=[FetchableTopicResponse(topic="t", partitions=partitions)],
        )


@dataclass
class Pair:
    """A leader (broker 1) and a follower (broker 2) of topic ``t``, with the follower's fetchers."""

    clock: ManualClock
    leader: ReplicaManager
    follower: ReplicaManager
    fetchers: ReplicaFetcherManager
    opened: list[int]
    sessions: FetchSessions  # the leader's
    sent: list[FetchRequest]  # every fetch the follower sent

    def lead(self, tp: TopicPartition, epoch: int = 1) -> None:
        plog = self.leader.log_manager.get_log(tp)
        assert plog is not None
        self.leader.make_leader(tp, plog, ReplicaState(LEADER, epoch, REPLICAS, REPLICAS, 0))

    def follow(self, tp: TopicPartition, epoch: int = 1) -> None:
        plog = self.follower.log_manager.get_log(tp)
        assert plog is not None
        self.follower.make_follower(tp, plog, ReplicaState(LEADER, epoch, REPLICAS, REPLICAS, 0), None)
        self.fetchers.add(tp, LEADER, "leader", 9092)

    def produce(self, tp: TopicPartition, count: int = 1) -> Awaitable[dict[TopicPartition, ErrorCode]]:
        """An acks=all produce of ``count`` records: the wait for its acknowledgement."""
        result = self.leader.append(tp, memoryview(bytearray(build_batch([b"r"] * count))), -1)
        assert result.error is ErrorCode.NONE
        return self.leader.wait_for_acks([(tp, result.last_offset)], 30_000)

    def log_end(self, manager: ReplicaManager, tp: TopicPartition) -> int:
        plog = manager.log_manager.get_log(tp)
        assert plog is not None
        return plog.log_end_offset


@asynccontextmanager
async def pair(directory: Path) -> AsyncIterator[Pair]:
    clock = ManualClock()
    managers = []
    for node in (LEADER, FOLLOWER):
        logs = LogManager([directory / f"broker-{node}"], LogConfig(), clock)
        logs.startup()
        logs.create_topic("t", 2)
        managers.append(ReplicaManager(logs, node, clock))
    leader, follower = managers
    opened: list[int] = []
    sessions, sent = FetchSessions(), list[FetchRequest]()

    def connect(host: str, port: int, client_id: str, timeout_ms: int) -> InMemoryConnection:
        return InMemoryConnection(leader, opened, sessions, sent)

    fetchers = ReplicaFetcherManager(follower, FOLLOWER, PATIENT, clock=clock, connect=connect)
    try:
        yield Pair(clock, leader, follower, fetchers, opened, sessions, sent)
    finally:
        await fetchers.close()
        for manager in managers:
            manager.log_manager.shutdown()


def test_acks_all_completes_in_one_round_trip_without_waiting_for_the_fetch_wait(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with pair(tmp_path) as p:
            p.lead(T0)
            p.follow(T0)
            for count in (1, 5, 2):  # each time the follower's fetch is parked at the leader, then woken
                assert await asyncio.wait_for(p.produce(T0, count), 5) == {T0: ErrorCode.NONE}
            assert p.log_end(p.follower, T0) == 8
            assert p.opened == [1]  # one connection throughout

    asyncio.run(scenario())


def test_a_partition_added_while_a_fetch_is_parked_is_fetched_at_once(tmp_path: Path) -> None:
    """The fetcher of broker 1 has a fetch of t-0 parked for up to a minute when t-1 is added: the parked fetch
    ends, and t-1's first acks=all produce completes at once (before: it waited for the parked fetch)."""

    async def scenario() -> None:
        async with pair(tmp_path) as p:
            p.lead(T0)
            p.lead(T1)
            p.follow(T0)
            assert await asyncio.wait_for(p.produce(T0), 5) == {T0: ErrorCode.NONE}
            await asyncio.sleep(0)  # the next fetch of t-0 parks
            p.follow(T1)
            assert await asyncio.wait_for(p.produce(T1, 3), 5) == {T1: ErrorCode.NONE}
            assert p.log_end(p.follower, T1) == 3
            assert await asyncio.wait_for(p.produce(T0), 5) == {T0: ErrorCode.NONE}

    asyncio.run(scenario())


def test_a_leader_not_yet_leading_is_asked_again_soon_not_after_the_whole_backoff(tmp_path: Path) -> None:
    """The follower learned of its leader before the leader did (the controller tells both at once): the
    leader's first answer is an error, and the partition is asked again after 10 ms, not
    ``replica.fetch.backoff.ms`` (1 s)."""

    async def scenario() -> None:
        async with pair(tmp_path) as p:
            p.follow(T0)
            for _ in range(20):
                await asyncio.sleep(0)  # the first fetch is answered UNKNOWN_TOPIC_OR_PARTITION
            p.lead(T0)
            acked = asyncio.ensure_future(p.produce(T0))
            p.clock.advance(10)
            assert await asyncio.wait_for(acked, 5) == {T0: ErrorCode.NONE}

    asyncio.run(scenario())


def test_a_fetch_past_the_leaders_epoch_truncates_the_follower_then_replicates(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with pair(tmp_path) as p:
            follower_log = p.follower.log_manager.get_log(T0)
            assert follower_log is not None
            # the follower led epoch 0 once and wrote 4 records the new leader never got
            follower_log.append_as_leader(bytearray(build_batch([b"lost"] * 4)), 0)
            p.lead(T0, epoch=1)
            p.follow(T0, epoch=1)
            assert await asyncio.wait_for(p.produce(T0, 2), 5) == {T0: ErrorCode.NONE}
            assert p.log_end(p.follower, T0) == 2  # truncated to 0, then copied the leader's 2 records
            leader_log = p.leader.log_manager.get_log(T0)
            assert leader_log is not None
            end = FetchIsolation.LOG_END
            copied = follower_log.read(0, 1 << 20, end).records.read_bytes()
            assert copied == leader_log.read(0, 1 << 20, end).records.read_bytes()

    asyncio.run(scenario())


# --- fetch sessions (KIP-227) -------------------------------------------------------------------------------------


def named(request: FetchRequest) -> set[TopicPartition]:
    return {TopicPartition(t.topic, p.partition) for t in request.topics for p in t.partitions}


def test_in_a_session_a_fetch_names_only_the_partitions_whose_position_changed(tmp_path: Path) -> None:
    """The first fetch names both partitions and gets a session; from then on a fetch names only the partition
    the last answer moved, and both partitions still replicate and complete their acks=all produces."""

    async def scenario() -> None:
        async with pair(tmp_path) as p:
            for tp in (T0, T1):
                p.lead(tp)
                p.follow(tp)
            assert await asyncio.wait_for(p.produce(T0, 2), 5) == {T0: ErrorCode.NONE}
            assert await asyncio.wait_for(p.produce(T0, 3), 5) == {T0: ErrorCode.NONE}
            assert await asyncio.wait_for(p.produce(T1, 4), 5) == {T1: ErrorCode.NONE}
            assert (p.log_end(p.follower, T0), p.log_end(p.follower, T1)) == (5, 4)
            last_full = max(i for i, r in enumerate(p.sent) if r.session_epoch == 0)
            first, later = p.sent[last_full], p.sent[last_full + 1 :]
            assert named(first) == {T0, T1}  # the full fetch, after t-1 was added
            assert len(later) >= 3 and len({r.session_id for r in later}) == 1 and later[0].session_id != 0
            assert [r.session_epoch for r in later] == list(range(1, len(later) + 1))
            assert all(named(r) in ({T0}, {T1}, set()) for r in later)  # never both: one moved at a time
            assert len(p.sessions) == 1

    asyncio.run(scenario())


def test_a_follower_whose_session_the_leader_lost_starts_over_with_a_full_fetch(tmp_path: Path) -> None:
    """The leader forgets every session (a restart, an eviction): the follower's next incremental fetch is
    answered FETCH_SESSION_ID_NOT_FOUND, its next names every partition again, and replication goes on."""

    async def scenario() -> None:
        async with pair(tmp_path) as p:
            for tp in (T0, T1):
                p.lead(tp)
                p.follow(tp)
            assert await asyncio.wait_for(p.produce(T0), 5) == {T0: ErrorCode.NONE}
            p.sessions._sessions.clear()  # what an evicted or restarted leader has
            p.leader.replica_fetch_purgatory.notify(T0)  # end the parked fetch, as new records would
            assert await asyncio.wait_for(p.produce(T1, 2), 5) == {T1: ErrorCode.NONE}
            assert await asyncio.wait_for(p.produce(T0, 2), 5) == {T0: ErrorCode.NONE}
            assert (p.log_end(p.follower, T0), p.log_end(p.follower, T1)) == (3, 2)
            full = [r for r in p.sent if r.session_epoch == 0]
            assert len(full) == 2 and all(named(r) == {T0, T1} for r in full)
            assert full[1].session_id != 0  # it also closes the lost session, by its id

    asyncio.run(scenario())
