"""What a broker's start imports: handlers and their generated messages come with their API's first request, the
group coordinator with the first group request (or a stored ``__consumer_offsets``), the log, segment, cleaning and
record modules with the first log, and ``samsa serve`` runs without click or rich. Each check runs in a fresh
interpreter, since this one has imported everything. (How long a start takes is measured by
``bench/bench_embedded.py``, never here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from samsa.broker.handlers import HANDLERS
from samsa.protocol.messages._registry import APIS

FIRST_REQUEST = """
import json, sys
import samsa
from confluent_kafka.admin import AdminClient

with samsa.Broker({log_dir}) as broker:
    before = set(sys.modules)
    {request}
    after = set(sys.modules)
print(json.dumps({{"before": sorted(before), "after": sorted(after)}}))
"""


def modules_around(request: str, log_dir: Path | None = None) -> tuple[set[str], set[str]]:
    """Modules loaded once a fresh in-process broker has started, and once it has answered ``request``."""
    code = FIRST_REQUEST.format(log_dir=repr(str(log_dir)) if log_dir else "", request=request)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    return set(loaded["before"]), set(loaded["after"])


def samsa_modules(names: set[str], prefix: str) -> set[str]:
    return {name for name in names if name.startswith(prefix)}


@pytest.mark.parametrize("key", sorted(HANDLERS))
def test_each_handler_is_its_api_module_and_serves_versions_the_codec_has(key: int) -> None:
    handler = HANDLERS[key]
    name, module_name, low, high, _ = APIS[key]
    assert handler.module_name == module_name, name
    assert low <= handler.versions[0] <= handler.implemented[0] <= handler.versions[1]
    assert handler.implemented[1] == handler.accepted[1] >= handler.versions[1]
    assert handler.accepted[0] == handler.versions[0] and handler.accepted[1] <= high
    assert callable(handler.load().handle)


def test_a_started_broker_has_imported_no_handler_and_no_coordinator() -> None:
    before, after = modules_around(
        "AdminClient({'bootstrap.servers': broker.bootstrap_servers}).list_topics(timeout=10)"
    )
    assert samsa_modules(before, "samsa.broker.handlers.") == set()
    assert samsa_modules(before, "samsa.protocol.messages.") <= {"samsa.protocol.messages._registry"}
    assert samsa_modules(before, "samsa.coordinator") == set()
    assert "crc32c._crc32c" not in before  # comes with the first log (samsa.records.batch_view)
    # librdkafka's first requests: ApiVersions, then Metadata; nothing else is loaded for them
    assert samsa_modules(after, "samsa.broker.handlers.") == {
        "samsa.broker.handlers.api_versions",
        "samsa.broker.handlers.metadata",
    }
    assert samsa_modules(after, "samsa.coordinator") == set()


def test_the_coordinator_comes_with_the_first_group_request() -> None:
    _, after = modules_around(
        "AdminClient({'bootstrap.servers': broker.bootstrap_servers}).list_groups(timeout=10)"
    )
    assert "samsa.coordinator.coordinator" in after


def test_a_restart_rebuilds_stored_groups_at_start(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, TopicPartition

    import samsa

    with samsa.Broker(tmp_path) as broker:
        broker.create_topic("t", partitions=1)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g"})
        consumer.commit(offsets=[TopicPartition("t", 0, 5)], asynchronous=False)
        consumer.close()
    before, _ = modules_around("pass", tmp_path)
    assert "samsa.coordinator.coordinator" in before


def test_samsa_serve_runs_without_click_or_rich(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "import samsa.broker.runner as runner\n"
        "runner.run_forever = lambda config, **options: "
        "print(json.dumps(sorted(sys.modules))) or 0\n"
        "from samsa.cli import main\n"
        f"sys.exit(main(['serve', '--override', 'log.dirs={tmp_path}']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(out.stdout))
    assert "samsa.broker.config" in loaded
    assert not {name for name in loaded if name.split(".")[0] in ("click", "rich")}
    assert not samsa_modules(loaded, "samsa.cli.") - {"samsa.cli.serve"}


ANSWER_API_VERSIONS = """
import json, socket, struct, sys
import samsa

with samsa.Broker() as broker:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(struct.pack(">ihhih", 10, 18, 0, 1, 0))  # ApiVersions v0, correlation id 1, null client
        answer = sock.makefile("rb").read(8)
    print(json.dumps({"answer": answer.hex(), "modules": sorted(sys.modules)}))
"""


def test_a_fresh_broker_answers_api_versions_without_uuid() -> None:
    """``uuid`` (and the ``platform`` it imports) waits for the first uuid field or topic id: not at start, not for
    the cluster id of a fresh log dir, not for ApiVersions."""
    out = subprocess.run(
        [sys.executable, "-c", ANSWER_API_VERSIONS], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert loaded["answer"][8:] == "00000001"  # the size, then correlation id 1
    assert "uuid" not in loaded["modules"]
    assert not set(loaded["modules"]) & LOADED_WITH_THE_FIRST_LOG


# A broker with no logs yet (a fresh log dir) loads none of these to start and answer ApiVersions: they come with
# the first log (created, or found at start), the first cleaning, the first records read or written.
LOADED_WITH_THE_FIRST_LOG = {
    "samsa.storage.log",
    "samsa.storage.log_loader",
    "samsa.storage.segment",
    "samsa.storage.segments",
    "samsa.storage.index",
    "samsa.storage.file_records",
    "samsa.storage.producer_state",
    "samsa.storage.leader_epoch",
    "samsa.storage.cleaner",
    "samsa.records.batch",
    "samsa.records.batch_view",
    "samsa.records.compression",
    "cramjam",
}

SERVE_AND_ASK_API_VERSIONS = """
import os, signal, socket, struct, sys, threading, time

def ask():
    deadline = time.monotonic() + 60
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", PORT), timeout=30)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    with sock:
        sock.sendall(struct.pack(">ihhih", 10, 18, 0, 1, 0))  # ApiVersions v0, correlation id 1, null client
        answer = sock.makefile("rb").read(8)
    modules = sorted(sys.modules)
    import json  # after the list is taken

    print(json.dumps({"answer": answer.hex(), "modules": modules}), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=ask, daemon=True).start()
from samsa.cli import main
sys.exit(main(["serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{PORT}", "--override", f"log.dirs={LOG_DIR}"]))
"""


def test_samsa_serve_on_a_fresh_log_dir_answers_api_versions_without_the_log_modules(tmp_path: Path) -> None:
    """``samsa serve`` as it runs (the CLI, the runner, SIGTERM), on a fresh log dir: its first ApiVersions
    answer needs no log, segment, cleaning or record module, nor argparse (its usual command lines are read
    without it), shutil, json, random or uuid; then it stops cleanly."""
    from tests.clients.harness import free_port

    code = f"PORT = {free_port()}\nLOG_DIR = {str(tmp_path / 'logs')!r}\n" + SERVE_AND_ASK_API_VERSIONS
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
    assert loaded["answer"][8:] == "00000001"  # the size, then correlation id 1
    modules = set(loaded["modules"])
    assert "samsa.broker.handlers.api_versions" in modules
    assert not modules & LOADED_WITH_THE_FIRST_LOG
    assert not modules & {"argparse", "shutil", "json", "random", "uuid", "click", "rich"}
    assert (tmp_path / "logs" / ".kafka_cleanshutdown").exists()


def test_the_log_modules_come_with_the_first_log_and_it_is_served() -> None:
    """The other side of the laziness: the first topic loads them, and the broker serves it."""
    code = """
import json, sys
import samsa
from confluent_kafka import Producer

with samsa.Broker() as broker:
    before = set(sys.modules)
    broker.create_topic("t", partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce("t", b"v", key=b"k")
    assert producer.flush(30) == 0
print(json.dumps({"before": sorted(before), "after": sorted(sys.modules)}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert not set(loaded["before"]) & LOADED_WITH_THE_FIRST_LOG
    after = set(loaded["after"])
    assert LOADED_WITH_THE_FIRST_LOG - {"samsa.storage.cleaner"} <= after
    assert "crc32c._crc32c" in after and "crc32c" not in after  # its C module without the package's init
