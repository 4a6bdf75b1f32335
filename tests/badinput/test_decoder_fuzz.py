"""Every request decoder the broker serves: a decoded request or a protocol error, never another exception.

tests/protocol/test_protocol_fuzz.py mutates frames of twelve client APIs at a few versions; this covers every
API in ``HANDLERS`` at every advertised version, in the broker's own mode (``allow_trailing=True``) as well as
the strict one, with length fields set to boundary values, and checks that whatever decodes re-encodes to a
frame that decodes to the same message (so a handler that echoes a decoded value back can always encode it).
"""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samsa.broker.handlers import HANDLERS
from samsa.protocol import (
    RemoteProtocolError,
    RequestHeader,
    api_schema,
    decode_request,
    encode_request,
)
from tests.protocol.protocol_strategies import message_strategy

FUZZ = settings(
    max_examples=int(os.environ.get("SAMSA_FUZZ_EXAMPLES", "50")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
SERVED = sorted(HANDLERS)
# every served version gets its own mutation run (about 50 examples per API over its versions)
FUZZ_PAIR = settings(
    max_examples=int(os.environ.get("SAMSA_FUZZ_EXAMPLES", "10")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
BOUNDARY_INT16 = [0x0000, 0x0001, 0x7FFF, 0x8000, 0xFFFF, 0xFFFE]
BOUNDARY_INT32 = [0x00000000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x00010000, 0x00FFFFFF]


def versions(api_key: int) -> list[int]:
    low, high = HANDLERS[api_key].versions
    return list(range(low, high + 1))


PAIRS = [(key, version) for key in SERVED for version in versions(key)]


def check(frame: bytes, key: int | None = None) -> None:
    """The invariant, for both decoding modes; a decoded message must survive an encode/decode round trip."""
    for trailing in (False, True):
        try:
            header, request = decode_request(frame, allow_trailing=trailing)
        except RemoteProtocolError:
            continue
        assert isinstance(header, RequestHeader)
        if key is not None:
            assert header.request_api_key == key
        assert type(request) is api_schema(header.request_api_key).request_type
        again = encode_request(header, request)
        assert decode_request(again[4:]) == (header, request)


def valid_frame(data: st.DataObject, key: int, version: int) -> bytearray:
    message = data.draw(message_strategy(api_schema(key).request_type, version))
    client_id = data.draw(st.none() | st.text(max_size=8))
    return bytearray(encode_request(RequestHeader(key, version, 17, client_id), message)[4:])


def mutate(data: st.DataObject, frame: bytearray) -> bytearray:
    for _ in range(data.draw(st.integers(1, 3))):
        if not frame:
            break
        at = data.draw(st.integers(0, len(frame) - 1))
        kind = data.draw(st.sampled_from(["cut", "flip", "int16", "int32", "varint", "splice"]))
        if kind == "cut":
            del frame[at:]
        elif kind == "flip":
            frame[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "int16":  # a string length or an int16 field
            frame[at : at + 2] = struct.pack(">H", data.draw(st.sampled_from(BOUNDARY_INT16)))
        elif kind == "int32":  # an array length, a bytes length or an int32 field
            frame[at : at + 4] = struct.pack(">I", data.draw(st.sampled_from(BOUNDARY_INT32)))
        elif kind == "varint":  # a compact length or a tag section of a flexible version
            frame[at : at + 1] = data.draw(
                st.sampled_from([b"\x00", b"\x7f", b"\xff\xff\xff\xff\x0f", b"\x80"])
            )
        else:
            end = data.draw(st.integers(at, len(frame)))
            frame[at:at] = frame[at:end]
    return frame


@pytest.mark.parametrize("key", SERVED)
@FUZZ
@given(data=st.data())
def test_served_api_random_bodies(key: int, data: st.DataObject) -> None:
    version = data.draw(st.sampled_from(versions(key)))
    head = bytearray(
        encode_request(RequestHeader(key, version, 5, "fuzz"), api_schema(key).request_type())[4:]
    )
    prefix = data.draw(st.integers(0, len(head)))  # some of the valid body, then random bytes
    check(bytes(head[:prefix]) + data.draw(st.binary(max_size=96)), None)


@pytest.mark.parametrize(("key", "version"), PAIRS)
@FUZZ_PAIR
@given(data=st.data())
def test_served_api_mutated_valid_requests(key: int, version: int, data: st.DataObject) -> None:
    frame = valid_frame(data, key, version)
    check(bytes(frame), key)  # the unmutated frame decodes, and round-trips
    check(bytes(mutate(data, frame)), None)


@pytest.mark.parametrize(("key", "version"), PAIRS)
def test_every_truncation_of_a_default_request(key: int, version: int) -> None:
    """A default request cut at every byte: a decoded request (only the whole frame) or a protocol error."""
    frame = encode_request(RequestHeader(key, version, 9, "cut"), api_schema(key).request_type())[4:]
    header, _ = decode_request(frame)
    assert (header.request_api_key, header.request_api_version) == (key, version)
    for end in range(len(frame)):
        check(frame[:end], None)
