"""The tools' answers to bad input and failures: one line on stderr and a non-zero exit, never a traceback or a
silent loss; and every record of a normal file delivered by console-producer."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.clients.harness import BrokerProcess, free_port

from samsa.cli import console_producer
from samsa.cli.app import cli
from samsa.client.records import ProducerRecord, build_batch
from samsa.records import Record
from samsa.records import build_batch as build_log_batch

BAD_PORT = "127.0.0.1:99999"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker that does not create topics on demand; tests use distinct topic names."""
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-data"), overrides={"auto.create.topics.enable": "false"}
    )
    proc.start()
    yield proc
    proc.stop()


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


def assert_one_line_failure(result: Result, text: str) -> None:
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert text in result.output


def create(broker: BrokerProcess, topic: str, partitions: int = 1) -> None:
    result = run("topics", "--bootstrap-server", broker.bootstrap, "--create", "--topic", topic,
                 "--partitions", str(partitions))  # fmt: skip
    assert result.exit_code == 0, result.output


def end_offsets(broker: BrokerProcess, topic: str) -> int:
    result = run("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", topic)
    assert result.exit_code == 0, result.output
    return sum(int(line.rsplit(":", 1)[1]) for line in result.stdout.splitlines())


# --- console-producer: delivery ------------------------------------------------------------------------------


def test_batches_are_bounded_in_bytes() -> None:
    records = [ProducerRecord(None, b"x" * 200) for _ in range(1000)] + [ProducerRecord(None, b"y" * 50000)]
    batches = console_producer.split_batches(records, 16384)
    assert [r for b in batches for r in b] == records
    for batch in batches:
        assert len(batch) == 1 or len(build_batch(batch)) <= 16384
    assert len(build_batch(batches[-1])) > 16384 and console_producer.BATCH_OVERHEAD < 16384


def test_producer_delivers_every_record_of_a_large_file(broker: BrokerProcess) -> None:
    create(broker, "lines", partitions=2)
    lines = b"".join(b"%06d" % n + b"x" * 200 + b"\n" for n in range(20000))  # 4 MB, 207-byte lines
    result = run("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "lines", stdin=lines)
    assert result.exit_code == 0, result.output
    assert end_offsets(broker, "lines") == 20000


def test_producer_record_too_large_fails(broker: BrokerProcess) -> None:
    create(broker, "huge")
    result = run("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "huge",
                 stdin=b"small\n" + b"y" * 2_000_000 + b"\n")  # fmt: skip
    assert_one_line_failure(result, "(MESSAGE_TOO_LARGE)")
    assert "1 record(s) could not be sent" in result.stderr
    assert end_offsets(broker, "huge") == 1


def test_producer_missing_topic_waits_only_the_timeout(broker: BrokerProcess) -> None:
    started = time.monotonic()
    result = run("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "absent",
                 "--request-timeout-ms", "500", stdin=b"a\n")  # fmt: skip
    assert_one_line_failure(result, "Topic absent not present in metadata after 500 ms.")
    assert time.monotonic() - started < 10


def test_producer_invalid_topic_fails_at_once(broker: BrokerProcess) -> None:
    started = time.monotonic()
    result = run(
        "console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "bad/name", stdin=b"a\n"
    )
    assert_one_line_failure(result, "(INVALID_TOPIC_EXCEPTION)")
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("option", "text"),
    [
        (["--batch-size", "0"], "batch.size: must be at least 1"),
        (["--batch-size", "-1"], "batch.size: must be at least 1"),
        (["--property", "bogus"], "Invalid --property 'bogus': expected key=value"),
        (["--producer-property", "acks"], "Invalid --producer-property 'acks'"),
    ],
)
def test_producer_refuses_bad_values(broker: BrokerProcess, option: list[str], text: str) -> None:
    args = ["console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "lines", *option]
    assert_one_line_failure(run(*args, stdin=b"a\n"), text)


# --- console-consumer ----------------------------------------------------------------------------------------


def test_consumer_max_messages_minus_one_is_no_limit(broker: BrokerProcess) -> None:
    create(broker, "few")
    assert run("console-producer", "--bootstrap-server", broker.bootstrap, "--topic", "few",
               stdin=b"1\n2\n3\n").exit_code == 0  # fmt: skip
    result = run("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "few",
                 "--from-beginning", "--max-messages", "-1", "--timeout-ms", "1500")  # fmt: skip
    assert result.stdout.splitlines() == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("option", "text"),
    [
        (["--timeout-ms", "-5"], "The timeout must be 0 or more ms"),
        (["--property", "bogus"], "Invalid --property 'bogus'"),
        (["--consumer-property", "bogus"], "Invalid --consumer-property 'bogus'"),
    ],
)
def test_consumer_refuses_bad_values(broker: BrokerProcess, option: list[str], text: str) -> None:
    assert_one_line_failure(
        run("console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "few", *option), text
    )


# --- bootstrap servers, regular expressions, partition lists ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["topics", "--list"],
        ["get-offsets"],
        ["console-producer", "--topic", "t"],
        ["console-consumer", "--topic", "t"],
        ["consumer-groups", "--list"],
        ["log-dirs", "--describe"],
        ["leader-election", "--election-type", "preferred", "--all-topic-partitions"],
        ["reassign-partitions", "--list"],
    ],
)
def test_port_out_of_range_is_one_line(args: list[str]) -> None:
    result = run(*args, "--bootstrap-server", BAD_PORT, stdin=b"")
    assert_one_line_failure(result, "port 99999 is not in 1-65535")


def test_pipeline_bad_or_silent_broker_is_one_line(tmp_path: Path) -> None:
    for server, text in [(BAD_PORT, "port 99999"), (f"127.0.0.1:{free_port()}", "cannot connect")]:
        result = run("pipeline", "-b", server, "--available-now", "--data-dir", str(tmp_path))
        assert_one_line_failure(result, text)
        assert len(result.output.splitlines()) == 1


@pytest.mark.parametrize("action", ["--describe", "--alter", "--delete", "--list"])
def test_topics_bad_regex(broker: BrokerProcess, action: str) -> None:
    result = run(
        "topics", "--bootstrap-server", broker.bootstrap, action, "--topic", "bad[regex", "--partitions", "3"
    )
    assert_one_line_failure(result, "Invalid regular expression 'bad[regex'")


def test_get_offsets_bad_regex(broker: BrokerProcess) -> None:
    result = run("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", "bad[regex")
    assert_one_line_failure(result, "Error occurred: Invalid regular expression 'bad[regex'")


def test_topics_takes_exactly_one_action(broker: BrokerProcess) -> None:
    result = run("topics", "--bootstrap-server", broker.bootstrap, "--list", "--describe")
    assert_one_line_failure(result, "Command must include exactly one action")


def test_reset_offsets_bad_partition_list(broker: BrokerProcess) -> None:
    create(broker, "orders")
    result = run("consumer-groups", "--bootstrap-server", broker.bootstrap, "--reset-offsets", "--group", "g",
                 "--topic", "orders:x", "--to-earliest")  # fmt: skip
    assert_one_line_failure(result, "Error: Invalid --topic 'orders:x'")


# --- dump-log -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize("seed", range(20))
def test_dump_log_garbage_index_is_reported(tmp_path: Path, suffix: str, seed: int) -> None:
    """Random bytes in an index (with random bytes for its log): a report and exit 1, never a traceback."""
    rng = random.Random(seed)
    (tmp_path / "00000000000000000000.log").write_bytes(rng.randbytes(3000))
    for name in (".index", ".timeindex"):
        (tmp_path / f"00000000000000000000{name}").write_bytes(rng.randbytes(4800))
    result = run("dump-log", "--files", str(tmp_path / f"00000000000000000000{suffix}"))
    assert_one_line_failure(result, "Dumping")


def test_dump_log_index_pointing_outside_its_log(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(struct.pack(">ii", 5, -382288118))
    result = run("dump-log", "--files", str(index))
    assert_one_line_failure(
        result, f"Cannot dump {index}: unreadable index: the entry for offset 5 points to"
    )


@pytest.mark.parametrize("name", ["nosuch", "nosuch.log", "nosuch.index"])
def test_dump_log_missing_file(tmp_path: Path, name: str) -> None:
    result = run("dump-log", "--files", str(tmp_path / name))
    assert_one_line_failure(result, f"Cannot read {tmp_path / name}: No such file or directory")


def test_dump_log_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(build_log_batch([Record(n, 1000, None, b"v" * 20) for n in range(20000)], base_offset=0))
    reader = subprocess.Popen(["head", "-n", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    dump = subprocess.run(
        [sys.executable, "-m", "samsa.cli", "dump-log", "--deep-iteration", "--files", str(log)],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert reader.stdin is not None
    reader.stdin.close()
    reader.wait()
    assert (dump.returncode, dump.stderr) == (141, "")
