"""``GroupCoordinator``: every classic group this broker coordinates, their timers and their __consumer_offsets.

The asyncio shell around ``Group`` (the sans-IO state machine): it parks JoinGroup and SyncGroup requests on
futures until the group's outbox answers them, runs one timer set to the earliest group deadline (session expiry,
rebalance and sync timeouts), and writes offsets and group metadata to the group's ``__consumer_offsets``
partition through an ``OffsetsLog`` (the narrow view of the log this package defines and the broker implements)
before answering. On start-up it replays those partitions to rebuild every
group: committed offsets, and the members of Stable groups (who then keep their generation and need not rejoin).

**Nothing unreplicated is shown.** An OffsetCommit and the leader's SyncGroup are appended, then wait until the
ISR of the group's partition has the records (``offsets.commit.required.acks`` -1, within
``offsets.commit.timeout.ms``), as Kafka does; only then do the offsets become visible to OffsetFetch, and the group
Stable with its assignment. A failed or timed-out append leaves memory as it was and answers Kafka's error for it
(``COMMIT_ERRORS`` / ``ASSIGNMENT_ERRORS``). A broker alone has the records replicated as soon as they are appended:
it answers without waiting. Other writes (deletions, expiry, the metadata of an emptied group) are appended and
applied without waiting for the ISR.

Single broker: this broker coordinates every group; FindCoordinator names it. ``__consumer_offsets`` is created on
first use (compacted, ``offsets.topic.num.partitions`` partitions). Offsets of empty groups expire after
``offsets.retention.minutes`` (checked every ``offsets.retention.check.interval.ms``).

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from samsa.clock import Clock
from samsa.log_throttle import LogThrottle
from samsa.protocol.errors import ErrorCode
from samsa.records import Record
from samsa.server_defaults import default, minutes_ms
from samsa.storage import StorageError
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

from . import offsets_topic
from .group import (
    Group,
    GroupConfig,
    GroupState,
    JoinRequest,
    JoinResult,
    OffsetAndMetadata,
    Pending,
    Reply,
    SyncResult,
)
from .offsets_log import OffsetsLog
from .offsets_topic import LoadedPartition, OffsetsRecordError

_Result = TypeVar("_Result", JoinResult, SyncResult)
log = logging.getLogger(__name__)

OFFSETS_TOPIC_RETRY_MS = 2_000
"""After creating ``__consumer_offsets`` failed, how long FindCoordinator answers without trying again."""
LOAD_SLICE = 500  # records replayed between two turns of the event loop while a partition loads (about 30 ms)


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    offsets_topic_partitions: int = default("offsets.topic.num.partitions")
    offsets_topic_segment_bytes: int = default("offsets.topic.segment.bytes")
    offsets_retention_ms: int = minutes_ms("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = default("offsets.retention.check.interval.ms")
    offsets_commit_timeout_ms: int = default("offsets.commit.timeout.ms")
    group: GroupConfig = field(default_factory=GroupConfig)


# How a failed __consumer_offsets append is answered (Kafka's group coordinator); an error not listed is answered as
# it is. The group metadata of a SyncGroup differs in two: a timeout is a rebalance, a too-large record a server error.
COMMIT_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}
ASSIGNMENT_ERRORS = {
    **{
        k: ErrorCode.UNKNOWN_SERVER_ERROR if v is ErrorCode.INVALID_COMMIT_OFFSET_SIZE else v
        for k, v in COMMIT_ERRORS.items()
    },
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
}


class GroupCoordinator:
    """The groups of this broker (module doc). Event-loop thread only."""

    def __init__(
        self,
        offsets_log: OffsetsLog,
        clock: Clock,
        config: CoordinatorConfig | None = None,
    ) -> None:
        self.offsets_log = offsets_log
        self.clock = clock
        self.config = config or CoordinatorConfig()
        self.groups: dict[str, Group] = {}
        self._waiters: dict[tuple[str, str, str], list[asyncio.Future[JoinResult | SyncResult]]] = {}
        self._deadlines: list[tuple[int, str]] = []
        self._armed: dict[str, int] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._next_retention_check: int | None = None
        self._active = False
        self._loaded: set[TopicPartition] = set()
        # cluster mode: partitions whose groups are being replayed in the background (``leadership_changed``)
        self._loading: dict[TopicPartition, asyncio.Task[None]] = {}
        self._offsets_topic_failed_at: int | None = None  # when creating __consumer_offsets last failed
        self._offsets_topic_failures = LogThrottle(60_000)  # clock milliseconds: once a minute
        self._append_failures = LogThrottle(60_000)  # per (partition, error)
        # TxnOffsetCommit's offsets by producer id, then group: applied on the transaction's commit, dropped on abort
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}

    # --- life cycle --------------------------------------------------------------------------------------------

    def startup(self) -> None:
        """Rebuild every group from the __consumer_offsets partitions on disk."""
        now = self.clock.milliseconds()
        self._loaded = set(self.offsets_log.offsets_partitions())
        for tp in sorted(self._loaded):
            self._load_partition(tp, now)
        self._active = True
        self._next_retention_check = now + self.config.offsets_retention_check_interval_ms

    def leadership_changed(self) -> None:
        """Cluster mode: load the groups of the ``__consumer_offsets`` partitions this broker leads now, drop the
        groups of those it no longer leads (their members are told NOT_COORDINATOR and look it up again).

        A partition is replayed in the background, as Kafka's coordinator loads it, and its groups are answered
        COORDINATOR_LOAD_IN_PROGRESS until it is done (``group_status``; the handlers ask). Replayed at once
        it held the event loop for the whole log (0.8-1.0 s for 12,800 commits in a nemesis run), and with it
        this broker's answer to the LeaderAndIsr that made it leader, which every broker's next UpdateMetadata
        waits for: clients were sent to the previous coordinator meanwhile."""
        led = set(self.offsets_log.offsets_partitions())
        for group_id in [g for g in self.groups if self.partition_for(g) not in led]:
            del self.groups[group_id]
            self._armed.pop(group_id, None)
            self._fail_waiters(group_id)
        for tp in [tp for tp in self._loading if tp not in led]:
            self._loading.pop(tp).cancel()
        loaded = {self.partition_for(g) for g in self.groups}
        for tp in sorted(led - self._loaded - loaded - set(self._loading)):
            self._loading[tp] = asyncio.get_running_loop().create_task(
                self._load_in_background(tp), name=f"samsa-load-{tp}"
            )
        self._loaded = led

    def loading(self, group_id: str | None = None) -> bool:
        """Whether the group's ``__consumer_offsets`` partition is being loaded (None: whether any is)."""
        if group_id is None:
            return bool(self._loading)
        return bool(self._loading) and self.partition_for(group_id) in self._loading

    async def _load_in_background(self, tp: TopicPartition) -> None:
        try:
            bad: list[OffsetsRecordError] = []
            loaded = LoadedPartition({}, {})
            pending: list[Record] = []
            for record in self._log_records(tp, bad):
                pending.append(record)
                if len(pending) >= LOAD_SLICE:
                    loaded.add(pending, bad)
                    pending = []
                    await asyncio.sleep(0)  # the broker serves on between slices
            loaded.add(pending, bad)
            if not self.offsets_log.coordinates(tp):
                return  # led no more: ``leadership_changed`` dropped it
            self._install(tp, loaded, bad, self.clock.milliseconds())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading the groups of %s failed", tp)
        finally:
            if self._loading.get(tp) is asyncio.current_task():
                del self._loading[tp]

    def group_status(self, group_id: str) -> ErrorCode:
        """Whether this broker may serve ``group_id`` now, as Kafka's ``validateGroupStatus`` answers it:
        COORDINATOR_NOT_AVAILABLE before ``startup`` and after ``shutdown``, COORDINATOR_LOAD_IN_PROGRESS while the
        group's ``__consumer_offsets`` partition loads (``loading``), NOT_COORDINATOR when another broker leads it
        (alone, or before the topic exists, this broker leads them all), else NONE. Asked after the request's
        authorization checks, as Kafka's coordinator is asked after them: an unauthorized client learns nothing of
        the group."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self.loading(group_id):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.offsets_log.coordinates(self.partition_for(group_id)):
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def list_status(self) -> ErrorCode:
        """ListGroups' status, as Kafka's ``handleListGroups`` answers it: COORDINATOR_NOT_AVAILABLE when not
        started, COORDINATOR_LOAD_IN_PROGRESS while any partition loads (the groups loaded are listed with it),
        else NONE."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.loading() else ErrorCode.NONE

    def _fail_waiters(self, group_id: str) -> None:
        for key in [k for k in self._waiters if k[0] == group_id]:
            for future in self._waiters.pop(key):
                if not future.done():
                    future.set_result(
                        JoinResult(ErrorCode.NOT_COORDINATOR)
                        if key[1] == "join"
                        else SyncResult(ErrorCode.NOT_COORDINATOR)
                    )

    def shutdown(self) -> None:
        self._active = False
        for task in self._loading.values():
            task.cancel()
        self._loading.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for (_, kind, _), futures in self._waiters.items():
            result: JoinResult | SyncResult = (
                JoinResult(ErrorCode.NOT_COORDINATOR)
                if kind == "join"
                else SyncResult(ErrorCode.NOT_COORDINATOR)
            )
            for future in futures:
                if not future.done():
                    future.set_result(result)
        self._waiters.clear()

    def _load_partition(self, tp: TopicPartition, now: int) -> None:
        bad: list[OffsetsRecordError] = []
        self._install(tp, LoadedPartition.replay(self._log_records(tp, bad), bad), bad, now)

    def _log_records(self, tp: TopicPartition, bad: list[OffsetsRecordError]) -> Iterator[Record]:
        """The records of ``tp`` from its log start, what recovery set aside restored first; a batch that cannot
        be read is added to ``bad`` and skipped."""
        self.offsets_log.restore_set_aside(tp)
        log_start_offset, chunks = self.offsets_log.read_from_start(tp)
        for chunk in chunks:
            for record in offsets_topic.iter_log_records(chunk, bad):
                if record.offset >= log_start_offset:
                    yield record

    def _install(
        self, tp: TopicPartition, loaded: LoadedPartition, bad: list[OffsetsRecordError], now: int
    ) -> None:
        for exc in bad:  # Kafka gives up on the partition here, and with it every group's offsets
            log.error(
                "loading %s: skipped what cannot be read (the records after it are loaded): %s", tp, exc
            )
        for group_id in loaded.group_ids():
            group = Group(group_id, self.config.group, rng=self.clock.random())
            offsets_topic.restore_group(group, loaded.groups.get(group_id), now)
            group.offsets.update(loaded.offsets.get(group_id, {}))
            self.groups[group_id] = group
            self._after(group)
        if loaded.group_ids():
            log.info("loaded %d groups from %s", len(loaded.group_ids()), tp)

    # --- __consumer_offsets ------------------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> TopicPartition:
        return TopicPartition(
            CONSUMER_OFFSETS_TOPIC,
            offsets_topic.partition_for(group_id, self.config.offsets_topic_partitions),
        )

    def ensure_offsets_topic(self) -> ErrorCode:
        """Create __consumer_offsets on first use (Kafka does it on the first FindCoordinator). Idempotent: a
        creation cut short (a full disk) is completed by a later call. After a failure, calls within
        ``OFFSETS_TOPIC_RETRY_MS`` answer COORDINATOR_NOT_AVAILABLE without trying (every client retries its
        FindCoordinator), and the failure is logged once a minute."""
        wanted = self.config.offsets_topic_partitions
        if len(self.offsets_log.offsets_partitions()) >= wanted and all(
            self.offsets_log.is_hosted(TopicPartition(CONSUMER_OFFSETS_TOPIC, p)) for p in range(wanted)
        ):
            return ErrorCode.NONE
        now = self.clock.milliseconds()
        failed_at = self._offsets_topic_failed_at
        if failed_at is not None and 0 <= now - failed_at < OFFSETS_TOPIC_RETRY_MS:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            self.offsets_log.create_offsets_topic(
                wanted,
                {
                    "cleanup.policy": "compact",
                    "compression.type": "producer",
                    "segment.bytes": self.config.offsets_topic_segment_bytes,
                },
            )
        except (StorageError, OSError) as exc:
            self._offsets_topic_failed_at = now
            if self._offsets_topic_failures.due(now) is not None:
                log.error(
                    "cannot create %s: %s (tried again on demand; said once a minute)",
                    CONSUMER_OFFSETS_TOPIC,
                    exc,
                )
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self._offsets_topic_failed_at = None
        return ErrorCode.NONE

    def _append_local(
        self, group_id: str, items: Sequence[tuple[bytes, bytes | None]]
    ) -> tuple[ErrorCode, int]:
        """Append ``items`` to the group's partition: (the log's error, the offset of the last record)."""
        if not items:
            return ErrorCode.NONE, -1
        if self.ensure_offsets_topic() is not ErrorCode.NONE:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        batch = offsets_topic.build_records(items, self.clock.milliseconds())
        error, last_offset = self.offsets_log.append(self.partition_for(group_id), memoryview(batch))
        if error is not ErrorCode.NONE:
            tp = self.partition_for(group_id)
            held = self._append_failures.due(self.clock.milliseconds(), (tp, error))
            if held is not None:  # a full disk fails every commit and join: a line a minute, not one each
                log.error(
                    "append to %s for group %s failed: %s (%d more such failures of the partition held back; said "
                    "once a minute)",
                    tp,
                    group_id,
                    error.name,
                    held,
                )
        return error, last_offset

    async def _append_replicated(
        self, group_id: str, items: Sequence[tuple[bytes, bytes | None]]
    ) -> tuple[ErrorCode, int]:
        """Append, then wait for the ISR (module doc): (the log's error, the offset of the last record)."""
        error, last_offset = self._append_local(group_id, items)
        if error is ErrorCode.NONE and last_offset >= 0:
            error = await self.offsets_log.wait_replicated(
                self.partition_for(group_id), last_offset, self.config.offsets_commit_timeout_ms
            )
            if error is not ErrorCode.NONE:
                log.warning(
                    "%s for group %s not replicated: %s", CONSUMER_OFFSETS_TOPIC, group_id, error.name
                )
        return error, last_offset

    def _append(self, group_id: str, items: Sequence[tuple[bytes, bytes | None]]) -> tuple[ErrorCode, int]:
        """Append without waiting for the ISR: (the error a client is told, the offset of the last record)."""
        error, last_offset = self._append_local(group_id, items)
        return commit_error(error), last_offset

    def _store_group(self, group: Group) -> None:
        value = None if group.state is GroupState.DEAD else offsets_topic.group_metadata_value(group)
        self._append(group.group_id, [(offsets_topic.group_metadata_key(group.group_id), value)])

    async def _store_assignment(self, group: Group, generation_id: int) -> None:
        """Write the group metadata holding the assignment of ``generation_id``, then tell the group."""
        key = offsets_topic.group_metadata_key(group.group_id)
        error, _ = await self._append_replicated(
            group.group_id, [(key, offsets_topic.group_metadata_value(group))]
        )
        if self.groups.get(group.group_id) is not group:
            return  # unloaded meanwhile: its members were told NOT_COORDINATOR
        answer = ASSIGNMENT_ERRORS.get(error, error)
        group.assignment_stored(generation_id, answer, self.clock.milliseconds())
        self._after(group)

    # --- after every call: answer parked requests, persist, re-arm the timer ----------------------------------

    def _after(self, group: Group) -> None:
        for reply in group.take_replies():
            self._resolve(group.group_id, reply)
        if group.take_store():
            self._store_group(group)
        self._arm(group)

    def _resolve(self, group_id: str, reply: Reply) -> None:
        for future in self._waiters.pop((group_id, reply.kind, reply.member_id), []):
            if not future.done():
                future.set_result(reply.result)

    async def _answer(
        self,
        group: Group,
        kind: str,
        member_id: str,
        outcome: _Result | Pending,
        answer: type[_Result],
        store: Coroutine[Any, Any, None] | None = None,
    ) -> _Result:
        """A join's or sync's answer: ``outcome`` itself, or once it is Pending, what the group later decides for
        ``member_id`` (the waiting request is parked under ``kind``). ``store`` (a sync's assignment to write to
        the log) runs to its end first, shielded: a leader that hangs up does not leave the group waiting for a
        store never finished."""
        future = self._park(group.group_id, kind, member_id) if isinstance(outcome, Pending) else None
        self._after(group)
        if store is not None:
            await asyncio.shield(store)
        result = outcome if future is None else await future
        assert isinstance(result, answer)
        return result

    def _park(self, group_id: str, kind: str, member_id: str) -> asyncio.Future[JoinResult | SyncResult]:
        future: asyncio.Future[JoinResult | SyncResult] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault((group_id, kind, member_id), []).append(future)
        return future

    def _arm(self, group: Group) -> None:
        deadline = group.next_deadline()
        if deadline is None or not self._active:
            return
        armed = self._armed.get(group.group_id)
        if armed is not None and armed <= deadline:
            return
        self._armed[group.group_id] = deadline
        heapq.heappush(self._deadlines, (deadline, group.group_id))
        if self._timer_at is None or deadline < self._timer_at:
            self._set_timer(deadline)

    def _set_timer(self, at: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._timer, self._timer_at = None, None
            return
        delay_s = max(0, at - self.clock.milliseconds()) / 1000
        self._timer = loop.call_later(delay_s, self._on_timer)
        self._timer_at = at

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, None
        self.poll(self.clock.milliseconds())
        if self._deadlines and self._active:
            self._set_timer(self._deadlines[0][0])

    def poll(self, now_ms: int) -> None:
        """Run every group deadline due at ``now_ms`` (the timer calls this; tests may call it directly)."""
        due: set[str] = set()
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, group_id = heapq.heappop(self._deadlines)
            due.add(group_id)
        for group_id in due:
            self._armed.pop(group_id, None)
            group = self.groups.get(group_id)
            if group is not None:
                group.poll(now_ms)
                self._after(group)

    # --- the group APIs ----------------------------------------------------------------------------------------

    def _group(self, group_id: str, create: bool = False) -> Group | None:
        group = self.groups.get(group_id)
        if group is None and create:
            group = Group(
                group_id,
                self.config.group,
                state_timestamp_ms=self.clock.milliseconds(),
                rng=self.clock.random(),
            )
            self.groups[group_id] = group
        return group

    async def join_group(self, group_id: str, request: JoinRequest) -> JoinResult:
        if not group_id:
            return JoinResult(ErrorCode.INVALID_GROUP_ID, request.member_id)
        group = self._group(group_id, create=not request.member_id)
        if group is None:
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, request.member_id)
        outcome = group.join(request, self.clock.milliseconds())
        return await self._answer(group, "join", outcome.member_id, outcome, JoinResult)

    async def sync_group(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult:
        if not group_id:
            return SyncResult(ErrorCode.INVALID_GROUP_ID)
        group = self._group(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        outcome = group.sync(
            member_id,
            generation_id,
            group_instance_id,
            assignments,
            self.clock.milliseconds(),
            protocol_type,
            protocol_name,
        )
        stored = group.take_assignment_store()
        store = None if stored is None else self._store_assignment(group, stored)
        return await self._answer(group, "sync", member_id, outcome, SyncResult, store)

    def heartbeat(
        self, group_id: str, member_id: str, generation_id: int, group_instance_id: str | None
    ) -> ErrorCode:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self._group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.heartbeat(member_id, generation_id, group_instance_id, self.clock.milliseconds())
        self._after(group)
        return error

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """(group error, one error per (member id, instance id) leaving)."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self._group(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        now = self.clock.milliseconds()
        errors = [group.leave(member_id, instance_id, now) for member_id, instance_id in members]
        self._after(group)
        return ErrorCode.NONE, errors

    # --- offsets -----------------------------------------------------------------------------------------------

    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, ErrorCode]:
        """Validate, write to __consumer_offsets, wait for the ISR, then make visible (module doc); an error per
        partition, as Kafka answers."""
        group = self._group(group_id, create=generation_id < 0 and not member_id)
        if group is None:
            error = ErrorCode.UNKNOWN_MEMBER_ID if member_id else ErrorCode.ILLEGAL_GENERATION
            return dict.fromkeys(offsets, error)
        error = group.validate_commit(member_id, generation_id, group_instance_id)
        if error is not ErrorCode.NONE:
            return dict.fromkeys(offsets, error)
        results, accepted = self._acceptable(offsets)
        results.update(await self._commit_replicated(group, member_id, accepted))
        return results

    def _acceptable(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, OffsetAndMetadata]]:
        """Kafka's per-partition checks of committed offsets: (the refused ones' errors, the accepted ones)."""
        results: dict[TopicPartition, ErrorCode] = {}
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        limit = self.config.group.offset_metadata_max_bytes
        for tp, committed in offsets.items():
            if not self.offsets_log.is_hosted(tp) or tp.topic == CONSUMER_OFFSETS_TOPIC:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif len(committed.metadata.encode()) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = committed
        return results, accepted

    async def _commit_replicated(
        self, group: Group, member_id: str, accepted: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, ErrorCode]:
        group_id = group.group_id
        records = [
            (offsets_topic.offset_commit_key(group_id, tp), offsets_topic.offset_commit_value(committed))
            for tp, committed in accepted.items()
        ]
        error, last_offset = await self._append_replicated(group_id, records)
        if error is not ErrorCode.NONE:
            return dict.fromkeys(accepted, commit_error(error))
        if self.groups.get(group_id) is not group:  # unloaded (or deleted) while the ISR took the records
            return dict.fromkeys(accepted, self.group_status(group_id))
        results = group.commit(member_id, accepted, self.clock.milliseconds(), last_offset)
        self._after(group)
        return results

    async def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: validated as a commit, written to __consumer_offsets, kept pending for ``producer_id``
        until its transaction ends (``complete_txn_offsets``); fetches meanwhile see the offsets before it."""
        group = self._group(group_id, create=True)
        if group is None:
            return dict.fromkeys(offsets, ErrorCode.NOT_COORDINATOR)
        if member_id or generation_id >= 0:  # KIP-447: a consumer's group metadata was sent with the offsets
            error = group.validate_commit(member_id, generation_id, group_instance_id)
            if error is not ErrorCode.NONE:
                return dict.fromkeys(offsets, error)
        results, accepted = self._acceptable(offsets)
        records = [
            (offsets_topic.offset_commit_key(group_id, tp), offsets_topic.offset_commit_value(committed))
            for tp, committed in accepted.items()
        ]
        error, _ = await self._append_replicated(group_id, records)
        if error is not ErrorCode.NONE:
            results.update(dict.fromkeys(accepted, commit_error(error)))
            return results
        self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(accepted)
        results.update(dict.fromkeys(accepted, ErrorCode.NONE))
        return results

    def complete_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The transaction marker of ``producer_id`` reached ``__consumer_offsets``: its pending offsets become
        the groups' committed ones (commit) or are dropped (abort)."""
        pending = self.pending_txn_offsets.pop(producer_id, {})
        if not commit:
            return
        now = self.clock.milliseconds()
        for group_id, offsets in pending.items():
            group = self.groups.get(group_id)
            if group is not None:
                group.commit("", offsets, now)
                self._after(group)

    def has_pending_txn_offsets(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether an open transaction holds an offset of ``tp`` for the group (OffsetFetch's require_stable)."""
        return any(tp in groups.get(group_id, {}) for groups in self.pending_txn_offsets.values())

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """Committed offsets of ``partitions`` (None: every partition the group has committed)."""
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None and group.state is not GroupState.DEAD else {}
        if partitions is None:
            return dict(stored)
        return {tp: stored.get(tp) for tp in partitions}

    def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: (the group's error, one error per partition); the group's status first (Kafka's
        ``handleDeleteOffsets``)."""
        status = self.group_status(group_id)
        if status is not ErrorCode.NONE:
            return status, {}
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if group.state is not GroupState.EMPTY:
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        results: dict[TopicPartition, ErrorCode] = {}
        doomed = []
        for tp in partitions:
            if tp.topic in subscribed:
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = ErrorCode.NONE
                if tp in group.offsets:
                    doomed.append(tp)
        error, last_offset = self._append(
            group_id, [(offsets_topic.offset_commit_key(group_id, tp), None) for tp in doomed]
        )
        if error is not ErrorCode.NONE:
            return error, {}
        group.remove_offsets(doomed, last_offset)
        return ErrorCode.NONE, results

    # --- admin -------------------------------------------------------------------------------------------------

    def list_groups(self, states: Iterable[str] = ()) -> list[Group]:
        wanted = {s.lower() for s in states}
        return [
            g
            for g in self.groups.values()
            if g.state is not GroupState.DEAD and (not wanted or g.state.value.lower() in wanted)
        ]

    def describe_group(self, group_id: str) -> Group | None:
        group = self.groups.get(group_id)
        return group if group is not None and group.state is not GroupState.DEAD else None

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups: an error per group, its status first (Kafka's ``handleDeleteGroups``)."""
        results: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            status = self.group_status(group_id)
            if status is not ErrorCode.NONE:
                results[group_id] = status
                continue
            group = self.groups.get(group_id)
            if group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND if group_id else ErrorCode.INVALID_GROUP_ID
                continue
            if group.state is not GroupState.EMPTY:
                results[group_id] = group.delete(self.clock.milliseconds())
                continue
            tombstones: list[tuple[bytes, bytes | None]] = [
                (offsets_topic.offset_commit_key(group_id, tp), None) for tp in group.offsets
            ]
            tombstones.append((offsets_topic.group_metadata_key(group_id), None))
            error, _ = self._append(group_id, tombstones)
            if error is not ErrorCode.NONE:
                results[group_id] = error
                continue
            results[group_id] = group.delete(self.clock.milliseconds())
            del self.groups[group_id]
        return results

    # --- periodic work -----------------------------------------------------------------------------------------

    def schedule_due(self, now_ms: int) -> None:
        """Offsets retention, every ``offsets.retention.check.interval.ms`` (called on the broker's tick)."""
        if self._next_retention_check is None or now_ms < self._next_retention_check:
            return
        self._next_retention_check = now_ms + self.config.offsets_retention_check_interval_ms
        self.expire_offsets(now_ms)

    def expire_offsets(self, now_ms: int) -> int:
        removed = 0
        for group_id, group in list(self.groups.items()):
            expired = group.expire_offsets(now_ms, self.config.offsets_retention_ms)
            tombstones: list[tuple[bytes, bytes | None]] = [
                (offsets_topic.offset_commit_key(group_id, tp), None) for tp in expired
            ]
            gone = group.state is GroupState.EMPTY and not group.offsets and not group.pending_members
            if gone:
                tombstones.append((offsets_topic.group_metadata_key(group_id), None))
            _, last_offset = self._append(group_id, tombstones)
            group.remove_offsets(expired, last_offset)
            removed += len(expired)
            if gone:
                group.delete(now_ms)
                del self.groups[group_id]
        return removed


def commit_error(error: ErrorCode) -> ErrorCode:
    """What an OffsetCommit (or a deletion) whose append failed with ``error`` answers (``COMMIT_ERRORS``)."""
    return COMMIT_ERRORS.get(error, error)
