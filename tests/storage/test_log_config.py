"""LogConfig: Kafka's defaults, parsing and validation of topic-config keys."""

from __future__ import annotations

import random

import pytest

from samsa.storage.config import LogConfig
from samsa.storage.errors import InvalidConfigError


def test_defaults_match_kafka() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1073741824 and config.segment_ms == 604800000
    assert config.segment_jitter_ms == 0 and config.segment_index_bytes == 10485760
    assert config.index_interval_bytes == 4096 and config.retention_ms == 604800000
    assert config.retention_bytes == -1 and config.file_delete_delay_ms == 60000
    assert config.flush_messages == config.flush_ms == 2**63 - 1
    assert config.max_message_bytes == 1048588 and config.message_timestamp_type == "CreateTime"
    assert config.cleanup_policy == ("delete",) and config.min_insync_replicas == 1 and not config.preallocate


def test_from_properties_and_round_trip() -> None:
    config = LogConfig.from_properties(
        {
            "segment.bytes": "1024",
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "message.timestamp.type": "LogAppendTime",
            "retention.ms": -1,
            "unclean.leader.election.enable": "true",
        }
    )
    assert config.segment_bytes == 1024 and config.cleanup_policy == ("compact", "delete")
    assert config.preallocate and config.log_append_time and config.retention_ms == -1
    assert config.is_compacted and config.has_delete
    props = config.to_properties()
    assert props["cleanup.policy"] == "compact,delete" and props["preallocate"] == "true"
    assert props["unclean.leader.election.enable"] == "true"
    assert LogConfig.from_properties(props) == config


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("segment.bytes", "13"),
        ("segment.bytes", "lots"),
        ("segment.bytes", str(2**31)),
        ("segment.ms", "0"),
        ("retention.ms", "-2"),
        ("segment.index.bytes", "4"),
        ("preallocate", "yes"),
        ("cleanup.policy", "remove"),
        ("cleanup.policy", ""),
        ("message.timestamp.type", "WallTime"),
        ("min.insync.replicas", "0"),
        ("no.such.key", "1"),
        ("flush.messages", str(2**63)),
    ],
)
def test_invalid_values_name_key_and_value(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigError) as err:
        LogConfig.from_properties({key: value})
    assert err.value.key == key and err.value.value == value
    assert key in str(err.value)


def test_with_overrides_keeps_others() -> None:
    base = LogConfig.from_properties({"segment.bytes": 5000})
    assert base.with_overrides({"retention.ms": 10}).segment_bytes == 5000


def test_jitter_and_max_segment_ms() -> None:
    assert LogConfig().random_segment_jitter(random.Random(1)) == 0
    config = LogConfig.from_properties({"segment.ms": 100, "segment.jitter.ms": 1000})
    draws = {config.random_segment_jitter(random.Random(s)) for s in range(50)}
    assert all(0 <= d < 100 for d in draws) and len(draws) > 10
    compacted = LogConfig.from_properties({"cleanup.policy": "compact", "max.compaction.lag.ms": 50})
    assert compacted.max_segment_ms == 50 and LogConfig().max_segment_ms == 604800000
