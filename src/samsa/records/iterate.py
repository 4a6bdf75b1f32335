"""Deep iteration of any batch, whatever its magic: what dump-log and the Spark readers use."""

from __future__ import annotations

from collections.abc import Iterator

from .batch import as_view, decode_batch
from .batch_view import BatchView
from .legacy import decode_legacy
from .record import Record


def iter_records(
    batch: BatchView | bytes | bytearray | memoryview, *, verify_crc: bool = True
) -> Iterator[Record]:
    """The records of one batch (v2) or shallow message (v0/v1, a compressed wrapper's inner records too).

    Offsets are absolute and timestamps are what a consumer sees (LogAppendTime applied, -1 for v0).
    Raises RecordsError subclasses only.
    """
    view = as_view(batch)
    if view.magic >= 2:
        yield from decode_batch(view, verify_crc=verify_crc).records
    else:
        yield from decode_legacy(view, verify_crc=verify_crc)
