"""The connector's options: offset JSON both ways, proportional maxOffsetsPerTrigger, errors naming the option."""

from __future__ import annotations

import json

import pytest

from samsa.spark.options import (
    SamsaOptionError,
    SourceOptions,
    cap_offsets,
    offsets_from_json,
    offsets_json,
    split_range,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_offsets_json_is_sorted_and_round_trips() -> None:
    offsets = {("b", 10): 5, ("a", 2): 1, ("b", 9): 7, ("a", 10): 3}
    data = offsets_json(offsets)
    assert json.dumps(data) == '{"a": {"2": 1, "10": 3}, "b": {"9": 7, "10": 5}}'
    assert offsets_from_json(json.loads(json.dumps(data))) == offsets


def test_cap_is_proportional_and_exact() -> None:
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    latest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    capped = cap_offsets(start, latest, 100)
    assert sum(capped[tp] - start[tp] for tp in start) == 100
    assert capped[("t", 0)] - 0 == 75 and capped[("t", 1)] - 100 == 25 and capped[("t", 2)] == 50
    assert cap_offsets(start, latest, 10_000) == latest


def test_split_range() -> None:
    assert split_range(10, 20, 3) == [(10, 14), (14, 17), (17, 20)]
    assert split_range(0, 2, 5) == [(0, 1), (1, 2)]
    assert split_range(5, 5, 2) == []


@pytest.mark.parametrize(
    ("options", "batch", "message"),
    [
        ({"subscribe": "t"}, True, "option 'kafka.bootstrap.servers' is required"),
        ({**BASE, "subscribe": "t", "assign": '{"t":[0]}'}, True, "only one of"),
        ({**BASE, "assign": '{"t": "0"}'}, True, "option 'assign'"),
        ({**BASE, "subscribe": "t", "startingOffsets": "latest"}, True, "cannot be 'latest' for a batch"),
        ({**BASE, "subscribe": "t", "endingOffsets": '{"t": {"0": -2}}'}, True, "cannot end at earliest"),
        ({**BASE, "subscribe": "t", "startingOffsets": '{"t": {"x": 1}}'}, False, "partition 'x'"),
        ({**BASE, "subscribe": "t", "startingOffsets": '{"t": {"0": 1.5}}'}, False, "non-integer value"),
        (
            {**BASE, "subscribe": "t", "failOnDataLoss": "maybe"},
            False,
            "'failOnDataLoss' must be true or false",
        ),
        (
            {**BASE, "subscribe": "t", "maxOffsetsPerTrigger": "0"},
            False,
            "'maxOffsetsPerTrigger' must be >= 1",
        ),
        ({**BASE, "subscribePattern": "("}, False, "not a valid regex"),
        (
            {**BASE, "subscribe": "t", "startingTimestamp": "noon"},
            False,
            "'startingTimestamp' must be milliseconds",
        ),
    ],
)
def test_bad_options(options: dict[str, str], batch: bool, message: str) -> None:
    lowered = {k.lower(): v for k, v in options.items()}
    with pytest.raises(SamsaOptionError, match=message):
        SourceOptions.parse(lowered, batch=batch)


def test_defaults() -> None:
    stream = SourceOptions.parse({**BASE, "subscribe": "a, b"}, batch=False)
    assert stream.subscription.topics == ("a", "b") and stream.starting.mode == "latest"
    assert stream.fail_on_data_loss and not stream.include_headers and stream.max_offsets_per_trigger is None
    assert SourceOptions.parse({**BASE, "subscribe": "a"}, batch=True).starting.mode == "earliest"
