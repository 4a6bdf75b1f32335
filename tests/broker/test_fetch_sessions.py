"""The leader's fetch sessions (KIP-227) against Kafka's rules, in memory: which requests make, use, close or
refuse a session, and which partitions an incremental answer carries."""

from __future__ import annotations

from samsa.broker.fetch_sessions import FetchContext, FetchSessions
from samsa.broker.replica_manager import FetchRequestPartition, FetchResult
from samsa.protocol.errors import ErrorCode
from samsa.protocol.fetch_session import MAX_EPOCH, next_epoch
from samsa.storage.topic import TopicPartition

A, B, C = (TopicPartition("t", i) for i in range(3))


def want(tp: TopicPartition, offset: int = 0) -> FetchRequestPartition:
    return FetchRequestPartition(tp, offset, 1 << 20, 1, 2, 0)


def quiet(hw: int = 5) -> FetchResult:
    """A partition with nothing new: no records, the same offsets as before."""
    return FetchResult(ErrorCode.NONE, hw, hw, 0)


def opened(sessions: FetchSessions, *tps: TopicPartition) -> FetchContext:
    context = sessions.context(0, 0, [want(tp) for tp in tps], (), offered=True)
    assert isinstance(context, FetchContext) and context.session_id != 0
    sessions.answered(context, [quiet() for _ in tps])
    return context


def test_a_full_fetch_asking_for_a_session_gets_one_and_reads_what_it_named() -> None:
    sessions = FetchSessions()
    context = sessions.context(0, 0, [want(A), want(B)], (), offered=True)
    assert isinstance(context, FetchContext)
    assert context.session_id != 0 and context.incremental is None and len(sessions) == 1
    assert [p.tp for p in context.partitions] == [A, B]
    assert [r.tp for r, _ in sessions.answered(context, [quiet(), quiet()])] == [A, B]  # a full answer: all


def test_no_session_for_a_request_not_offered_one_or_one_that_asks_for_none() -> None:
    sessions = FetchSessions()
    for epoch, offered in ((0, False), (-1, True), (-1, False)):
        context = sessions.context(0, epoch, [want(A)], (), offered=offered)
        assert isinstance(context, FetchContext) and context.session_id == 0
    assert len(sessions) == 0
    assert FetchSessions(slots=0).context(0, 0, [want(A)], (), offered=True) == FetchContext([want(A)])


def test_an_incremental_fetch_reads_every_partition_of_the_session_and_answers_only_what_changed() -> None:
    sessions = FetchSessions()
    session_id = opened(sessions, A, B, C).session_id
    context = sessions.context(session_id, 1, [want(B, 7)], (), offered=True)  # only B moved
    assert isinstance(context, FetchContext) and context.session_id == session_id
    assert [(p.tp, p.fetch_offset) for p in context.partitions] == [(A, 0), (B, 7), (C, 0)]
    results = [quiet(), FetchResult(ErrorCode.NONE, 6, 6, 0), FetchResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)]
    carried = [request.tp for request, _ in sessions.answered(context, results)]
    assert carried == [B, C]  # B's high watermark moved, C has an error; A said nothing new
    context = sessions.context(session_id, 2, [], (), offered=True)
    assert isinstance(context, FetchContext)
    carried = [
        r.tp for r, _ in sessions.answered(context, [quiet(), FetchResult(ErrorCode.NONE, 6, 6, 0), quiet()])
    ]
    assert carried == [C]  # B's new high watermark was sent already; C's offsets differ from its error's


def test_a_forgotten_partition_leaves_the_session_and_a_new_one_joins_it() -> None:
    sessions = FetchSessions()
    session_id = opened(sessions, A, B).session_id
    context = sessions.context(session_id, 1, [want(C, 3)], [A], offered=True)
    assert isinstance(context, FetchContext)
    assert [p.tp for p in context.partitions] == [B, C]
    assert [r.tp for r, _ in sessions.answered(context, [quiet(), quiet()])] == [C]  # new: always answered


def test_a_wrong_epoch_or_an_unknown_session_is_a_top_level_error() -> None:
    sessions = FetchSessions()
    session_id = opened(sessions, A).session_id
    assert sessions.context(session_id, 2, [], (), offered=True) is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert sessions.context(session_id + 1, 1, [], (), offered=True) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert isinstance(sessions.context(session_id, 1, [], (), offered=True), FetchContext)  # still there


def test_a_full_fetch_naming_a_session_closes_it() -> None:
    sessions = FetchSessions()
    old = opened(sessions, A).session_id
    new = sessions.context(old, 0, [want(A)], (), offered=True)
    assert isinstance(new, FetchContext) and new.session_id not in (0, old) and len(sessions) == 1
    assert sessions.context(old, 1, [], (), offered=True) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert sessions.context(new.session_id, -1, [want(A)], (), offered=True) == FetchContext([want(A)])
    assert len(sessions) == 0


def test_the_least_recently_used_session_makes_room() -> None:
    sessions = FetchSessions(slots=2)
    first, second = opened(sessions, A).session_id, opened(sessions, A).session_id
    assert isinstance(sessions.context(first, 1, [], (), offered=True), FetchContext)  # first used last
    opened(sessions, A)
    assert len(sessions) == 2
    assert sessions.context(second, 1, [], (), offered=True) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert isinstance(sessions.context(first, 2, [], (), offered=True), FetchContext)


def test_after_the_largest_epoch_comes_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42 and next_epoch(MAX_EPOCH) == 1


def test_a_partition_that_brought_records_is_read_last_next_time() -> None:
    """The response's byte budget goes to the partitions in session order: one that just got records goes to
    the back, so a busy partition cannot keep the others' share."""
    sessions = FetchSessions()
    session_id = opened(sessions, A, B, C).session_id
    context = sessions.context(session_id, 1, [], (), offered=True)
    assert isinstance(context, FetchContext)
    with_records = FetchResult(ErrorCode.NONE, 5, 5, 0, records=object())  # type: ignore[arg-type]
    sessions.answered(context, [with_records, quiet(), quiet()])
    context = sessions.context(session_id, 2, [], (), offered=True)
    assert isinstance(context, FetchContext)
    assert [p.tp for p in context.partitions] == [B, C, A]
