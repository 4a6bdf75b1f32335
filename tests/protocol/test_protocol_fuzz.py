"""decode_request returns a (header, request) pair or raises a RemoteProtocolError, never any other exception.

Inputs are arbitrary bytes, and valid request frames of the client APIs with bytes flipped, cut or inserted.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

from samsa.protocol import RemoteProtocolError, RequestHeader, api_schema, decode_request, encode_request

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
# api_key: versions whose valid frames get mutated (Produce, Fetch, ListOffsets, Metadata, OffsetCommit,
# OffsetFetch, FindCoordinator, JoinGroup, SyncGroup, ApiVersions, InitProducerId, DescribeConfigs)
TARGETS = {
    0: [3, 9],
    1: [4, 12],
    2: [1, 7],
    3: [0, 12],
    8: [2, 8],
    9: [1, 6],
    10: [0, 4],
    11: [5, 7],
    14: [3, 5],
    18: [0, 3],
    22: [0, 4],
    32: [1, 4],
}
PAIRS = [(key, version) for key, versions in TARGETS.items() for version in versions]


def check(frame: bytes) -> None:
    try:
        header, request = decode_request(frame)
    except RemoteProtocolError:
        return
    assert isinstance(header, RequestHeader)
    assert type(request) is api_schema(header.request_api_key).request_type


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes(frame: bytes) -> None:
    check(frame)


@FUZZ
@given(
    key=st.sampled_from(sorted(TARGETS)),
    version=st.integers(-3, 20),
    tail=st.binary(max_size=64),
)
def test_plausible_headers_with_garbage_bodies(key: int, version: int, tail: bytes) -> None:
    check(key.to_bytes(2, "big") + (version & 0xFFFF).to_bytes(2, "big") + b"\0\0\0\1\0\1x" + tail)


@pytest.mark.parametrize(("key", "version"), PAIRS)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_valid_frames(key: int, version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(api_schema(key).request_type, version))
    frame = bytearray(encode_request(RequestHeader(key, version, 1, "fuzz"), message)[4:])
    check(bytes(frame))  # the unmutated frame must decode
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "set"]))
        at = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if kind == "flip" and frame:
            frame[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            del frame[at:]
        elif kind == "insert":
            frame[at:at] = data.draw(st.binary(min_size=1, max_size=4))
        elif frame:
            frame[at] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
    check(bytes(frame))
