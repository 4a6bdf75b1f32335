"""Failover times of a nemesis run: for each fault that takes a broker's leaderships away, how long until the
metadata names a new live leader for every partition it led, and until each of those partitions acknowledged a
write again.

A ``FailoverProbe`` is started at the fault (before the signal is sent) with the partitions the broker led then;
in its own thread it polls Metadata, over a raw socket, from the brokers other than the faulted one (a paused or
killed broker cannot answer) every ``POLL_S``, until each of those partitions names a leader that is neither the
faulted broker nor -1 and is among the live brokers the answer lists. Then it watches the producers' delivery
reports until each partition has an acknowledgement received after its new leader was seen. Both times count from
the fault, so the write time includes the poll's granularity and the producers' metadata refresh (what a client
sees). A fault after which the broker kept its leaderships (a pause that ended before the controller acted), and
one that hit a broker leading nothing (leaderships not yet handed back after an earlier fault), are recorded
without times and left out of the figures. Under overlapping faults the times can run past the failover itself: a
faulted broker that is back and leads its partitions again, or a later fault, keeps the probe waiting for another
leader while writes go on (a 10-minute run timed 62 s where no partition went 13.2 s without a write); the
per-partition stalls of ``nemesis.stalls`` are the availability measure.

Event-loop free: threads and blocking sockets only (the nemesis drives the cluster from plain threads).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.badinput.wire import Connection

from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

POLL_S = 0.05
GIVE_UP_S = 90.0

AckTimes = Callable[[int, float], float | None]
"""(partition, not before) -> when the first acknowledgement of that partition at or after it arrived (None: none)."""


@dataclass(frozen=True, slots=True)
class Failover:
    """One fault that took leaderships away; times in seconds from the fault (None: not seen within the limit)."""

    kind: str
    broker: int
    partitions: tuple[int, ...]
    leader_s: float | None
    write_s: float | None

    def __str__(self) -> str:
        def shown(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"

        if not self.partitions:
            return f"{self.kind:<16} broker {self.broker}: led no partition, nothing to time"
        return (
            f"{self.kind:<16} broker {self.broker}, partitions {list(self.partitions)}: new leaders "
            f"{shown(self.leader_s)}, acknowledged writes {shown(self.write_s)}"
        )


def leaders(port: int, topic: str) -> dict[int, int] | None:
    """partition -> leader, counting a leader the answer does not list among the live brokers as -1."""
    try:
        with Connection(port, timeout=1.0) as conn:
            answer = conn.request(3, 9, MetadataRequest(topics=[MetadataRequestTopic(name=topic)]))
    except (OSError, AssertionError):
        return None
    live = {b.node_id for b in answer.brokers}
    found = {p.partition_index: p.leader_id for t in answer.topics if t.name == topic for p in t.partitions}
    return {p: (leader if leader in live else -1) for p, leader in found.items()} or None


class FailoverProbe(threading.Thread):
    """Times one failover (module doc); ``result`` once the thread ends."""

    def __init__(
        self, kind: str, broker: int, led: Sequence[int], ports: dict[int, int], topic: str, acks: AckTimes
    ) -> None:
        super().__init__(daemon=True, name=f"failover-{kind}-{broker}")
        self.started = time.monotonic()
        self.kind = kind
        self.broker = broker
        self.led = tuple(sorted(led))
        self.others = [port for broker_id, port in sorted(ports.items()) if broker_id != broker]
        self.topic = topic
        self.acks = acks
        self.result: Failover | None = None

    def run(self) -> None:
        if not self.led:
            self.result = Failover(self.kind, self.broker, (), None, None)
            return
        moved = self._leaders_moved()
        leader_s = None if moved is None else max(moved.values()) - self.started
        write_s = None
        if moved is not None:
            written = self._written(moved)
            write_s = None if written is None else written - self.started
        self.result = Failover(self.kind, self.broker, self.led, leader_s, write_s)

    def _leaders_moved(self) -> dict[int, float] | None:
        """partition -> when a new live leader was first seen; None when some partition never had one."""
        seen: dict[int, float] = {}
        turn = 0
        while time.monotonic() - self.started < GIVE_UP_S:
            found = leaders(self.others[turn % len(self.others)], self.topic)
            turn += 1
            now = time.monotonic()
            for partition, leader in (found or {}).items():
                if partition in self.led and partition not in seen and leader not in (-1, self.broker):
                    seen[partition] = now
            if len(seen) == len(self.led):
                return seen
            time.sleep(POLL_S)
        return None

    def _written(self, moved: dict[int, float]) -> float | None:
        """When every partition had an acknowledgement after its new leader was seen (None: not in time)."""
        while time.monotonic() - self.started < GIVE_UP_S:
            times = [self.acks(partition, since) for partition, since in moved.items()]
            if all(t is not None for t in times):
                return max(t for t in times if t is not None)
            time.sleep(POLL_S)
        return None


def summary(failovers: Sequence[Failover]) -> list[str]:
    """min / median / max of each time per kind of fault, one line per kind."""
    lines = []
    for kind in sorted({f.kind for f in failovers}):
        of_kind = [f for f in failovers if f.kind == kind]
        parts = [f"{kind:<16} {len(of_kind)} fault{'s' if len(of_kind) > 1 else ''}"]
        for label, values in (
            ("new leaders", [f.leader_s for f in of_kind if f.leader_s is not None]),
            ("acknowledged writes", [f.write_s for f in of_kind if f.write_s is not None]),
        ):
            if values:
                parts.append(
                    f"{label} min {min(values):.2f} / median {statistics.median(values):.2f} / "
                    f"max {max(values):.2f} s"
                )
            else:
                parts.append(f"{label} -")
        idle = sum(1 for f in of_kind if not f.partitions)
        kept = sum(1 for f in of_kind if f.partitions and f.leader_s is None)
        if idle:
            parts.append(f"{idle} hit a broker leading nothing")
        if kept:
            parts.append(f"{kept} with no new leader seen (the broker kept them)")
        lines.append(", ".join(parts))
    return lines
