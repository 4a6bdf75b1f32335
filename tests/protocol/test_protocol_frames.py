"""The frame splitter against a simple model: frames come out whole, in order, however the bytes are cut."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.protocol import FrameError, FrameSplitter, FrameTooLargeError


def framed(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


@settings(max_examples=150, deadline=None)
@given(payloads=st.lists(st.binary(max_size=40), max_size=8), cuts=st.lists(st.integers(0, 400), max_size=10))
def test_frames_survive_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = framed(payloads)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    splitter = FrameSplitter()
    got: list[bytes] = []
    for start, end in itertools.pairwise(bounds):
        got.extend(splitter.feed(stream[start:end]))
    assert got == payloads
    assert splitter.buffered == 0


def test_partial_frame_is_held_until_complete() -> None:
    splitter = FrameSplitter()
    assert splitter.feed(b"\x00\x00\x00\x03ab") == []
    assert splitter.buffered == 6
    assert splitter.feed(b"c\x00") == [b"abc"]
    assert splitter.buffered == 1


def test_size_over_the_limit_is_rejected_before_buffering_the_body() -> None:
    splitter = FrameSplitter(max_frame_size=10)
    assert splitter.feed(b"\x00\x00\x00\x0a" + b"x" * 10) == [b"x" * 10]
    with pytest.raises(FrameTooLargeError) as info:
        splitter.feed(b"\x00\x00\x00\x0b")
    assert (info.value.size, info.value.limit) == (11, 10)


def test_negative_size_is_an_error() -> None:
    with pytest.raises(FrameError) as info:
        FrameSplitter().feed(b"\xff\xff\xff\xfe")
    assert info.value.size == -2
    assert not isinstance(info.value, FrameTooLargeError)
