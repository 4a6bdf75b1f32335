"""Kafka reads Samsa's files: Kafka 4.x's ``DumpLogSegments`` (``kafka-dump-log``) over every file a Samsa broker
wrote, after a clean stop.

The partitions cover v2 batches of every codec from an idempotent producer (producer snapshots), keys, headers and
null values, a compacted topic with tombstones, legacy v0 and v1 message sets of each codec (appended by Samsa's
``Log``: no produce version Samsa serves carries them), and segments rolled at 64 KiB (several ``.log``/``.index``/``.timeindex`` triples each). The oracle is
Samsa's own ``samsa dump-log``, which prints Kafka's format: the two outputs must be the same line for line (batch
headers, every record with its key and payload, index and time index entries), Kafka's index checks must pass, and
Kafka's reading of each producer snapshot must name, for each producer, the last batch the log holds from it, and
be Samsa's line for line; a consumer group's records in ``__consumer_offsets``, decoded by ``--offsets-decoder``,
are the same in both dumps too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samsa.clock import SystemClock
from samsa.records import CompressionType, Record, build_batch, build_legacy_message_set
from samsa.storage import Log, LogConfig
from tests.clients.harness import BrokerProcess, Message, ck_produce

from .jars import DUMP_LOG, TOPICS, KafkaJars

GROUP = "dump-log-group"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SEGMENT_BYTES = 64 * 1024
LEGACY_CODECS = (CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4)


def messages(prefix: str, count: int, keyed: bool = False) -> list[Message]:
    """Keys (null one time in 7, unless ``keyed``: a compacted topic refuses null keys), values (null one time in
    11: tombstones), headers (one record in 3, one with a null value)."""
    out = []
    for i in range(count):
        key = None if i % 7 == 0 and not keyed else f"{prefix}-key-{i % 50}".encode()
        value = None if i % 11 == 0 else f"{prefix}-value-{i}-".encode() * (1 + i % 9)
        headers = (("h", f"{i}".encode()), ("empty", None)) if i % 3 == 0 else ()
        out.append(Message(key, value, headers))
    return out


@pytest.fixture(scope="module")
def written(kafka4: KafkaJars, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Samsa log dir with every kind of partition this module reads, its broker stopped cleanly."""
    broker = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("samsa-written"),
        overrides={"log.segment.bytes": str(SEGMENT_BYTES), "log.index.interval.bytes": "1024"},
    )
    broker.start()
    try:
        for codec in CODECS:
            topic = f"v2-{codec}"
            for batch in range(4):
                ck_produce(broker.bootstrap, topic, messages(f"{codec}{batch}", 400), codec=codec,
                           **{"enable.idempotence": True, "acks": "all"})  # fmt: skip
        kafka4.run(TOPICS, "--bootstrap-server", broker.bootstrap, "--create", "--topic", "compacted",
                   "--partitions", "1", "--config", "cleanup.policy=compact")  # fmt: skip
        ck_produce(broker.bootstrap, "compacted", messages("compacted", 2000, keyed=True), codec="lz4")
        consume_and_commit(broker.bootstrap, "v2-none", GROUP)
    finally:
        assert broker.stop() == 0
    for magic in (0, 1):
        write_legacy(broker.data_dir / f"legacy-v{magic}-0", magic)
    return broker.data_dir


def consume_and_commit(bootstrap: str, topic: str, group: str) -> None:
    """A subscribed consumer of ``group`` reads ``topic`` and commits: the coordinator writes the group's metadata
    (with the member's subscription and assignment) and its offsets, then the empty group when it leaves."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + 30
    try:
        while read < 100 and time.monotonic() < deadline:
            read += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
        assert read >= 100, f"the group read {read} records of {topic}"
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def write_legacy(directory: Path, magic: int) -> None:
    """A partition of v0 or v1 message sets, each codec but zstd in turn, appended by Samsa's own ``Log`` as a
    follower appends what a leader of an old message format sent (Samsa's produce path, as Kafka 4's, takes v2
    batches only; a leader would not re-compress a v0 set to give it offsets)."""
    config = LogConfig.from_properties({"segment.bytes": SEGMENT_BYTES, "index.interval.bytes": 1024})
    log = Log.open(directory, config, SystemClock())
    now = int(time.time() * 1000)
    try:
        for i, codec in enumerate(LEGACY_CODECS * 30):
            base = i * 20
            batch = messages(f"v{magic}-{i}", 20, keyed=True)
            items = [Record(base + n, now + i, m.key, m.value) for n, m in enumerate(batch)]
            log.append_as_follower(build_legacy_message_set(magic, items, codec, base_offset=base))
    finally:
        log.close()


def partition_files(log_dir: Path, suffixes: tuple[str, ...]) -> list[str]:
    files = [
        str(path)
        for directory in sorted(log_dir.iterdir())
        if directory.is_dir() and not directory.name.startswith("__")
        for path in sorted(directory.iterdir())
        if path.suffix in suffixes
    ]
    assert files
    return files


def without_record_crcs(dump: str) -> list[str]:
    return [
        re.sub(r" isValid: \w+ crc: \d+", "", line) if line.startswith("| ") else line
        for line in dump.splitlines()
    ]


def kafka_complaints(stderr: str) -> list[str]:
    """What Kafka's deep dump reported on stderr, less the one false report of Kafka 4.4's tool: it takes offset -1 as
    the offset before every segment, so a segment not at offset 0 is "non-consecutive" ("-1 is followed by
    <its base offset>") whoever wrote it."""
    lines = stderr.splitlines()
    complaints = []
    i = 0
    while i < len(lines):
        found = re.match(r"Non-consecutive offsets in (\S+)$", lines[i])
        if found and i + 1 < len(lines):
            base = int(Path(found.group(1)).stem)
            if lines[i + 1].strip() == f"-1 is followed by {base}":
                i += 2
                continue
        complaints.append(lines[i])
        i += 1
    return complaints


def index_mismatches(kafka4: KafkaJars, files: str) -> dict[str, list[str]]:
    """Kafka's --verify-index-only over ``files``: the mismatched entries it printed, by file."""
    verified = kafka4.run(DUMP_LOG, "--verify-index-only", "--files", files)
    mismatches: dict[str, list[str]] = {}
    current = ""
    for line in (verified.stdout + verified.stderr).splitlines():
        if line.startswith("Dumping ") or line.endswith(" is empty."):
            continue
        if line.startswith("Mismatches in :"):
            current = line.removeprefix("Mismatches in :")
            continue
        mismatches.setdefault(current, []).append(line.strip())
    return mismatches


def samsa_dump(*args: str, check: bool = True) -> str:
    """``samsa dump-log`` with ``args``: what it printed (exit 1 on problems found unless not ``check``)."""
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "samsa.cli", "dump-log", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=check)  # fmt: skip
    return done.stdout


def test_every_segment_record_for_record(kafka4: KafkaJars, written: Path) -> None:
    """Kafka's deep dump with payloads prints exactly what Samsa's dump-log prints, for every .log file."""
    logs = partition_files(written, (".log",))
    for partition in ("v2-none-0", "legacy-v0-0", "legacy-v1-0"):
        assert sum(1 for f in logs if f"/{partition}/" in f) > 1, (
            f"{partition}'s segments were expected to roll"
        )
    files = ",".join(logs)
    kafka = kafka4.run(DUMP_LOG, "--deep-iteration", "--print-data-log", "--files", files)
    assert kafka_complaints(kafka.stderr) == []
    ours = samsa_dump("--deep-iteration", "--print-data-log", "--files", files)
    # one known difference, in the records of compressed legacy sets: test_compressed_legacy_record_lines
    assert without_record_crcs(kafka.stdout) == without_record_crcs(ours)
    magics = set(re.findall(r" magic: (\d) ", kafka.stdout))
    codecs = set(re.findall(r" compresscodec: (\w+)", kafka.stdout))
    assert magics == {"0", "1", "2"} and codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert "isvalid: false" not in kafka.stdout
    records = sum(1 for line in kafka.stdout.splitlines() if line.startswith("| offset: "))
    assert records == len(CODECS) * 4 * 400 + 2000 + 2 * 120 * 20


def test_indexes_pass_kafkas_checks_and_read_the_same(kafka4: KafkaJars, written: Path) -> None:
    """Every .index and .timeindex passes Kafka's sanity check and its verification against the .log (no
    mismatch printed), and Kafka lists the same entries as Samsa's dump-log."""
    files = ",".join(partition_files(written, (".index", ".timeindex")))
    sanity = kafka4.run(DUMP_LOG, "--index-sanity-check", "--files", files).stdout.splitlines()
    checked = [line for line in sanity if not line.startswith("Dumping ")]
    assert all(line.endswith((" passed sanity check.", " is empty.")) for line in checked), sanity
    assert sum(line.endswith(" passed sanity check.") for line in checked) > len(checked) // 2
    assert len(checked) == files.count(",") + 1

    mismatches = index_mismatches(kafka4, files)
    assert mismatches == {}

    kafka = kafka4.run(DUMP_LOG, "--files", files).stdout
    assert kafka.splitlines() == samsa_dump("--files", files).splitlines()
    assert re.search(r"^timestamp: \d+ offset: \d+$", kafka, re.MULTILINE)
    assert re.search(r"^offset: \d+ position: \d+$", kafka, re.MULTILINE)


def test_producer_snapshots_name_each_producers_last_batch(kafka4: KafkaJars, written: Path) -> None:
    """Kafka reads each producer snapshot Samsa wrote at its clean stop; every entry names, for its producer id,
    the last sequence and offset of the last batch the partition's log holds from that producer."""
    snapshots = partition_files(written, (".snapshot",))
    assert any("v2-zstd-0" in s for s in snapshots)
    out = kafka4.run(DUMP_LOG, "--files", ",".join(snapshots)).stdout
    assert out.splitlines() == samsa_dump("--files", ",".join(snapshots)).splitlines()
    for snapshot, body in re.findall(r"^Dumping (\S+)\n((?:producerId.*\n?)*)", out, re.MULTILINE):
        partition = Path(snapshot).parent
        logs = ",".join(str(p) for p in sorted(partition.glob("*.log")))
        last: dict[str, tuple[str, str]] = {}
        for last_offset, last_sequence, producer in re.findall(
            r"lastOffset: (\d+) .*?lastSequence: (-?\d+) producerId: (-?\d+)", samsa_dump("--files", logs)
        ):
            last[producer] = (last_offset, last_sequence)
        entries = re.findall(r"producerId: (\d+) .* lastSequence: (\d+) lastOffset: (\d+) ", body)
        if partition.name.startswith("v2-"):
            assert entries, f"{snapshot} holds no producer"
        for producer_id, last_sequence, last_offset in entries:
            assert last[producer_id] == (last_offset, last_sequence), (snapshot, producer_id)


def test_legacy_message_set_index_entries(kafka4: KafkaJars, written: Path) -> None:
    """Kafka's --verify-index-only reads, at each index entry's position, a batch whose last offset is the entry's
    offset; for an uncompressed legacy set, each message is such a batch."""
    files = ",".join(partition_files(written, (".index",)))
    assert index_mismatches(kafka4, files) == {}


def test_compressed_legacy_record_lines(kafka4: KafkaJars, written: Path) -> None:
    """Each message inside a compressed legacy wrapper is printed with its own CRC and validity, as Kafka does (the
    deep dump above compares without them, to keep this difference its own test)."""
    files = ",".join(str(p) for p in sorted((written / "legacy-v0-0").glob("*.log")))
    kafka = kafka4.run(DUMP_LOG, "--deep-iteration", "--files", files).stdout
    assert kafka.splitlines() == samsa_dump("--deep-iteration", "--files", files).splitlines()


def test_follower_multi_batch_append_index_entries(kafka4: KafkaJars, tmp_path: Path) -> None:
    """A follower appends what it fetched, several v2 batches per call; Kafka's --verify-index-only finds, at each
    offset index entry's position, the batch whose last offset is the entry's offset."""
    directory = tmp_path / "replica-0"
    log = Log.open(directory, LogConfig.from_properties({"index.interval.bytes": 1024}), SystemClock())
    now = int(time.time() * 1000)
    offset = 0
    try:
        for _ in range(20):
            fetched = b""
            for _ in range(5):
                fetched += build_batch(
                    [Record(offset + i, now, None, b"x" * 100) for i in range(3)], base_offset=offset
                )
                offset += 3
            log.append_as_follower(fetched)
    finally:
        log.close()
    assert index_mismatches(kafka4, str(directory / "00000000000000000000.index")) == {}


def test_offsets_decoder_over_a_groups_records(kafka4: KafkaJars, written: Path) -> None:
    """``--offsets-decoder`` over the ``__consumer_offsets`` segments Samsa's coordinator wrote: Kafka's dump and
    Samsa's are the same lines, and they hold the group's commit and its consumer member's decoded subscription."""
    logs = ",".join(str(p) for p in sorted(written.glob("__consumer_offsets-*/*.log")))
    kafka = kafka4.run(DUMP_LOG, "--offsets-decoder", "--files", logs).stdout
    assert kafka.splitlines() == samsa_dump("--offsets-decoder", "--files", logs).splitlines()
    assert f'key: {{"type":"1","data":{{"group":"{GROUP}","topic":"v2-none","partition":0}}}}' in kafka
    assert '"subscription":{"topics":["v2-none"]' in kafka
