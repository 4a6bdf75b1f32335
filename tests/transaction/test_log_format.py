"""``__transaction_state`` records checked against bytes built here with ``struct``, not by the writer."""

from __future__ import annotations

import struct

from samsa.transaction import log_format as lf
from samsa.transaction.state import TransactionMetadata, TransactionState


def test_java_string_hash_matches_java() -> None:
    # Values of "x".hashCode() in Java.
    assert lf.java_string_hash("") == 0
    assert lf.java_string_hash("a") == 97
    assert lf.java_string_hash("hello") == 99162322
    assert lf.java_string_hash("polygenelubricants") == -(2**31)
    assert lf.java_string_hash("\u00e9t\u00e9") == 233 * 31 * 31 + 116 * 31 + 233


def test_partition_for() -> None:
    assert lf.partition_for("hello", 50) == 99162322 % 50
    assert lf.partition_for("polygenelubricants", 50) == 0
    assert lf.partition_for("Aa", 50) == lf.partition_for("BB", 50)  # Java's classic collision


def test_key_bytes() -> None:
    assert lf.encode_key("tx") == struct.pack(">hh2s", 0, 2, b"tx")
    assert lf.decode_key(struct.pack(">hh2s", 0, 2, b"tx")) == "tx"


def test_value_bytes_v0() -> None:
    meta = TransactionMetadata(
        "tx", 42, 3, 60_000, TransactionState.ONGOING, frozenset({("b", 1), ("a", 0), ("a", 2)}), 111, 222
    )
    expected = (
        struct.pack(">hqhib", 0, 42, 3, 60_000, 1)
        + struct.pack(">i", 2)
        + struct.pack(">h1si", 1, b"a", 2)
        + struct.pack(">ii", 0, 2)
        + struct.pack(">h1si", 1, b"b", 1)
        + struct.pack(">i", 1)
        + struct.pack(">qq", 222, 111)
    )
    assert lf.encode_value(meta) == expected
    assert lf.decode_value("tx", expected) == meta


def test_complete_value_has_no_partitions() -> None:
    meta = TransactionMetadata("tx", 1, 0, 1000, TransactionState.COMPLETE_COMMIT, frozenset(), -1, 5)
    data = lf.encode_value(meta)
    assert data == struct.pack(">hqhibiqq", 0, 1, 0, 1000, 4, 0, 5, -1)
    assert lf.decode_value("tx", data) == meta
