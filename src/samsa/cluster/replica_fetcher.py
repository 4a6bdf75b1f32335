"""Replica fetchers: a follower copies its partitions from their leaders with Kafka's follower Fetch.

One fetcher per leader broker (``num.replica.fetchers`` = 1), each a task on the broker's event loop with one
connection. Its loop, as Kafka's ``ReplicaFetcherThread``:

1. ask the follower's logs where each partition stands (:class:`FollowerLogs.fetch_position`): the fetch offset is
   the log end offset (never the high watermark), with the epoch of the last batch and the leader's epoch;
2. send one Fetch (v12: replica id, ``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``,
   ``replica.fetch.max.bytes`` per partition, ``replica.fetch.response.max.bytes`` in all) and wait for it;
3. per partition, only if its position is still the one sent: append the records with the leader's offsets and
   take its high watermark and log start; or truncate when the answer carries a diverging epoch (KIP-595); or
   reset when the offset is out of the leader's range; any other error holds that partition back for
   ``replica.fetch.backoff.ms`` (the next LeaderAndIsr usually explains it), except the errors of a leader that
   has not yet applied the LeaderAndIsr this follower has (``NOT_LEADER_OR_FOLLOWER``,
   ``UNKNOWN_TOPIC_OR_PARTITION``, ``UNKNOWN_LEADER_EPOCH``: the controller sends it to every replica at once),
   which hold it back for ``NOT_READY_BACKOFF_MS`` (10 ms), doubling with each one in a row up to the backoff: a
   new topic's or a new leader's first fetches do not wait a whole second, and so neither do its acks=all
   produces.

**One round trip.** The leader parks a follower's fetch until new records arrive (its append wakes it at once),
for ``replica.fetch.wait.max.ms`` at most; the follower sends its next fetch as soon as it has appended the last
answer, and that fetch moves the leader's high watermark, which answers the waiting acks=all produces. So a
partition added while a fetch is parked at the leader would wait for that fetch to end (up to the wait): its
addition ends the parked fetch instead (the connection is closed, so the leader's one-request-at-a-time handling
of a connection does not hold the next fetch back) and the next round asks for it at once. A partition's position
is read from the follower's logs once when the request is built and once to check it still holds when the answer
comes; the append returns the new log end.

**A fetch session** (KIP-227) with each leader: the first request names every partition and asks for a session;
while the leader keeps it, each later request names only the partitions whose position the leader does not have
(and forgets the ones no longer fetched), and the answer carries only the partitions with something new. A
partition the answer leaves out is as it was: nothing appended, the same high watermark and log start. A failed
or ended request, or an answer that says the leader lost the session, starts over with a full request (which
also closes the old session there); a leader that makes none (session id 0) gets full requests throughout.

The follower's replication throttle (:mod:`.replication_quota`, as Kafka's ``ReplicaFetcherThread``): while the
bytes fetched for throttled partitions (``follower.replication.throttled.replicas`` naming this broker) are over
``follower.replication.throttled.rate``, step 1 leaves out each throttled partition that has not caught up with the
leader's high watermark of its last answer; the others are fetched as usual, so a throttled move never starves
them. A fetcher with nothing left to ask waits until the quota's window lets a throttled partition in again (at
most the backoff). Every byte fetched for a throttled partition counts, caught up or not.

A failed connection holds the whole fetcher back for the backoff, then reconnects. Fetchers never raise: a
partition's trouble is logged and retried.

Holds, backoffs and the throttle's windows are on the injected ``Clock`` (monotonic milliseconds): with a manual
clock, tests see the same rules; the waits themselves are the event loop's. The connection is made by a factory
(``connect``), so tests drive a fetcher against a leader in memory.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from samsa.client.connection import BrokerConnection
from samsa.client.errors import KafkaError
from samsa.clock import SYSTEM_CLOCK, Clock
from samsa.log_throttle import LogThrottle
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.fetch_session import INITIAL_EPOCH, next_epoch
from samsa.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    PartitionData,
)
from samsa.server_defaults import default
from samsa.topic_partition import TopicPartition

from .controller import stop_task
from .follower import FetchPosition, FollowerLogs
from .replication_quota import ReplicationQuota

__all__ = ["FetchConnection", "FetcherConfig", "ReplicaFetcherManager"]

log = logging.getLogger(__name__)

FETCH_VERSION = 12  # replica id in the body, LastFetchedEpoch and DivergingEpoch, topics by name
# a partition that keeps failing to append what it fetched is said once a minute
FAILURE_LOG_INTERVAL_MS = 60_000
# a leader that has not applied the LeaderAndIsr yet: asked again soon (module doc)
NOT_READY_BACKOFF_MS = 10
_NOT_READY = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
}
# the leader does not have the session the request named, or not at that epoch: a full request follows at once
_SESSION_ERRORS = {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}


class FetchConnection(Protocol):
    """What a fetcher needs of its connection to the leader (``samsa.client.connection.BrokerConnection``)."""

    @property
    def closed(self) -> bool: ...

    async def open(self) -> Any: ...

    async def request(self, message: Any, api_key: int, version: int | None = None) -> Any: ...

    def send(self, message: Any, api_key: int, version: int) -> asyncio.Future[Any]:
        """The request written now; the future of its answer (cancelled to stop waiting)."""
        ...

    async def close(self) -> None: ...


# (host, port, client id, request timeout ms) -> a connection not yet open
Connect = Callable[[str, int, str, int], FetchConnection]


def _broker_connection(host: str, port: int, client_id: str, timeout_ms: int) -> FetchConnection:
    return BrokerConnection(host, port, client_id=client_id, request_timeout_ms=timeout_ms)


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """Kafka's ``replica.fetch.*`` settings."""

    max_bytes: int = default("replica.fetch.max.bytes")
    response_max_bytes: int = default("replica.fetch.response.max.bytes")
    wait_max_ms: int = default("replica.fetch.wait.max.ms")
    min_bytes: int = default("replica.fetch.min.bytes")
    backoff_ms: int = default("replica.fetch.backoff.ms")
    socket_timeout_ms: int = default("replica.socket.timeout.ms")


@dataclass(slots=True)
class _Leader:
    broker_id: int
    host: str
    port: int
    partitions: dict[TopicPartition, int] = field(default_factory=dict)  # -> held back until (clock ms)
    # the partitions whose last answer brought them to the leader's high watermark (never throttled)
    caught_up: set[TopicPartition] = field(default_factory=set)
    not_ready: dict[TopicPartition, int] = field(default_factory=dict)  # -> not-ready answers in a row
    lag: dict[TopicPartition, int] = field(
        default_factory=dict
    )  # -> the leader's HW minus the log end, last seen
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    in_flight: asyncio.Future[Any] | None = None  # the fetch sent, while it waits for its answer
    in_flight_partitions: frozenset[TopicPartition] = frozenset()
    aborted: bool = False  # the fetch in flight was ended for a partition added meanwhile
    stopped: bool = False
    # the fetch session with this leader (KIP-227, module doc): its id (0: none), the epoch the next request
    # carries (0: a full request that asks for a session), and where the leader's session has each partition
    session_id: int = 0
    session_epoch: int = INITIAL_EPOCH
    session_positions: dict[TopicPartition, FetchPosition] = field(default_factory=dict)

    def reset_session(self) -> None:
        """Send a full request next (it closes the old session on the leader and asks for a new one)."""
        self.session_epoch = INITIAL_EPOCH
        self.session_positions = {}

    def abort_for(self, tp: TopicPartition) -> None:
        """End the fetch in flight when it does not ask for ``tp`` (module doc, "One round trip")."""
        if self.in_flight is not None and tp not in self.in_flight_partitions:
            self.aborted = True
            self.in_flight.cancel()


class ReplicaFetcherManager:
    """The fetchers of one follower broker, one per leader (module doc). Event-loop thread only."""

    def __init__(
        self,
        logs: FollowerLogs,
        node_id: int,
        config: FetcherConfig | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        connect: Connect = _broker_connection,
    ) -> None:
        self._logs = logs
        self._node_id = node_id
        self._config = config or FetcherConfig()
        self._clock = clock
        self._connect = connect
        self._leaders: dict[tuple[int, str, int], _Leader] = {}
        self._leader_of: dict[TopicPartition, tuple[int, str, int]] = {}
        # follower.replication.throttled.rate: the broker sets it from its dynamic configs
        self.quota = ReplicationQuota()
        # a partition whose fetched records cannot be appended (a full disk) fails every backoff: one line a minute
        self._failures = LogThrottle(FAILURE_LOG_INTERVAL_MS)

    def add(self, tp: TopicPartition, leader_id: int, host: str, port: int) -> None:
        """Fetch ``tp`` from ``leader_id`` at ``host:port`` (moving it off its former leader's fetcher)."""
        key = (leader_id, host, port)
        if self._leader_of.get(tp) == key:
            return
        self.remove(tp)
        leader = self._leaders.get(key)
        if leader is None:
            leader = _Leader(leader_id, host, port)
            self._leaders[key] = leader
            leader.task = asyncio.get_running_loop().create_task(
                self._run(leader), name=f"replica-fetcher-{self._node_id}-from-{leader_id}"
            )
        leader.partitions[tp] = 0
        leader.caught_up.discard(tp)
        self._leader_of[tp] = key
        leader.abort_for(tp)
        leader.wake.set()

    def remove(self, tp: TopicPartition) -> None:
        key = self._leader_of.pop(tp, None)
        if key is None:
            return
        leader = self._leaders[key]
        leader.partitions.pop(tp, None)
        leader.caught_up.discard(tp)
        leader.not_ready.pop(tp, None)
        leader.lag.pop(tp, None)
        if not leader.partitions:
            del self._leaders[key]
            leader.stopped = True
            leader.wake.set()
            if leader.task is not None:
                leader.task.cancel()

    def lags(self) -> list[tuple[int, TopicPartition, int]]:
        """(leader id, partition, lag) of every partition fetched: Kafka's FetcherLagMetrics ConsumerLag, the
        leader's high watermark minus this replica's log end offset as of the last fetch answer."""
        return [
            (leader.broker_id, tp, lag) for leader in self._leaders.values() for tp, lag in leader.lag.items()
        ]

    def fetching(self) -> dict[TopicPartition, int]:
        """Each partition being fetched, with the id of the leader it is fetched from."""
        return {tp: key[0] for tp, key in self._leader_of.items()}

    async def close(self) -> None:
        leaders = list(self._leaders.values())
        self._leaders.clear()
        self._leader_of.clear()
        for leader in leaders:
            leader.stopped = True
            leader.wake.set()
            if leader.task is not None:
                leader.task.cancel()
        for leader in leaders:
            if leader.task is not None:
                await stop_task(leader.task)

    # --- one fetcher -------------------------------------------------------------------------------------------

    async def _run(self, leader: _Leader) -> None:
        connection: FetchConnection | None = None
        failures = 0
        try:
            while not leader.stopped:
                sent = self._positions(leader, self._clock.monotonic_ms())
                if not sent:
                    await self._idle(leader, self._clock.monotonic_ms())
                    continue
                try:
                    if connection is None or connection.closed:
                        connection = self._connect(
                            leader.host,
                            leader.port,
                            f"replica-fetcher-{self._node_id}",
                            self._config.socket_timeout_ms,
                        )
                        await connection.open()
                    request, changed, forgotten = self._request(leader, sent)
                    response = await self._send(leader, connection, request, sent)
                except KafkaError as exc:
                    leader.reset_session()
                    failures += 1
                    level = logging.INFO if failures == 1 else logging.DEBUG  # once per outage
                    log.log(level, "fetch from broker %d failed: %s (retrying)", leader.broker_id, exc)
                    if connection is not None:
                        await connection.close()
                    connection = None
                    await asyncio.sleep(self._config.backoff_ms / 1000)
                    continue
                if response is None:  # ended for a partition added meanwhile: ask again at once
                    leader.reset_session()
                    await connection.close()
                    connection = None
                    continue
                failures = 0
                if not self._session_answered(leader, sent, changed, forgotten, response):
                    continue  # the leader lost the session: a full request at once
                self._process(leader, sent, response, self._clock.monotonic_ms())
        finally:
            if connection is not None:
                await connection.close()

    async def _send(
        self,
        leader: _Leader,
        connection: FetchConnection,
        request: FetchRequest,
        sent: dict[TopicPartition, FetchPosition],
    ) -> FetchResponse | None:
        """The leader's answer to ``request``, a fetch of ``sent``; None when a partition added meanwhile ended
        it."""
        in_flight = connection.send(request, ApiKey.FETCH, FETCH_VERSION)
        leader.in_flight, leader.in_flight_partitions = in_flight, frozenset(sent)
        try:
            response: FetchResponse = await in_flight
            return response
        except asyncio.CancelledError:
            if not leader.aborted or leader.stopped:
                raise  # this fetcher's own task was cancelled (it is stopped first)
            return None
        finally:
            leader.in_flight, leader.in_flight_partitions, leader.aborted = None, frozenset(), False

    def _positions(self, leader: _Leader, now: int) -> dict[TopicPartition, FetchPosition]:
        positions = {}
        for tp, held_until in leader.partitions.items():
            if held_until > now or self._throttled_out(leader, tp, now):
                continue
            position = self._logs.fetch_position(tp)
            if position is not None:
                positions[tp] = position
        return positions

    def _throttled_out(self, leader: _Leader, tp: TopicPartition, now: int) -> bool:
        """Whether the follower's throttle leaves ``tp`` out of the next fetch (module doc)."""
        return tp not in leader.caught_up and self.quota.over(now) and self._logs.follower_throttled(tp)

    async def _idle(self, leader: _Leader, now: int) -> None:
        """Nothing to fetch now: wait for a partition to be added, the earliest hold to end, or the throttle's
        window to let a throttled partition in."""
        holds = [t for t in leader.partitions.values() if t > now]
        timeout_ms = min(holds) - now if holds else self._config.backoff_ms
        if any(self._throttled_out(leader, tp, now) for tp in leader.partitions):
            timeout_ms = min(timeout_ms, self.quota.delay_ms(now))
        leader.wake.clear()
        try:
            await asyncio.wait_for(leader.wake.wait(), max(timeout_ms, 1) / 1000)
        except asyncio.TimeoutError:
            pass

    def _request(
        self, leader: _Leader, positions: dict[TopicPartition, FetchPosition]
    ) -> tuple[FetchRequest, dict[TopicPartition, FetchPosition], list[TopicPartition]]:
        """The fetch of ``positions``, with the partitions it names and the ones it forgets: outside a session
        all of them (asking for one); in a session only those whose position is not the one the leader has, and
        those no longer fetched as forgotten."""
        forgotten: list[TopicPartition] = []
        if leader.session_epoch == INITIAL_EPOCH:
            changed = positions
        else:
            known = leader.session_positions
            changed = {tp: position for tp, position in positions.items() if known.get(tp) != position}
            forgotten = [tp for tp in known if tp not in positions]
        by_forgotten: dict[str, list[int]] = {}
        for tp in forgotten:
            by_forgotten.setdefault(tp.topic, []).append(tp.partition)
        by_topic: dict[str, list[FetchPartition]] = {}
        for tp, position in sorted(changed.items()):
            by_topic.setdefault(tp.topic, []).append(
                FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=position.current_leader_epoch,
                    fetch_offset=position.fetch_offset,
                    last_fetched_epoch=position.last_fetched_epoch,
                    log_start_offset=position.log_start_offset,
                    partition_max_bytes=self._config.max_bytes,
                )
            )
        request = FetchRequest(
            replica_id=self._node_id,
            max_wait_ms=self._config.wait_max_ms,
            min_bytes=self._config.min_bytes,
            max_bytes=self._config.response_max_bytes,
            isolation_level=0,
            session_id=leader.session_id,
            session_epoch=leader.session_epoch,
            topics=[FetchTopic(topic=t, partitions=p) for t, p in by_topic.items()],
            forgotten_topics_data=[ForgottenTopic(topic=t, partitions=p) for t, p in by_forgotten.items()],
        )
        return request, changed, forgotten

    def _session_answered(
        self,
        leader: _Leader,
        sent: dict[TopicPartition, FetchPosition],
        changed: dict[TopicPartition, FetchPosition],
        forgotten: list[TopicPartition],
        response: FetchResponse,
    ) -> bool:
        """Keep the session as the leader now has it; False when the leader does not have it (its top-level
        session errors): the next request is a full one, sent at once."""
        if response.error_code in _SESSION_ERRORS:
            log.debug("fetch session %d with broker %d: error %d, starting over with a full fetch",
                      leader.session_id, leader.broker_id, response.error_code)  # fmt: skip
            leader.reset_session()
            return False
        if response.error_code:
            leader.reset_session()
        elif leader.session_epoch == INITIAL_EPOCH:
            leader.session_id = response.session_id
            if response.session_id:  # 0: the leader made none; every request stays a full one
                leader.session_epoch = next_epoch(INITIAL_EPOCH)
                leader.session_positions = dict(sent)
        elif response.session_id != leader.session_id:
            leader.reset_session()
        else:
            leader.session_epoch = next_epoch(leader.session_epoch)
            leader.session_positions.update(changed)
            for tp in forgotten:
                leader.session_positions.pop(tp, None)
        return True

    def _process(
        self, leader: _Leader, sent: dict[TopicPartition, FetchPosition], response: FetchResponse, now: int
    ) -> None:
        if response.error_code:
            log.info("fetch from broker %d: error %d", leader.broker_id, response.error_code)
            self._hold(leader, sent, now)
            return
        for topic in response.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, data.partition_index)
                position = sent.get(tp)
                if position is None or self._logs.fetch_position(tp) != position:
                    continue  # moved meanwhile (a new leader, a truncation): the next round asks again
                try:
                    self._one(tp, data, leader, now)
                except Exception as exc:  # a storage or record error: logged, retried after the backoff
                    self._log_failure(tp, leader, exc, now)
                    self._hold(leader, [tp], now)

    def _log_failure(self, tp: TopicPartition, leader: _Leader, exc: Exception, now: int) -> None:
        """One WARNING line a minute per partition however often the fetch is retried, with the count; a success
        in between does not start the minute again (a nearly full disk alternates them)."""
        since = self._failures.due(now, tp)
        if since is not None:
            more = LogThrottle.held_back(since)
            log.warning(
                "replica of %s from broker %d: %s%s; said once a minute per partition",
                tp,
                leader.broker_id,
                exc,
                more,
            )

    def _one(self, tp: TopicPartition, data: PartitionData, leader: _Leader, now: int) -> None:
        error = data.error_code
        if error != ErrorCode.NONE:
            self._partition_error(tp, error, data, leader, now)
            return
        leader.not_ready.pop(tp, None)
        diverging = data.diverging_epoch
        if diverging.epoch >= 0 or diverging.end_offset >= 0:
            self._logs.truncate_diverging(tp, diverging.epoch, diverging.end_offset)
            return
        records = data.records
        view = memoryview(records) if isinstance(records, (bytes, bytearray, memoryview)) else memoryview(b"")
        log_end = self._logs.append_fetched(tp, view, data.high_watermark, data.log_start_offset)
        leader.lag[tp] = max(data.high_watermark - log_end, 0)
        self._fetched(leader, tp, len(view), log_end >= data.high_watermark, now)

    def _partition_error(
        self, tp: TopicPartition, error: int, data: PartitionData, leader: _Leader, now: int
    ) -> None:
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._logs.reset_out_of_range(tp, data.log_start_offset, data.high_watermark)
        elif error in _NOT_READY:
            count = leader.not_ready.get(tp, 0)
            leader.not_ready[tp] = count + 1
            backoff = min(NOT_READY_BACKOFF_MS << min(count, 10), self._config.backoff_ms)
            log.debug("replica of %s from broker %d: error %d, asking again in %d ms", tp, leader.broker_id,
                      error, backoff)  # fmt: skip
            self._hold(leader, [tp], now, backoff)
        else:
            log.info("replica of %s from broker %d: error %d, backing off", tp, leader.broker_id, error)
            self._hold(leader, [tp], now)

    def _fetched(self, leader: _Leader, tp: TopicPartition, size: int, caught_up: bool, now: int) -> None:
        """Count a throttled partition's bytes against the quota; note whether it reached the high watermark."""
        if size and self._logs.follower_throttled(tp):
            self.quota.record(size, now)
        if caught_up:
            leader.caught_up.add(tp)
        else:
            leader.caught_up.discard(tp)

    def _hold(
        self, leader: _Leader, tps: Iterable[TopicPartition], now: int, backoff_ms: int | None = None
    ) -> None:
        until = now + (self._config.backoff_ms if backoff_ms is None else backoff_ms)
        for tp in tps:
            if tp in leader.partitions:
                leader.partitions[tp] = until
