"""A leader's CPU per replication round, in process, against the number of partitions in the follower's session.

A follower fetches every partition it follows from a leader in one fetch session, whether or not anything is new
in it; a producer's small acks=all requests each cost a round. This measures what one round costs the leader: a
broker with no listener leads ``N`` partitions of replicas (1, 2, 3); follower 2 opens a session with a full Fetch
v12 and then, per round, sends an incremental fetch that acknowledges the partition of the round before at its
new offset (as a follower does). The fetch parks (every partition is at its log end), a Produce v9 of one batch
of 3 x 100 B (acks=1) into the next partition, round robin, is appended, and the fetch answers with that batch.
Both requests go through the broker's dispatcher from their frames, as a connection hands them over. Printed per
``N``: the CPU of a round (the produce included; process time, best of ``--repeats``), and the slope per partition
of the session.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_follower_fetch.py`` (about 30 s). To compare two trees, run it
with ``PYTHONPATH`` pointing at each, in turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import struct
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.broker.network import ConnectionInfo
from samsa.broker.replica_manager import ReplicaState
from samsa.protocol import RequestHeader, encode_request
from samsa.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from samsa.records import Record, build_batch
from samsa.storage.config import LogConfig
from samsa.storage.topic import TopicPartition

TOPIC = "session"
LEADER, FOLLOWER = 1, 2
EPOCH = 1
FETCH_VERSION = 12  # the replica fetcher's (topics by name, LastFetchedEpoch)
PRODUCE_VERSION = 9
_SESSION_ID = struct.Struct(">i")
_SESSION_ID_AT = 4 + 4 + 1 + 4 + 2  # size, correlation id, header tags, throttle time, error code


class Round:
    """A leader of ``partitions`` partitions and its follower's fetch session (module doc)."""

    def __init__(self, directory: Path, partitions: int) -> None:
        props = {"log.dirs": str(directory), "listeners": "PLAINTEXT://127.0.0.1:0", "broker.id": str(LEADER)}
        self.server = KafkaServer(KafkaConfig.from_properties(props))
        self.server.log_manager.startup()
        manager = self.server.replica_manager
        self.tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        for tp in self.tps:
            log = self.server.log_manager.get_or_create_log(tp, LogConfig())
            manager.make_leader(tp, log, ReplicaState(LEADER, EPOCH, (1, 2, 3), (1, 2, 3), 0))
        self.logs = {tp: manager.partitions[tp].log for tp in self.tps}
        self.connection = ConnectionInfo("follower-1", "127.0.0.1", 1, "PLAINTEXT")
        self.batch = build_batch([Record(i, 1_700_000_000_000, None, b"v" * 100) for i in range(3)])
        self.loop = asyncio.new_event_loop()
        self.positions = dict.fromkeys(self.tps, 0)
        self.correlation = 0
        self.session_id = 0
        self.session_epoch = 0
        self.acknowledged: TopicPartition | None = None
        self.turn = 0
        answer = self.loop.run_until_complete(self._handle(self._fetch_frame(self.tps)))
        self.session_id = _SESSION_ID.unpack_from(answer, _SESSION_ID_AT)[0]
        if self.session_id <= 0:
            raise RuntimeError("the leader made no fetch session")
        self.session_epoch = 1

    def close(self) -> None:
        self.loop.close()
        self.server.log_manager.shutdown()

    def one(self) -> float:
        """One round (module doc): its CPU seconds."""
        tp = self.tps[self.turn % len(self.tps)]
        self.turn += 1
        fetch = self._fetch_frame([self.acknowledged] if self.acknowledged is not None else [])
        produce = self._produce_frame(tp)
        started = time.process_time()
        waiting = self.loop.create_task(self._handle(fetch))
        self.loop.run_until_complete(asyncio.sleep(0))  # the fetch parks
        if waiting.done():
            raise RuntimeError("the follower's fetch did not wait for the append")
        self.loop.run_until_complete(self._handle(produce))
        answer = self.loop.run_until_complete(waiting)
        spent = time.process_time() - started
        if b"<file>" not in answer:
            raise RuntimeError("the fetch answered without the appended batch")
        self.session_epoch += 1
        self.positions[tp] = self.logs[tp].log_end_offset
        self.acknowledged = tp
        return spent

    async def _handle(self, frame: memoryview) -> bytes:
        parts = await self.server.dispatcher.handle(self.connection, frame)
        assert parts is not None
        return b"".join(
            bytes(p) if isinstance(p, (bytes, bytearray, memoryview)) else b"<file>" for p in parts
        )

    def _fetch_frame(self, tps: Sequence[TopicPartition]) -> memoryview:
        partitions = [
            FetchPartition(
                partition=tp.partition,
                current_leader_epoch=EPOCH,
                fetch_offset=self.positions[tp],
                last_fetched_epoch=EPOCH if self.positions[tp] else -1,
                partition_max_bytes=1 << 20,
            )
            for tp in tps
        ]
        request = FetchRequest(
            replica_id=FOLLOWER,
            max_wait_ms=500 if self.session_epoch else 0,
            min_bytes=1,
            max_bytes=10 << 20,
            session_id=self.session_id,
            session_epoch=self.session_epoch,
            topics=[FetchTopic(topic=TOPIC, partitions=partitions)] if partitions else [],
        )
        return self._frame(RequestHeader(1, FETCH_VERSION, self._next(), "replica-fetcher-2"), request)

    def _produce_frame(self, tp: TopicPartition) -> memoryview:
        request = ProduceRequest(
            acks=1,
            timeout_ms=30_000,
            topic_data=[TopicProduceData(TOPIC, [PartitionProduceData(tp.partition, self.batch)])],
        )
        return self._frame(RequestHeader(0, PRODUCE_VERSION, self._next(), "producer"), request)

    def _frame(self, header: RequestHeader, request: object) -> memoryview:
        return memoryview(bytearray(encode_request(header, request)[4:]))  # as received: no size prefix

    def _next(self) -> int:
        self.correlation += 1
        return self.correlation


def measure(partitions: int, rounds: int, repeats: int) -> float:
    """The CPU seconds of one round with ``partitions`` in the session: the best of ``repeats`` means of
    ``rounds`` rounds, after as many to warm up."""
    directory = Path(tempfile.mkdtemp(prefix="samsa-follower-fetch-"))
    bench = Round(directory, partitions)
    try:
        for _ in range(rounds):
            bench.one()
        return min(sum(bench.one() for _ in range(rounds)) / rounds for _ in range(repeats))
    finally:
        bench.close()
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> dict[int, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1,8,64,200", help="session sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here (microseconds per round)")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    sizes = [int(n) for n in args.partitions.split(",")]
    figures = {n: measure(n, args.rounds, args.repeats) for n in sizes}
    print("partitions in the session | CPU per round (us)")
    for n, seconds in figures.items():
        print(f"{n:>25} | {seconds * 1e6:8.1f}")
    if len(sizes) > 1:
        low, high = min(sizes), max(sizes)
        slope = (figures[high] - figures[low]) / (high - low)
        print(f"per partition of the session: {slope * 1e6:.2f} us")
    if args.json is not None:
        args.json.write_text(json.dumps({str(n): round(seconds * 1e6, 1) for n, seconds in figures.items()}))
    return figures


if __name__ == "__main__":
    main()
