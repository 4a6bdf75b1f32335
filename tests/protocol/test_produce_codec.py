"""The hand-written Produce codec (``samsa.protocol.produce_codec``) against the generated one, its oracle.

Invariants: a request it decodes is the one the generated decoder returns (same header, same fields, record sets
equal byte for byte and views of the frame); on any bytes, it either returns what the generated decoder returns
or hands the frame to it (None), never a different value; an answer it encodes is byte for byte what the
generated encoder writes for ``fit_to_version(answer, version)``, and when it declines it writes nothing.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.protocol.protocol_strategies import message_strategy

from samsa.broker.downgrade import fit_to_version
from samsa.protocol import InvalidRequestError, RequestHeader, decode_request, encode_request
from samsa.protocol.headers import REQUEST_HEADER_START
from samsa.protocol.messages.produce import (
    PRODUCERESPONSE_ENCODERS,
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from samsa.protocol.produce_codec import decode_produce_request, encode_produce_response, produce_answer_frame

VERSIONS = st.integers(3, 11)
NAMES = st.text(max_size=12) | st.text(min_size=120, max_size=140)  # 1- and 2-byte compact lengths
RECORDS = st.none() | st.binary(max_size=24) | st.binary(min_size=126, max_size=400)  # varints of 1-2 bytes


@st.composite
def produce_requests(draw: st.DrawFn) -> ProduceRequest:
    partitions = st.builds(PartitionProduceData, st.integers(-(2**31), 2**31 - 1), RECORDS)
    topics = st.builds(TopicProduceData, NAMES, st.lists(partitions, max_size=3))
    return ProduceRequest(
        draw(st.none() | NAMES),
        draw(st.integers(-(2**15), 2**15 - 1)),
        draw(st.integers(-(2**31), 2**31 - 1)),
        draw(st.lists(topics, max_size=3)),
    )


def frame_of(request: ProduceRequest, version: int, client_id: str | None = "c") -> memoryview:
    """A request frame as the broker receives it: no size prefix, writable."""
    return memoryview(bytearray(encode_request(RequestHeader(0, version, 7, client_id), request)[4:]))


def generated(frame: memoryview, allow_trailing: bool = True) -> tuple[RequestHeader, ProduceRequest]:
    """The generated decoder alone (no ``start``: ``decode_request`` takes the hand-written path only with it)."""
    header, request = decode_request(frame, allow_trailing=allow_trailing)
    assert isinstance(request, ProduceRequest)
    return header, request


@settings(max_examples=300, deadline=None)
@given(request=produce_requests(), version=VERSIONS, client_id=st.none() | st.text(max_size=8))
def test_a_request_decodes_as_the_generated_decoder_reads_it(
    request: ProduceRequest, version: int, client_id: str | None
) -> None:
    frame = frame_of(request, version, client_id)
    fast = decode_produce_request(frame, REQUEST_HEADER_START.unpack_from(frame))
    assert fast is not None
    header, decoded, end = fast
    assert (header, decoded) == generated(frame)
    assert end == len(frame)
    for topic in decoded.topic_data:
        for partition in topic.partition_data:
            if partition.records is not None:
                assert isinstance(partition.records, memoryview) and partition.records.obj is frame.obj


@settings(max_examples=100, deadline=None)
@given(request=message_strategy(ProduceRequest, 11), version=VERSIONS)
def test_requests_drawn_from_the_schema_decode_alike(request: ProduceRequest, version: int) -> None:
    frame = frame_of(request, version)
    fast = decode_produce_request(frame, REQUEST_HEADER_START.unpack_from(frame))
    assert fast is not None and fast[:2] == generated(frame)


@settings(max_examples=400, deadline=None)
@given(
    request=produce_requests(),
    version=VERSIONS,
    cut=st.integers(0, 2000),
    flips=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=3),
)
def test_damaged_bytes_are_read_alike_or_left_to_the_generated_decoder(
    request: ProduceRequest, version: int, cut: int, flips: list[tuple[int, int]]
) -> None:
    data = bytearray(frame_of(request, version))
    for position, value in flips:
        if 8 <= position < len(data):  # the header's fixed start is what chose this decoder
            data[position] = value
    frame = memoryview(data)[: max(8, len(data) - cut)]
    fast = decode_produce_request(frame, REQUEST_HEADER_START.unpack_from(frame))
    if fast is None:
        return
    try:
        expected = generated(frame)
    except InvalidRequestError as exc:  # pragma: no cover - the property's failure
        raise AssertionError(
            f"the hand-written decoder accepted what the generated one refuses: {exc}"
        ) from exc
    assert fast[:2] == expected


def test_decode_request_takes_the_hand_written_path_given_the_header_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import samsa.protocol.produce_codec as codec

    calls: list[int] = []
    real = codec.decode_produce_request

    def counted(frame: memoryview, start: tuple[int, int, int]) -> Any:
        calls.append(start[1])
        return real(frame, start)

    monkeypatch.setattr(codec, "decode_produce_request", counted)
    request = ProduceRequest(None, 1, 100, [TopicProduceData("t", [PartitionProduceData(0, b"x" * 200)])])
    frame = frame_of(request, 9)
    assert decode_request(
        frame, allow_trailing=True, start=REQUEST_HEADER_START.unpack_from(frame)
    ) == generated(frame)
    assert calls == [9]


def test_trailing_bytes_are_refused_unless_allowed() -> None:
    request = ProduceRequest(None, 1, 100, [TopicProduceData("t", [PartitionProduceData(0, b"x" * 20)])])
    frame = memoryview(bytearray(frame_of(request, 8)) + b"\0\0\0")
    start = REQUEST_HEADER_START.unpack_from(frame)
    assert decode_request(frame, allow_trailing=True, start=start)[1] == request
    with pytest.raises(InvalidRequestError, match="trailing"):
        decode_request(frame, start=start)


def test_versions_outside_its_range_are_left_to_the_generated_decoder() -> None:
    frame = frame_of(ProduceRequest(None, 1, 100, []), 2)
    assert decode_produce_request(frame, REQUEST_HEADER_START.unpack_from(frame)) is None
    frame = memoryview(bytearray(frame))
    struct.pack_into(">h", frame, 2, 12)
    assert decode_produce_request(frame, REQUEST_HEADER_START.unpack_from(frame)) is None


# ---------------------------------------------------------------- answers

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def common_answers(draw: st.DrawFn) -> ProduceResponse:
    """What the produce handler builds: every field it knows, whatever the version (fit later)."""
    partition = st.builds(
        PartitionProduceResponse,
        INT32,
        INT16,
        INT64,
        INT64,
        INT64,
        st.just([]),
        st.none() | st.text(max_size=20) | st.text(min_size=130, max_size=140),
    )
    topic = st.builds(TopicProduceResponse, NAMES, st.lists(partition, max_size=3))
    return ProduceResponse(draw(st.lists(topic, max_size=3)), draw(INT32))


@st.composite
def one_partition_answers(draw: st.DrawFn) -> ProduceResponse:
    """The answer nearly every produce gets: one topic, one partition, no error message."""
    partition = PartitionProduceResponse(
        draw(INT32), draw(INT16), draw(INT64), draw(INT64), draw(INT64), [], None
    )
    return ProduceResponse([TopicProduceResponse(draw(NAMES), [partition])])


def generated_bytes(response: ProduceResponse, version: int) -> bytes:
    out = bytearray()
    PRODUCERESPONSE_ENCODERS[version](out, fit_to_version(response, version))
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(response=common_answers(), version=VERSIONS)
def test_an_answer_encodes_as_the_generated_encoder_writes_it(
    response: ProduceResponse, version: int
) -> None:
    out = bytearray(b"head")
    assert encode_produce_response(out, response, version)
    assert bytes(out) == b"head" + generated_bytes(response, version)


@settings(max_examples=200, deadline=None)
@given(response=message_strategy(ProduceResponse, 11), version=VERSIONS)
def test_any_answer_is_encoded_alike_or_declined_with_nothing_written(
    response: ProduceResponse, version: int
) -> None:
    out = bytearray(b"head")
    if encode_produce_response(out, response, version):
        assert bytes(out) == b"head" + generated_bytes(response, version)
    else:
        assert out == b"head"


def generated_frame(correlation_id: int, response: ProduceResponse, version: int) -> bytes:
    """The whole answer frame as the generated code writes it: size, response header (v1 from Produce v9), body."""
    body = bytearray(struct.pack(">i", correlation_id))
    if version >= 9:
        body.append(0)
    body += generated_bytes(response, version)
    return struct.pack(">i", len(body)) + bytes(body)


@settings(max_examples=400, deadline=None)
@given(
    response=common_answers() | one_partition_answers(),
    version=VERSIONS,
    correlation_id=INT32,
)
def test_an_answer_frame_is_the_frame_the_generated_encoder_writes(
    response: ProduceResponse, version: int, correlation_id: int
) -> None:
    """Whichever way ``produce_answer_frame`` writes it (one packed layout for one partition without a message,
    the general writer otherwise), the bytes are the generated encoder's; it declines only what the general
    writer declines."""
    response = dataclasses.replace(response, throttle_time_ms=0)  # the broker's fast path answers unthrottled
    answers = [
        (
            topic.name,
            [
                (
                    a.index,
                    a.error_code,
                    a.base_offset,
                    a.log_append_time_ms,
                    a.log_start_offset,
                    a.error_message,
                )
                for a in topic.partition_responses
            ],
        )
        for topic in response.responses
    ]
    frame = produce_answer_frame(correlation_id, version, answers)
    assert frame is not None
    assert bytes(frame) == generated_frame(correlation_id, response, version)
    assert bytes(produce_answer_frame(correlation_id, version, answers) or b"") == bytes(
        frame
    )  # from the cache


def test_an_answer_frame_with_a_value_past_its_field_is_declined() -> None:
    assert produce_answer_frame(1, 9, [("t", [(2**31, 0, 0, -1, 0, None)])]) is None
    assert produce_answer_frame(1, 9, [("t", [(0, 0, 2**63, -1, 0, None)])]) is None
    assert produce_answer_frame(1, 9, [("t", [(0, 0, 0, -1, 0, None)])]) is not None


@pytest.mark.parametrize(
    "change",
    [
        {"record_errors": [BatchIndexAndErrorMessage(0, "bad")]},
        {"current_leader": LeaderIdAndEpoch(2, 5)},
    ],
    ids=["record-errors", "current-leader"],
)
def test_the_uncommon_answers_are_left_to_the_generated_encoder(change: dict[str, Any]) -> None:
    answer = dataclasses.replace(PartitionProduceResponse(0, 87, -1), **change)
    response = ProduceResponse([TopicProduceResponse("t", [answer])])
    out = bytearray()
    assert not encode_produce_response(out, response, 10)
    assert out == b""
    # below the versions that carry the field, it is fitted away and the common shape remains
    version = 7 if "record_errors" in change else 9
    assert encode_produce_response(out, response, version)
    assert bytes(out) == generated_bytes(response, version)


def test_node_endpoints_are_left_to_the_generated_encoder() -> None:
    response = ProduceResponse([], node_endpoints=[NodeEndpoint(1, "h", 9092)])
    assert not encode_produce_response(bytearray(), response, 10)
    out = bytearray()
    assert encode_produce_response(out, response, 9)
    assert bytes(out) == generated_bytes(response, 9)
