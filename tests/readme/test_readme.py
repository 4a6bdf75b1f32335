"""Every code block of README.md runs as written, against a broker this module starts.

The blocks are read from the README itself, so a README edit is tested at once. Before a block runs, only these
substitutions are made (the README's fixed addresses and paths would collide between runs or need root):

    127.0.0.1:9092      -> the test broker's address
    data/demo/broker    -> the test broker's log dir, which holds topic ``access-log`` (written by this module,
                           standing in for what ``make demo`` leaves there)
    /tmp/ck             -> a fresh temporary directory
    .venv/bin/          -> the directory of the interpreter running the tests

The ``samsa serve`` lines each start a broker on a free port of 127.0.0.1 (``9092``, ``0.0.0.0:9092`` and the
advertised ``broker1.example.com:9092`` replaced,
``/var/lib/samsa`` and ``config/server.properties``' ``log.dirs`` moved under a temporary directory), wait for its
ready line and stop it with SIGTERM. Spark's session binds to 127.0.0.1 (``SPARK_LOCAL_IP``) as in every test.
The ``make demo`` / ``make test`` block is not run here: it runs this suite.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from samsa.client import NewTopic, SyncClient, TopicPartition
from samsa.records import Record, build_batch
from tests.clients.harness import READY_MARKER, BrokerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
ACCESS_LOG_LINES = [
    f'10.0.0.{n} - - [23/Nov/2026:10:00:{n:02d} +0000] "GET /items/{n} HTTP/1.1" 200 {100 + n} "-" "curl/8.5"'
    for n in range(12)
]


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int

    @property
    def name(self) -> str:
        first = self.code.strip().splitlines()[0]
        return f"L{self.line}-{self.lang}-" + re.sub(r"[^A-Za-z0-9]+", "-", first)[:40].strip("-")


def readme_blocks() -> list[Block]:
    text = README.read_text()
    blocks = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if match.group(1) in ("sh", "python"):
            line = text.count("\n", 0, match.start()) + 1
            blocks.append(Block(match.group(1), match.group(2), line))
    return blocks


BLOCKS = readme_blocks()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(data_dir=tmp_path_factory.mktemp("readme-broker"))
    proc.start()
    with SyncClient(proc.bootstrap) as client:
        assert client.create_topics([NewTopic("access-log", 2, 1)]) == {"access-log": None}
        for partition in range(2):
            lines = ACCESS_LOG_LINES[partition::2]
            now = int(time.time() * 1000)
            batch = build_batch([Record(i, now, None, line.encode(), ()) for i, line in enumerate(lines)])
            client.produce(TopicPartition("access-log", partition), batch)
    yield proc
    proc.stop()


def substituted(code: str, broker: BrokerProcess, tmp_path: Path) -> str:
    return (
        code.replace("127.0.0.1:9092", broker.bootstrap)
        .replace("data/demo/broker", str(broker.data_dir))
        .replace("/tmp/ck", str(tmp_path / "ck"))
        .replace(".venv/bin/", f"{BIN}/")
    )


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr


def test_every_code_block_is_covered() -> None:
    kinds = [runner_for(block) for block in BLOCKS]
    assert kinds.count("make") == 1, "only the make block is left out"
    assert {"serve", "sh", "python", "pytest", "spark"} <= set(kinds)


def runner_for(block: Block) -> str:
    if block.code.startswith("make "):
        return "make"
    if block.lang == "sh":
        return "serve" if " serve " in block.code else "sh"
    if "def test_" in block.code:
        return "pytest"
    return "spark" if "pyspark" in block.code else "python"


@pytest.mark.parametrize("block", [b for b in BLOCKS if runner_for(b) == "serve"], ids=lambda b: b.name)
def test_serve_lines(block: Block, tmp_path: Path) -> None:
    for n, line in enumerate(block.code.strip().splitlines()):
        port = free_port()
        workdir = tmp_path / f"serve-{n}"
        (workdir / "config").mkdir(parents=True)
        properties = (ROOT / "config" / "server.properties").read_text()
        (workdir / "config" / "server.properties").write_text(
            properties.replace("127.0.0.1:9092", f"127.0.0.1:{port}").replace(
                "log.dirs=data/broker-1", f"log.dirs={workdir / 'logs'}"
            )
        )
        command = (
            line.replace(".venv/bin/", f"{BIN}/")
            .replace("0.0.0.0:9092", f"127.0.0.1:{port}")
            .replace("broker1.example.com:9092", f"127.0.0.1:{port}")
            .replace("/var/lib/samsa", str(workdir / "var-lib-samsa"))
        )
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=workdir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert proc.stdout is not None
            lines: list[str] = []
            while len(lines) < 20 and not any(READY_MARKER in line for line in lines):
                lines.append(proc.stdout.readline())  # start-up log lines may come before the ready line
            assert READY_MARKER in lines[-1] and f"127.0.0.1:{port}" in lines[-1], "".join(lines)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0


@pytest.mark.parametrize("block", [b for b in BLOCKS if runner_for(b) == "sh"], ids=lambda b: b.name)
def test_shell_block(block: Block, broker: BrokerProcess, tmp_path: Path) -> None:
    if "kcat " in block.code and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (`make test` installs it)")
    try:
        output = run(["bash", "-eu", "-c", substituted(block.code, broker, tmp_path)], ROOT)
    finally:
        if (
            tmp_path / "ck" / "cluster" / "cluster.json"
        ).exists():  # a failed cluster block leaves none running
            from samsa.cluster.launcher import LocalCluster

            LocalCluster.find(tmp_path / "ck" / "cluster").down()
    if "cluster up" in block.code:
        assert "bootstrap servers: " in output and "every partition has its full ISR" in output
        assert "Topic: payments\tPartition: 5" in output and "stopped 3 brokers and ZooKeeper" in output
    if "--add-config retention.ms=60000" in block.code:
        assert output.count("Completed updating config for topic access-log.") == 2
    if "cluster restart" in block.code:
        assert "broker 2: 127.0.0.1:" in output and "stopped broker 3 (pid " in output
    if "kcat " in block.code:
        assert "0  hello" in output.splitlines()
    if "console-producer" in block.code:
        assert "Created topic orders." in output
        assert "k1\tfirst order" in output.splitlines()
        assert "Processed a total of 1 messages" in output
        assert "billing" in output.splitlines()  # --list, after the reset committed offsets for it
        assert f"Dumping {broker.data_dir}/access-log-0/00000000000000000000.log" in output


@pytest.mark.parametrize("block", [b for b in BLOCKS if runner_for(b) == "python"], ids=lambda b: b.name)
def test_python_block(block: Block, broker: BrokerProcess, tmp_path: Path) -> None:
    output = run([sys.executable, "-c", substituted(block.code, broker, tmp_path)], tmp_path)
    assert "|FAIL|" not in output, output  # librdkafka's complaints (a client outliving its broker)


@pytest.mark.parametrize("block", [b for b in BLOCKS if runner_for(b) == "pytest"], ids=lambda b: b.name)
def test_pytest_block(block: Block, broker: BrokerProcess, tmp_path: Path) -> None:
    (tmp_path / "test_snippet.py").write_text(substituted(block.code, broker, tmp_path))
    output = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_snippet.py"], tmp_path
    )
    assert "1 passed" in output


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if runner_for(b) == "spark"], ids=lambda b: b.name)
def test_spark_block(block: Block, broker: BrokerProcess, tmp_path: Path) -> None:
    """Run as a user would: ``.venv/bin/python`` with nothing exported and the virtualenv not on ``PATH``, so
    Spark's Python workers must be pointed at Samsa's interpreter by Samsa itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    output = run(
        [sys.executable, "-c", substituted(block.code, broker, tmp_path)], tmp_path, env, timeout=600
    )
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in output.splitlines()]
    counts = sorted((int(r[1]), int(r[2])) for r in rows if len(r) == 3 and r[0] == "access-log")
    assert counts == [(0, 6), (1, 6)], output[-3000:]
    with SyncClient(broker.bootstrap) as client:
        shouted = client.metadata(["shouted"]).topics["shouted"]
        assert shouted.error_code == 0, "the sink let the broker create the topic"
        ends = client.list_offsets({TopicPartition("shouted", p): -1 for p in shouted.partitions})
        assert sum(offset for offset, _ in ends.values()) == len(ACCESS_LOG_LINES)
