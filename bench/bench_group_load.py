"""How long a broker that becomes a group's coordinator holds its event loop while it loads the group's
``__consumer_offsets`` partition.

A partition of N offset commits (one batch per commit of ``--partitions-per-commit`` partitions, as a consumer
commits after each poll) is held by an in-memory ``OffsetsLog``; the coordinator is told it leads it
(``leadership_changed``, what a LeaderAndIsr does in a cluster) and loads it. A ticker task on the same loop,
waking every millisecond, records the longest time the loop did not run it: that is how long every other request
of the broker waited. Printed: the whole replay at once (``_load_partition``, what the broker did before, and
still does at a single broker's start), then the background load (the replay in slices, the group answered
COORDINATOR_LOAD_IN_PROGRESS until done).

    PYTHONPATH=src .venv/bin/python bench/bench_group_load.py [--commits 12800]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from samsa.clock import SystemClock
from samsa.coordinator import offsets_topic
from samsa.coordinator.coordinator import GroupCoordinator
from samsa.coordinator.group import OffsetAndMetadata
from samsa.coordinator.offsets_log import MemoryOffsetsLog
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

GROUP = "bench-group"


def commits(count: int, partitions: int) -> list[bytes]:
    batches = []
    for n in range(count):
        items = [
            (
                offsets_topic.offset_commit_key(GROUP, TopicPartition("events", p)),
                offsets_topic.offset_commit_value(OffsetAndMetadata(n)),
            )
            for p in range(partitions)
        ]
        batches.append(bytes(offsets_topic.build_records(items, 0)))
    return batches


async def longest_hold(work: asyncio.Future[None] | None, run: object = None) -> float:
    """The longest time a 1 ms ticker was kept from running while ``work`` (or the call ``run``) went on."""
    longest = 0.0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last - 0.001)
            last = now

    task = asyncio.get_running_loop().create_task(ticker())
    await asyncio.sleep(0.01)
    if callable(run):
        run()
    if work is not None:
        await work
    await asyncio.sleep(0.01)
    done.set()
    await task
    return longest


async def measure(count: int, per_commit: int) -> None:
    tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, offsets_topic.partition_for(GROUP, 50))
    batches = commits(count, per_commit)
    size = sum(map(len, batches))

    log = MemoryOffsetsLog()
    log.batches[tp] = batches
    log.led = {tp}
    at_once = GroupCoordinator(log, SystemClock())
    started = time.perf_counter()
    hold = await longest_hold(None, lambda: at_once._load_partition(tp, 0))
    took = time.perf_counter() - started
    assert at_once.fetch_offsets(GROUP, None)[TopicPartition("events", 0)] == OffsetAndMetadata(count - 1)
    print(
        f"{count:,} commits of {per_commit} partitions ({size / 1e6:.1f} MB): replayed at once in "
        f"{took * 1000:.0f} ms, the loop held {hold * 1000:.0f} ms"
    )

    log = MemoryOffsetsLog()
    log.batches[tp] = batches
    background = GroupCoordinator(log, SystemClock())

    async def load() -> None:
        log.led = {tp}
        background.leadership_changed()
        while background.loading():
            await asyncio.sleep(0.001)

    started = time.perf_counter()
    loading = asyncio.get_running_loop().create_task(load())
    hold = await longest_hold(loading)
    took = time.perf_counter() - started
    assert background.fetch_offsets(GROUP, None)[TopicPartition("events", 0)] == OffsetAndMetadata(count - 1)
    print(
        f"{'':>{len(f'{count:,}')}} in the background: loaded in {took * 1000:.0f} ms, the loop held at most "
        f"{hold * 1000:.0f} ms at a time"
    )
    at_once.shutdown()
    background.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, nargs="+", default=[1_000, 12_800, 100_000])
    ap.add_argument("--partitions-per-commit", type=int, default=3)
    a = ap.parse_args()
    for count in a.commits:
        asyncio.run(measure(count, a.partitions_per_commit))


if __name__ == "__main__":
    main()
