"""The three delivery examples in ``examples/`` run against a ``samsa serve`` broker, crash at the moment that
tells their guarantees apart, run again, and show the guarantee they claim:

- at-most-once (commit, then process): the crash after the commit loses exactly that record, nothing repeats;
- at-least-once (process, then commit): the crash before the commit repeats exactly that record, nothing is lost;
- exactly-once (consume-transform-produce in Kafka transactions, offsets committed in the transaction): the same
  crash, mid-transaction, leaves every record's output exactly once, in order, for read_committed readers; the
  crashed transaction's output is in the log, aborted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess, ck_consume, running_broker

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 20
CRASH_AT = 7
CRASH_EXIT_CODE = 3
ORDERS = [f"order-{i}" for i in range(RECORDS)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("delivery")) as proc:
        yield proc


def run_example(
    name: str, broker: BrokerProcess, topic: str, output: Path, crash_after: int = -1
) -> tuple[int, list[dict[str, object]]]:
    args = [sys.executable, str(ROOT / "examples" / f"{name}.py"), "--bootstrap", broker.bootstrap]
    args += ["--topic", topic, "--records", str(RECORDS), "--output", str(output)]
    if crash_after >= 0:
        args += ["--crash-after", str(crash_after)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=90, cwd=ROOT)
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return done.returncode, reports


def end_offset(broker: BrokerProcess, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "end-offsets"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def crash_then_resume(name: str, broker: BrokerProcess, topic: str, output: Path) -> None:
    code, reports = run_example(name, broker, topic, output, crash_after=CRASH_AT)
    assert code == CRASH_EXIT_CODE and reports[-1]["crashed"] == CRASH_AT, reports
    code, reports = run_example(name, broker, topic, output)
    assert code == 0 and "handled" in reports[-1], reports


def test_at_most_once_loses_the_record_committed_before_the_crash(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    output = tmp_path / "processed.txt"
    crash_then_resume("at_most_once", broker, "amo", output)
    assert output.read_text().split() == [o for o in ORDERS if o != f"order-{CRASH_AT}"]


def test_at_least_once_repeats_the_record_processed_before_the_crash(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    output = tmp_path / "processed.txt"
    crash_then_resume("at_least_once", broker, "alo", output)
    expected = ORDERS[: CRASH_AT + 1] + ORDERS[CRASH_AT:]
    assert output.read_text().split() == expected


def read_committed(
    broker: BrokerProcess, topic: str, isolation: str = "read_committed"
) -> list[tuple[bytes, bytes]]:
    """(value, source-offset header) of every record a fresh consumer with ``isolation`` reads from the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "checker", "isolation.level": isolation}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[tuple[bytes, bytes]] = []
    try:
        while (msgs := consumer.consume(num_messages=1000, timeout=2.0)) or not out:
            out += [(m.value(), dict(m.headers() or [])["source-offset"]) for m in msgs if not m.error()]
    finally:
        consumer.close()
    return out


def test_exactly_once_survives_the_same_crash(broker: BrokerProcess, tmp_path: Path) -> None:
    crash_then_resume("exactly_once", broker, "eo", tmp_path / "unused.txt")
    out = read_committed(broker, "eo-out")
    assert [value for value, _ in out] == [f"shipped {o}".encode() for o in ORDERS]
    assert [offset for _, offset in out] == [str(i).encode() for i in range(RECORDS)]
    # the crashed transaction's output is in the log, aborted: only a read_uncommitted reader sees it
    uncommitted = [value for value, _ in read_committed(broker, "eo-out", "read_uncommitted")]
    assert uncommitted.count(f"shipped order-{CRASH_AT}".encode()) == 2
    assert len(uncommitted) == RECORDS + 1


def test_without_a_crash_every_example_handles_each_record_once(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    for name in ("at_most_once", "at_least_once"):
        output = tmp_path / f"{name}.txt"
        code, _ = run_example(name, broker, f"calm-{name}", output)
        assert code == 0 and output.read_text().split() == ORDERS
    code, _ = run_example("exactly_once", broker, "calm-eo", tmp_path / "unused.txt")
    assert code == 0
    assert [value for value, _ in read_committed(broker, "calm-eo-out")] == [
        f"shipped {o}".encode() for o in ORDERS
    ]


def test_exactly_once_on_an_input_topic_of_many_partitions(broker: BrokerProcess, tmp_path: Path) -> None:
    """The README's Tools section leaves ``orders`` with 12 partitions; the example made its output with one,
    then wrote to the input's partitions there and died on an unknown partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("wide", 12)])["wide"].result(20)
    code, reports = run_example("exactly_once", broker, "wide", tmp_path / "unused.txt")
    assert code == 0 and reports[-1]["handled"] == RECORDS, reports
    assert [c.value for c in ck_consume(broker.bootstrap, "wide-out", RECORDS, timeout=20)] == [
        f"shipped {o}".encode() for o in ORDERS
    ]
