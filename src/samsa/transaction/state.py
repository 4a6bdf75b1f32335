"""The state machine of one transactional id, as Kafka's ``TransactionMetadata`` and ``TransactionCoordinator``
apply it: pure functions from (metadata, request, now) to an error or the next metadata.

States (the byte Kafka writes as ``transaction_status`` in ``__transaction_state``)::

    Empty(0) --AddPartitions--> Ongoing(1) --EndTxn--> PrepareCommit(2) | PrepareAbort(3)
    PrepareCommit --every marker written--> CompleteCommit(4);  PrepareAbort --> CompleteAbort(5)
    Complete* | Empty --AddPartitions--> Ongoing;  Complete* | Empty --InitProducerId--> Empty (epoch + 1)
    Ongoing --InitProducerId or timeout--> PrepareEpochFence(7) --> PrepareAbort (epoch + 1: the old producer fenced)
    Empty | Complete* --transactional.id.expiration.ms without use--> Dead(6) (a tombstone)

No I/O, no clock of its own: every function takes ``now_ms``. Callers own the metadata (frozen values; a
transition returns a new one), so this module has no concurrency of its own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from samsa.protocol.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka bumps to a new producer id when the epoch would reach Short.MAX_VALUE (KIP-360): the last usable epoch
# is one below it so that a fencing bump always has room.
MAX_PRODUCER_EPOCH = 32767 - 1


class TransactionState(enum.IntEnum):
    """Kafka's ``TransactionState``; the value is the status byte of ``TransactionLogValue``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name ``kafka-transactions.sh`` and DescribeTransactions/ListTransactions print."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState:
        """The state ListTransactions' ``state_filters`` names (``Ongoing``...); ValueError when unknown."""
        for state in cls:
            if state.kafka_name == name:
                return state
        raise ValueError(f"unknown transaction state {name!r}")


# What each state may follow (Kafka's validPreviousStates).
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    TransactionState.EMPTY: frozenset(
        {TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}
    ),
    TransactionState.ONGOING: frozenset(
        {
            TransactionState.ONGOING,
            TransactionState.EMPTY,
            TransactionState.COMPLETE_COMMIT,
            TransactionState.COMPLETE_ABORT,
        }
    ),
    TransactionState.PREPARE_COMMIT: frozenset({TransactionState.ONGOING}),
    TransactionState.PREPARE_ABORT: frozenset(
        {TransactionState.ONGOING, TransactionState.PREPARE_EPOCH_FENCE}
    ),
    TransactionState.COMPLETE_COMMIT: frozenset({TransactionState.PREPARE_COMMIT}),
    TransactionState.COMPLETE_ABORT: frozenset({TransactionState.PREPARE_ABORT}),
    TransactionState.DEAD: frozenset(
        {TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}
    ),
    TransactionState.PREPARE_EPOCH_FENCE: frozenset({TransactionState.ONGOING}),
}

COMPLETED = frozenset(
    {TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}
)
PREPARING = frozenset({TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT})

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """What the coordinator knows of one transactional id; one ``TransactionLogValue`` record holds all of it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartitionKey] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH

    def transition(self, state: TransactionState, now_ms: int, **changes: object) -> TransactionMetadata:
        """The next metadata in ``state``; AssertionError-free: an illegal move is a ValueError (a bug)."""
        if self.state not in VALID_PREVIOUS[state]:
            raise ValueError(
                f"{self.transactional_id}: {self.state.kafka_name} -> {state.kafka_name} is illegal"
            )
        return replace(self, state=state, last_update_ms=now_ms, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A request's answer: the error for the client, and the metadata to write (None: nothing to write)."""

    error: ErrorCode
    metadata: TransactionMetadata | None = None
    # InitProducerId found a transaction open: the coordinator must abort it (markers) before the client retries.
    abort_first: bool = False


def validate_timeout(timeout_ms: int, max_timeout_ms: int) -> ErrorCode:
    """INVALID_TRANSACTION_TIMEOUT outside ``(0, transaction.max.timeout.ms]``."""
    if timeout_ms <= 0 or timeout_ms > max_timeout_ms:
        return ErrorCode.INVALID_TRANSACTION_TIMEOUT
    return ErrorCode.NONE


def _epoch_error(client_version_fenced: bool) -> ErrorCode:
    return ErrorCode.PRODUCER_FENCED if client_version_fenced else ErrorCode.INVALID_PRODUCER_EPOCH


def _bumped(meta: TransactionMetadata, new_producer_id: Callable[[], int]) -> tuple[int, int, int, int]:
    """(producer id, epoch, previous producer id, last epoch) after an epoch bump; a new id at overflow."""
    if meta.producer_epoch >= MAX_PRODUCER_EPOCH:
        return new_producer_id(), 0, meta.producer_id, NO_PRODUCER_EPOCH
    return meta.producer_id, meta.producer_epoch + 1, meta.previous_producer_id, meta.producer_epoch


def init_producer_id(
    meta: TransactionMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    max_timeout_ms: int,
    now_ms: int,
    new_producer_id: Callable[[], int],
    expected: tuple[int, int] | None = None,
    fenced_error: bool = True,
) -> Outcome:
    """InitProducerId for a transactional id. ``expected`` is the (producer id, epoch) a v3+ client sends to
    recover (KIP-360), None for a fresh producer; ``fenced_error`` picks PRODUCER_FENCED (v2+) over
    INVALID_PRODUCER_EPOCH."""
    error = validate_timeout(timeout_ms, max_timeout_ms)
    if error:
        return Outcome(error)
    if meta is None or meta.state is TransactionState.DEAD:
        if expected is not None and expected[0] != NO_PRODUCER_ID:
            return Outcome(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        fresh = TransactionMetadata(
            transactional_id, new_producer_id(), 0, timeout_ms, TransactionState.EMPTY
        )
        return Outcome(ErrorCode.NONE, replace(fresh, last_update_ms=now_ms))
    if expected is not None and expected[0] != NO_PRODUCER_ID:
        error = _check_expected(meta, expected, fenced_error)
        if error:
            return Outcome(error)
    if meta.state in PREPARING or meta.state is TransactionState.PREPARE_EPOCH_FENCE:
        return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS)
    if meta.state is TransactionState.ONGOING:
        # Fence the open transaction's producer and abort it; the client retries on CONCURRENT_TRANSACTIONS.
        return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS, fence_and_abort(meta, now_ms), abort_first=True)
    pid, epoch, previous, last = _bumped(meta, new_producer_id)
    nxt = meta.transition(
        TransactionState.EMPTY,
        now_ms,
        producer_id=pid,
        producer_epoch=epoch,
        previous_producer_id=previous,
        last_producer_epoch=last,
        timeout_ms=timeout_ms,
        partitions=frozenset(),
        start_ms=-1,
    )
    return Outcome(ErrorCode.NONE, nxt)


def _check_expected(meta: TransactionMetadata, expected: tuple[int, int], fenced_error: bool) -> ErrorCode:
    """KIP-360: the producer's (id, epoch) must be the current one, or the one just before a retried bump."""
    pid, epoch = expected
    if pid == meta.producer_id and epoch == meta.producer_epoch:
        return ErrorCode.NONE
    if pid == meta.previous_producer_id or (pid == meta.producer_id and epoch == meta.last_producer_epoch):
        return ErrorCode.NONE
    if pid != meta.producer_id:
        return ErrorCode.PRODUCER_FENCED if fenced_error else ErrorCode.INVALID_PRODUCER_ID_MAPPING
    return _epoch_error(fenced_error)


def fence_and_abort(meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
    """An Ongoing transaction aborted by the coordinator (InitProducerId of a new producer, or timeout): the epoch
    goes up by one so the old producer is fenced, and the state becomes PrepareAbort (through PrepareEpochFence)."""
    fencing = meta.transition(TransactionState.PREPARE_EPOCH_FENCE, now_ms)
    return fencing.transition(
        TransactionState.PREPARE_ABORT,
        now_ms,
        producer_epoch=min(meta.producer_epoch + 1, MAX_PRODUCER_EPOCH + 1),
        last_producer_epoch=meta.producer_epoch,
    )


def _check_producer(
    meta: TransactionMetadata, producer_id: int, producer_epoch: int, fenced_error: bool
) -> ErrorCode:
    if meta.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if meta.producer_epoch != producer_epoch:
        return _epoch_error(fenced_error)
    return ErrorCode.NONE


def add_partitions(
    meta: TransactionMetadata | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartitionKey],
    now_ms: int,
    fenced_error: bool = True,
) -> Outcome:
    """AddPartitionsToTxn (and AddOffsetsToTxn, with the group's ``__consumer_offsets`` partition)."""
    if meta is None or meta.state is TransactionState.DEAD:
        return Outcome(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    error = _check_producer(meta, producer_id, producer_epoch, fenced_error)
    if error:
        return Outcome(error)
    if meta.state in PREPARING or meta.state is TransactionState.PREPARE_EPOCH_FENCE:
        return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS)
    wanted = frozenset(partitions)
    if meta.state is TransactionState.ONGOING and wanted <= meta.partitions:
        return Outcome(ErrorCode.NONE)
    start = meta.start_ms if meta.state is TransactionState.ONGOING else now_ms
    nxt = meta.transition(
        TransactionState.ONGOING, now_ms, partitions=meta.partitions | wanted, start_ms=start
    )
    return Outcome(ErrorCode.NONE, nxt)


def verify_partitions(
    meta: TransactionMetadata | None,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartitionKey],
) -> dict[TopicPartitionKey, ErrorCode]:
    """AddPartitionsToTxn's verify-only form (KIP-890): per partition NONE when it is in the open transaction of
    this producer, else INVALID_TXN_STATE (or the producer's error)."""
    wanted = list(partitions)
    if meta is None or meta.state is TransactionState.DEAD:
        return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    error = _check_producer(meta, producer_id, producer_epoch, True)
    if error:
        return dict.fromkeys(wanted, error)
    ongoing = meta.state is TransactionState.ONGOING
    return {
        tp: ErrorCode.NONE if ongoing and tp in meta.partitions else ErrorCode.INVALID_TXN_STATE
        for tp in wanted
    }


def end_transaction(
    meta: TransactionMetadata | None,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    now_ms: int,
    fenced_error: bool = True,
) -> Outcome:
    """EndTxn: Ongoing -> PrepareCommit/PrepareAbort (to write, then markers); a retry of a finished end is NONE;
    an end while one is being completed is CONCURRENT_TRANSACTIONS; anything else INVALID_TXN_STATE."""
    if meta is None or meta.state is TransactionState.DEAD:
        return Outcome(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    if meta.producer_id != producer_id:
        return Outcome(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    # A retry after the coordinator fenced and aborted (epoch + 1) still gets the fence, not a success.
    if meta.producer_epoch != producer_epoch:
        return Outcome(_epoch_error(fenced_error))
    state = meta.state
    if state is TransactionState.ONGOING:
        target = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
        return Outcome(ErrorCode.NONE, meta.transition(target, now_ms))
    done = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
    preparing = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
    if state is done:
        return Outcome(ErrorCode.NONE)
    if state is preparing:
        return Outcome(ErrorCode.CONCURRENT_TRANSACTIONS)
    if state is TransactionState.EMPTY and not commit:
        # librdkafka aborts an empty transaction without a request; the Java client may send one: nothing to do.
        return Outcome(ErrorCode.NONE)
    return Outcome(ErrorCode.INVALID_TXN_STATE)


def complete(meta: TransactionMetadata, now_ms: int) -> TransactionMetadata:
    """Every marker is written: PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort, no partitions."""
    if meta.state is TransactionState.PREPARE_COMMIT:
        target = TransactionState.COMPLETE_COMMIT
    elif meta.state is TransactionState.PREPARE_ABORT:
        target = TransactionState.COMPLETE_ABORT
    else:
        raise ValueError(f"{meta.transactional_id}: nothing to complete in {meta.state.kafka_name}")
    return meta.transition(target, now_ms, partitions=frozenset())


def timed_out(meta: TransactionMetadata, now_ms: int) -> bool:
    """An Ongoing transaction past ``transaction.timeout.ms`` since its first partition: the coordinator aborts it."""
    return meta.state is TransactionState.ONGOING and meta.start_ms + meta.timeout_ms < now_ms


def expired(meta: TransactionMetadata, now_ms: int, expiration_ms: int) -> bool:
    """A transactional id idle past ``transactional.id.expiration.ms`` with no transaction open: written as a
    tombstone and forgotten."""
    return meta.state in COMPLETED and meta.last_update_ms + expiration_ms <= now_ms
