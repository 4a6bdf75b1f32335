"""One classic consumer group as a state machine: members, generations, rebalances and committed offsets.

Sans-IO: every call takes ``now_ms`` and returns at once; nothing here sleeps, schedules or touches a file. A
request that must wait (a JoinGroup until the rebalance completes, a SyncGroup until the assignment is stored)
gets ``PENDING`` back, and its answer appears later in the group's outbox (``take_replies``), put there by
whichever later call completed it: another member's join, ``assignment_stored``, or ``poll(now_ms)`` when a
deadline passes. ``next_deadline()`` says when ``poll`` has work to do. The caller (``GroupCoordinator``) parks
the request, drains the outbox after every call, and persists the group when ``take_store()`` says so.

The leader's SyncGroup does not make the group Stable by itself: as Kafka, the group stays CompletingRebalance
until its metadata with the new assignment is in ``__consumer_offsets`` (``take_assignment_store()`` asks the
caller to write it; ``assignment_stored(generation, error)`` reports how that went). Stored: the group becomes
Stable and every waiting member gets its share. Failed: every waiting member gets the error, the assignment is
dropped and the group rebalances again.

Committed offsets become visible only once their records are replicated (the caller calls ``commit`` then); each
carries the offset of its record in ``__consumer_offsets``, so a commit acknowledged after a later one (or after a
deletion of the offset) does not overwrite it.

New member ids are drawn from the ``rng`` the group is given (the coordinator's clock's ``random()``).

States and transitions (Kafka's names)::

    Empty ──join──> PreparingRebalance ──all joined / rebalance timeout──> CompletingRebalance
      ^                 ^  ^     │ (no member left)                            │ leader's SyncGroup,
      │                 │  │     └──────────────> Empty                        │ assignment stored
      │                 │  └──────── assignment not stored ────────────────────┤
      │                 │                                                      v
      │                 └──── join, leave, session expiry, new metadata ──── Stable
      └── every member gone ──
    any state ──delete / offsets expired with no members──> Dead

Not thread-safe: the coordinator calls it from the event loop only.
"""

from __future__ import annotations

import enum
import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from samsa.protocol.errors import ErrorCode
from samsa.server_defaults import default
from samsa.storage.topic import TopicPartition

from .subscriptions import topics_of_subscription

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
"""How long a new member's first JoinGroup may wait for the rebalance (Kafka's KIP-394 value)."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker keys a group obeys (``group.*``, ``offset.metadata.max.bytes``)."""

    min_session_timeout_ms: int = default("group.min.session.timeout.ms")
    max_session_timeout_ms: int = default("group.max.session.timeout.ms")
    initial_rebalance_delay_ms: int = default("group.initial.rebalance.delay.ms")
    max_size: int = default("group.max.size")
    offset_metadata_max_bytes: int = default("offset.metadata.max.bytes")


@dataclass(slots=True)
class Member:
    """A member of the group. Mutable; owned by its ``Group``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = True
    last_heartbeat_ms: int = 0

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to a parked request: ``kind`` is "join" or "sync", for the member ``member_id``."""

    kind: str
    member_id: str
    result: JoinResult | SyncResult


class Pending:
    """The request waits; its answer comes through the outbox under ``member_id``."""

    __slots__ = ("member_id",)

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id

    def __repr__(self) -> str:
        return f"Pending({self.member_id!r})"


@dataclass(frozen=True, slots=True)
class JoinRequest:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    require_known_member_id: bool = True


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset (what __consumer_offsets stores for one partition)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1


@dataclass(slots=True)
class Group:
    """One group (module doc). Not thread-safe."""

    group_id: str
    config: GroupConfig = field(default_factory=GroupConfig)
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> expiry (ms)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    state_timestamp_ms: int = 0
    join_deadline_ms: int | None = None
    initial_delay_deadline_ms: int | None = None
    sync_deadline_ms: int | None = None
    rng: random.Random = field(default_factory=random.Random)
    """Where member ids come from: the coordinator passes its clock's ``random()``, so tests fix them by seed."""
    record_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    """Where in ``__consumer_offsets`` the visible commit (or the deletion) of each partition was written."""
    _replies: list[Reply] = field(default_factory=list)
    _store: bool = False
    _assignment_store: int | None = None  # the generation whose assignment waits to be written
    _assignment_requested: bool = False

    # --- outbox ------------------------------------------------------------------------------------------------

    def take_replies(self) -> list[Reply]:
        replies, self._replies = self._replies, []
        return replies

    def take_store(self) -> bool:
        """True once after a change that must be written to __consumer_offsets (group metadata)."""
        store, self._store = self._store, False
        return store

    def take_assignment_store(self) -> int | None:
        """The generation whose assignment the leader just sent, once: the caller writes the group metadata and
        reports with ``assignment_stored``."""
        if not self._assignment_requested:
            return None
        self._assignment_requested = False
        return self._assignment_store

    def _transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    # --- queries -----------------------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self.members and not self.pending_members

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol only); None when they cannot be known."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None if self.members else set()
        topics: set[str] = set()
        for member in self.members.values():
            parsed = topics_of_subscription(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    def next_deadline(self) -> int | None:
        deadlines: list[int] = []
        for member in self.members.values():
            if not member.awaiting_join and not member.awaiting_sync:
                deadlines.append(member.last_heartbeat_ms + member.session_timeout_ms)
            elif member.awaiting_join and member.is_new:
                deadlines.append(member.last_heartbeat_ms + NEW_MEMBER_JOIN_TIMEOUT_MS)
        deadlines.extend(self.pending_members.values())
        for deadline in (self.join_deadline_ms, self.initial_delay_deadline_ms, self.sync_deadline_ms):
            if deadline is not None:
                deadlines.append(deadline)
        return min(deadlines) if deadlines else None

    # --- JoinGroup ---------------------------------------------------------------------------------------------

    def join(self, request: JoinRequest, now_ms: int) -> JoinResult | Pending:
        error = self._validate_join(request)
        if error is not None:
            return JoinResult(error, request.member_id)
        if not request.member_id:
            return self._join_unknown_member(request, now_ms)
        return self._join_known_member(request, now_ms)

    def _validate_join(self, request: JoinRequest) -> ErrorCode | None:
        cfg = self.config
        if not cfg.min_session_timeout_ms <= request.session_timeout_ms <= cfg.max_session_timeout_ms:
            return ErrorCode.INVALID_SESSION_TIMEOUT
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if not request.protocol_type or not request.protocols:
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if self.members and not self._supports(request.protocol_type, [n for n, _ in request.protocols]):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _supports(self, protocol_type: str, names: Iterable[str]) -> bool:
        if protocol_type != self.protocol_type:
            return False
        return bool(self._candidate_protocols() & set(names))

    def _candidate_protocols(self) -> set[str]:
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def _join_unknown_member(self, request: JoinRequest, now_ms: int) -> JoinResult | Pending:
        instance_id = request.group_instance_id
        prefix = instance_id if instance_id is not None else request.client_id
        new_member_id = self._new_member_id(prefix)
        if instance_id is not None and instance_id in self.static_members:
            return self._replace_static_member(request, new_member_id, now_ms)
        if len(self.members) + len(self.pending_members) >= self.config.max_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if instance_id is None and request.require_known_member_id:
            self.pending_members[new_member_id] = now_ms + request.session_timeout_ms
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_member_id)
        return self._add_member_and_rebalance(request, new_member_id, now_ms)

    def _new_member_id(self, prefix: str) -> str:
        """``<prefix>-<uuid>`` (Kafka's form), drawn from ``rng`` and never one the group already holds."""
        while True:
            member_id = f"{prefix}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
            if member_id not in self.members and member_id not in self.pending_members:
                return member_id

    def _join_known_member(self, request: JoinRequest, now_ms: int) -> JoinResult | Pending:
        member_id = request.member_id
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            if len(self.members) >= self.config.max_size:
                return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
            return self._add_member_and_rebalance(request, member_id, now_ms)
        if self._instance_fenced(request.group_instance_id, member_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
        member = self.members.get(member_id)
        if member is None or self.state in (GroupState.EMPTY, GroupState.DEAD):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        member.last_heartbeat_ms = now_ms
        protocols = list(request.protocols)
        if self.state is GroupState.PREPARING_REBALANCE:
            self._update_member(member, request, protocols)
            member.awaiting_join = True
            self._try_complete_join(now_ms)
            return Pending(member_id)
        if self.state is GroupState.COMPLETING_REBALANCE:
            if protocols == member.protocols:
                return self._join_result(member)
            self._update_member(member, request, protocols)
            member.awaiting_join = True
            self._prepare_rebalance(now_ms)
            self._try_complete_join(now_ms)
            return Pending(member_id)
        # Stable
        if member_id == self.leader_id or protocols != member.protocols:
            self._update_member(member, request, protocols)
            member.awaiting_join = True
            self._prepare_rebalance(now_ms)
            self._try_complete_join(now_ms)
            return Pending(member_id)
        return self._join_result(member)

    def _update_member(
        self, member: Member, request: JoinRequest, protocols: list[tuple[str, bytes]]
    ) -> None:
        member.protocols = protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.client_id = request.client_id
        member.client_host = request.client_host

    def _add_member_and_rebalance(self, request: JoinRequest, member_id: str, now_ms: int) -> Pending:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
            awaiting_join=True,
            last_heartbeat_ms=now_ms,
        )
        self._add(member)
        if self.state is GroupState.PREPARING_REBALANCE and self.initial_delay_deadline_ms is not None:
            # a member joining during the initial delay extends it, up to the rebalance timeout
            extended = now_ms + self.config.initial_rebalance_delay_ms
            self.initial_delay_deadline_ms = min(extended, self.join_deadline_ms or extended)
        self._prepare_rebalance(now_ms)
        self._try_complete_join(now_ms)
        return Pending(member_id)

    def _add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def _replace_static_member(
        self, request: JoinRequest, new_member_id: str, now_ms: int
    ) -> JoinResult | Pending:
        assert request.group_instance_id is not None
        old_id = self.static_members[request.group_instance_id]
        old = self.members.pop(old_id)
        self._reply_error(old, ErrorCode.FENCED_INSTANCE_ID)
        protocols = list(request.protocols)
        old.member_id = new_member_id
        old.last_heartbeat_ms = now_ms
        old.awaiting_join = old.awaiting_sync = False
        self.members[new_member_id] = old
        self.static_members[request.group_instance_id] = new_member_id
        was_leader = self.leader_id == old_id
        if was_leader:
            self.leader_id = new_member_id
        self._update_member(old, request, protocols)
        # as Kafka: a Stable group stays Stable unless the rejoin would change the group's protocol
        if self.state is GroupState.STABLE and self._select_protocol() == self.protocol_name:
            self._store = True
            result = self._join_result(old)
            if was_leader:
                # the leader learns the members but need not compute a new assignment
                return JoinResult(
                    ErrorCode.NONE,
                    new_member_id,
                    self.generation_id,
                    self.protocol_type,
                    self.protocol_name,
                    new_member_id,
                    self._joined_members(),
                    skip_assignment=True,
                )
            return result
        old.awaiting_join = True
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(now_ms)
        self._try_complete_join(now_ms)
        return Pending(new_member_id)

    def _instance_fenced(self, instance_id: str | None, member_id: str) -> bool:
        if instance_id is None:
            return False
        known = self.static_members.get(instance_id)
        return known is not None and known != member_id

    def _joined_members(self) -> tuple[JoinedMember, ...]:
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        )

    def _join_result(self, member: Member) -> JoinResult:
        is_leader = member.member_id == self.leader_id
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            self.generation_id,
            self.protocol_type,
            self.protocol_name,
            self.leader_id or "",
            self._joined_members() if is_leader else (),
        )

    # --- rebalance ---------------------------------------------------------------------------------------------

    def _prepare_rebalance(self, now_ms: int) -> None:
        if self.state is GroupState.PREPARING_REBALANCE:
            return
        self._assignment_store = None
        if self.state is GroupState.COMPLETING_REBALANCE:
            for member in self.members.values():
                if member.awaiting_sync:
                    member.awaiting_sync = False
                    self._replies.append(
                        Reply("sync", member.member_id, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                    )
        self.sync_deadline_ms = None
        rebalance_timeout = max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        self.join_deadline_ms = now_ms + rebalance_timeout
        if self.state is GroupState.EMPTY:
            delay = min(self.config.initial_rebalance_delay_ms, rebalance_timeout)
            self.initial_delay_deadline_ms = now_ms + delay if delay > 0 else None
        self._transition(GroupState.PREPARING_REBALANCE, now_ms)

    def _all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def _try_complete_join(self, now_ms: int) -> None:
        if self.state is not GroupState.PREPARING_REBALANCE:
            return
        if self.initial_delay_deadline_ms is not None:
            if now_ms < self.initial_delay_deadline_ms and (self.join_deadline_ms or 0) > now_ms:
                return
            self.initial_delay_deadline_ms = None
        if self._all_joined() or (self.join_deadline_ms is not None and now_ms >= self.join_deadline_ms):
            self._complete_join(now_ms)

    def _complete_join(self, now_ms: int) -> None:
        for member in list(self.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                self._remove(member)
        self.join_deadline_ms = None
        self.initial_delay_deadline_ms = None
        self.generation_id += 1
        if not self.members:
            self.protocol_name = None
            self.leader_id = None
            self._transition(GroupState.EMPTY, now_ms)
            self._store = True
            return
        self.protocol_name = self._select_protocol()
        if self.leader_id not in self.members:
            self.leader_id = next(iter(self.members))
        self._transition(GroupState.COMPLETING_REBALANCE, now_ms)
        rebalance_timeout = max(m.rebalance_timeout_ms for m in self.members.values())
        self.sync_deadline_ms = now_ms + rebalance_timeout
        for member in self.members.values():
            member.assignment = b""
            if member.awaiting_join:
                member.awaiting_join = False
                member.is_new = False
                member.last_heartbeat_ms = now_ms
                self._replies.append(Reply("join", member.member_id, self._join_result(member)))

    def _select_protocol(self) -> str:
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            for name in member.protocol_names():
                if name in candidates:
                    votes[name] = votes.get(name, 0) + 1
                    break
        return max(votes, key=lambda name: votes[name]) if votes else sorted(candidates)[0]

    def _remove(self, member: Member) -> None:
        del self.members[member.member_id]
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member.member_id:
            self.leader_id = next(iter(self.members), None)
        self._reply_error(member, ErrorCode.UNKNOWN_MEMBER_ID)

    def _reply_error(self, member: Member, error: ErrorCode) -> None:
        if member.awaiting_join:
            member.awaiting_join = False
            self._replies.append(Reply("join", member.member_id, JoinResult(error, member.member_id)))
        if member.awaiting_sync:
            member.awaiting_sync = False
            self._replies.append(Reply("sync", member.member_id, SyncResult(error)))

    def _remove_and_update(self, member: Member, now_ms: int) -> None:
        self._remove(member)
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(now_ms)
        self._try_complete_join(now_ms)

    # --- SyncGroup ---------------------------------------------------------------------------------------------

    def sync(
        self,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult | Pending:
        member = self.members.get(member_id)
        if self.state is GroupState.DEAD:
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._instance_fenced(group_instance_id, member_id):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        if member is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != self.generation_id:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != self.protocol_type) or (
            protocol_name is not None and protocol_name != self.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if self.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        member.last_heartbeat_ms = now_ms
        if self.state is GroupState.STABLE:
            return self._sync_result(member)
        member.awaiting_sync = True
        if member_id == self.leader_id and self._assignment_store is None:
            for each in self.members.values():
                each.assignment = assignments.get(each.member_id, b"")
            self._assignment_store = self.generation_id
            self._assignment_requested = True
        return Pending(member_id)

    def assignment_stored(self, generation_id: int, error: ErrorCode, now_ms: int) -> None:
        """The group metadata of ``generation_id``'s assignment was written (NONE) or not (the error members get).
        Ignored when the group has moved on (another rebalance began meanwhile)."""
        if (
            self.state is not GroupState.COMPLETING_REBALANCE
            or self._assignment_store is None
            or self._assignment_store != generation_id
        ):
            return
        self._assignment_store = None
        if error is ErrorCode.NONE:
            self.sync_deadline_ms = None
            self._transition(GroupState.STABLE, now_ms)
            self._answer_syncs(self._sync_result)
            return
        self._answer_syncs(lambda member: SyncResult(error))
        for member in self.members.values():
            member.assignment = b""
        self._prepare_rebalance(now_ms)

    def _answer_syncs(self, result: Callable[[Member], SyncResult]) -> None:
        for member in self.members.values():
            if member.awaiting_sync:
                member.awaiting_sync = False
                self._replies.append(Reply("sync", member.member_id, result(member)))

    def _sync_result(self, member: Member) -> SyncResult:
        return SyncResult(ErrorCode.NONE, self.protocol_type, self.protocol_name, member.assignment)

    # --- Heartbeat / LeaveGroup --------------------------------------------------------------------------------

    def heartbeat(
        self, member_id: str, generation_id: int, group_instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._instance_fenced(group_instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = self.members.get(member_id)
        if member is None or self.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member.last_heartbeat_ms = now_ms
        if self.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, member_id: str, group_instance_id: str | None, now_ms: int) -> ErrorCode:
        """One member leaves (LeaveGroup v0-2 send a member id; v3+ a member id and/or an instance id)."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group_instance_id is not None:
            known = self.static_members.get(group_instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and member_id != known:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = known
        if member_id in self.pending_members:
            del self.pending_members[member_id]
            self._try_complete_join(now_ms)
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._remove_and_update(member, now_ms)
        return ErrorCode.NONE

    # --- time --------------------------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> None:
        """Expire what is due at ``now_ms``: silent members, pending member ids, rebalance and sync deadlines."""
        for pending_id, expiry in list(self.pending_members.items()):
            if now_ms >= expiry:
                del self.pending_members[pending_id]
        for member in list(self.members.values()):
            if member.member_id in self.members and self._expired(member, now_ms):
                self._remove_and_update(member, now_ms)
        if (
            self.state is GroupState.COMPLETING_REBALANCE
            and self.sync_deadline_ms is not None
            and now_ms >= self.sync_deadline_ms
        ):
            self.sync_deadline_ms = None
            for member in list(self.members.values()):
                if (
                    not member.awaiting_sync
                ):  # the leader among them: its sync would have made the group Stable
                    self._remove(member)
            self._prepare_rebalance(now_ms)
        self._try_complete_join(now_ms)

    def _expired(self, member: Member, now_ms: int) -> bool:
        if member.awaiting_join:
            return member.is_new and now_ms >= member.last_heartbeat_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        if member.awaiting_sync:
            return False
        return now_ms >= member.last_heartbeat_ms + member.session_timeout_ms

    # --- offsets -----------------------------------------------------------------------------------------------

    def validate_commit(self, member_id: str, generation_id: int, group_instance_id: str | None) -> ErrorCode:
        """Whether this member may commit now (Kafka's order of checks); NONE when it may."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._instance_fenced(group_instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if generation_id < 0 and not member_id and self.state is GroupState.EMPTY:
            return ErrorCode.NONE  # a standalone consumer (assign) storing offsets in a group with no members
        if self.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def commit(
        self,
        member_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        now_ms: int,
        record_offset: int = -1,
    ) -> dict[TopicPartition, ErrorCode]:
        """Make visible offsets the caller has validated (``validate_commit``) and stored at ``record_offset`` of
        __consumer_offsets (-1: not known); oversized metadata is refused. A partition whose visible commit (or
        deletion) was written later is left as it is: this commit is answered, and superseded."""
        member = self.members.get(member_id)
        if member is not None:
            member.last_heartbeat_ms = now_ms
        errors: dict[TopicPartition, ErrorCode] = {}
        for tp, committed in offsets.items():
            if len(committed.metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            errors[tp] = ErrorCode.NONE
            if record_offset < 0 or self.record_offsets.get(tp, -1) < record_offset:
                self.offsets[tp] = committed
                self.record_offsets[tp] = record_offset
        return errors

    def remove_offsets(self, partitions: Iterable[TopicPartition], record_offset: int) -> None:
        """Forget the offsets of ``partitions``, whose deletion was written at ``record_offset``."""
        for tp in partitions:
            self.offsets.pop(tp, None)
            self.record_offsets[tp] = record_offset

    def expire_offsets(self, now_ms: int, retention_ms: int) -> list[TopicPartition]:
        """Offsets past retention (KIP-211): for a group with members, none; for an empty consumer group, counted
        from when it became empty; for a standalone group (no protocol), from each commit. Removed and returned."""
        if self.state is not GroupState.EMPTY:
            return []
        expired = []
        for tp, committed in list(self.offsets.items()):
            if committed.expire_timestamp >= 0:
                due = now_ms >= committed.expire_timestamp
            elif self.protocol_type is None:
                due = now_ms >= committed.commit_timestamp + retention_ms
            else:
                due = now_ms >= max(self.state_timestamp_ms, committed.commit_timestamp) + retention_ms
            if due:
                del self.offsets[tp]
                expired.append(tp)
        return expired

    def delete(self, now_ms: int) -> ErrorCode:
        """DeleteGroups: only an empty group can go (NON_EMPTY_GROUP otherwise)."""
        if self.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if self.state is not GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        self.offsets.clear()
        self._transition(GroupState.DEAD, now_ms)
        return ErrorCode.NONE
