"""Replica assignment: which brokers hold each partition of a new topic, as Kafka's ZooKeeper-mode admin does it.

Rack-unaware (no broker has a rack), over the broker ids sorted ascending, ``n`` brokers:

- partition ``p``'s leader (first replica) is ``brokers[(p + start_index) % n]``: round-robin from a start index;
- its followers sit at offsets ``1 + (shift + j) % (n - 1)`` from the leader (``j`` = 0 .. rf-2), so none lands on the
  leader and none repeats;
- ``shift`` starts at ``replica_shift`` and grows by one each time ``p`` wraps past a multiple of ``n``, so the same
  broker sets do not come back every ``n`` partitions.

With ``start_index = replica_shift = 0`` the first ``n`` partitions follow the seed rule "replica j of partition i on
broker (i + j) mod n". Kafka draws both at random (two independent draws); so does :func:`assign_replicas` unless they
are given.

Rack-aware (every broker has a rack): the same walk over a rack-alternated broker list (racks sorted by name, one
broker from each rack in turn, ids ascending within a rack). A follower candidate is taken only if its rack holds no
replica of the partition yet (or every rack already does) and the broker holds none yet (or every broker already
does); so with rf >= #racks each rack gets a replica, otherwise no rack gets two.

A mix of brokers with and without racks is refused (Kafka's default "enforced" mode).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

__all__ = [
    "AssignmentError",
    "InvalidPartitionCountError",
    "InvalidReplicationFactorError",
    "assign_replicas",
]


class AssignmentError(ValueError):
    """The brokers cannot hold the topic as asked."""


class InvalidPartitionCountError(AssignmentError):
    """A partition count that is not positive (Kafka: INVALID_PARTITIONS)."""


class InvalidReplicationFactorError(AssignmentError):
    """A replication factor that is not positive or exceeds the brokers (Kafka: INVALID_REPLICATION_FACTOR)."""


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Replicas per partition id, leader first, for ``partitions`` new partitions from ``first_partition`` on.

    ``brokers`` maps each live broker id to its rack (None: no rack). ``start_index`` and ``replica_shift`` default
    to independent draws from ``rng`` in ``[0, #brokers)``; a given ``start_index`` with no ``replica_shift`` uses
    it for both, as Kafka's fixed start index does.
    """
    if partitions <= 0:
        raise InvalidPartitionCountError(f"the number of partitions must be larger than 0, not {partitions}")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"the replication factor must be larger than 0, not {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} available brokers"
        )
    draw = rng or random.Random()
    if start_index is None:
        start_index = draw.randrange(len(brokers))
        replica_shift = draw.randrange(len(brokers)) if replica_shift is None else replica_shift
    elif replica_shift is None:
        replica_shift = start_index
    racks = {broker: rack for broker, rack in brokers.items() if rack is not None}
    if not racks:
        return _rack_unaware(
            sorted(brokers), partitions, replication_factor, start_index, replica_shift, first_partition
        )
    if len(racks) != len(brokers):
        unracked = sorted(broker for broker in brokers if broker not in racks)
        raise AssignmentError(f"not all brokers have rack information (none for {unracked})")
    return _rack_aware(racks, partitions, replication_factor, start_index, replica_shift, first_partition)


def _rack_unaware(
    brokers: Sequence[int], partitions: int, rf: int, start_index: int, shift: int, first_partition: int
) -> dict[int, list[int]]:
    n = len(brokers)
    assignment: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        assignment[p] = [brokers[first]] + [
            brokers[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)
        ]
    return assignment


def _rack_aware(
    racks: Mapping[int, str], partitions: int, rf: int, start_index: int, shift: int, first_partition: int
) -> dict[int, list[int]]:
    brokers = rack_alternated(racks)
    n, rack_count = len(brokers), len(set(racks.values()))
    assignment: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        replicas = [brokers[first]]
        taken_racks = {racks[brokers[first]]}
        k = 0
        while len(replicas) < rf:
            candidate = brokers[(first + 1 + (shift * rack_count + k) % (n - 1)) % n]
            k += 1
            rack_free = racks[candidate] not in taken_racks or len(taken_racks) == rack_count
            broker_free = candidate not in replicas or len(replicas) == n
            if rack_free and broker_free:
                replicas.append(candidate)
                taken_racks.add(racks[candidate])
        assignment[p] = replicas
    return assignment


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Broker ids taking one from each rack in turn: racks by name, ids ascending within a rack."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    out: list[int] = []
    for round_ in range(max(len(queue) for queue in queues)):
        out.extend(queue[round_] for queue in queues if round_ < len(queue))
    return out
