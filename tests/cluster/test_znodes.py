"""Znode JSON as Kafka writes it: round trips, Kafka's own bytes read, damaged znodes named."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samsa.cluster.znodes import (
    BrokerRegistration,
    ClusterIdZNode,
    ConfigChangeNotification,
    ControllerRegistration,
    Endpoint,
    PartitionState,
    ProducerIdBlock,
    ReassignPartitions,
    TopicAssignment,
    TopicConfig,
    ZNodeFormatError,
    partition_state_path,
)
from samsa.topic_partition import TopicPartition

# As a Kafka 3.x broker registers itself (field order as Kafka writes it).
KAFKA_BROKER = (
    b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","INTERNAL":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://localhost:9092","INTERNAL://10.0.0.5:19092"],"jmx_port":-1,"port":9092,'
    b'"host":"localhost","version":5,"timestamp":"1732406400000","rack":"r1"}'
)


def test_reads_kafkas_broker_registration() -> None:
    reg = BrokerRegistration.from_json(1, KAFKA_BROKER)
    assert reg.endpoints == (
        Endpoint("PLAINTEXT", "localhost", 9092),
        Endpoint("INTERNAL", "10.0.0.5", 19092),
    )
    assert reg.rack == "r1" and reg.timestamp_ms == 1732406400000
    assert json.loads(reg.to_json()) == json.loads(KAFKA_BROKER)


def test_broker_without_plaintext_listener_has_no_host() -> None:
    reg = BrokerRegistration(2, (Endpoint("SSL", "h", 9093, "SSL"),))
    value = json.loads(reg.to_json())
    assert (
        value["host"] is None
        and value["port"] == -1
        and value["listener_security_protocol_map"] == {"SSL": "SSL"}
    )


def test_reads_kafkas_topic_and_state() -> None:
    topic = TopicAssignment.from_json(
        "t",
        b'{"partitions":{"1":[2,3,1],"0":[1,2,3]},"topic_id":"nKhyDf5BRUCN0rBPOJxgBg",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}',
    )
    assert topic.partitions == {0: (1, 2, 3), 1: (2, 3, 1)} and topic.topic_id == "nKhyDf5BRUCN0rBPOJxgBg"
    state = PartitionState.from_json(
        "t", 0, b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":7,"isr":[2,3]}'
    )
    assert state == PartitionState(leader=2, leader_epoch=7, isr=(2, 3), controller_epoch=3)
    assert "leader_recovery_state" not in json.loads(state.to_json())


def test_topic_written_without_id_when_unknown() -> None:
    value = json.loads(TopicAssignment({0: (1,)}).to_json())
    assert value == {"partitions": {"0": [1]}, "adding_replicas": {}, "removing_replicas": {}, "version": 3}


def test_small_znodes() -> None:
    assert json.loads(ControllerRegistration(4, 17).to_json()) == {
        "version": 2, "brokerid": 4, "timestamp": "17", "kraftControllerEpoch": -1,
    }  # fmt: skip
    assert ControllerRegistration.from_json(b'{"version":1,"brokerid":0,"timestamp":"1"}').broker_id == 0
    assert json.loads(ClusterIdZNode("abc").to_json()) == {"version": "1", "id": "abc"}
    assert TopicConfig.from_json("t", b'{"version":1,"config":{"retention.ms":"1000"}}').config == {
        "retention.ms": "1000"
    }
    assert (
        ConfigChangeNotification.from_json(b'{"version":2,"entity_path":"topics/t"}').entity_path
        == "topics/t"
    )


def test_reads_a_legacy_tools_reassignment() -> None:
    # as kafka-reassign-partitions.sh --zookeeper wrote it (Kafka 2.x), a partition named twice: the last counts
    tool = (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        b'{"topic":"u","partition":3,"replicas":[4]},{"topic":"t","partition":0,"replicas":[2,3]}]}'
    )
    found = ReassignPartitions.from_json(tool)
    assert found.partitions == {TopicPartition("t", 0): (2, 3), TopicPartition("u", 3): (4,)}
    assert json.loads(found.to_json()) == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [2, 3]},
            {"topic": "u", "partition": 3, "replicas": [4]},
        ],
    }
    assert ReassignPartitions.from_json(found.to_json()) == found


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b'{"version":1}',
        b'{"version":1,"partitions":{"t":[1]}}',
        b'{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}',
        b'{"version":1,"partitions":[{"topic":"t","partition":"x","replicas":[1]}]}',
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":1}]}',
        b'{"version":1,"partitions":[{"topic":7,"partition":0,"replicas":[1]}]}',
        b'{"version":1,"partitions":["t-0"]}',
    ],
)
def test_damaged_reassignment_names_its_path(data: bytes) -> None:
    with pytest.raises(ZNodeFormatError, match="/admin/reassign_partitions"):
        ReassignPartitions.from_json(data)


def test_producer_id_blocks_follow_each_other() -> None:
    first = ProducerIdBlock.after(ProducerIdBlock.from_json(b""), broker_id=1)
    assert (first.block_start, first.block_end) == (0, 999)
    second = ProducerIdBlock.after(ProducerIdBlock.from_json(first.to_json()), broker_id=2)
    assert (second.broker_id, second.block_start, second.block_end) == (2, 1000, 1999)
    assert json.loads(second.to_json())["block_start"] == "1000"  # strings, as Kafka writes them


@pytest.mark.parametrize(
    "data", [b"", b"not json", b"[1]", b'{"leader":1}', b'{"leader":"x","leader_epoch":0}']
)
def test_damaged_state_names_its_path(data: bytes) -> None:
    with pytest.raises(ZNodeFormatError, match=partition_state_path("t", 3)):
        PartitionState.from_json("t", 3, data)


ids = st.integers(-1, 2**31 - 1)


@given(
    partitions=st.dictionaries(
        st.integers(0, 500), st.lists(ids, max_size=5).map(tuple), min_size=1, max_size=12
    ),
    topic_id=st.none() | st.text(min_size=1, max_size=22),
)
def test_assignment_round_trip(partitions: dict[int, tuple[int, ...]], topic_id: str | None) -> None:
    topic = TopicAssignment(partitions, topic_id)
    assert TopicAssignment.from_json("t", topic.to_json()) == topic


@given(
    ids,
    st.integers(0, 2**31 - 1),
    st.lists(ids, max_size=5).map(tuple),
    st.integers(0, 2**31 - 1),
    st.booleans(),
)
def test_state_round_trip(
    leader: int, epoch: int, isr: tuple[int, ...], controller_epoch: int, recovering: bool
) -> None:
    state = PartitionState(leader, epoch, isr, controller_epoch, recovering)
    assert PartitionState.from_json("t", 0, state.to_json()) == state
