"""A compressed batch that inflates past ``max_inflated_bytes`` (16 x max.message.bytes) is refused on a compacted
topic (whose key check must look inside it) with InflatedBatchTooLargeError, a RecordTooLargeError, having held no
more than the bound in memory (tracemalloc sees zlib's output); the log is unchanged and takes the next batch."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from samsa.clock import ManualClock
from samsa.records import CompressionType, Record, build_batch, build_legacy_message_set
from samsa.storage.config import LogConfig
from samsa.storage.errors import InflatedBatchTooLargeError, RecordTooLargeError
from samsa.storage.log import Log

MAX_MESSAGE = 64 * 1024
BOUND = 16 * MAX_MESSAGE  # 1 MiB
INFLATED = 48 << 20  # what the bomb inflates to: 48 times the bound


def compacted_log(tmp_path: Path) -> Log:
    config = LogConfig.from_properties({"cleanup.policy": "compact", "max.message.bytes": MAX_MESSAGE})
    return Log.open(tmp_path / "t-0", config, ManualClock(1_700_000_000_000))


def bomb(legacy: bool = False) -> bytearray:
    value = bytes(1 << 20)
    records = [Record(i, 1_700_000_000_000, b"k%d" % i, value) for i in range(INFLATED >> 20)]
    if legacy:
        return bytearray(build_legacy_message_set(1, records, CompressionType.GZIP))
    return bytearray(build_batch(records, compression=CompressionType.GZIP))


@pytest.mark.parametrize("legacy", [False, True], ids=["v2", "v1"])
def test_a_decompression_bomb_is_refused_with_bounded_memory(tmp_path: Path, legacy: bool) -> None:
    log = compacted_log(tmp_path)
    payload = bomb(legacy)
    assert len(payload) < MAX_MESSAGE  # small on the wire: only inflating it is the danger
    tracemalloc.start()
    try:
        with pytest.raises(InflatedBatchTooLargeError) as refused:
            log.append_as_leader(payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(refused.value, RecordTooLargeError)  # answered as MESSAGE_TOO_LARGE
    assert refused.value.max_size == BOUND
    assert peak < 4 * BOUND, f"{peak} bytes held refusing a batch that inflates to {INFLATED}"
    assert log.log_end_offset == 0 and log.size == 0
    fine = bytearray(
        build_batch([Record(0, 1_700_000_000_000, b"k", bytes(BOUND // 2))], compression=CompressionType.GZIP)
    )
    assert log.append_as_leader(fine).first_offset == 0
    log.close()
