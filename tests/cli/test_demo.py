"""samsa demo: runs from a clean directory, prints the tree, the dump and a lookup that finds its record."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from samsa.cli.demo import TOPIC, walk_lookup
from samsa.cli.demo import demo as demo_command
from samsa.records import iter_batches


def test_a_directory_the_demo_did_not_make_is_refused_not_deleted(tmp_path: Path) -> None:
    """The demo empties its directory before it writes: once it emptied whatever ``--data-dir`` named, by
    default ``data``, which holds the README's broker log dir."""
    data = tmp_path / "data"
    (data / "broker-1").mkdir(parents=True)
    (data / "broker-1" / "meta.properties").write_text("node.id=1\n")
    result = CliRunner().invoke(demo_command, ["--data-dir", str(data)])
    assert result.exit_code == 1
    assert "not empty and was not made by this demo" in result.output
    assert (data / "broker-1" / "meta.properties").read_text() == "node.id=1\n"


def test_demo_runs_and_prints_the_lookup(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert CliRunner().invoke(demo_command, ["--data-dir", str(data)]).exit_code == 0
    (data / "stale-file").write_text("left from an earlier run")
    result = CliRunner().invoke(demo_command, ["--data-dir", str(data)])  # a rerun starts over
    assert result.exit_code == 0, result.output
    out = result.output
    assert not (data / "stale-file").exists()
    for p in range(3):
        assert f"{TOPIC}-{p}/" in out
    assert ".kafka_cleanshutdown" in out and "recovery-point-offset-checkpoint" in out
    assert "Log starting offset: 0" in out and "baseOffset: 0 lastOffset: " in out
    assert "offset: " in out and " position: " in out
    assert "binary search" in out and "index entry" in out and "found" in out
    assert "record  offset=" in out
    # several segments per partition, since segments are small
    assert len(list((data / f"{TOPIC}-0").glob("*.log"))) > 2


def test_walk_lookup_finds_every_offset(tmp_path: Path) -> None:
    data = tmp_path / "data"
    CliRunner().invoke(demo_command, ["--data-dir", str(data)])
    partition = data / f"{TOPIC}-1"
    last = 0
    for log in partition.glob("*.log"):
        for batch in iter_batches(log.read_bytes()):
            last = max(last, batch.last_offset)
    for target in range(0, last + 1, 7):
        steps, record = walk_lookup(partition, target)
        assert record is not None and record.offset == target, steps
    _, missing = walk_lookup(partition, last + 1)
    assert missing is None
