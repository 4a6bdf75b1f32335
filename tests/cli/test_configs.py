"""``samsa configs`` against a real broker: kafka-configs.sh's flags and lines, changes that reach the topic's
log and outlive a restart, and one-line failures."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from tests.clients.harness import BrokerProcess

import samsa
from samsa.cli.app import cli
from samsa.client import KafkaClient, SyncClient
from samsa.records import Record, build_batch
from samsa.topic_partition import TopicPartition


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-configs"), overrides={"log.retention.hours": "100"}
    )
    proc.start()
    yield proc
    proc.stop()


def run(broker: BrokerProcess, *args: str) -> Result:
    return CliRunner().invoke(cli, ["configs", "--bootstrap-server", broker.bootstrap, *args])


def ok(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def create(broker: BrokerProcess, topic: str, *configs: str) -> None:
    args = ["topics", "--bootstrap-server", broker.bootstrap, "--create", "--if-not-exists", "--topic", topic]
    for config in configs:
        args += ["--config", config]
    assert CliRunner().invoke(cli, args).exit_code == 0


def test_describe_lists_a_topics_overrides_with_synonyms(broker: BrokerProcess) -> None:
    create(broker, "cfg-describe", "retention.ms=5000", "cleanup.policy=compact")
    lines = ok(run(broker, "--entity-type", "topics", "--entity-name", "cfg-describe", "--describe"))
    assert lines == [
        "Dynamic configs for topic cfg-describe are:",
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000}",
    ]


def test_describe_all_shows_every_key_with_its_source(broker: BrokerProcess) -> None:
    create(broker, "cfg-all")
    lines = ok(run(broker, "--topic", "cfg-all", "--describe", "--all"))
    assert lines[0] == "All configs for topic cfg-all are:"
    assert (
        "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}" in lines
    )
    assert len(lines) > 20
    broker_lines = ok(run(broker, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all"))
    assert broker_lines[0] == "All configs for broker 1 are:"
    assert (
        "  log.retention.hours=100 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=100, "
        "DEFAULT_CONFIG:log.retention.hours=168}"
    ) in broker_lines


def test_alter_adds_and_deletes_and_the_change_outlives_a_restart(broker: BrokerProcess) -> None:
    create(broker, "cfg-alter", "segment.bytes=1048576")
    topic = ["--entity-type", "topics", "--entity-name", "cfg-alter"]
    added = run(
        broker, *topic, "--alter", "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]"
    )
    assert ok(added) == ["Completed updating config for topic cfg-alter."]
    assert ok(run(broker, *topic, "--alter", "--delete-config", "segment.bytes")) == [
        "Completed updating config for topic cfg-alter."
    ]
    broker.stop()
    broker.start()
    lines = ok(run(broker, *topic, "--describe"))
    assert [line.split(" ")[2] for line in lines[1:]] == [
        "cleanup.policy=compact,delete",
        "retention.ms=1000",
    ]
    with SyncClient(broker.bootstrap) as client:
        configs = client.describe_configs(["cfg-alter"])["cfg-alter"]
    assert configs["segment.bytes"].source == 5  # back to the default


def test_add_config_file(broker: BrokerProcess, tmp_path: Path) -> None:
    create(broker, "cfg-file")
    path = tmp_path / "topic.properties"
    path.write_text("# lower retention\nretention.ms = 60000\nmax.message.bytes=2000\n")
    ok(run(broker, "--topic", "cfg-file", "--alter", "--add-config-file", str(path)))
    lines = ok(run(broker, "--topic", "cfg-file", "--describe"))
    assert [line.split(" ")[2] for line in lines[1:]] == ["max.message.bytes=2000", "retention.ms=60000"]


def test_brokers_describe_lists_each_broker_then_the_default(broker: BrokerProcess) -> None:
    lines = ok(run(broker, "--entity-type", "brokers", "--describe"))
    assert lines == ["Dynamic configs for broker 1 are:", "Default configs for brokers in the cluster are:"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--topic", "cfg-bad", "--alter", "--delete-config", "retention.ms"],
            "Invalid config(s): retention.ms",
        ),
        (["--topic", "cfg-bad", "--alter", "--add-config", "retention.ms=abc"], "retention.ms"),
        (["--topic", "cfg-bad", "--alter", "--add-config", "retention.ms"], "must be key=value"),
        (["--topic", "cfg-bad", "--alter"], "at least one of --add-config"),
        (["--topic", "cfg-bad", "--describe", "--alter"], "exactly one action"),
        (["--topic", "no-such-topic", "--describe"], "Topic no-such-topic does not exist"),
        (
            ["--entity-type", "clients", "--entity-name", "x", "--alter", "--add-config", "bogus=1"],
            "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: bogus",
        ),
        (["--entity-type", "clients", "--entity-type", "topics", "--describe"], "Only users and clients"),
        (
            ["--client", "x", "--alter", "--add-config", "producer_byte_rate=1.5"],
            "cannot be a fractional value",
        ),
        (["--entity-type", "topics", "--entity-default", "--describe"], "brokers only"),
        (
            ["--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.dirs=/x"],
            "log.dirs cannot be altered while the broker runs",
        ),
        (
            [
                "--entity-type",
                "brokers",
                "--entity-name",
                "1",
                "--alter",
                "--add-config",
                "log.retention.ms=x",
            ],
            "log.retention.ms",
        ),
        (
            [
                "--entity-type",
                "brokers",
                "--entity-name",
                "7",
                "--alter",
                "--add-config",
                "log.retention.ms=1",
            ],
            "Unexpected broker id",
        ),
    ],
)
def test_failures_are_one_line_and_exit_1(broker: BrokerProcess, args: list[str], message: str) -> None:
    create(broker, "cfg-bad")
    result = run(broker, *args)
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output and "org.apache" not in result.output


def test_a_broker_without_incremental_alter_configs_gets_alter_configs(
    broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As against a broker older than IncrementalAlterConfigs (Kafka < 2.3): the whole set of the topic's
    dynamic configs is sent with AlterConfigs, the ones not touched kept."""
    create(broker, "cfg-old-broker", "retention.ms=5000", "segment.bytes=1048576")

    async def without_incremental(self: KafkaClient, api_key: int) -> bool:
        return api_key != 44

    sent: list[int] = []
    real_send = KafkaClient.send

    async def recording_send(self: KafkaClient, request: object, **kwargs: Any) -> Any:
        sent.append(kwargs["api_key"])
        return await real_send(self, request, **kwargs)

    monkeypatch.setattr(KafkaClient, "supports", without_incremental)
    monkeypatch.setattr(KafkaClient, "send", recording_send)
    topic = ["--topic", "cfg-old-broker", "--alter"]
    ok(run(broker, *topic, "--add-config", "cleanup.policy=compact", "--delete-config", "segment.bytes"))
    assert 33 in sent and 44 not in sent
    lines = ok(run(broker, "--topic", "cfg-old-broker", "--describe"))
    assert [line.split(" ")[2] for line in lines[1:]] == ["cleanup.policy=compact", "retention.ms=5000"]


def test_dynamic_topic_defaults_apply_at_once_and_outlive_a_restart(tmp_path: Path) -> None:
    """log.* keys altered on the broker entities (the cluster default, then broker 1's own, which wins) become
    every topic's defaults under its own overrides at once: a lower retention deletes old segments without
    waiting for the retention check; the values come back after a restart, with their sources."""
    broker = BrokerProcess(data_dir=tmp_path, overrides={"log.retention.check.interval.ms": "3600000"})
    broker.start()
    try:
        create(broker, "dyn-plain", "segment.bytes=1000")
        create(broker, "dyn-own", "retention.ms=3600000")
        hour_ago = int(time.time() * 1000) - 3_600_000
        tp = TopicPartition("dyn-plain", 0)
        with SyncClient(broker.bootstrap) as client:
            for i in range(4):  # each batch fills a 1,000-byte segment: 3 closed segments, 1 active
                client.produce(tp, build_batch([Record(0, hour_ago + i, None, b"v" * 900)]))
            assert client.list_offsets({tp: -2})[tp][0] == 0
        brokers = ["--entity-type", "brokers"]
        ok(run(broker, *brokers, "--entity-default", "--alter", "--add-config", "log.retention.ms=60000"))
        ok(run(broker, *brokers, "--entity-name", "1", "--alter", "--add-config", "log.retention.ms=120000"))
        with SyncClient(broker.bootstrap) as client:
            assert client.list_offsets({tp: -2})[tp][0] > 0  # applied at once, not at the hourly check
        for _ in range(2):
            with SyncClient(broker.bootstrap) as client:
                plain = client.describe_configs(["dyn-plain"])["dyn-plain"]
                own = client.describe_configs(["dyn-own"])["dyn-own"]
            assert (plain["retention.ms"].value, plain["retention.ms"].source) == ("120000", 2)
            assert (own["retention.ms"].value, own["retention.ms"].source) == ("3600000", 1)
            lines = ok(run(broker, *brokers, "--describe"))
            assert lines[1].startswith(
                "  log.retention.ms=120000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=120000, "
                "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=60000"
            ), lines
            broker.stop()
            broker.start()
        ok(run(broker, *brokers, "--entity-name", "1", "--alter", "--delete-config", "log.retention.ms"))
        with SyncClient(broker.bootstrap) as client:
            plain = client.describe_configs(["dyn-plain"])["dyn-plain"]
        assert (plain["retention.ms"].value, plain["retention.ms"].source) == ("60000", 3)
    finally:
        broker.stop()


def test_connection_limits_change_while_the_broker_runs(tmp_path: Path) -> None:
    """max.connections.per.ip altered for the broker: new connections meet it at once, and its removal lifts it."""
    broker = BrokerProcess(data_dir=tmp_path)
    broker.start()
    host, port = broker.bootstrap.rsplit(":", 1)

    def refused_beyond(count: int) -> bool:
        """Whether, with ``count`` connections open, one more is closed by the broker."""
        held = [socket.create_connection((host, int(port))) for _ in range(count)]
        extra = socket.create_connection((host, int(port)))
        extra.settimeout(5)
        try:
            extra.sendall(bytes.fromhex("0000000a0012000000000001ffff"))  # ApiVersions v0, no client id
            return extra.recv(4) == b""
        except ConnectionError:
            return True
        finally:
            for sock in [*held, extra]:
                sock.close()

    try:
        assert not refused_beyond(4)
        brokers = ["--entity-type", "brokers", "--entity-name", "1"]
        ok(run(broker, *brokers, "--alter", "--add-config", "max.connections.per.ip=4"))
        time.sleep(0.5)  # the closed connections of the command are counted out
        assert refused_beyond(4)
        time.sleep(0.5)
        ok(run(broker, *brokers, "--alter", "--delete-config", "max.connections.per.ip"))
        time.sleep(0.5)
        assert not refused_beyond(4)
    finally:
        broker.stop()


def test_cleaner_tuning_changes_while_the_broker_runs(tmp_path: Path) -> None:
    """log.cleaner.* tuning altered for every broker reaches the running cleaner; deleting it restores
    server.properties' value."""
    with samsa.Broker(tmp_path, config={"log.cleaner.backoff.ms": "15000"}) as broker:
        cleaner = broker.core.log_manager.cleaner
        assert cleaner.config.backoff_ms == 15000
        alter = ["configs", "--bootstrap-server", broker.bootstrap_servers, "--entity-type", "brokers"]
        result = CliRunner().invoke(
            cli, [*alter, "--entity-default", "--alter", "--add-config", "log.cleaner.backoff.ms=500"]
        )
        assert result.exit_code == 0, result.output
        assert cleaner.config.backoff_ms == 500
        result = CliRunner().invoke(
            cli, [*alter, "--entity-default", "--alter", "--delete-config", "log.cleaner.backoff.ms"]
        )
        assert result.exit_code == 0, result.output
        assert cleaner.config.backoff_ms == 15000
