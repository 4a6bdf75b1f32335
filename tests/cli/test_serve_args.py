"""``samsa serve``'s command line: the plain reader (``parse_plain``, which spares the start argparse's cost) reads
every command line it accepts exactly as argparse does, and hands every other one to argparse."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from samsa.cli.serve import ServeArgs, _parser, parse_args, parse_plain

TOKENS = [
    "--override",
    "--override=a=b",
    "--override=",
    "log.dirs=/tmp/x",
    "node.id=-1",
    "-1",
    "server.properties",
    "",
    "--uvloop",
    "--no-uvloop",
    "--log-format",
    "json",
    "--uvloop=1",
    "--over",
    "-h",
    "--help",
    "--",
    "-x",
]


def argparse_reading(argv: list[str]) -> ServeArgs | None:
    """What argparse makes of ``argv``, or None when it refuses it (or prints help)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit:
        return None
    return ServeArgs(args.properties, args.overrides, args.uvloop, args.log_format)


@given(st.lists(st.sampled_from(TOKENS), max_size=6))
def test_the_plain_reading_is_argparse_reading_whenever_it_reads(argv: list[str]) -> None:
    plain = parse_plain(argv)
    if plain is not None:
        assert plain == argparse_reading(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["server.properties"],
        ["--override", "log.dirs=/tmp/x", "--override", "listeners=PLAINTEXT://127.0.0.1:9092"],
        ["server.properties", "--override=num.partitions=3", "--uvloop"],
        ["--override", "a=b", "server.properties", "--uvloop", "--no-uvloop"],
    ],
)
def test_the_usual_command_lines_need_no_argparse(argv: list[str]) -> None:
    assert parse_plain(argv) is not None
    assert parse_args(argv) == argparse_reading(argv)


@pytest.mark.parametrize("argv", [["--help"], ["--over", "a=b"], ["a", "b"], ["--override", "-1"], ["--"]])
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert parse_plain(argv) is None


def test_help_and_usage_errors_are_argparse_s() -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "samsa.cli", "serve", *args], capture_output=True, text=True, timeout=60
        )

    helped = serve("--help")
    assert helped.returncode == 0
    assert "usage: samsa serve" in helped.stdout and "--override KEY=VALUE" in helped.stdout
    for args, fragment in [
        (("a.properties", "b.properties"), "unrecognized arguments: b.properties"),
        (("--override",), "expected one argument"),
        (("--override=novalue",), "'novalue' is not KEY=VALUE"),
    ]:
        refused = serve(*args)
        assert refused.returncode == 2, args
        assert "usage: samsa serve" in refused.stderr and fragment in refused.stderr, refused.stderr


def test_ctrl_c_while_the_command_is_still_importing_is_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGINT in the first tenth of a second of ``samsa serve`` (its imports) printed a KeyboardInterrupt
    traceback."""
    import samsa.cli
    import samsa.cli.serve

    def interrupted(argv: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(samsa.cli.serve, "main", interrupted)
    assert samsa.cli.main(["serve"]) == 130
    assert capsys.readouterr().err == "Aborted!\n"


def serve_process(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "samsa.cli", "serve", *args], capture_output=True, text=True, timeout=timeout
    )


def test_no_arguments_prints_the_usage_instead_of_serving_from_tmp() -> None:
    refused = serve_process()
    assert refused.returncode == 1
    assert refused.stderr.startswith("USAGE: samsa serve server.properties [--override property=value]*")


def test_a_port_in_use_is_named_before_any_log_is_loaded(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        listener = f"PLAINTEXT://127.0.0.1:{port}"
        refused = serve_process(
            "--override", f"listeners={listener}", "--override", f"log.dirs={tmp_path / 'logs'}"
        )
    assert refused.returncode == 1
    assert (
        refused.stderr
        == f"samsa serve: cannot listen on {listener}: the address is already in use (port {port} of 127.0.0.1)\n"
    )
    assert not (tmp_path / "logs").exists()  # nothing loaded, nothing created


def test_the_wildcard_address_is_never_advertised(tmp_path: Path) -> None:
    refused = serve_process(
        "--override", "listeners=PLAINTEXT://0.0.0.0:0", "--override", f"log.dirs={tmp_path}"
    )
    assert refused.returncode == 2
    assert "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0" in refused.stderr
    assert "set advertised.listeners" in refused.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("listeners=FOO://127.0.0.1:0", "no security protocol defined for listener FOO"),
        ("socket.request.max.bytes=10", "socket.request.max.bytes: value must be at least 1024"),
        ("log.retention.bytes=-5", "log.retention.bytes: value must be at least -1"),
    ],
)
def test_values_kafka_refuses_or_that_serve_no_one_stop_the_start(
    tmp_path: Path, override: str, message: str
) -> None:
    refused = serve_process("--override", override, "--override", f"log.dirs={tmp_path / 'logs'}")
    assert refused.returncode == 2
    assert message in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "logs").exists()


def test_the_wildcard_address_binds_when_another_is_advertised() -> None:
    from samsa.broker.config import KafkaConfig

    config = KafkaConfig.from_properties(
        {"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://broker1.example:9092"}
    )
    assert config.advertised_addresses == [("PLAINTEXT", "broker1.example", 9092)]


def test_an_embedded_broker_on_a_port_in_use_names_it() -> None:
    import samsa

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        refused = pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}: Address already in use")
        with refused, samsa.Broker(port=port):
            pass
