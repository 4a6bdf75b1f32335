"""``samsa topics`` flags beyond the basics, against a real broker: ``--replica-assignment``,
``--topics-with-overrides``, ``--command-config`` and ``--version``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.clients.harness import BrokerProcess, running_broker

import samsa
from samsa.cli.app import cli


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with running_broker(tmp_path_factory.mktemp("samsa-topics-flags")) as proc:
        yield proc


def topics(broker: BrokerProcess, *args: str) -> Result:
    return CliRunner().invoke(cli, ["topics", "--bootstrap-server", broker.bootstrap, *args])


def test_replica_assignment_places_each_partition(broker: BrokerProcess) -> None:
    created = topics(broker, "--create", "--topic", "placed", "--replica-assignment", "1,1,1")
    assert created.exit_code == 0, created.output
    described = topics(broker, "--describe", "--topic", "placed").stdout.splitlines()
    assert "PartitionCount: 3\tReplicationFactor: 1" in described[0]
    assert [line.split("\t")[4] for line in described[1:]] == ["Replicas: 1"] * 3


def test_alter_replica_assignment_places_the_new_partitions(broker: BrokerProcess) -> None:
    assert topics(broker, "--create", "--topic", "widened", "--partitions", "2").exit_code == 0
    alter = ["--alter", "--topic", "widened", "--partitions"]
    unknown = topics(broker, *alter, "3", "--replica-assignment", "1,1,2")
    assert unknown.exit_code == 1, unknown.output
    assert "Unknown broker(s) in replica assignment: 2." in unknown.stdout
    assert "INVALID_REPLICA_ASSIGNMENT" in unknown.stderr
    short = topics(broker, *alter, "4", "--replica-assignment", "1,1,1")
    assert "Increasing the number of partitions by 2 but 1 assignments provided." in short.stdout, (
        short.output
    )
    grown = topics(broker, *alter, "4", "--replica-assignment", "1,1,1,1")
    assert grown.exit_code == 0, grown.output
    described = topics(broker, "--describe", "--topic", "widened").stdout.splitlines()
    assert "PartitionCount: 4\tReplicationFactor: 1" in described[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replica-assignment", "1:1"], "may not contain duplicate entries: 1"),
        (["--replica-assignment", "1,1:2"], "Partition 1 has different replication factor"),
        (["--replica-assignment", "a"], "broker ids must be integers"),
        (["--replica-assignment", "1", "--partitions", "2"], "cannot be used with --partitions"),
    ],
)
def test_bad_replica_assignments(broker: BrokerProcess, args: list[str], message: str) -> None:
    refused = topics(broker, "--create", "--topic", "misplaced", *args)
    assert refused.exit_code == 1 and message in refused.stderr, refused.output


def test_topics_with_overrides_lists_only_those(broker: BrokerProcess) -> None:
    assert topics(broker, "--create", "--topic", "plain").exit_code == 0
    assert topics(broker, "--create", "--topic", "tuned", "--config", "retention.ms=1000").exit_code == 0
    lines = topics(broker, "--describe", "--topics-with-overrides").stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["Topic: tuned"]
    assert lines[0].endswith("Configs: retention.ms=1000")


def test_command_config(broker: BrokerProcess, tmp_path: Path) -> None:
    plain = tmp_path / "admin.properties"
    plain.write_text("client.id=ops\nrequest.timeout.ms=5000\n")
    assert topics(broker, "--list", "--command-config", str(plain)).exit_code == 0
    secured = tmp_path / "sasl.properties"
    secured.write_text("security.protocol=SASL_SSL\n")
    refused = topics(broker, "--list", "--command-config", str(secured))
    assert refused.exit_code == 1 and "SASL_SSL needs sasl.username and sasl.password" in refused.stderr


def test_version() -> None:
    result = CliRunner().invoke(cli, ["topics", "--version"])
    assert (result.exit_code, result.stdout.strip()) == (0, samsa.__version__)
