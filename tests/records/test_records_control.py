"""Control record keys and end-transaction markers."""

from __future__ import annotations

import struct

import pytest

from samsa.records import (
    ControlRecordType,
    EndTransactionMarker,
    InvalidRecordError,
    Record,
    build_batch,
    decode_batch,
    encode_control_key,
    parse_control_key,
    parse_control_record,
)


def test_key_layout_and_types() -> None:
    assert encode_control_key(ControlRecordType.COMMIT) == b"\x00\x00\x00\x01"
    assert parse_control_key(b"\x00\x00\x00\x00") == (0, ControlRecordType.ABORT)
    assert parse_control_key(struct.pack(">hh", 0, 6)) == (0, ControlRecordType.KRAFT_VOTERS)
    assert parse_control_key(struct.pack(">hh", 0, 99)) == (0, ControlRecordType.UNKNOWN)
    assert parse_control_key(struct.pack(">hh", 3, 1) + b"later fields") == (3, ControlRecordType.COMMIT)
    with pytest.raises(ValueError):
        encode_control_key(ControlRecordType.UNKNOWN)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (None, "null key"),
        (b"\x00\x00\x01", "only 3 bytes"),
        (struct.pack(">hh", -1, 0), "version found for control record: -1"),
    ],
)
def test_bad_keys(key: bytes | None, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        parse_control_key(key)


def test_marker_value_layout() -> None:
    marker = EndTransactionMarker(ControlRecordType.ABORT, 7)
    assert marker.value() == b"\x00\x00\x00\x00\x00\x07" and marker.key() == b"\x00\x00\x00\x00"
    assert EndTransactionMarker.parse(ControlRecordType.ABORT, marker.value()) == marker
    with pytest.raises(ValueError):
        EndTransactionMarker(ControlRecordType.LEADER_CHANGE, 1)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "null value"),
        (b"\x00" * 5, "only 5 bytes"),
        (struct.pack(">hi", -2, 0), "end transaction marker: -2"),
    ],
)
def test_bad_marker_values(value: bytes | None, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        EndTransactionMarker.parse(ControlRecordType.COMMIT, value)


def test_non_marker_control_records_parse_without_a_marker() -> None:
    record = Record(5, 9, struct.pack(">hh", 0, 2), b"leader change data")
    control = parse_control_record(record)
    assert (control.offset, control.timestamp, control.control_type, control.marker) == (
        5,
        9,
        ControlRecordType.LEADER_CHANGE,
        None,
    )
    batch = decode_batch(build_batch([record], is_control=True))
    assert batch.control_records == (control,)
