"""samsa dump-log: Kafka's layout line by line on known files, index checks, corrupt files."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from click.testing import CliRunner
from tests.vectors import VECTORS

from samsa.cli.dump_log import dump_log
from samsa.records import Record, build_batch

BATCH_LINE = (
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
    "position: 0 CreateTime: 1000 size: 69 magic: 2 compresscodec: none crc: 3958474827 isvalid: true"
)


def _segment(tmp_path: Path, data: bytes, base: int = 0) -> Path:
    path = tmp_path / f"{base:020d}.log"
    path.write_bytes(data)
    return path


def _run(*args: str) -> tuple[int, list[str], list[str]]:
    result = CliRunner().invoke(dump_log, list(args))
    return result.exit_code, result.stdout.splitlines(), result.stderr.splitlines()


def test_known_batch_shallow_and_deep(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    shutil.copyfile(VECTORS / "batch.bin", log)
    code, out, err = _run("--files", str(log))
    assert code == 0 and err == []
    assert out == [f"Dumping {log}", "Log starting offset: 0", BATCH_LINE]
    code, out, _ = _run("--files", str(log), "--deep-iteration")
    assert out[3] == "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: []"
    code, out, _ = _run("--files", str(log), "--print-data-log")
    assert out[2:] == [
        BATCH_LINE,
        "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: a",
    ]


def test_legacy_messages(tmp_path: Path) -> None:
    log = _segment(tmp_path, (VECTORS / "v1.bin").read_bytes(), 5)
    code, out, _ = _run("--files", str(log), "--deep-iteration")
    assert code == 0
    assert out[1] == "Log starting offset: 5"
    assert out[2].startswith(
        "offset: 0 position: 0 CreateTime: 1000 size: 39 magic: 1 compresscodec: none crc: "
    )
    assert out[3].startswith("| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 5 isValid: true crc: ")
    log0 = _segment(tmp_path, (VECTORS / "v0.bin").read_bytes(), 6)
    _, out, _ = _run("--files", str(log0))
    assert " NoTimestampType: -1 size: 31 magic: 0 " in out[2]


def test_keys_headers_sequences_positions(tmp_path: Path) -> None:
    first = build_batch(
        [Record(10, 5, b"k1", b"v1", (("h1", b"x"), ("h2", None))), Record(11, 7, None, None)],
        producer_id=9,
        producer_epoch=1,
        base_sequence=4,
        partition_leader_epoch=3,
    )
    second = build_batch([b"z"], base_offset=12, timestamp=8)
    log = _segment(tmp_path, first + second + b"\x00" * 5, 10)
    code, out, _ = _run("--files", str(log), "--print-data-log")
    assert code == 0
    assert out[2].startswith(
        "baseOffset: 10 lastOffset: 11 count: 2 baseSequence: 4 lastSequence: 5 producerId: 9 producerEpoch: 1 "
        "partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: 7 size: {len(first)} magic: 2 compresscodec: none crc: "
    )
    assert (
        out[3]
        == "| offset: 10 CreateTime: 5 keySize: 2 valueSize: 2 sequence: 4 headerKeys: [h1,h2] key: k1 payload: v1"
    )
    assert out[4] == "| offset: 11 CreateTime: 7 keySize: -1 valueSize: -1 sequence: 5 headerKeys: []"
    assert f"position: {len(first)} CreateTime: 8" in out[5]
    assert out[7] == f"Found 5 invalid bytes at the end of {log.name}"
    _, out, _ = _run("--files", str(log), "--max-bytes", str(len(first)))
    assert len(out) == 3  # one batch, no trailing-bytes line when --max-bytes is given


def test_corrupt_crc_names_file_and_position(tmp_path: Path) -> None:
    good = (VECTORS / "batch.bin").read_bytes()
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    log = _segment(tmp_path, good + bytes(bad))
    code, out, err = _run("--files", str(log))
    assert code == 1
    assert out[3].endswith("isvalid: false")
    assert any(str(log) in line and "position 69" in line for line in err)


def test_unframeable_size_names_file_and_position(tmp_path: Path) -> None:
    good = (VECTORS / "batch.bin").read_bytes()
    log = _segment(tmp_path, good + struct.pack(">qi", 1, 3) + b"\x00" * 20)
    code, out, err = _run("--files", str(log))
    assert code == 1
    assert out[2] == BATCH_LINE
    assert any(str(log) in line and "position 69" in line for line in err)


def _indexed_segment(tmp_path: Path) -> tuple[Path, Path, Path, list[int]]:
    batches = [build_batch([b"a" * 50, b"b"], base_offset=100 + 2 * i, timestamp=1000 + i) for i in range(4)]
    positions = [sum(len(b) for b in batches[:i]) for i in range(4)]
    log = _segment(tmp_path, b"".join(batches), 100)
    index = log.with_suffix(".index")
    index.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 5, positions[2]) + b"\x00" * 16)
    timeindex = log.with_suffix(".timeindex")
    timeindex.write_bytes(struct.pack(">qi", 1000, 1) + struct.pack(">qi", 1002, 5) + b"\x00" * 12)
    return log, index, timeindex, positions


def test_index_and_time_index(tmp_path: Path) -> None:
    _, index, timeindex, positions = _indexed_segment(tmp_path)
    code, out, err = _run("--files", f"{index},{timeindex}")
    assert (code, err) == (0, [])
    assert out == [
        f"Dumping {index}",
        "offset: 101 position: 0",
        f"offset: 105 position: {positions[2]}",
        f"Dumping {timeindex}",
        "timestamp: 1000 offset: 101",
        "timestamp: 1002 offset: 105",
    ]
    code, out, _ = _run("--files", str(index), "--verify-index-only")
    assert (code, out) == (0, [f"Dumping {index}"])
    code, out, _ = _run("--files", str(index), "--index-sanity-check")
    assert out[1] == f"{index} passed sanity check."


def test_index_mismatch_and_sanity_failure(tmp_path: Path) -> None:
    _, index, timeindex, positions = _indexed_segment(tmp_path)
    index.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 4, positions[2]))
    timeindex.write_bytes(struct.pack(">qi", 1000, 1) + struct.pack(">qi", 999, 3))
    code, _, err = _run("--files", f"{index},{timeindex}")
    assert code == 1
    assert err[:2] == [f"Mismatches in :{index.absolute()}", "  Index offset: 104, log offset: 105"]
    assert f"Found out of order timestamp in :{timeindex.absolute()}" in err
    assert "  Index timestamp: 999, Previously indexed timestamp: 1000" in err
    assert "  Index timestamp: 999, log timestamp: 1001" in err
    index.write_bytes(struct.pack(">ii", 1, 0) + b"\x00" * 3)
    code, _, err = _run("--files", str(index), "--index-sanity-check")
    assert code == 1 and "not a multiple of 8" in err[-1] and str(index) in err[-1]


def test_empty_index_and_unknown_file(tmp_path: Path) -> None:
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(b"")
    other = tmp_path / "notes.txt"
    other.write_text("x")
    code, out, err = _run("--files", f"{index},{other}")
    assert out == [f"Dumping {index}", f"{index} is empty.", f"Dumping {other}"]
    assert err == [f"Ignoring unknown file {other}"]
    code, _, err = _run("--files", str(tmp_path / "00000000000000000009.log"))
    assert code == 1 and "Cannot read" in err[0]


def _write_with_log(directory: Path, close: bool) -> list[Path]:
    from samsa.clock import ManualClock
    from samsa.storage import Log, LogConfig

    clock = ManualClock()
    config = LogConfig.from_properties({"segment.bytes": 4096, "index.interval.bytes": 300})
    log = Log.open(directory, config, clock)
    for n in range(60):
        log.append_as_leader(build_batch([b"v%d" % n * 20, b"w" * 30], timestamp=clock.milliseconds()))
        clock.advance(3)
    if close:
        log.close()
    return sorted(directory.glob("*.log"))


def test_files_written_by_our_log(tmp_path: Path) -> None:
    logs = _write_with_log(tmp_path / "t-0", close=False)  # the active segment's indexes stay preallocated
    assert len(logs) >= 3
    for log in logs:
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        code, out, err = _run("--files", f"{log},{index},{timeindex}", "--deep-iteration")
        assert (code, err) == (0, []), err
        batch_lines = [line for line in out if line.startswith("baseOffset: ")]
        record_lines = [line for line in out if line.startswith("| offset: ")]
        assert len(record_lines) == 2 * len(batch_lines)
        assert batch_lines[0].startswith(f"baseOffset: {int(log.stem)} ")
        positions = {int(line.split(" position: ")[1].split()[0]) for line in batch_lines}
        index_lines = [line for line in out if line.startswith("offset: ")]
        assert index_lines, "index.interval.bytes 300 must give entries"
        assert {int(line.split("position: ")[1]) for line in index_lines} <= positions
        assert all(line.endswith("isvalid: true") for line in batch_lines)
        assert not any(line.startswith("Found ") for line in out)
        code, out, err = _run("--files", f"{index},{timeindex}", "--index-sanity-check")
        assert out[1] == f"{index} passed sanity check."
        # the entries end at the preallocated zeros (where Kafka's dump stops too), so unlike Kafka's check the
        # active segment's still-preallocated time index passes: its zeros are not entries
        assert (code, err) == (0, []) and out[3] == f"{timeindex} passed sanity check."


def test_control_batch(tmp_path: Path) -> None:
    from samsa.records import ControlRecordType, EndTransactionMarker, build_end_txn_marker_batch

    marker = build_end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.COMMIT, 5),
        producer_id=7,
        producer_epoch=2,
        timestamp=50,
        base_offset=3,
    )
    log = _segment(tmp_path, marker, 3)
    code, out, _ = _run("--files", str(log), "--print-data-log")
    assert code == 0
    assert "isTransactional: true isControl: true" in out[2]
    assert out[3] == (
        "| offset: 3 CreateTime: 50 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5"
    )


def test_a_closed_pipe_ends_it_quietly(tmp_path: Path) -> None:
    """``samsa dump-log ... | head -2``: once the reader is gone the tool stops without an error message."""
    import subprocess
    import sys

    batches = [build_batch([b"x" * 10] * 5, base_offset=5 * i) for i in range(3000)]
    log = _segment(tmp_path, b"".join(batches))
    proc = subprocess.Popen(
        [sys.executable, "-m", "samsa.cli", "dump-log", "--files", str(log), "--deep-iteration"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == f"Dumping {log}\n".encode()
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.stderr.close()
    proc.wait(timeout=60)
    assert stderr == b""


def test_a_segment_set_aside_by_recovery_is_dumped_as_a_log(tmp_path: Path) -> None:
    logs = _write_with_log(tmp_path / "t-0", close=True)
    salvage = logs[0].with_name(logs[0].name + ".salvage")
    logs[0].rename(salvage)
    code, out, err = _run("--files", str(salvage))
    assert (code, err) == (0, [])
    assert out[1] == "Log starting offset: 0"
    assert any(line.startswith("baseOffset: 0 ") for line in out)


# --- producer snapshots and __consumer_offsets (--offsets-decoder) -------------------------------------------

SNAPSHOT_LINES = [
    "producerId: 7 producerEpoch: 2 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong[5] lastTimestamp: 999 "
    "firstSequence: 2147483643 lastSequence: 2147483647 lastOffset: 100 offsetDelta: 4 timestamp: 999",
    "producerId: 8 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 55",
]


def _snapshot(directory: Path) -> Path:
    """Two producers: one whose last batch wraps its sequence past Int.MAX inside an open transaction, one with
    no batch (its entry ends at lastTimestamp, as Kafka prints it)."""
    from samsa.storage.producer_state import BatchMetadata, ProducerStateEntry, write_snapshot

    wrapped = ProducerStateEntry(7, 2, coordinator_epoch=3, current_txn_first_offset=5, last_timestamp=999)
    wrapped.batches.append(BatchMetadata(2**31 - 1, 100, 4, 999))
    path = directory / "00000000000000000101.snapshot"
    write_snapshot(path, [wrapped, ProducerStateEntry(8, 1, last_timestamp=55)])
    return path


def test_producer_snapshot(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    code, out, err = _run("--files", str(path))
    assert (code, err) == (0, [])
    assert out == [f"Dumping {path}", *SNAPSHOT_LINES]
    empty = tmp_path / "00000000000000000000.snapshot"
    from samsa.storage.producer_state import write_snapshot

    write_snapshot(empty, [])
    assert _run("--files", str(empty)) == (0, [f"Dumping {empty}"], [])


def test_corrupt_producer_snapshot_fails(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    path.write_bytes(path.read_bytes() + b"xx")
    code, out, err = _run("--files", str(path))
    assert code == 1 and out == [f"Dumping {path}"]
    assert err == [
        f"Cannot dump {path}: stored crc {_stored_crc(path)} does not match computed crc "
        + err[0].split()[-1]
    ]


def _stored_crc(path: Path) -> int:
    crc: int = struct.unpack_from(">I", path.read_bytes(), 2)[0]
    return crc


def _offsets_log(directory: Path) -> Path:
    """One batch of what the group coordinator writes, plus the odd records a dump may meet: commits of key
    versions 0 and 1 (one with an expire timestamp, v1), tombstones, a consumer group whose members' protocol
    bytes decode, one whose do not, a group of another protocol type, and keys no coordinator writes."""
    from samsa.coordinator import offsets_topic as ot
    from samsa.coordinator.group import OffsetAndMetadata
    from samsa.protocol.messages.consumer_protocol import (
        ConsumerProtocolAssignment,
        ConsumerProtocolAssignmentTopicPartition,
        ConsumerProtocolSubscription,
        ConsumerProtocolSubscriptionTopicPartition,
    )
    from samsa.protocol.messages.group_metadata_record import GroupMetadataValue, MemberMetadata
    from samsa.protocol.messages.offset_commit_record import OffsetCommitKey, OffsetCommitValue
    from samsa.storage.topic import TopicPartition

    version = struct.Struct(">h").pack
    tp = TopicPartition('tö"x', 3)
    subscription = ConsumerProtocolSubscription(
        ["t", "u"], b"\x01", [ConsumerProtocolSubscriptionTopicPartition("t", [0, 1])], 4, "rack-a"
    )
    assignment = ConsumerProtocolAssignment([ConsumerProtocolAssignmentTopicPartition("t", [0])], None)

    def group(name: str, protocol_type: str, sub: bytes, assign: bytes) -> tuple[bytes, bytes]:
        member = MemberMetadata("m1", "inst", "c", "/h", 5, 10, sub, assign)
        value = GroupMetadataValue(protocol_type, 3, "range", "m1", 9, [member])
        return ot.group_metadata_key(name), version(3) + value.encode(3)

    items: list[tuple[bytes | None, bytes | None]] = [
        (ot.offset_commit_key("g", tp), ot.offset_commit_value(OffsetAndMetadata(5, -1, "meta\né", 10, 20))),
        (ot.offset_commit_key("g", tp), None),
        (
            version(0) + OffsetCommitKey("g0", "t", 1).encode(0),
            version(0) + OffsetCommitValue(offset=1, metadata="m", commit_timestamp=2).encode(0),
        ),
        (ot.group_metadata_key("g"), None),
        group("c", "consumer", version(3) + subscription.encode(3), version(1) + assignment.encode(1)),
        group("i", "consumer", b"\x00" * 6, b"garbage"),
        group("h", "connect", b"\x01\x02\xff", b""),
        (version(5) + b"xyz", b"\x00\x01"),
    ]
    path = directory / "00000000000000000000.log"
    path.write_bytes(
        build_batch([Record(i, 1000 + i, k, v) for i, (k, v) in enumerate(items)], base_offset=0)
    )
    return path


OFFSETS_DATA = [
    ' key: {"type":"1","data":{"group":"g","topic":"tö\\"x","partition":3}} payload: {"version":"1","data":'
    '{"offset":5,"metadata":"meta\\né","commitTimestamp":10,"expireTimestamp":20}}',
    ' key: {"type":"1","data":{"group":"g","topic":"tö\\"x","partition":3}} payload: <DELETE>',
    ' key: {"type":"0","data":{"group":"g0","topic":"t","partition":1}} payload: {"version":"0","data":'
    '{"offset":1,"metadata":"m","commitTimestamp":2}}',
    ' key: {"type":"2","data":{"group":"g"}} payload: <DELETE>',
    ' key: {"type":"2","data":{"group":"c"}} payload: {"version":"3","data":{"protocolType":"consumer",'
    '"generation":3,"protocol":"range","leader":"m1","currentStateTimestamp":9,"members":[{"memberId":"m1",'
    '"groupInstanceId":"inst","clientId":"c","clientHost":"/h","rebalanceTimeout":5,"sessionTimeout":10,'
    '"subscription":{"topics":["t","u"],"userData":"AQ==","ownedPartitions":[{"topic":"t","partitions":[0,1]}],'
    '"generationId":4,"rackId":"rack-a"},"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0]}],'
    '"userData":null}}]}}',
    ' key: {"type":"2","data":{"group":"i"}} payload: {"version":"3","data":{"protocolType":"consumer",'
    '"generation":3,"protocol":"range","leader":"m1","currentStateTimestamp":9,"members":[{"memberId":"m1",'
    '"groupInstanceId":"inst","clientId":"c","clientHost":"/h","rebalanceTimeout":5,"sessionTimeout":10,'
    '"subscription":"AAAAAAAA","assignment":"Z2FyYmFnZQ=="}]}}',
    ' key: {"type":"2","data":{"group":"h"}} payload: {"version":"3","data":{"protocolType":"connect",'
    '"generation":3,"protocol":"range","leader":"m1","currentStateTimestamp":9,"members":[{"memberId":"m1",'
    '"groupInstanceId":"inst","clientId":"c","clientHost":"/h","rebalanceTimeout":5,"sessionTimeout":10,'
    '"subscription":"AQL/","assignment":""}]}}',
]


def test_offsets_decoder(tmp_path: Path) -> None:
    log = _offsets_log(tmp_path)
    code, out, err = _run("--offsets-decoder", "--files", str(log))
    assert (code, err) == (0, [])
    records = out[3:]
    assert [line.split(" headerKeys: []", 1)[1] for line in records[:-1]] == OFFSETS_DATA
    assert records[-1].endswith(
        " headerKeys: [] key: Error at offset 7, skipping. "
        "Key type 5 is not an offset commit (0, 1) or a group metadata (2) key"
    )
    assert records[0].startswith("| offset: 0 CreateTime: 1000 keySize: 16 valueSize: 35 sequence: -1 ")
    _, plain, _ = _run("--print-data-log", "--files", str(log))
    assert '{"type":' not in "\n".join(plain)  # without the option, keys are printed as text


def _kafka_jars() -> object:
    """Kafka 4's jars when fetched (``make kafka-jars``) and java is here; the comparisons skip otherwise."""
    import shutil as sh

    import pytest
    from tests.apache_kafka.jars import KAFKA_4, KafkaJars, jar_dir

    directory = jar_dir(KAFKA_4)
    if not (directory / ".complete").exists() or sh.which("java") is None:
        pytest.skip(f"Kafka {KAFKA_4} jars not in {directory} (make kafka-jars)")
    return KafkaJars(KAFKA_4, directory)


def test_snapshot_and_offsets_decoder_match_kafkas_tool(tmp_path: Path) -> None:
    """Kafka's DumpLogSegments over the same files prints the same lines, but for the reason given for a key no
    coordinator writes (Kafka's names its Java buffer; Kafka's dump stops on a record without a key, Samsa's
    says so and goes on, so that record is not in these files)."""
    from tests.apache_kafka.jars import DUMP_LOG, KafkaJars

    jars = _kafka_jars()
    assert isinstance(jars, KafkaJars)
    files = f"{_snapshot(tmp_path)},{_offsets_log(tmp_path)}"
    kafka = jars.run(DUMP_LOG, "--offsets-decoder", "--files", files)
    code, out, err = _run("--offsets-decoder", "--files", files)
    assert (code, err) == (0, [])
    assert out[:-1] == kafka.stdout.splitlines()[:-1]
    unknown = "| offset: 7 CreateTime: 1007 keySize: 5 valueSize: 2 sequence: -1 headerKeys: [] key: Error at offset 7, skipping. "
    assert kafka.stdout.splitlines()[-1].startswith(unknown) and out[-1].startswith(unknown)
