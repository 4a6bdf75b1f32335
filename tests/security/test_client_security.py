"""samsa's own client (``samsa.client``) on secured listeners, from Kafka's client properties: SCRAM-SHA-512 over
SASL_SSL (``sasl.jaas.config``, a PEM truststore), PLAIN over SASL_PLAINTEXT (librdkafka's ``sasl.username``), a
wrong password answered SASL_AUTHENTICATION_FAILED, a session renewed when the broker gives it a lifetime, and
properties the client cannot honour refused with the key named."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from samsa.client import BrokerError, ClientSecurity, KafkaClient, SecurityConfigError, TopicPartition
from samsa.client.records import ProducerRecord, build_batch
from samsa.embedded import Broker
from samsa.protocol import ApiKey
from samsa.protocol.messages.metadata import MetadataRequest
from samsa.security.scram import MECHANISMS as SCRAM
from tests.security.test_tls import Tls

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" '
    'user_admin="admin-pw" user_alice="alice-pw";'
)
SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" password="c-pw";'
)


def secured_broker(factory: Callable[..., Broker], tls: Tls, **extra: str) -> tuple[Broker, dict[str, str]]:
    """A broker with PLAINTEXT (first: the fixture's admin), SASL_PLAINTEXT and SASL_SSL listeners; the SASL
    listeners' addresses by name."""
    broker = factory(
        config={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(tls.server_file),
            **extra,
        }
    )
    return broker, {name: broker.listener_bootstrap(name) for name in ("SASL_PLAINTEXT", "SASL_SSL")}


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("client-tls"))


async def _round_trip(bootstrap: str, security: ClientSecurity, topic: str) -> bytes:
    async with KafkaClient(bootstrap, security=security) as client:
        tp = TopicPartition(topic, 0)
        await client.produce(tp, build_batch([ProducerRecord(b"k", b"secured")]))
        fetched = await client.fetch({tp: 0})
        return fetched[tp].records


def test_scram_over_sasl_ssl_and_plain_over_sasl_plaintext(
    samsa_broker_factory: Callable[..., Broker], tls: Tls
) -> None:
    broker, addresses = secured_broker(samsa_broker_factory, tls)
    broker.create_topic("t")

    async def add_carol() -> None:
        async with KafkaClient(broker.bootstrap_servers) as admin:
            mechanism = SCRAM["SCRAM-SHA-512"]
            salt = os.urandom(16)
            salted = mechanism.salted_password("c-pw", salt, 4096)
            await admin.alter_user_scram_credentials(upsertions=[("carol", 2, 4096, salt, salted)])

    asyncio.run(add_carol())
    scram = ClientSecurity.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": SCRAM_JAAS,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(tls.ca_file),
        }
    )
    assert b"secured" in asyncio.run(_round_trip(addresses["SASL_SSL"], scram, "t"))
    plain = ClientSecurity.from_properties(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-pw",
        }
    )
    assert b"secured" in asyncio.run(_round_trip(addresses["SASL_PLAINTEXT"], plain, "t"))

    wrong = ClientSecurity.from_properties(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice", "sasl.password": "nope"}
    )
    with pytest.raises(BrokerError, match="SASL_AUTHENTICATION_FAILED"):
        asyncio.run(_metadata(addresses["SASL_PLAINTEXT"], wrong))


async def _metadata(bootstrap: str, security: ClientSecurity, pause_s: float = 0.0) -> int:
    from samsa.client.connection import BrokerConnection

    host, port = bootstrap.rsplit(":", 1)
    connection = BrokerConnection(host, int(port), client_id="t", request_timeout_ms=5000, security=security)
    await connection.open()
    try:
        await asyncio.sleep(pause_s)
        response = await connection.request(MetadataRequest(topics=None), ApiKey.METADATA)
        return len(response.brokers)
    finally:
        await connection.close()


def test_a_session_is_renewed_before_the_broker_ends_it(
    samsa_broker_factory: Callable[..., Broker], tls: Tls
) -> None:
    _, addresses = secured_broker(samsa_broker_factory, tls, **{"connections.max.reauth.ms": "1000"})
    plain = ClientSecurity.from_properties(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice", "sasl.password": "alice-pw"}
    )
    assert asyncio.run(_metadata(addresses["SASL_PLAINTEXT"], plain, pause_s=1.2)) == 1


def test_properties_the_client_cannot_honour_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SecurityConfigError, match=r"ssl\.truststore\.type JKS"):
        ClientSecurity.from_properties({"security.protocol": "SSL", "ssl.truststore.type": "JKS"})
    with pytest.raises(SecurityConfigError, match="GSSAPI"):
        ClientSecurity.from_properties({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"})
    with pytest.raises(SecurityConfigError, match=r"sasl\.username"):
        ClientSecurity.from_properties({"security.protocol": "SASL_PLAINTEXT"})
    missing = ClientSecurity.from_properties(
        {"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "absent.pem")}
    )
    with pytest.raises(SecurityConfigError, match="truststore"):
        missing.ssl_context()
