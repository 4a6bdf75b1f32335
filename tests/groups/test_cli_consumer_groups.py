"""``samsa consumer-groups`` against a real broker, with a real confluent-kafka group: the LAG column is what the
log end offsets and committed offsets imply, resets plan (dry run) and commit (--execute) like Kafka's tool."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.harness import BrokerProcess, Message, ck_produce

TOPIC = "cg-topic"
GROUP = "cg-group"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path_factory.mktemp("cg"))
    proc.start()
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3)])[TOPIC].result(20)
    for p, count in enumerate((10, 20, 5)):
        ck_produce(
            proc.bootstrap, TOPIC, [Message(None, f"v{i}".encode()) for i in range(count)], partition=p
        )
    yield proc
    proc.stop()


def samsa(broker: BrokerProcess, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "samsa.cli", "consumer-groups", "--bootstrap-server", broker.bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def table(output: str) -> list[list[str]]:
    lines = [line.split() for line in output.splitlines() if line.strip()]
    return [row for row in lines if row and row[0] in ("GROUP", GROUP)]


def test_describe_shows_lag_of_an_active_member_then_reset_and_delete(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "client.id": "cg-client",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 4), TopicPartition(TOPIC, 1, 20)], asynchronous=False)
    try:
        assert GROUP in samsa(broker, "--list").stdout.split()
        rows = table(samsa(broker, "--describe", "--group", GROUP).stdout)
        assert rows[0] == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        body = {int(r[2]): r for r in rows[1:]}
        assert sorted(body) == [0, 1, 2]
        assert [body[p][3:6] for p in range(3)] == [["4", "10", "6"], ["20", "20", "0"], ["-", "5", "-"]]
        assert all(body[p][6].startswith("cg-client-") and body[p][7] == "/127.0.0.1" for p in range(3))
        assert all(body[p][8] == "cg-client" for p in range(3))
        refused = samsa(
            broker, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest", check=False
        )
        assert refused.returncode == 1 and "inactive" in refused.stderr and "Stable" in refused.stderr
    finally:
        consumer.close()

    described = samsa(broker, "--describe", "--group", GROUP).stdout
    assert f"Consumer group '{GROUP}' has no active members." in described
    assert {int(r[2]): r[3:9] for r in table(described)[1:]} == {
        0: ["4", "10", "6", "-", "-", "-"],
        1: ["20", "20", "0", "-", "-", "-"],
    }

    dry = samsa(broker, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0,2", "--to-latest")
    assert dry.stdout.startswith("WARN: No action will be performed")
    assert [r[2:] for r in table(dry.stdout)[1:]] == [["0", "10"], ["2", "5"]]
    assert [r[3] for r in table(samsa(broker, "--describe", "--group", GROUP).stdout)[1:]] == ["4", "20"]

    samsa(broker, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-offset", "7", "--execute")
    lags = {int(r[2]): r[3:6] for r in table(samsa(broker, "--describe", "--group", GROUP).stdout)[1:]}
    assert lags == {
        0: ["7", "10", "3"],
        1: ["7", "20", "13"],
        2: ["5", "5", "0"],
    }  # 7 clamped to 5 on partition 2

    samsa(broker, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert [r[3] for r in table(samsa(broker, "--describe", "--group", GROUP).stdout)[1:]] == ["0", "0", "0"]
    samsa(broker, "--reset-offsets", "--group", GROUP, "--all-topics", "--shift-by", "3", "--execute")
    assert [r[3] for r in table(samsa(broker, "--describe", "--group", GROUP).stdout)[1:]] == ["3", "3", "3"]
    future = samsa(
        broker,
        "--reset-offsets",
        "--group",
        GROUP,
        "--all-topics",
        "--to-datetime",
        "2999-01-01T00:00:00.000",
    )
    assert [r[3] for r in table(future.stdout)[1:]] == ["10", "20", "5"]

    deleted = samsa(broker, "--delete", "--group", GROUP)
    assert f"Deletion of requested consumer groups ('{GROUP}') was successful." in deleted.stdout
    assert GROUP not in samsa(broker, "--list").stdout.split()
    missing = samsa(broker, "--describe", "--group", GROUP, check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    again = samsa(broker, "--delete", "--group", GROUP, check=False)
    assert again.returncode == 1 and "GROUP_ID_NOT_FOUND" in again.stderr


def test_describe_members_and_state(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer

    group = "cg-members"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "group.instance.id": "static-1",
            "client.id": "cg-member",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment()

    def rows(output: str) -> list[list[str]]:
        return [line.split() for line in output.splitlines() if line.split()[:1] in (["GROUP"], [group])]

    try:
        members = rows(samsa(broker, "--describe", "--group", group, "--members").stdout)
        assert members[0] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        [row] = members[1:]
        assert row[0] == group and row[1].startswith("static-1-")
        assert row[2:] == ["static-1", "/127.0.0.1", "cg-member", "3"]

        verbose = rows(samsa(broker, "--describe", "--group", group, "--members", "--verbose").stdout)
        assert verbose[0][-2:] == ["#PARTITIONS", "ASSIGNMENT"]
        assert verbose[1][-2:] == ["3", f"{TOPIC}(0,1,2)"]

        state = samsa(broker, "--describe", "--group", group, "--state").stdout
        header, line = (row for row in state.splitlines() if row.strip())
        assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert line.split() == [group, broker.bootstrap, "(1)", "range", "Stable", "1"]
    finally:
        consumer.close()
    unknown = samsa(broker, "--describe", "--group", "cg-nobody", "--state", check=False)
    assert unknown.returncode == 1 and "does not exist" in unknown.stderr
    usage = samsa(broker, "--describe", "--group", group, "--verbose", check=False)
    assert usage.returncode == 2 and "--verbose needs --describe --members" in usage.stderr
