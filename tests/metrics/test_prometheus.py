"""The broker's Prometheus endpoint after a known workload through real clients, read with Prometheus' own text
parser: Kafka's metric names (as the JMX exporter gives them), the records and bytes in and out, request counts
and times, partition and log gauges, a group's lag; only GET answered; a slow client does not hold the broker."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.clients.harness import BrokerProcess, free_port

pytestmark = [pytest.mark.timeout(120), pytest.mark.clients]

RECORDS, VALUE = 500, b"v" * 100


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    port = free_port()
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-metrics"), overrides={"metrics.prometheus.port": str(port)}
    )
    proc.start()
    yield proc, port
    proc.stop()


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = answer.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_names_and_values_after_a_known_workload(broker: tuple[BrokerProcess, int], tmp_path: Path) -> None:
    proc, port = broker
    producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce("measured", VALUE, key=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": proc.bootstrap, "group.id": "lagging", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("measured", 0, 0)])
    got = 0
    deadline = time.monotonic() + 30
    while got < RECORDS and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
    consumer.commit(offsets=[TopicPartition("measured", 0, 200)], asynchronous=False)
    consumer.close()
    assert got == RECORDS

    m = scrape(port)
    topic = (("topic", "measured"),)
    assert m[("kafka_server_brokertopicmetrics_messagesin_total", topic)] == RECORDS
    bytes_in = m[("kafka_server_brokertopicmetrics_bytesin_total", topic)]
    assert RECORDS * len(VALUE) < bytes_in < RECORDS * (len(VALUE) + 40)  # batches: values plus overhead
    assert m[("kafka_server_brokertopicmetrics_bytesout_total", topic)] >= bytes_in  # all read once at least
    assert m[("kafka_server_brokertopicmetrics_messagesin_total", ())] >= RECORDS  # the all-topics sample
    assert m[("kafka_server_brokertopicmetrics_totalproducerequests_total", topic)] >= 1
    assert m[("kafka_server_brokertopicmetrics_failedproducerequests_total", topic)] == 0
    produce_requests = sum(
        v for (name, labels), v in m.items()
        if name == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels
    )  # fmt: skip
    assert produce_requests == m[("kafka_server_brokertopicmetrics_totalproducerequests_total", topic)]
    p99 = m[("kafka_network_requestmetrics_totaltimems", (("quantile", "0.99"), ("request", "Produce")))]
    assert 0 < p99 < 5_000
    assert (
        m[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] == produce_requests
    )
    assert m[("samsa_request_total_time_seconds_count", (("request", "Produce"),))] == produce_requests
    assert m[("kafka_server_replicamanager_partitioncount", ())] >= 1
    assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
    assert m[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 0  # a single broker has none
    log_labels = (("partition", "0"), ("topic", "measured"))
    assert m[("kafka_log_log_logendoffset", log_labels)] == RECORDS
    assert m[("kafka_log_log_logstartoffset", log_labels)] == 0
    segment_bytes = sum(f.stat().st_size for f in (proc.data_dir / "measured-0").glob("*.log"))
    assert m[("kafka_log_log_size", log_labels)] == segment_bytes
    lag_labels = (("consumergroup", "lagging"), ("partition", "0"), ("topic", "measured"))
    assert m[("kafka_consumergroup_lag", lag_labels)] == RECORDS - 200
    group_prefix = "kafka_coordinator_group_groupmetadatamanager_"
    assert m[(group_prefix + "numgroups", ())] >= 1
    assert m[(group_prefix + "numgroupsempty", ())] >= 1  # "lagging" committed without joining: Empty
    assert m[(group_prefix + "numgroupsdead", ())] == 0
    assert m[(group_prefix + "numoffsets", ())] >= 1


def test_only_get_of_metrics_is_answered(broker: tuple[BrokerProcess, int]) -> None:
    _, port = broker
    post = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(post, timeout=10)
    assert refused.value.code == 405
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    assert missing.value.code == 404


def test_a_slow_client_holds_neither_the_endpoint_nor_the_broker(broker: tuple[BrokerProcess, int]) -> None:
    proc, port = broker
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    for sock in slow:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # and never the end of the head
    try:
        producer = Producer({"bootstrap.servers": proc.bootstrap})
        start = time.monotonic()
        producer.produce("measured-slow", b"x")
        assert producer.flush(10) == 0
        assert time.monotonic() - start < 5
        assert scrape(port)  # others are served meanwhile
        slow[0].settimeout(10)
        assert slow[0].recv(1) == b""  # closed after the request timeout
    finally:
        for sock in slow:
            sock.close()


def test_json_log_lines(tmp_path: Path) -> None:
    """``samsa serve --log-format json``: every line one JSON object with the fields a log pipeline indexes, and
    the partition a line names."""
    port = free_port()
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / "t-0").mkdir()
    (log_dir / "t-0" / "00000000000000000000.index").write_bytes(b"\x01" * 7)  # damaged: a WARN naming t-0
    proc = subprocess.Popen(
        [sys.executable, "-m", "samsa.cli", "serve", "--log-format", "json", "--override",
         f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={log_dir}",
         "--override", "node.id=7"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]
    assert lines, err
    for line in lines:
        assert {"time", "level", "logger", "message", "broker_id"} <= line.keys()
        assert line["broker_id"] == 7 and line["time"].endswith("Z")
    assert any(line.get("topic_partition") == "t-0" for line in lines), err
