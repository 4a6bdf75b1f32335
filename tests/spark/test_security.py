"""format("samsa") on a SASL_SSL-only broker with Spark's Kafka connector options (``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.type=PEM`` and
``kafka.ssl.truststore.location``): a batch write reads back the same; a truststore type the client cannot read
is refused naming the option."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from samsa.embedded import Broker
from samsa.spark.options import SamsaOptionError, client_properties
from tests.security.test_tls import Tls

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-pw" '
    'user_admin="admin-pw" user_spark="spark-pw";'
)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, dict[str, str]]]:
    tls = Tls(tmp_path_factory.mktemp("spark-tls"))
    config = {
        "listeners": "SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_file),
    }
    options = {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="spark" password="spark-pw";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(tls.ca_file),
    }
    with Broker(config=config) as broker:
        yield broker, {"kafka.bootstrap.servers": broker.bootstrap_servers, **options}


def test_batch_write_and_read_over_sasl_ssl(
    spark: SparkSession, secured: tuple[Broker, dict[str, str]]
) -> None:
    broker, options = secured
    broker.create_topic("secured", partitions=2)
    rows = [("secured", f"k{i}", f"v{i}") for i in range(20)]
    df = spark.createDataFrame(rows, "topic string, key string, value string")
    df.write.format("samsa").mode("append").options(**options).save()
    read = spark.read.format("samsa").options(**options).option("subscribe", "secured").load()
    got = sorted((bytes(r["key"]).decode(), bytes(r["value"]).decode()) for r in read.collect())
    assert got == sorted((k, v) for _, k, v in rows)


def test_a_jks_truststore_is_refused_naming_the_option() -> None:
    with pytest.raises(SamsaOptionError, match=r"kafka\.\*: ssl\.truststore\.type JKS"):
        client_properties({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "JKS"})
