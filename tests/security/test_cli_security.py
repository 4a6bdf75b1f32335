"""samsa's tools on a SASL_SSL listener with Kafka's client properties files: ``--command-config`` (topics, acls,
configs, consumer-groups, log-dirs), ``--producer.config`` and ``--consumer.config`` (console producer and
consumer), the admin authenticated with PLAIN through ``sasl.jaas.config`` and trusting a PEM truststore; the same
tool without the file cannot talk to the listener."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from samsa.cli.app import cli
from samsa.embedded import Broker
from tests.security.test_client_security import secured_broker
from tests.security.test_tls import Tls


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return Tls(tmp_path_factory.mktemp("cli-tls"))


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


def test_tools_over_sasl_ssl_with_a_properties_file(
    samsa_broker_factory: Callable[..., Broker], tls: Tls, tmp_path: Path
) -> None:
    authorizer = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }
    _, addresses = secured_broker(samsa_broker_factory, tls, **authorizer)
    bootstrap = addresses["SASL_SSL"]
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-pw";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={tls.ca_file}\n"
        "request.timeout.ms=5000\n"
    )
    config = str(props)
    created = run(
        "topics", "--bootstrap-server", bootstrap, "--command-config", config, "--create", "--topic", "t"
    )
    assert created.exit_code == 0, created.output
    listed = run("topics", "--bootstrap-server", bootstrap, "--command-config", config, "--list")
    assert listed.stdout.split() == ["t"]

    produced = run(
        "console-producer", "--bootstrap-server", bootstrap, "--producer.config", config, "--topic", "t",
        stdin="one\ntwo\n",
    )  # fmt: skip
    assert produced.exit_code == 0, produced.output
    consumed = run(
        "console-consumer", "--bootstrap-server", bootstrap, "--consumer.config", config, "--topic", "t",
        "--from-beginning", "--max-messages", "2", "--timeout-ms", "10000",
    )  # fmt: skip
    assert consumed.stdout.split() == ["one", "two"], consumed.output

    for tool in (
        ["acls", "--list"],
        ["configs", "--entity-type", "users", "--describe"],
        ["consumer-groups", "--list"],
        ["log-dirs", "--describe"],
    ):
        done = run(tool[0], "--bootstrap-server", bootstrap, "--command-config", config, *tool[1:])
        assert done.exit_code == 0, (tool, done.output)

    without = run("topics", "--bootstrap-server", bootstrap, "--list")
    assert without.exit_code != 0


def test_a_file_the_tools_cannot_use_is_a_usage_error(tmp_path: Path) -> None:
    jks = tmp_path / "jks.properties"
    jks.write_text("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/x.jks\n")
    refused = run("acls", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(jks), "--list")
    assert refused.exit_code == 2 and "ssl.truststore.type JKS is not supported" in refused.output
