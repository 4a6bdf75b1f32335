"""The one .properties reader and writer: Java's escapes and line continuations, and a write/read round trip."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from samsa.storage.properties import format_properties, parse_properties


def test_continuations_escapes_and_separators() -> None:
    text = (
        "# comment\n! another\n"
        "log.dirs = /a,\\\n     /b\n"
        "key\\ with\\ spaces: v\\u00e9\\tx\n"
        "plain value here\n"
        "ends.with.escaped.backslash=c:\\\\\n"
        "next=1\n"
    )
    assert parse_properties(text) == {
        "log.dirs": "/a,/b",
        "key with spaces": "vé\tx",
        "plain": "value here",
        "ends.with.escaped.backslash": "c:\\",
        "next": "1",
    }


keys = st.text(min_size=1, max_size=20).filter(lambda k: k.strip() == k and "\x00" not in k)
values = st.text(max_size=30).filter(lambda v: "\x00" not in v)


@given(st.dictionaries(keys, values, max_size=6))
def test_what_is_written_reads_back(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props, comment="c")) == props


def test_meta_properties_read_through_the_same_reader(tmp_path: Path) -> None:
    from samsa.storage.meta import read_meta_properties

    (tmp_path / "meta.properties").write_text("cluster.id=abc\\\n  def\nnode.id=3\nversion=1\n")
    meta = read_meta_properties(tmp_path)
    assert meta is not None and (meta.cluster_id, meta.node_id) == ("abcdef", 3)
