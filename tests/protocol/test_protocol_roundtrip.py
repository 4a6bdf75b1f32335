"""Every generated message at every version survives encode → decode, with values drawn from its schema."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_cases import message_versions
from protocol_strategies import message_strategy

from samsa.protocol.schema import in_range

CASES = message_versions()


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_round_trip(cls: type, version: int, data: st.DataObject) -> None:
    message = data.draw(message_strategy(cls, version))
    encoded = message.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == message
    assert decoded.encode(version) == encoded


def test_defaults_round_trip_at_every_version() -> None:
    for cls, version in CASES:
        message = cls()
        assert cls.decode(message.encode(version), version) == message


def test_cases_cover_the_client_apis() -> None:
    names = {c.__name__ for c, _ in CASES}
    for api in (
        "Produce",
        "Fetch",
        "Metadata",
        "ApiVersions",
        "OffsetCommit",
        "JoinGroup",
        "DescribeProducers",
    ):
        assert f"{api}Request" in names and f"{api}Response" in names
    for data in (
        "OffsetCommitKey",
        "GroupMetadataValue",
        "TransactionLogValue",
        "ConsumerProtocolAssignment",
    ):
        assert data in names


def test_some_version_has_tagged_fields_and_they_round_trip() -> None:
    from samsa.protocol.messages.fetch import FetchRequest, FetchResponse

    tagged = [f for f in FetchRequest.FIELDS if f.tag is not None]
    assert {f.attr for f in tagged} >= {"cluster_id", "replica_state"}
    request = FetchRequest(cluster_id="abc", max_wait_ms=5)
    assert FetchRequest.decode(request.encode(12), 12).cluster_id == "abc"
    assert FetchRequest.decode(request.encode(12), 12) == request
    assert in_range(12, FetchResponse.FLEXIBLE_VERSIONS)
