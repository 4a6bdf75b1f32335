"""``LogSegments``: a partition's segments ordered by base offset, with floor/lower/higher lookups.

Concurrency contract: not thread-safe; the owning ``Log`` serialises calls.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator

from .segment import LogSegment


class LogSegments:
    """Segments keyed by base offset; adding a segment with an existing base replaces it."""

    __slots__ = ("_bases", "_by_base", "last")

    def __init__(self) -> None:
        self._bases: list[int] = []
        self._by_base: dict[int, LogSegment] = {}
        self.last: LogSegment | None = None  # the active segment (a plain field: read on every append)

    def add(self, segment: LogSegment) -> LogSegment | None:
        """Add ``segment``; returns the segment it replaced, if any."""
        old = self._by_base.get(segment.base_offset)
        if old is None:
            insort(self._bases, segment.base_offset)
        self._by_base[segment.base_offset] = segment
        self.last = self._by_base[self._bases[-1]]
        return old

    def remove(self, base_offset: int) -> LogSegment | None:
        segment = self._by_base.pop(base_offset, None)
        if segment is not None:
            self._bases.pop(bisect_left(self._bases, base_offset))
            self.last = self._by_base[self._bases[-1]] if self._bases else None
        return segment

    def clear(self) -> None:
        self._bases.clear()
        self._by_base.clear()
        self.last = None

    def get(self, base_offset: int) -> LogSegment | None:
        return self._by_base.get(base_offset)

    def contains(self, base_offset: int) -> bool:
        return base_offset in self._by_base

    def __len__(self) -> int:
        return len(self._bases)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter([self._by_base[b] for b in self._bases])

    def is_empty(self) -> bool:
        return not self._bases

    def base_offsets(self) -> list[int]:
        return list(self._bases)

    def first_segment(self) -> LogSegment | None:
        return self._by_base[self._bases[0]] if self._bases else None

    def last_segment(self) -> LogSegment | None:
        return self.last

    def first_base_offset(self) -> int:
        if not self._bases:
            raise LookupError("no segments")
        return self._bases[0]

    @property
    def active_segment(self) -> LogSegment:
        last = self.last
        if last is None:
            raise LookupError("no segments")
        return last

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= ``offset``."""
        i = bisect_right(self._bases, offset)
        return self._by_base[self._bases[i - 1]] if i else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset < ``offset``."""
        i = bisect_left(self._bases, offset)
        return self._by_base[self._bases[i - 1]] if i else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        """The segment with the smallest base offset > ``offset``."""
        i = bisect_right(self._bases, offset)
        return self._by_base[self._bases[i]] if i < len(self._bases) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        """Segments with a base offset > ``offset``, in order."""
        return [self._by_base[b] for b in self._bases[bisect_right(self._bases, offset) :]]

    def values(self, from_offset: int, to_offset: int | None = None) -> list[LogSegment]:
        """Segments from the one containing ``from_offset`` (its floor) up to those starting before ``to_offset``.

        ``values(x, x)`` is empty; ``to_offset < from_offset`` raises ValueError.
        """
        if to_offset is not None:
            if from_offset == to_offset:
                return []
            if to_offset < from_offset:
                raise ValueError(f"invalid segment range: from {from_offset} is after to {to_offset}")
        start = max(0, bisect_right(self._bases, from_offset) - 1)
        end = len(self._bases) if to_offset is None else bisect_left(self._bases, to_offset)
        return [self._by_base[b] for b in self._bases[start:end]]

    def non_active_from(self, from_offset: int) -> list[LogSegment]:
        """``values(from_offset, active base)``: segments holding ``from_offset`` and after, without the active."""
        if not self._bases:
            return []
        return self.values(from_offset, self._bases[-1]) if from_offset < self._bases[-1] else []

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._by_base.values())
