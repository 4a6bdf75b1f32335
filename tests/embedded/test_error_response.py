"""Injected error answers: every served API's error response encodes at every version it serves, and mirrors
the request's topics and partitions."""

from __future__ import annotations

from typing import Any

import pytest

from samsa.broker.downgrade import fit_to_version
from samsa.broker.handlers import HANDLERS
from samsa.embedded import api_key, error_code_of, error_response
from samsa.protocol import ErrorCode, ResponseHeader, api_schema, decode_response, encode_response
from samsa.protocol.messages.delete_groups import DeleteGroupsRequest
from samsa.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from samsa.protocol.messages.describe_groups import DescribeGroupsRequest
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.protocol.schema import in_range

CODE = ErrorCode.NOT_LEADER_OR_FOLLOWER


def round_trip(key: int, version: int, response: Any) -> Any:
    frame = encode_response(ResponseHeader(7), key, version, fit_to_version(response, version))
    header, decoded = decode_response(frame[4:], key, version)
    assert header.correlation_id == 7
    return decoded


def error_codes(message: Any, version: int) -> list[int]:
    """Every error_code field the message has at ``version``, depth first."""
    found = []
    for spec in type(message).FIELDS:
        if not in_range(version, spec.versions):
            continue
        value = getattr(message, spec.attr)
        if spec.attr == "error_code":
            found.append(value)
        if spec.struct is not None:
            for item in value if spec.is_array else [value]:
                found += error_codes(item, version)
    return found


@pytest.mark.parametrize("key", sorted(HANDLERS), ids=lambda k: api_schema(k).name)
def test_every_served_api_has_an_encodable_error_response(key: int) -> None:
    handler = HANDLERS[key]
    response = error_response(key, api_schema(key).request_type(), CODE)
    for version in range(handler.implemented[0], handler.implemented[1] + 1):
        decoded = round_trip(key, version, response)
        codes = error_codes(decoded, version)
        assert all(code == CODE for code in codes), (version, codes)


def test_produce_error_answers_each_partition_asked() -> None:
    request = ProduceRequest(
        acks=-1,
        topic_data=[
            TopicProduceData("a", [PartitionProduceData(0, b""), PartitionProduceData(4, b"")]),
            TopicProduceData("b", [PartitionProduceData(1, b"")]),
        ],
    )
    for version in (3, 9):
        decoded = round_trip(0, version, error_response(0, request, CODE))
        assert [
            (t.name, p.index, p.error_code, p.base_offset)
            for t in decoded.responses
            for p in t.partition_responses
        ] == [("a", 0, CODE, -1), ("a", 4, CODE, -1), ("b", 1, CODE, -1)]


def test_fetch_error_answers_topics_not_forgotten_ones() -> None:
    request = FetchRequest(topics=[FetchTopic(topic="t", partitions=[FetchPartition(partition=3)])])
    decoded = round_trip(1, 11, error_response(1, request, CODE))
    assert decoded.error_code == CODE
    assert [
        (t.topic, p.partition_index, p.error_code, p.high_watermark)
        for t in decoded.responses
        for p in t.partitions
    ] == [("t", 3, CODE, -1)]


def test_metadata_error_names_the_topics_asked() -> None:
    request = MetadataRequest(topics=[MetadataRequestTopic(name="x"), MetadataRequestTopic(name="y")])
    decoded = round_trip(3, 9, error_response(3, request, ErrorCode.LEADER_NOT_AVAILABLE))
    assert [(t.name, t.error_code) for t in decoded.topics] == [("x", 5), ("y", 5)]
    assert decoded.brokers == []


@pytest.mark.parametrize(
    ("spelling", "key"),
    [("Produce", 0), ("list_offsets", 2), ("ListOffsets", 2), ("API_VERSIONS", 18), (1, 1)],
)
def test_api_names(spelling: str | int, key: int) -> None:
    assert api_key(spelling) == key


def test_error_code_spellings() -> None:
    assert error_code_of(6) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error_code_of("not_leader_or_follower") is ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(ValueError, match="unknown error code"):
        error_code_of(9999)


@pytest.mark.parametrize(
    ("key", "asked", "answered"),
    [
        (20, DeleteTopicsRequest(topic_names=["a", "b"], timeout_ms=100), ["a", "b"]),  # v0-5: plain names
        (20, DeleteTopicsRequest(topics=[DeleteTopicState(name="x")], timeout_ms=100), ["x"]),  # v6+
        (42, DeleteGroupsRequest(groups_names=["g1", "g2"]), ["g1", "g2"]),
        (15, DescribeGroupsRequest(groups=["g1"]), ["g1"]),
    ],
)
def test_a_request_that_names_its_topics_or_groups_in_plain_strings_gets_an_entry_for_each(
    key: int, asked: Any, answered: list[str]
) -> None:
    response = error_response(key, asked, CODE)
    entries = next(getattr(response, s.attr) for s in type(response).FIELDS if s.is_array and s.struct)
    assert [getattr(e, "name", None) or getattr(e, "group_id", None) for e in entries] == answered
    assert {e.error_code for e in entries} == {int(CODE)}
