"""Headers, API keys, error codes, primitives and the encode-side errors."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.protocol import (
    ApiKey,
    EncodeError,
    ErrorCode,
    InvalidRequestError,
    LocalProtocolError,
    RemoteProtocolError,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from samsa.protocol import primitives as p
from samsa.protocol.messages.fetch import FetchResponse
from samsa.protocol.messages.metadata import MetadataRequest
from samsa.protocol.messages.produce import ProduceRequest


def test_header_versions_follow_flexible_versions() -> None:
    assert request_header_version(ApiKey.PRODUCE, 8) == 1
    assert request_header_version(ApiKey.PRODUCE, 9) == 2
    assert request_header_version(ApiKey.CONTROLLED_SHUTDOWN, 0) == 0
    assert response_header_version(ApiKey.FETCH, 11) == 0
    assert response_header_version(ApiKey.FETCH, 12) == 1
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0


def test_api_key_numbers_and_ranges() -> None:
    assert (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.API_VERSIONS, ApiKey.DESCRIBE_PRODUCERS) == (0, 1, 18, 61)
    assert ApiKey.INCREMENTAL_ALTER_CONFIGS == 44 and ApiKey.OFFSET_DELETE == 47
    assert (ApiKey.PRODUCE.min_version, ApiKey.PRODUCE.max_version) == (0, 11)
    assert ApiKey.FETCH.first_flexible_version == 12 and ApiKey.FETCH.is_flexible(12)
    assert not ApiKey.SASL_HANDSHAKE.is_flexible(1)
    assert ApiKey.LIST_OFFSETS.api_name == "ListOffsets"


def test_error_codes_carry_names_and_retriable_flags() -> None:
    assert ErrorCode(35) is ErrorCode.UNSUPPORTED_VERSION and not ErrorCode.UNSUPPORTED_VERSION.retriable
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6 and ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1 and ErrorCode.NONE == 0
    assert ErrorCode.CORRUPT_MESSAGE.retriable and not ErrorCode.OFFSET_OUT_OF_RANGE.retriable
    assert ErrorCode.TRANSACTION_ABORTABLE == 120
    assert sorted(int(c) for c in ErrorCode) == list(range(-1, len(ErrorCode) - 1))


def test_decode_errors_are_remote_and_carry_values() -> None:
    frame = encode_request(RequestHeader(ApiKey.METADATA, 4, 5, "c"), MetadataRequest(topics=None))[4:]
    with pytest.raises(InvalidRequestError) as info:
        decode_request(frame + b"\x00")
    assert (info.value.api_key, info.value.api_version, info.value.offset) == (3, 4, len(frame))
    with pytest.raises(InvalidRequestError):
        decode_request(frame[:-1])
    with pytest.raises(UnsupportedVersionError) as unsupported:
        decode_request(b"\x03\xe7\x00\x00\x00\x00\x00\x09\x00\x00")
    assert (unsupported.value.api_key, unsupported.value.correlation_id) == (999, 9)
    assert issubclass(InvalidRequestError, RemoteProtocolError)
    assert issubclass(UnsupportedVersionError, RemoteProtocolError)


def test_encode_errors_are_local() -> None:
    with pytest.raises(EncodeError, match="TransactionalId"):
        encode_request(RequestHeader(ApiKey.PRODUCE, 2, 1, "c"), ProduceRequest(transactional_id="tx"))
    with pytest.raises(LocalProtocolError):
        encode_request(RequestHeader(ApiKey.PRODUCE, 3, 1, "c"), MetadataRequest())
    with pytest.raises(LocalProtocolError):
        encode_request(RequestHeader(ApiKey.PRODUCE, 99, 1, "c"), ProduceRequest())
    with pytest.raises(EncodeError):
        encode_request(RequestHeader(ApiKey.PRODUCE, 3, 1, "c"), ProduceRequest(acks=1 << 20))
    with pytest.raises(EncodeError):
        encode_response(ResponseHeader(1), 1, 4, FetchResponse(responses=None))  # type: ignore[arg-type]


def test_ignorable_field_is_dropped_in_versions_without_it() -> None:
    response = FetchResponse(throttle_time_ms=7)  # ThrottleTimeMs is ignorable, absent in v0
    _, decoded = decode_response(encode_response(ResponseHeader(3), 1, 0, response)[4:], 1, 0)
    assert decoded.throttle_time_ms == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**32 - 1))
def test_varints_round_trip(v32: int, v64: int, unsigned: int) -> None:
    out = bytearray()
    p.write_varint(out, v32)
    p.write_varlong(out, v64)
    p.write_uvarint(out, unsigned)
    buf = memoryview(bytes(out))
    a, pos = p.read_varint(buf, 0)
    b, pos = p.read_varlong(buf, pos)
    c, pos = p.read_uvarint(buf, pos)
    assert (a, b, c, pos) == (v32, v64, unsigned, len(out))


def test_primitive_encodings_match_the_field_table() -> None:
    out = bytearray()
    p.write_compact_nullable_string(out, None)
    p.write_compact_string(out, "ab")
    p.write_nullable_string(out, None)
    p.write_nullable_bytes(out, None)
    p.write_compact_array(out, [1], p.write_int32)
    p.write_uuid(out, uuid.UUID(int=1))
    p.write_tagged_fields(out, [(0, bytearray(b"\x05"))])
    assert bytes(out).hex() == "00036162ffffffffffff0200000001" + "00" * 15 + "01" + "01000105"
    with pytest.raises(EncodeError):
        p.write_string(bytearray(), None)


class _Region:
    """A stand-in for a file slice: records written by reference."""

    def __init__(self, data: bytes) -> None:
        self.data, self.fd, self.position, self.size = data, -1, 0, len(data)

    def read_bytes(self) -> bytes:
        return self.data


class _RegionBuffer(bytearray):
    def __init__(self) -> None:
        super().__init__()
        self.regions: list[tuple[int, object]] = []


def test_records_given_as_a_file_region_leave_a_hole_or_are_read_in() -> None:
    from samsa.protocol import api_schema
    from samsa.protocol.messages.fetch import FetchableTopicResponse, PartitionData

    region = _Region(b"batchbytes")
    response = FetchResponse(
        responses=[
            FetchableTopicResponse(topic="t", partitions=[PartitionData(partition_index=0, records=region)])
        ]
    )
    encoder = api_schema(1).response_encoders[11]
    holey = _RegionBuffer()
    encoder(holey, response)
    plain = bytearray()
    encoder(plain, response)
    [(position, recorded)] = holey.regions
    assert recorded is region
    assert bytes(plain) == bytes(holey[:position]) + b"batchbytes" + bytes(holey[position:])
    assert plain[position - 4 : position] == b"\x00\x00\x00\x0a"  # the size prefix counts the region's bytes
    assert FetchResponse.decode(plain, 11).responses[0].partitions[0].records == b"batchbytes"
