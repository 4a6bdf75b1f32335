"""Differential against kafka-python's protocol classes: the same bytes both ways for the same message."""

from __future__ import annotations

import dataclasses
import importlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_strategies import message_strategy

# (our module, our class, kafka-python module, their class, versions to compare)
CASES = [
    ("api_versions", "ApiVersionsRequest", "kafka.protocol.metadata", "ApiVersionsRequest", [0, 3]),
    ("api_versions", "ApiVersionsResponse", "kafka.protocol.metadata", "ApiVersionsResponse", [0, 3]),
    ("metadata", "MetadataRequest", "kafka.protocol.metadata", "MetadataRequest", [0, 4, 9, 12]),
    ("metadata", "MetadataResponse", "kafka.protocol.metadata", "MetadataResponse", [1, 5, 12]),
    ("produce", "ProduceRequest", "kafka.protocol.producer", "ProduceRequest", [3, 7, 9]),
    ("produce", "ProduceResponse", "kafka.protocol.producer", "ProduceResponse", [3, 8, 9]),
    ("fetch", "FetchRequest", "kafka.protocol.consumer", "FetchRequest", [4, 11, 12]),
    ("fetch", "FetchResponse", "kafka.protocol.consumer", "FetchResponse", [4, 11, 12]),
]
IDS = [f"{c[1]}-v{v}" for c in CASES for v in c[4]]
PARAMS = [(c[0], c[1], c[2], c[3], v) for c in CASES for v in c[4]]


@pytest.mark.parametrize(("ours_mod", "ours_name", "theirs_mod", "theirs_name", "version"), PARAMS, ids=IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_same_bytes_as_kafka_python(
    ours_mod: str, ours_name: str, theirs_mod: str, theirs_name: str, version: int, data: st.DataObject
) -> None:
    ours = getattr(importlib.import_module(f"samsa.protocol.messages.{ours_mod}"), ours_name)
    theirs = getattr(importlib.import_module(theirs_mod), theirs_name)
    message = data.draw(message_strategy(ours, version))
    if ours_name == "ApiVersionsResponse":
        # kafka-python reads any errored ApiVersions response as v0 (the KIP-511 fallback), by design
        message = dataclasses.replace(message, error_code=0)
    encoded = message.encode(version)
    # kafka-python reads our bytes and writes the very same bytes back ...
    their_message = theirs.decode(encoded, version=version)
    if not hasattr(their_message, "_header"):
        their_message._header = None  # kafka-python leaves it unset when decoding without a header
    their_bytes = bytes(their_message.encode(version=version))
    assert their_bytes == encoded
    # ... and we read kafka-python's bytes into the message we started from.
    assert ours.decode(their_bytes, version) == message


def test_kafka_python_built_metadata_request_decodes() -> None:
    from kafka.protocol.metadata import MetadataRequest as TheirMetadataRequest

    from samsa.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    theirs = TheirMetadataRequest[4](
        topics=[TheirMetadataRequest.MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False
    )
    ours = MetadataRequest.decode(theirs.encode(version=4), 4)
    assert ours == MetadataRequest(
        topics=[MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False
    )
