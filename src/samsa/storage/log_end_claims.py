"""Log-end claims: offsets a log may hand out, made durable before it does, so that a restart after an OS crash
never hands out an offset again.

A process that dies (``kill -9``) loses nothing it wrote: the page cache keeps it, and recovery finds every batch.
An OS crash or a power loss can lose the tail the page cache held, acknowledged batches included (Kafka's
default too: no fsync per append; replication is what guards against that). Those records are gone, but their
offsets must not come back: a consumer group committed past them would skip as many new records, and a reader
could meet two records at one offset. The checkpoints (the high watermark's every 5 s) bound what was handed out
only to within seconds.

So each log dir keeps ``log-end-claims``: per partition an offset its log end stays below, written (and fsynced)
``CLAIM_STEP`` offsets ahead, before an append takes the log end past the last claim. The file names the boot it
was written in (``/proc/sys/kernel/random/boot_id``). After an unclean shutdown in another boot, or where the
boot cannot be told, a log continues at its claim at least (``log_loader.load``); after one in the same boot only
the process died, nothing was lost, and the claims are not used. A claim costs one small fsynced write per log
dir every ``CLAIM_STEP / 2`` offsets of a partition (renewed with every other that used half of its claim); a
restart after an OS crash leaves a gap of at most ``CLAIM_STEP`` offsets, which consumers step over as over a gap
compaction left. A replicated log (in a cluster) has no claims: a follower fetches what it lost from the leader.

The file, text: ``samsa-log-end-claims 0``, the boot id, the number of entries, then ``topic partition offset``
lines (the offset checkpoints' entry format).
"""

from __future__ import annotations

import logging
from pathlib import Path

from .checkpoint import write_atomically
from .topic import TopicPartition

_log = logging.getLogger(__name__)

LOG_END_CLAIMS = "log-end-claims"
CLAIM_STEP = 10_000_000
_HEADER = "samsa-log-end-claims 0"
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This boot's id; ``unknown`` where the system does not say (claims are then always used)."""
    try:
        return _BOOT_ID.read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def write_claims(log_dir: Path, claims: dict[TopicPartition, int]) -> None:
    lines = [_HEADER, boot_id(), str(len(claims))]
    lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in sorted(claims.items())]
    write_atomically(log_dir / LOG_END_CLAIMS, ("\n".join(lines) + "\n").encode())


def claims_after_a_restart(log_dir: Path) -> dict[TopicPartition, int]:
    """The claims of ``log_dir`` when they were written in another boot than this one (or the boot cannot be
    told): an unclean shutdown then may have lost the tail the page cache held. Empty in the same boot, and
    when there is no file; a damaged file is said at WARN and read as empty."""
    path = log_dir / LOG_END_CLAIMS
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        _log.warning("%s cannot be read (%s): the log ends are not raised to their claims", path, exc)
        return {}
    try:
        if len(lines) < 3 or lines[0] != _HEADER or int(lines[2]) != len(lines) - 3:
            raise ValueError("not a log-end claims file, or cut short")
        claims = {}
        for line in lines[3:]:
            topic, partition, offset = line.split(" ")
            claims[TopicPartition(topic, int(partition))] = int(offset)
    except ValueError as exc:
        _log.warning("%s is damaged (%s): the log ends are not raised to their claims", path, exc)
        return {}
    if lines[1] == boot_id() and lines[1] != "unknown":
        return {}
    return claims
