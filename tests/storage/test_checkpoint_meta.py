"""meta.properties: Kafka's text, round trips, a node id that is not ours."""

from __future__ import annotations

from pathlib import Path

import pytest

from samsa.storage.meta import (
    InconsistentNodeIdError,
    MetaProperties,
    MetaPropertiesError,
    ensure_meta_properties,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)


def test_reads_kafka_written_file(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text(
        "#\n#Sun Nov 22 10:00:00 UTC 2026\nnode.id=3\ndirectory.id=abc\nversion=1\ncluster.id=Xy_z-1\n"
    )
    assert read_meta_properties(tmp_path) == MetaProperties(1, "Xy_z-1", 3)
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=5\n")
    assert read_meta_properties(tmp_path) == MetaProperties(0, None, 5)


def test_round_trip_and_text(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, MetaProperties(1, "c1", 2))
    text = (tmp_path / "meta.properties").read_text()
    assert text.startswith("#\n#")
    assert text.splitlines()[2:] == ["cluster.id=c1", "node.id=2", "version=1"]
    assert read_meta_properties(tmp_path) == MetaProperties(1, "c1", 2)


def test_ensure_writes_then_checks(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    ensure_meta_properties(tmp_path, 1, "c")
    assert ensure_meta_properties(tmp_path, 1, "c").node_id == 1
    with pytest.raises(InconsistentNodeIdError) as info:
        ensure_meta_properties(tmp_path, 2, "c")
    assert (info.value.stored, info.value.configured) == (1, 2)
    assert "meta.properties" in str(info.value)
    with pytest.raises(MetaPropertiesError, match=r"cluster\.id"):
        ensure_meta_properties(tmp_path, 1, "other")


def test_properties_syntax() -> None:
    text = "! comment\n a : b \nc d\ne=f\\=g\nk\\ ey=v\n"
    assert parse_properties(text) == {"a": "b ", "c": "d", "e": "f=g", "k ey": "v"}
