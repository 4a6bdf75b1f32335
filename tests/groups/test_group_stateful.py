"""Random sequences of group calls against the state machine's invariants (hypothesis, stateful).

Oracle: a parked request is answered exactly once and only if it was parked; a Stable or CompletingRebalance group
has a leader among its members; a group is Stable only in a generation whose assignment was reported stored (a
store may fail, or be reported after the group moved on); generations never go back; a committed offset is never lost to any call other than
a newer commit; and once every member has gone silent, time alone brings the group back to Empty.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from samsa.coordinator.group import (
    Group,
    GroupConfig,
    GroupState,
    JoinRequest,
    JoinResult,
    OffsetAndMetadata,
    Pending,
    SyncResult,
)
from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import TopicPartition

SESSION = 10_000
REBALANCE = 20_000
TP = TopicPartition("t", 0)


def join_request(member_id: str) -> JoinRequest:
    return JoinRequest(member_id, None, "c", "/h", SESSION, REBALANCE, "consumer", [("range", b"")])


class GroupMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.group = Group("g", GroupConfig(initial_rebalance_delay_ms=0))
        self.now = 1_000_000
        self.known: list[str] = []
        self.parked: set[tuple[str, str]] = set()
        self.generation = 0
        self.committed: OffsetAndMetadata | None = None
        self.stores: list[int] = []  # generations whose assignment store was asked for, not reported yet
        self.stored: set[int] = set()

    def _drain(self) -> None:
        for reply in self.group.take_replies():
            key = (reply.kind, reply.member_id)
            assert key in self.parked, f"answer to a request that was not parked: {key}"
            self.parked.discard(key)

    def _park(self, kind: str, outcome: object) -> None:
        if isinstance(outcome, Pending):
            self.parked.add((kind, outcome.member_id))  # a repeated request joins the earlier one
        self._drain()

    @rule()
    def new_member_joins(self) -> None:
        first = self.group.join(join_request(""), self.now)
        assert isinstance(first, JoinResult)
        if first.error is ErrorCode.MEMBER_ID_REQUIRED:
            self.known.append(first.member_id)
            self._park("join", self.group.join(join_request(first.member_id), self.now))

    @rule(data=st.data())
    def member_rejoins(self, data: st.DataObject) -> None:
        if self.known:
            member_id = data.draw(st.sampled_from(self.known))
            self._park("join", self.group.join(join_request(member_id), self.now))

    @rule(data=st.data())
    def member_syncs(self, data: st.DataObject) -> None:
        if self.known:
            member_id = data.draw(st.sampled_from(self.known))
            assignments = {m: m.encode() for m in self.group.members}
            outcome = self.group.sync(member_id, self.group.generation_id, None, assignments, self.now)
            if isinstance(outcome, SyncResult) and outcome.error is ErrorCode.NONE:
                assert outcome.assignment == self.group.members[member_id].assignment
            store = self.group.take_assignment_store()
            if store is not None:
                self.stores.append(store)
            self._park("sync", outcome)

    @rule(data=st.data(), error=st.sampled_from([ErrorCode.NONE, ErrorCode.COORDINATOR_NOT_AVAILABLE]))
    def assignment_store_reported(self, data: st.DataObject, error: ErrorCode) -> None:
        if self.stores:
            generation = self.stores.pop(data.draw(st.integers(0, len(self.stores) - 1)))
            if error is ErrorCode.NONE:
                self.stored.add(generation)
            self.group.assignment_stored(generation, error, self.now)
            self._drain()

    @rule(data=st.data())
    def member_heartbeats(self, data: st.DataObject) -> None:
        if self.known:
            member_id = data.draw(st.sampled_from(self.known))
            self.group.heartbeat(member_id, self.group.generation_id, None, self.now)
            self._drain()

    @rule(data=st.data())
    def member_leaves(self, data: st.DataObject) -> None:
        if self.known:
            member_id = data.draw(st.sampled_from(self.known))
            self.group.leave(member_id, None, self.now)
            self._drain()

    @rule(data=st.data(), offset=st.integers(0, 1000))
    def member_commits(self, data: st.DataObject, offset: int) -> None:
        if self.known:
            member_id = data.draw(st.sampled_from(self.known))
            if self.group.validate_commit(member_id, self.group.generation_id, None) is ErrorCode.NONE:
                committed = OffsetAndMetadata(offset, commit_timestamp=self.now)
                assert self.group.commit(member_id, {TP: committed}, self.now) == {TP: ErrorCode.NONE}
                self.committed = committed
            self._drain()

    @rule(ms=st.sampled_from([1, 1000, SESSION // 2, SESSION, REBALANCE, 60_000]))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self.group.poll(self.now)
        self._drain()

    @invariant()
    def consistent(self) -> None:
        if not hasattr(self, "group"):
            return
        group = self.group
        assert group.generation_id >= self.generation
        self.generation = group.generation_id
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            assert group.members and group.leader_id in group.members
        if group.state is GroupState.EMPTY:
            assert not group.members
        if group.state is GroupState.STABLE:
            assert group.generation_id in self.stored
        assert group.offsets.get(TP) == self.committed
        for kind, member_id in self.parked:
            member = group.members.get(member_id)
            assert member is not None, f"{kind} of {member_id} parked for a member that is gone"
            assert member.awaiting_join if kind == "join" else member.awaiting_sync

    def teardown(self) -> None:
        if not hasattr(self, "group"):
            return
        # every member goes silent: time alone empties the group and answers everything parked
        for _ in range(4):
            self.now += 400_000
            self.group.poll(self.now)
            self._drain()
        assert self.group.state is GroupState.EMPTY
        assert not self.parked
        assert self.group.offsets.get(TP) == self.committed


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
