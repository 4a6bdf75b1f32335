"""Storage failures seen from the wire: a partition whose log went offline, and a disk too full to create the
offsets topic or a producer id block. Every request is answered with a Kafka error code on a connection that stays
open; other partitions keep serving; DescribeLogDirs (and ``samsa log-dirs``) report the directory's error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import samsa
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.api_versions import ApiVersionsRequest
from samsa.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest
from samsa.storage.topic import TopicPartition
from tests.badinput.wire import Connection, batch, fetch_records, produce
from tests.small_disk import fill, small_tmpfs


@pytest.fixture
def broker() -> Iterator[samsa.Broker]:
    with samsa.Broker() as running:
        yield running


def take_offline(broker: samsa.Broker, tp: TopicPartition) -> None:
    """Make the next append to ``tp`` fail and its undo fail too: the descriptor is swapped for a directory's."""
    log = broker.core.log_manager.get_log(tp)
    assert log is not None
    records = log.active_segment.log
    os.close(records.fd)
    records._fd = os.open(log.directory, os.O_RDONLY)


def test_an_offline_partition_answers_storage_errors_and_the_others_keep_serving(
    broker: samsa.Broker,
) -> None:
    broker.create_topic("doomed", partitions=1)
    broker.create_topic("healthy", partitions=1)
    port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
    with Connection(port) as conn:
        assert produce(conn, "doomed", {0: batch(b"kept")}) == {0: (0, 0)}
        take_offline(broker, TopicPartition("doomed", 0))
        assert produce(conn, "doomed", {0: batch(b"lost")})[0][0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert produce(conn, "doomed", {0: batch(b"refused")})[0][0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert fetch_records(conn, "doomed")[0] == ErrorCode.KAFKA_STORAGE_ERROR
        assert produce(conn, "healthy", {0: batch(b"fine")}) == {0: (0, 0)}
        assert fetch_records(conn, "healthy")[0] == ErrorCode.NONE
        dirs = conn.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None))
        assert [d.error_code for d in dirs.results] == [ErrorCode.KAFKA_STORAGE_ERROR]
        assert {t.name for t in dirs.results[0].topics} >= {"doomed", "healthy"}
    tool = subprocess.run(
        [
            sys.executable,
            "-m",
            "samsa.cli",
            "log-dirs",
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--describe",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tool.returncode == 0, tool.stderr
    assert "KafkaStorageException" in tool.stdout


def test_a_full_disk_answers_coordinator_lookups_and_producer_ids_with_error_codes(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "disk", 4) as disk, samsa.Broker(log_dir=disk / "data") as broker:
        fill(disk / "ballast")
        port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
        with Connection(port) as conn:
            found = conn.request(
                ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="group-on-a-full-disk", key_type=0)
            )
            assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            pid = conn.request(
                ApiKey.INIT_PRODUCER_ID,
                2,
                InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
            )
            assert pid.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            assert conn.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest()).error_code == ErrorCode.NONE
            (disk / "ballast").unlink()
            # once the disk has room, a retry finds the coordinator (clients retry; the broker waits a
            # moment after a failed creation before it tries again)
            deadline = time.monotonic() + 10
            while True:
                found = conn.request(
                    ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="group-on-a-full-disk", key_type=0)
                )
                if found.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert found.error_code == ErrorCode.NONE
            assert (
                conn.request(
                    ApiKey.INIT_PRODUCER_ID, 2, InitProducerIdRequest(transactional_id=None)
                ).error_code
                == ErrorCode.NONE
            )
