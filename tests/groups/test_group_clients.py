"""Real clients in a consumer group over six partitions: three consumers of one library, then one leaves, one is
killed (the broker finds out through its session timeout) and one joins.

Oracle: after each change, the live members' assignments are disjoint and cover every partition; across the whole
run every produced record is consumed, and none twice (each worker reports records only after committing their
offsets synchronously, so a record reported twice means a commit the broker should have fenced was accepted, or
a committed offset was lost).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.clients.harness import BrokerProcess, Message, ck_produce

PARTITIONS = 6
LIBRARIES = ["confluent-kafka", "kafka-python", "aiokafka"]
ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """A consumer_worker.py child process and what it has reported."""

    def __init__(
        self,
        library: str,
        bootstrap: str,
        topic: str,
        group: str,
        log: Path | None = None,
        session_timeout_ms: int | None = None,  # the worker's own (6 s) unless given
        client_config: dict[str, Any] | None = None,  # more librdkafka properties (confluent-kafka only)
    ) -> None:
        self.log = log  # the client library's log lines, for a failure's report (none kept without it)
        session = [] if session_timeout_ms is None else [str(session_timeout_ms)]
        with contextlib.ExitStack() as files:
            stderr = files.enter_context(log.open("w")) if log is not None else subprocess.DEVNULL
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.groups.consumer_worker",
                    library,
                    bootstrap,
                    topic,
                    group,
                    *session,
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={
                    **os.environ,
                    "PYTHONUNBUFFERED": "1",
                    **({"SAMSA_WORKER_CONFIG": json.dumps(client_config)} if client_config else {}),
                },
            )
        self.assigned: list[int] | None = None
        self.consumed: list[tuple[int, int, str]] = []
        self.uncommitted: list[tuple[int, int, str]] = []  # delivered, but their commit failed
        self.committing: list[tuple[int, int, str]] = []  # polled, their commit sent (confluent-kafka only)
        self.fatal: list[str] = []  # the client's fatal errors, each followed by a new consumer
        # partition -> when each report holding records of it arrived (monotonic)
        self.reported_at: dict[int, list[float]] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            doc = json.loads(line)
            with self.lock:
                if "assigned" in doc:
                    self.assigned = doc["assigned"]
                if "fatal" in doc:
                    self.fatal.append(doc["fatal"])
                for partition, offset, value in doc.get("consumed", []):
                    self.consumed.append((partition, offset, value))
                for partition, offset, value in doc.get("uncommitted", []):
                    self.uncommitted.append((partition, offset, value))
                for partition, offset, value in doc.get("committing", []):
                    self.committing.append((partition, offset, value))
                now = time.monotonic()
                records = doc.get("consumed", []) + doc.get("uncommitted", [])
                for partition in {r[0] for r in records}:
                    self.reported_at.setdefault(partition, []).append(now)

    def log_tail(self, lines: int = 25) -> str:
        if self.log is None:
            return "(not kept)\n"
        return "".join(self.log.read_text(errors="replace").splitlines(keepends=True)[-lines:])

    def delivered(self) -> set[tuple[int, str]]:
        """(partition, value) of each record this member received: committed, or in a poll whose commit failed
        (a failed commit may still have been applied, as in Kafka, and then nobody reads those records again)."""
        with self.lock:
            return {(p, v) for p, _, v in self.consumed + self.uncommitted}

    def polled(self) -> set[tuple[int, str]]:
        """``delivered``, and the records of a poll whose commit was sent but never returned: a client that hangs
        inside its commit (librdkafka #5476, seen in the nemesis) may have had it applied, and then the
        partition's next owner starts after them."""
        with self.lock:
            return {(p, v) for p, _, v in self.consumed + self.uncommitted + self.committing}

    def leave(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def wait_for(
    condition: Callable[[], bool], what: str, timeout: float = 90.0, state: Callable[[], str] = lambda: ""
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; {state()}")


def owned_once(workers: list[Worker]) -> bool:
    assignments = [w.assigned for w in workers]
    if any(a is None for a in assignments):
        return False
    flat = [p for a in assignments for p in a or []]
    return sorted(flat) == list(range(PARTITIONS))


@pytest.mark.slow
@pytest.mark.parametrize("library", LIBRARIES)
def test_group_rebalances_without_losing_or_repeating_records(
    library: str, group_broker: BrokerProcess, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = f"work-{library}", f"group-{library}"
    bootstrap = group_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS)])[topic].result(20)
    produced: set[tuple[int, str]] = set()
    batch_no = 0

    def produce_batch(per_partition: int = 20) -> None:
        nonlocal batch_no
        batch_no += 1
        for partition in range(PARTITIONS):
            values = [f"b{batch_no}-p{partition}-{i}" for i in range(per_partition)]
            ck_produce(bootstrap, topic, [Message(None, v.encode()) for v in values], partition=partition)
            produced.update((partition, v) for v in values)

    logs = (tmp_path / f"worker-{n}.log" for n in range(1, 100))
    workers = [Worker(library, bootstrap, topic, group, next(logs)) for _ in range(3)]
    everyone = list(workers)

    def consumed() -> list[tuple[int, int, str]]:
        out: list[tuple[int, int, str]] = []
        for w in everyone:
            with w.lock:
                out.extend(w.consumed)
        return out

    def delivered() -> set[tuple[int, str]]:
        return set().union(*(w.delivered() for w in everyone))

    def all_consumed() -> bool:
        return delivered() == produced

    def state() -> str:
        missing = sorted(produced - delivered())
        alive = [(w.process.pid, w.process.poll(), w.assigned) for w in everyone]
        logs = "".join(f"\n--- worker {w.process.pid} ({w.log.name}):\n{w.log_tail()}" for w in everyone)
        broker = "".join(group_broker.output[-40:])
        return (
            f"workers (pid, exit, assigned): {alive}; {len(missing)} records missing, first {missing[:5]}"
            f"{logs}\n--- broker:\n{broker}"
        )

    try:
        wait_for(
            lambda: owned_once(workers) and all(w.assigned for w in workers),
            "three members to share six partitions",
            state=state,
        )
        produce_batch()
        wait_for(all_consumed, "the first batch", state=state)

        leaver = workers.pop(0)
        leaver.leave()
        wait_for(lambda: owned_once(workers), "two members to take over after a leave", state=state)
        produce_batch()
        wait_for(all_consumed, "the second batch", state=state)

        victim = workers.pop(0)
        victim.kill()
        produce_batch()
        wait_for(
            lambda: owned_once(workers), "the last member to take over after the session timeout", state=state
        )
        wait_for(all_consumed, "the third batch", state=state)

        workers.append(Worker(library, bootstrap, topic, group, next(logs)))
        everyone.append(workers[-1])
        wait_for(
            lambda: owned_once(workers) and all(w.assigned for w in workers),
            "a new member to join",
            state=state,
        )
        produce_batch()
        wait_for(all_consumed, "the fourth batch", state=state)
    finally:
        for w in everyone:
            w.stop()
    records = consumed()
    assert len(produced) == 4 * PARTITIONS * 20 and delivered() == produced, "every record delivered"
    assert len({(p, o) for p, o, _ in records}) == len(records), "no record committed twice"
