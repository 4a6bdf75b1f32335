"""``samsa consumer-groups`` offset flags against a real broker: ``--reset-offsets`` with ``--to-current``,
``--by-duration``, ``--from-file`` and ``--export``, ``--delete-offsets`` and ``--timeout``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.clients.harness import BrokerProcess

from samsa.cli.app import cli
from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.client.records import ProducerRecord, build_batch

TOPIC, GROUP = "offsets-tool", "offsets-tool-group"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path_factory.mktemp("samsa-groups-tool"))
    proc.start()
    with SyncClient(proc.bootstrap) as client:
        assert client.create_topics([NewTopic(TOPIC, 2, 1)]) == {TOPIC: None}
        for partition in range(2):
            records = [ProducerRecord(None, f"r{i}".encode()) for i in range(5)]
            client.produce(TopicPartition(TOPIC, partition), build_batch(records))
    yield proc
    proc.stop()


def groups(broker: BrokerProcess, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["consumer-groups", "--bootstrap-server", broker.bootstrap, "--group", GROUP, *args]
    )


def csv(broker: BrokerProcess, *args: str) -> list[str]:
    result = groups(broker, "--reset-offsets", "--topic", TOPIC, "--export", "--dry-run", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_reset_offsets_scenarios_export_and_delete_offsets(broker: BrokerProcess, tmp_path: Path) -> None:
    executed = groups(broker, "--reset-offsets", "--topic", TOPIC, "--to-offset", "3", "--execute")
    assert executed.exit_code == 0, executed.output
    assert csv(broker, "--to-current") == [f"{TOPIC},0,3", f"{TOPIC},1,3"]
    assert csv(broker, "--by-duration", "PT1H") == [f"{TOPIC},0,0", f"{TOPIC},1,0"]  # written within the hour
    assert csv(broker, "--by-duration", "P0D") == [
        f"{TOPIC},0,5",
        f"{TOPIC},1,5",
    ]  # nothing after now: the end

    exported = tmp_path / "offsets.csv"
    exported.write_text(f"{TOPIC},0,1\n{TOPIC},1,4\n")
    from_file = groups(
        broker, "--reset-offsets", "--from-file", str(exported), "--execute", "--timeout", "5000"
    )
    assert from_file.exit_code == 0, from_file.output
    assert csv(broker, "--to-current") == [f"{TOPIC},0,1", f"{TOPIC},1,4"]

    deleted = groups(broker, "--delete-offsets", "--topic", f"{TOPIC}:0")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.stdout.splitlines()[0] == f"Request succeeded for deleting offsets from group '{GROUP}'."
    assert deleted.stdout.splitlines()[-1].split() == [TOPIC, "0", "Successful"]
    assert csv(broker, "--to-current") == [f"{TOPIC},0,5", f"{TOPIC},1,4"]  # none committed for 0: the end


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--reset-offsets", "--topic", TOPIC, "--by-duration", "1 hour"], "PnDTnHnMn.nS"),
        (["--reset-offsets", "--topic", TOPIC, "--to-current", "--to-latest"], "exactly one of"),
        (["--delete-offsets"], "needs one --group and at least one --topic"),
        (["--list", "--export"], "--export needs --reset-offsets"),
    ],
)
def test_bad_combinations_are_usage_errors(broker: BrokerProcess, args: list[str], message: str) -> None:
    result = groups(broker, *args)
    assert result.exit_code == 2 and message in result.output, result.output


def test_list_with_states(broker: BrokerProcess) -> None:
    groups(broker, "--reset-offsets", "--topic", TOPIC, "--to-earliest", "--execute")  # an Empty group
    listed = groups(broker, "--list", "--state")
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["GROUP", "STATE"] and [GROUP, "Empty"] in [line.split() for line in lines]
    assert groups(broker, "--list", "--state", "Empty,Stable").stdout == listed.stdout
    assert groups(broker, "--list", "--state", "Stable").stdout.splitlines()[1:] == []
