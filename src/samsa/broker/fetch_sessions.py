"""Incremental fetch sessions (KIP-227), offered to followers.

A follower fetches every partition it follows from a leader in each request, and most of them have nothing new
in any one round. With a session the leader remembers the partitions and where the follower fetches them; the
follower's next requests name only the partitions whose position changed (and the ones it drops, as forgotten
topics), and the leader's answers carry only the partitions that have something to say: records, an error, a
diverging epoch, or a high watermark, last stable offset or log start offset other than the one last sent; a
partition that brought records moves to the back of the session, so that the response's byte budget goes to the
others first next time, as in Kafka. The leader still reads every partition of the session on each fetch (the
follower's position on all of them counts for the ISR and the high watermark, as in Kafka), but neither side
encodes, decodes or walks the unchanged ones.

The rules are Kafka's, by the request's ``session_id`` and ``session_epoch``:

- epoch -1: a full fetch outside any session (the session named, if any, is closed); the answer has session id 0;
- epoch 0: a full fetch that asks for a new session (the session named, if any, is closed first); the answer
  carries the new session's id, or 0 when none was made;
- epoch N > 0: an incremental fetch in session ``session_id``, whose next epoch must be N: else the answer is the
  top-level error FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH and no partition, and the client
  starts over with a full fetch. The epoch after 2^31-1 is 1.

Sessions are made for followers only (a request with a replica id) and only with topics named by name (Fetch
v7-v12, what Samsa's followers send): consumers, and followers naming topics by id, are answered as before,
with session id 0, which tells them to keep sending full requests (Kafka's answer when it has no slot). At most
``max.incremental.fetch.session.cache.slots`` sessions are kept; making one more drops the least recently used.
Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode
from samsa.protocol.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, MAX_EPOCH, next_epoch

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from samsa.storage.topic import TopicPartition

    from .replica_manager import FetchRequestPartition, FetchResult

SESSION_VERSIONS = range(7, 13)
"""Fetch versions a session is made for: v7 brought sessions, v13 named topics by id."""


@dataclass(slots=True)
class _Partition:
    """A partition of a session: where the follower fetches it, and what the last answer said of it."""

    request: FetchRequestPartition
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next incremental request must carry
    partitions: dict[TopicPartition, _Partition] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FetchContext:
    """How one fetch is served: the partitions to read (a session's all of them), the session id to answer with,
    and for an incremental fetch the session whose unchanged partitions the answer leaves out."""

    partitions: list[FetchRequestPartition]
    session_id: int = 0
    incremental: FetchSession | None = None


class FetchSessions:
    """The leader's fetch sessions (module doc)."""

    def __init__(self, slots: int = 1000) -> None:
        self._slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def context(
        self,
        session_id: int,
        epoch: int,
        partitions: Sequence[FetchRequestPartition],
        forgotten: Iterable[TopicPartition],
        *,
        offered: bool,
    ) -> FetchContext | ErrorCode:
        """The context of a fetch with this ``session_id`` and ``epoch``, naming ``partitions`` and forgetting
        ``forgotten``; ``offered``: whether this request may have a session (a follower's, topics by name).
        An ErrorCode is the top-level answer (no partition read)."""
        if epoch > INITIAL_EPOCH:
            session = self._sessions.get(session_id)
            if session is None:
                return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            if session.epoch != epoch:
                return ErrorCode.INVALID_FETCH_SESSION_EPOCH
            self._sessions.move_to_end(session_id)
            for tp in forgotten:
                session.partitions.pop(tp, None)
            for request in partitions:
                known = session.partitions.get(request.tp)
                if known is None:
                    session.partitions[request.tp] = _Partition(request)
                else:
                    known.request = request
            session.epoch = next_epoch(epoch)
            return FetchContext(
                [p.request for p in session.partitions.values()], session.session_id, incremental=session
            )
        if session_id:
            self._sessions.pop(session_id, None)
        if epoch == FINAL_EPOCH or not offered or self._slots <= 0:
            return FetchContext(list(partitions))
        session = FetchSession(self._new_id(), next_epoch(INITIAL_EPOCH))
        session.partitions = {request.tp: _Partition(request) for request in partitions}
        while len(self._sessions) >= self._slots:
            self._sessions.popitem(last=False)
        self._sessions[session.session_id] = session
        return FetchContext(list(partitions), session.session_id)

    def _new_id(self) -> int:
        while True:
            candidate = int.from_bytes(os.urandom(4), "big") & MAX_EPOCH  # ``random`` waits (start-up)
            if candidate and candidate not in self._sessions:
                return candidate

    def answered(
        self, context: FetchContext, results: Sequence[FetchResult]
    ) -> list[tuple[FetchRequestPartition, FetchResult]]:
        """The partitions the answer carries, with their results (``results`` in ``context.partitions`` order):
        all of them for a full fetch, for an incremental one only those with something new. The session
        remembers what was sent."""
        pairs = list(zip(context.partitions, results, strict=True))
        session = context.incremental
        if session is None:
            if context.session_id:
                made = self._sessions.get(context.session_id)
                if made is not None:
                    for request, result in pairs:
                        _sent(made.partitions.get(request.tp), result)
            return pairs
        carried = []
        for request, result in pairs:
            known = session.partitions.get(request.tp)
            if (
                known is None
                or result.error is not ErrorCode.NONE
                or result.records is not None
                or result.diverging_epoch is not None
                or result.high_watermark != known.high_watermark
                or result.last_stable_offset != known.last_stable_offset
                or result.log_start_offset != known.log_start_offset
            ):
                _sent(known, result)
                carried.append((request, result))
                if result.records is not None and known is not None:
                    # to the back: the next read gives the byte budget to the others first (Kafka's fairness)
                    session.partitions[request.tp] = session.partitions.pop(request.tp)
        return carried


def _sent(known: _Partition | None, result: FetchResult) -> None:
    if known is not None:
        known.high_watermark = result.high_watermark
        known.last_stable_offset = result.last_stable_offset
        known.log_start_offset = result.log_start_offset
