"""``samsa acls`` against a broker with an authorizer: kafka-acls.sh's lines for --add, --list and --remove, the
--producer/--consumer shortcuts, and a binding it adds deciding a real producer."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from confluent_kafka import KafkaError, Producer

from samsa.cli.app import cli
from samsa.embedded import Broker

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


def _acls(broker: Broker, *args: str) -> Result:
    return CliRunner().invoke(cli, ["acls", "--bootstrap-server", broker.bootstrap_servers, *args])


@pytest.mark.samsa_broker(config=AUTHORIZER)
def test_add_list_remove_print_kafka_acls_lines(samsa_broker: Broker) -> None:
    added = _acls(
        samsa_broker, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders"
    )
    assert added.exit_code == 0, added.output
    resource = "`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: "
    entry = " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) "
    assert added.output.splitlines() == [
        f"Adding ACLs for resource {resource}",
        entry,
        "",
        f"Current ACLs for resource {resource}",
        entry,
        "",
    ]
    consumer = _acls(
        samsa_broker, "--add", "--allow-principal", "User:bob", "--consumer", "--topic", "logs-",
        "--group", "g", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert consumer.exit_code == 0, consumer.output
    listed = _acls(samsa_broker, "--list").output
    assert "operation=DESCRIBE" in listed and "name=g, patternType=PREFIXED" in listed
    assert listed.count("principal=User:bob") == 3  # Read+Describe on the topics, Read on the group
    removed = _acls(samsa_broker, "--remove", "--force", "--topic", "orders")
    assert removed.exit_code == 0, removed.output
    assert "User:alice" not in _acls(samsa_broker, "--list").output


@pytest.mark.samsa_broker(config=AUTHORIZER)
def test_a_deny_added_by_the_cli_stops_a_producer(samsa_broker: Broker) -> None:
    samsa_broker.create_topic("locked")
    out = _acls(
        samsa_broker, "--add", "--deny-principal", "User:ANONYMOUS", "--producer", "--topic", "locked"
    )
    assert out.exit_code == 0, out.output
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": samsa_broker.bootstrap_servers, "message.timeout.ms": 5000})
    p.produce("locked", b"v", on_delivery=lambda err, _m: errors.append(err))
    p.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_without_an_authorizer_the_cli_says_so(samsa_broker: Broker) -> None:
    out = _acls(samsa_broker, "--list")
    assert out.exit_code == 1 and "SECURITY_DISABLED" in out.output.upper().replace(" ", "_")
