"""The request log (``kafka.request.logger`` at DEBUG) names the principal each request ran as: a SASL/PLAIN
client's requests show ``User:alice`` and its mechanism."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

from samsa.embedded import Broker

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" '
    'user_alice="alice-pw";'
)


def test_the_request_log_names_the_principal(
    samsa_broker_factory: Callable[..., Broker], caplog: pytest.LogCaptureFixture
) -> None:
    broker = samsa_broker_factory(
        config={
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }
    )
    broker.create_topic("t")
    caplog.set_level(logging.DEBUG, logger="kafka.request.logger")
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-pw",
        }
    )
    producer.produce("t", b"v")
    assert producer.flush(10) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "kafka.request.logger"]
    produce = [line for line in lines if line.startswith("Completed request:Produce ")]
    assert produce and "principal:User:alice,listener:SASL_PLAINTEXT,saslMechanism:PLAIN" in produce[0]
    assert any(line.startswith("Completed request:SaslHandshake ") for line in lines)
