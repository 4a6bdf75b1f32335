"""Golden bytes: requests as real clients put them on the wire, decoded and re-encoded byte for byte."""

from __future__ import annotations

import struct

import pytest
from tests.vectors import VECTORS

from samsa.protocol import (
    ApiKey,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from samsa.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

# librdkafka's first request on a connection: ApiVersions v3, request header v2 (client_id as an int16 string,
# then an empty tagged-field section), body with compact strings and an empty tagged-field section.
LIBRDKAFKA_API_VERSIONS_V3 = bytes.fromhex(
    "00120003000000010007" + b"rdkafka".hex() + "000b" + b"librdkafka".hex() + "07" + b"2.16.0".hex() + "00"
)
# Its fallback after an UNSUPPORTED_VERSION answer (and aiokafka's only form): v0, header v1, empty body.
API_VERSIONS_V0 = bytes.fromhex("00120000000000020007" + b"rdkafka".hex())


def framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


def test_librdkafka_api_versions_v3_request() -> None:
    header, request = decode_request(LIBRDKAFKA_API_VERSIONS_V3)
    assert header == RequestHeader(ApiKey.API_VERSIONS, 3, 1, "rdkafka")
    assert request == ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.0")
    assert encode_request(header, request) == framed(LIBRDKAFKA_API_VERSIONS_V3)


def test_api_versions_v0_request() -> None:
    header, request = decode_request(API_VERSIONS_V0)
    assert header == RequestHeader(ApiKey.API_VERSIONS, 0, 2, "rdkafka")
    assert request == ApiVersionsRequest()
    assert encode_request(header, request) == framed(API_VERSIONS_V0)


def test_unsupported_api_versions_version_still_yields_the_correlation_id() -> None:
    frame = bytearray(LIBRDKAFKA_API_VERSIONS_V3)
    frame[2:4] = struct.pack(">h", 99)
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(bytes(frame))
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (18, 99, 1)
    assert info.value.client_id == "rdkafka"


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    response = ApiVersionsResponse(
        error_code=0, api_keys=[ApiVersion(api_key=0, min_version=0, max_version=9)]
    )
    frame = encode_response(ResponseHeader(7), 18, 3, response)
    # size, correlation id, then the body at once: int16 error code (no header tagged fields in between)
    assert frame[4:8] == b"\x00\x00\x00\x07"
    assert frame[8:10] == b"\x00\x00"
    assert decode_response(frame[4:], 18, 3) == (ResponseHeader(7), response)
    # The v0 fallback body: error 35, an int32 array with {18, 0, 3}, no throttle time.
    fallback = ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=3)]
    )
    body = encode_response(ResponseHeader(1), 18, 0, fallback)[8:]
    assert body == bytes.fromhex("002300000001001200000003")


def produce_v3_frame(batch: bytes) -> bytes:
    body = (
        b"\xff\xff"  # transactional_id: null
        + struct.pack(">hi", -1, 30000)  # acks=all, timeout_ms
        + struct.pack(">i", 1)
        + struct.pack(">h", 5)
        + b"topic"
        + struct.pack(">i", 1)
        + struct.pack(">i", 0)
        + struct.pack(">i", len(batch))
        + batch
    )
    header = struct.pack(">hhi", 0, 3, 42) + struct.pack(">h", 8) + b"producer"
    return header + body


def test_produce_v3_with_the_69_byte_batch_decodes_records_zero_copy() -> None:
    batch = (VECTORS / "batch.bin").read_bytes()
    assert len(batch) == 69
    frame = produce_v3_frame(batch)
    header, request = decode_request(frame)
    assert header == RequestHeader(ApiKey.PRODUCE, 3, 42, "producer")
    records = request.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is frame  # a slice of the frame, not a copy
    assert bytes(records) == batch
    assert (request.acks, request.timeout_ms, request.transactional_id) == (-1, 30000, None)
    assert encode_request(header, request) == framed(frame)


@pytest.mark.parametrize("version", [3, 7, 8, 9, 10, 11])
def test_produce_records_round_trip_from_bytes_at_every_modern_version(version: int) -> None:
    batch = (VECTORS / "batch.bin").read_bytes()
    request = ProduceRequest(
        acks=1,
        timeout_ms=1500,
        topic_data=[
            TopicProduceData(name="t", partition_data=[PartitionProduceData(index=3, records=batch)])
        ],
    )
    header = RequestHeader(ApiKey.PRODUCE, version, 9, "c")
    frame = encode_request(header, request)
    assert frame.endswith(batch + (b"\x00\x00\x00" if version >= 9 else b""))
    decoded_header, decoded = decode_request(frame[4:])
    assert decoded_header == header
    assert decoded == request
    assert bytes(decoded.topic_data[0].partition_data[0].records) == batch
