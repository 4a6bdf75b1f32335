"""Topic names and partition directory names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.storage.topic import (
    DirKind,
    InvalidPartitionDirError,
    InvalidTopicError,
    TopicPartition,
    delete_dir_name,
    ensure_no_collision,
    find_collision,
    is_internal,
    log_dir_name,
    parse_dir_name,
    suffixed_dir_name,
    validate_topic,
)


@pytest.mark.parametrize(
    "name", ["a", "my-topic", "foo.bar_baz-1", "__consumer_offsets", "A" * 249, "...", "-", "_", "a..b"]
)
def test_legal_topic_names(name: str) -> None:
    validate_topic(name)


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "empty"),
        (".", "'.' or '..'"),
        ("..", "'.' or '..'"),
        ("A" * 250, "250 characters"),
        ("has space", "legal characters"),
        ("slash/name", "legal characters"),
        ("caf\u00e9", "legal characters"),
        ("colon:x", "legal characters"),
        ("star*", "legal characters"),
    ],
)
def test_illegal_topic_names(name: str, rule: str) -> None:
    with pytest.raises(InvalidTopicError) as info:
        validate_topic(name)
    assert info.value.topic == name
    assert rule in str(info.value)


def test_collisions() -> None:
    assert find_collision("a.b", ["a_b", "c"]) == "a_b"
    assert find_collision("a_b", ["a.b"]) == "a.b"
    assert find_collision("a.b", ["a.b"]) is None  # the same name is not a collision
    assert find_collision("ab", ["ab"]) is None
    with pytest.raises(InvalidTopicError, match="collides with existing topic 'a_b'"):
        ensure_no_collision("a.b", {"a_b"})


def test_internal_topics() -> None:
    assert is_internal("__consumer_offsets") and is_internal("__transaction_state")
    assert not is_internal("consumer_offsets")


def test_topic_partition() -> None:
    tp = TopicPartition("t", 3)
    assert str(tp) == "t-3"
    assert {tp: 1}[TopicPartition("t", 3)] == 1
    with pytest.raises(AttributeError):
        tp.partition = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "topic", "partition", "kind"),
    [
        ("my-topic-0", "my-topic", 0, DirKind.LIVE),
        ("foo.bar-testtopic-42." + "a" * 32 + "-delete", "foo.bar-testtopic", 42, DirKind.DELETE),
        ("t-1." + "0" * 32 + "-future", "t", 1, DirKind.FUTURE),
        ("t-1." + "f" * 32 + "-stray", "t", 1, DirKind.STRAY),
        ("__consumer_offsets-49", "__consumer_offsets", 49, DirKind.LIVE),
    ],
)
def test_parse_dir_names(name: str, topic: str, partition: int, kind: DirKind) -> None:
    parsed = parse_dir_name(name)
    assert parsed.tp == TopicPartition(topic, partition)
    assert parsed.kind is kind


@pytest.mark.parametrize(
    "name", ["", "nodash", "-0", "topic-", "topic-x", "topic-0-delete", "topic-1.abc-futurex"]
)
def test_bad_dir_names(name: str) -> None:
    with pytest.raises(InvalidPartitionDirError):
        parse_dir_name(name)


def test_delete_name_is_capped_at_255() -> None:
    tp = TopicPartition("t" * 249, 0)
    name = delete_dir_name(tp)
    assert len(name) == 255
    assert name.endswith("-0." + name.split(".")[-1])
    assert parse_dir_name(name).kind is DirKind.DELETE


@settings(max_examples=200, deadline=None)
@given(
    topic=st.text(alphabet="ab.-_9", min_size=1, max_size=40).filter(lambda t: t not in (".", "..")),
    partition=st.integers(0, 100_000),
    kind=st.sampled_from(list(DirKind)),
)
def test_dir_names_round_trip(topic: str, partition: int, kind: DirKind) -> None:
    tp = TopicPartition(topic, partition)
    name = suffixed_dir_name(tp, kind) if kind is not DirKind.LIVE else log_dir_name(tp)
    parsed = parse_dir_name(name)
    assert parsed.tp == tp
    assert parsed.kind is kind
