from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samsa.broker.config import ConfigError, KafkaConfig
from samsa.storage.properties import PropertiesError, load_properties, parse_properties


def test_properties_forms_and_escapes() -> None:
    text = "# comment\n! also\na=1\nb : 2\nc 3\nd=x\\\n   y\ne\\:f=g\nu=\\u0041\nempty=\n   \n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "xy",
        "e:f": "g",
        "u": "A",
        "empty": "",
    }


def test_later_key_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_bad_unicode_escape_names_the_line() -> None:
    with pytest.raises(PropertiesError, match=r"<properties>:2"):
        parse_properties("a=1\nb=\\u00zz\n")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PropertiesError, match=r"server\.properties"):
        load_properties(tmp_path / "server.properties")


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(
            alphabet=st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="\\=:#!"),
            min_size=1,
        ),
        st.text(
            alphabet=st.characters(min_codepoint=32, max_codepoint=126, blacklist_characters="\\"),
            max_size=20,
        ),
        max_size=8,
    )
)
def test_simple_round_trip(props: dict[str, str]) -> None:
    text = "".join(f"{k}={v}\n" for k, v in props.items())
    assert parse_properties(text) == {k: v.lstrip(" ") for k, v in props.items()}


def test_defaults_are_kafkas() -> None:
    config = KafkaConfig.from_properties({})
    assert config.get("num.partitions") == 1
    assert config.get("message.max.bytes") == 1048588
    assert config.get("socket.request.max.bytes") == 104857600
    assert config.get("offsets.topic.num.partitions") == 50
    assert config.retention_ms == 168 * 3_600_000
    assert config.log_dirs == ["/tmp/kafka-logs"]


def test_retention_precedence_ms_over_minutes_over_hours() -> None:
    assert KafkaConfig.from_properties({"log.retention.hours": "2"}).retention_ms == 7_200_000
    assert (
        KafkaConfig.from_properties({"log.retention.minutes": "3", "log.retention.hours": "2"}).retention_ms
        == 180_000
    )
    props = {"log.retention.ms": "5", "log.retention.minutes": "3"}
    assert KafkaConfig.from_properties(props).retention_ms == 5


def test_topic_defaults_follow_broker_keys() -> None:
    config = KafkaConfig.from_properties(
        {"log.segment.bytes": "1000", "log.roll.ms": "60000", "message.max.bytes": "77"}
    )
    defaults = config.topic_defaults()
    assert defaults["segment.bytes"] == "1000"
    assert defaults["segment.ms"] == "60000"
    assert defaults["max.message.bytes"] == "77"


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("num.partitions", "zero", "expected an int"),
        ("num.partitions", "0", "at least 1"),
        ("auto.create.topics.enable", "yes", "expected a boolean"),
        ("log.cleanup.policy", "shred", "must be one of"),
        ("listeners", "127.0.0.1:9092", "NAME://host:port"),
        ("message.max.bytes", "99999999999", "expected an int"),
        ("listeners", "FOO://127.0.0.1:9092", "no security protocol defined for listener FOO"),
        ("listener.security.protocol.map", "FOO", "is not NAME:PROTOCOL"),
        ("listener.security.protocol.map", "FOO:TLS", "is not NAME:PROTOCOL"),
        ("socket.request.max.bytes", "10", "at least 1024"),
        ("log.retention.bytes", "-5", "at least -1"),
    ],
)
def test_bad_values_name_key_and_value(key: str, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        KafkaConfig.from_properties({key: value})
    assert fragment in str(info.value)
    assert key in str(info.value) or value in str(info.value)


def test_a_listener_name_is_served_when_the_protocol_map_maps_it_to_plaintext() -> None:
    config = KafkaConfig.from_properties(
        {"listeners": "FOO://127.0.0.1:9092", "listener.security.protocol.map": "FOO:PLAINTEXT"}
    )
    assert config.listener_addresses == [("FOO", "127.0.0.1", 9092)]
    with pytest.raises(ConfigError, match=r"listener FOO: an SSL listener needs ssl\.keystore\.type=PEM"):
        KafkaConfig.from_properties(
            {"listeners": "FOO://127.0.0.1:9092", "listener.security.protocol.map": "FOO:SSL"}
        )
    # a controller listener needs no entry while the map is Kafka's default (Kafka maps it to PLAINTEXT) ...
    KafkaConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"})
    # ... but does once a map is given
    with pytest.raises(ConfigError, match="no security protocol defined for listener CONTROLLER"):
        KafkaConfig.from_properties(
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
            }
        )


def test_unlimited_retention_bytes_and_the_smallest_request_limit_are_accepted() -> None:
    config = KafkaConfig.from_properties({"log.retention.bytes": "-1", "socket.request.max.bytes": "1024"})
    assert config.topic_defaults()["retention.bytes"] == "-1"
    assert config.get("socket.request.max.bytes") == 1024


def test_unknown_keys_are_kept_not_fatal() -> None:
    config = KafkaConfig.from_properties({"some.plugin.key": "x"})
    assert config.unknown_keys == {"some.plugin.key": "x"}


def test_node_id_from_either_name() -> None:
    assert KafkaConfig.from_properties({"broker.id": "3"}).node_id == 3
    assert KafkaConfig.from_properties({"node.id": "4", "broker.id": "3"}).node_id == 4


def test_each_layer_defaults_to_what_a_default_broker_gives_it() -> None:
    """One statement of each Kafka default (``samsa.server_defaults``): every layer's settings, as a broker with
    no keys set builds them, equal the layer's own defaults, key by key."""
    from samsa.broker.broker import _coordinator_config
    from samsa.broker.zk_broker import _fetcher_config
    from samsa.cluster.elections import ElectionConfig
    from samsa.cluster.replica_fetcher import FetcherConfig
    from samsa.coordinator import CoordinatorConfig
    from samsa.storage import log_manager
    from samsa.storage.config import LogConfig
    from samsa.storage.log_cleaner import CleanerConfig

    config = KafkaConfig.from_properties({})
    topic = LogConfig.from_properties(config.topic_defaults())
    assert dataclasses.replace(topic, others=()) == LogConfig()  # others: keys the log does not read
    assert _coordinator_config(config) == CoordinatorConfig()
    assert _fetcher_config(config) == FetcherConfig()
    read_inline = [  # what the broker reads key by key where it builds these
        (CleanerConfig().enable, "log.cleaner.enable"),
        (CleanerConfig().backoff_ms, "log.cleaner.backoff.ms"),
        (CleanerConfig().dedupe_buffer_size, "log.cleaner.dedupe.buffer.size"),
        (CleanerConfig().io_buffer_load_factor, "log.cleaner.io.buffer.load.factor"),
        (ElectionConfig().auto_leader_rebalance_enable, "auto.leader.rebalance.enable"),
        (ElectionConfig().leader_imbalance_per_broker_percentage, "leader.imbalance.per.broker.percentage"),
        (ElectionConfig().leader_imbalance_check_interval_s, "leader.imbalance.check.interval.seconds"),
        (ElectionConfig().unclean_leader_election_enable, "unclean.leader.election.enable"),
        (log_manager.DEFAULT_RETENTION_CHECK_INTERVAL_MS, "log.retention.check.interval.ms"),
        (log_manager.DEFAULT_FLUSH_CHECKPOINT_INTERVAL_MS, "log.flush.offset.checkpoint.interval.ms"),
        (
            log_manager.DEFAULT_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS,
            "log.flush.start.offset.checkpoint.interval.ms",
        ),
        (
            log_manager.DEFAULT_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
            "replica.high.watermark.checkpoint.interval.ms",
        ),
    ]
    assert [(key, layer) for layer, key in read_inline] == [(key, config.get(key)) for _, key in read_inline]


def test_the_shared_defaults_are_broker_keys_with_those_defaults() -> None:
    from samsa.broker.config import KEYS_BY_NAME
    from samsa.server_defaults import SERVER_DEFAULTS

    for name, value in SERVER_DEFAULTS.items():
        default = KEYS_BY_NAME[name].default
        assert (tuple(default) if isinstance(default, list) else default) == value, name


def test_node_id_and_broker_id_are_one_setting_under_two_names() -> None:
    """With only ``node.id=1`` set, Kafka's DescribeConfigs shows ``broker.id=1`` (set in the file), where Samsa
    showed -1 (its default): one set alone sets the other too, as Kafka does before it reads its properties."""
    for named, other in (("node.id", "broker.id"), ("broker.id", "node.id")):
        config = KafkaConfig.from_properties({named: "3"})
        assert config.get(other) == 3 and config.is_explicit(other)
        assert config.node_id == 3
    both = KafkaConfig.from_properties({"node.id": "3", "broker.id": "4"})
    assert (both.get("node.id"), both.get("broker.id"), both.node_id) == (3, 4, 3)  # node.id wins, as before
