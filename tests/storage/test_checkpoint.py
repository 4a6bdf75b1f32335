"""Checkpoint files: round trips against a dict model, malformed files named by file and line, the clean marker."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.storage.checkpoint import (
    CheckpointError,
    consume_clean_shutdown,
    has_clean_shutdown,
    leader_epoch_checkpoint,
    offset_checkpoint,
    read_clean_shutdown_epoch,
    write_clean_shutdown,
)
from samsa.storage.topic import TopicPartition

topics = st.text(alphabet="abcxyz._-0123456789", min_size=1, max_size=20)
entries = st.dictionaries(
    st.builds(TopicPartition, topics, st.integers(0, 10_000)), st.integers(0, 2**63 - 1), max_size=30
)


@settings(max_examples=100, deadline=None)
@given(model=entries)
def test_offset_checkpoint_round_trip(
    tmp_path_factory: pytest.TempPathFactory, model: dict[TopicPartition, int]
) -> None:
    path = tmp_path_factory.mktemp("cp") / "recovery-point-offset-checkpoint"
    cp = offset_checkpoint(path)
    cp.write(model)
    assert cp.read_dict() == model
    assert not path.with_name(path.name + ".tmp").exists()


def test_offset_checkpoint_exact_text(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    offset_checkpoint(path).write([(TopicPartition("my-topic", 0), 1234), (TopicPartition("other", 1), 99)])
    assert path.read_text() == "0\n2\nmy-topic 0 1234\nother 1 99\n"


def test_reads_kafka_whitespace_and_missing_or_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    assert offset_checkpoint(path).read() == []  # missing
    path.write_text("")
    assert offset_checkpoint(path).read() == []  # empty
    path.write_text("0\n")
    assert offset_checkpoint(path).read() == []  # no count line
    path.write_text("0\n1\na.b-c   7\t42\n")
    assert offset_checkpoint(path).read() == [(TopicPartition("a.b-c", 7), 42)]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("x\n0\n", 1, "not an integer"),
        ("1\n0\n", 1, "unrecognised version 1"),
        ("0\ny\n", 2, "not an integer"),
        ("0\n2\nt 0 1\n", 2, "declared 2 entries but found 1"),
        ("0\n1\nt 0 1 9\n", 3, "4 fields"),
        ("0\n2\nt 0 1\nt zero 1\n", 4, "malformed line"),
        ("0\n1\nt 0 1\nextra 1 2\n", 2, "declared 1 entries but found 2"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    path = tmp_path / "log-start-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError) as info:
        offset_checkpoint(path).read()
    assert info.value.line == line
    assert info.value.path == path
    assert str(path) in str(info.value)
    assert fragment in str(info.value)


def test_leader_epoch_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cp = leader_epoch_checkpoint(path)
    cp.write([(0, 0), (3, 120)])
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert cp.read() == [(0, 0), (3, 120)]
    path.write_text("0\n1\n0 0 0\n")
    with pytest.raises(CheckpointError, match="line 3"):
        cp.read()


def test_clean_shutdown_marker(tmp_path: Path) -> None:
    assert not has_clean_shutdown(tmp_path)
    assert consume_clean_shutdown(tmp_path) is False
    write_clean_shutdown(tmp_path, broker_epoch=7)
    assert (tmp_path / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":7}'
    assert read_clean_shutdown_epoch(tmp_path) == 7
    assert consume_clean_shutdown(tmp_path) is True
    assert not has_clean_shutdown(tmp_path)
    (tmp_path / ".kafka_cleanshutdown").write_text("garbage")  # presence is what counts
    assert read_clean_shutdown_epoch(tmp_path) is None
    assert consume_clean_shutdown(tmp_path) is True
