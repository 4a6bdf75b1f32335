"""Records an idempotent producer wrote twice by sending them again under a new producer epoch.

librdkafka 2.16 can bump its producer epoch during a leader move and number every unacknowledged message anew,
including a batch an old leader had appended before it answered NOT_LEADER_OR_FOLLOWER (librdkafka issue #4953,
seen against Kafka too). Under Kafka's rules the second copy is a new write: idempotence holds within one
producer epoch, and no broker can tell such a copy from a new record. So a test comparing what it read with what
was acknowledged leaves out a copy written under a later epoch of the same producer id than the copy before it,
and says how many it left out. A value twice under the same producer id and epoch is still a duplicate: the
broker's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import TypeVar

from samsa.cluster.launcher import LocalCluster
from samsa.records.batch_view import iter_batches
from samsa.records.iterate import iter_records

V = TypeVar("V", bound=Hashable)


def resent_values(log: bytes) -> Counter[bytes]:
    """Per value of ``log`` (a partition's segments, in offset order), its copies that the producer of its first
    copy wrote again under an epoch above the previous copy's."""
    last_copy: dict[bytes, tuple[int, int]] = {}  # value -> producer id and epoch of its latest copy
    resent: Counter[bytes] = Counter()
    for batch in iter_batches(log):
        writer = (batch.producer_id, batch.producer_epoch)
        for record in iter_records(batch):
            value = record.value
            if value is None:
                continue
            before = last_copy.get(value)
            if before is None:
                last_copy[value] = writer
            elif before[0] == writer[0] >= 0 and writer[1] > before[1]:
                last_copy[value] = writer
                resent[value] += 1
    return resent


IN_FLIGHT = 5
"""Batches an idempotent librdkafka producer has unacknowledged per partition at most (its
``max.in.flight.requests.per.connection``, 5 with idempotence, counts requests to a broker, and each carries at most
one batch of a partition)."""


def unexplained_resends(log: bytes, in_flight: int = IN_FLIGHT) -> list[str]:
    """The resent copies of ``log`` (as ``resent_values`` finds them) that the client's known behaviour does not
    explain, one line each. librdkafka renumbers under the new epoch only what was unacknowledged when it bumped
    (#4953): at most the last ``in_flight`` batches its producer wrote under the previous epoch in this partition,
    since a producer fenced by its bump writes nothing more under the old one. A copy repeating an older batch was
    acknowledged once already: the broker's duplicate, or a client resending more than it says."""
    batches: dict[tuple[int, int], int] = {}  # (producer id, epoch) -> batches of it so far
    last_copy: dict[
        bytes, tuple[int, int, int]
    ] = {}  # value -> producer id, epoch, batch ordinal of its copy
    suspects: list[tuple[bytes, tuple[int, int, int], int]] = []  # value, previous copy, offset of the resend
    for batch in iter_batches(log):
        writer = (batch.producer_id, batch.producer_epoch)
        ordinal = batches.get(writer, 0)
        batches[writer] = ordinal + 1
        for offset, record in enumerate(iter_records(batch), batch.base_offset):
            value = record.value
            if value is None:
                continue
            before = last_copy.get(value)
            if before is not None and before[0] == writer[0] >= 0 and writer[1] > before[1]:
                suspects.append((value, before, offset))
            if before is None or (before[0] == writer[0] and writer[1] > before[1]):
                last_copy[value] = (*writer, ordinal)
    return [
        f"{value.decode(errors='replace')!r} at offset {offset} repeats batch {ordinal + 1} of "
        f"{batches[(pid, epoch)]} that producer {pid} wrote under epoch {epoch} (only its last {in_flight} can "
        "be in flight at a bump)"
        for value, (pid, epoch, ordinal), offset in suspects
        if ordinal < batches[(pid, epoch)] - in_flight
    ]


def without_resent(values: Iterable[V], resent: Counter[V]) -> list[V]:
    """``values`` in order, each value's last ``resent[value]`` copies left out (a resent copy follows the one
    it repeats)."""
    values = list(values)
    copies = Counter(values)
    kept: list[V] = []
    seen: Counter[V] = Counter()
    for value in values:
        seen[value] += 1
        if seen[value] <= copies[value] - resent[value]:
            kept.append(value)
    return kept


def partition_log(data_dirs: Iterable[Path], topic: str, partition: int) -> bytes:
    """The longest replica of ``topic``-``partition`` among the brokers' ``data_dirs``: its segments in order."""
    logs = [
        b"".join(p.read_bytes() for p in sorted((d / f"{topic}-{partition}").glob("*.log")))
        for d in data_dirs
    ]
    return max(logs, key=len, default=b"")


def data_dirs(cluster: LocalCluster) -> list[Path]:
    return [Path(cluster.properties(b.broker_id)["log.dirs"]) for b in cluster.brokers]


def read_without_resent(
    cluster: LocalCluster, topic: str, got: dict[int, list[bytes]]
) -> tuple[dict[int, list[bytes]], int]:
    """``got`` (values read from ``topic``, by partition in offset order) without the copies written again under
    a new producer epoch, and how many were left out (printed, for the test's output)."""
    dirs = data_dirs(cluster)
    kept: dict[int, list[bytes]] = {}
    left_out = 0
    for partition, values in got.items():
        resent = resent_values(partition_log(dirs, topic, partition))
        kept[partition] = without_resent(values, resent)
        left_out += len(values) - len(kept[partition])
    if left_out:
        print(f"{topic}: {left_out} records written again under a new producer epoch (librdkafka #4953)")
    return kept, left_out
