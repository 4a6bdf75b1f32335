"""Log-end claims (``log_end_claims``): written ahead of the log end, used only after an unclean shutdown in another
boot, and an append whose claim cannot be written changes nothing."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.records import build_batch
from samsa.storage import log_end_claims
from samsa.storage.config import LogConfig
from samsa.storage.errors import KafkaStorageError
from samsa.storage.log import Log
from samsa.storage.log_end_claims import CLAIM_STEP, LOG_END_CLAIMS, claims_after_a_restart, write_claims
from samsa.storage.log_manager import LogManager
from samsa.topic_partition import TopicPartition

A, B = TopicPartition("a", 0), TopicPartition("b", 0)


def manager(directory: Path, clock: ManualClock) -> LogManager:
    logs = LogManager([directory], LogConfig.from_properties({}), clock)
    logs.startup()
    return logs


def one_log(directory: Path) -> tuple[LogManager, Log]:
    logs = manager(directory, ManualClock())
    logs.create_topic("a", 1)
    log = logs.get_log(A)
    assert log is not None
    return logs, log


def from_another_boot(directory: Path) -> None:
    path = directory / LOG_END_CLAIMS
    lines = path.read_text().splitlines()
    lines[1] = "another-boot"
    path.write_text("\n".join(lines) + "\n")


def test_claims_are_used_only_when_written_in_another_boot(tmp_path: Path) -> None:
    write_claims(tmp_path, {A: 120, B: 7})
    assert claims_after_a_restart(tmp_path) == {}  # this boot: only the process can have died
    from_another_boot(tmp_path)
    assert claims_after_a_restart(tmp_path) == {A: 120, B: 7}


@pytest.mark.parametrize(
    "damage", [b"", b"samsa-log-end-claims 0\nboot\n3\na 0 1\n", b"\xff\xfe", b"x 0 1\n"]
)
def test_a_damaged_claims_file_is_said_and_read_as_none(
    tmp_path: Path, damage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / LOG_END_CLAIMS).write_bytes(damage)
    assert claims_after_a_restart(tmp_path) == {}
    assert LOG_END_CLAIMS in caplog.text


def test_the_first_append_claims_for_every_log_of_the_dir_in_one_write(tmp_path: Path) -> None:
    clock = ManualClock()
    logs = manager(tmp_path, clock)
    logs.create_topic("a", 1)
    logs.create_topic("b", 1)
    a, b = logs.get_log(A), logs.get_log(B)
    assert a is not None and b is not None and a.claimed_end == b.claimed_end == -1
    a.append_as_leader(build_batch([b"x"] * 3))
    assert (a.claimed_end, b.claimed_end) == (3 + CLAIM_STEP, CLAIM_STEP)
    written = (tmp_path / LOG_END_CLAIMS).stat().st_mtime_ns
    b.append_as_leader(build_batch([b"y"]))  # within its claim: nothing written
    assert (tmp_path / LOG_END_CLAIMS).stat().st_mtime_ns == written
    logs.shutdown()


def test_an_append_whose_claim_cannot_be_written_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, log = one_log(tmp_path)

    def failing(path: Path, data: bytes) -> None:
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(log_end_claims, "write_atomically", failing)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(build_batch([b"x"] * 3))
    assert log.log_end_offset == 0 and log.size == 0 and log.claimed_end == -1
    monkeypatch.undo()
    assert log.append_as_leader(build_batch([b"x"] * 3)).first_offset == 0
    logs.shutdown()


def test_after_an_unclean_stop_in_another_boot_the_log_continues_at_its_claim(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs, log = one_log(tmp_path)
    log.append_as_leader(build_batch([b"x"] * 3))
    claimed = log.claimed_end
    logs.shutdown()
    (tmp_path / ".kafka_cleanshutdown").unlink()  # as if it had died
    from_another_boot(tmp_path)
    with caplog.at_level(logging.WARNING):
        again = manager(tmp_path, ManualClock())
    reopened = again.get_log(A)
    assert reopened is not None and reopened.log_end_offset == claimed
    assert "page cache may have lost its tail" in caplog.text
    assert reopened.append_as_leader(build_batch([b"z"])).first_offset == claimed
    again.shutdown()
