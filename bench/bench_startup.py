"""Start-up benchmark: a broker's log directory of many partitions, loaded after a clean stop and after ``kill -9``.

Prepares one log directory with ``--partitions`` partitions (default 1,000) of three segments each (a few
thousand records per partition), stopped cleanly. Then, each on a fresh copy of it, measures ``--runs`` times:

- **clean**: the directory as a clean stop leaves it (``.kafka_cleanshutdown`` present): only the active segment
  of each partition is checked;
- **kill -9**: the marker removed, the recovery-point checkpoint at the log end: each partition's active segment
  is recovered (what a broker killed shortly after a flush finds).

Two figures for each: ``LogManager.startup()`` alone, in a fresh process (the storage load the check adds to),
and ``samsa serve`` from spawn to its "started" line (what an operator waits for; interpreter and imports
included). With ``--baseline-ref REF`` the same runs are made, interleaved, with the ``src/`` of that git
revision, and the ratios printed: the cost of the start-up check in one run on one machine.

    .venv/bin/python bench/bench_startup.py [--partitions 1000] [--runs 5] [--baseline-ref REV]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPIC = "startup"
SEGMENT_BYTES = 64 * 1024

LOAD_SCRIPT = """
import sys, time
from pathlib import Path
from samsa.clock import SystemClock
from samsa.storage.config import LogConfig
from samsa.storage.log_manager import LogManager
started = time.perf_counter()
manager = LogManager([Path(sys.argv[1])], LogConfig.from_properties({"segment.bytes": SEGMENT_BYTES}), SystemClock())
manager.startup()
print(time.perf_counter() - started, len(manager.all_logs()))
""".replace("SEGMENT_BYTES", str(SEGMENT_BYTES))


def prepare(directory: Path, partitions: int) -> int:
    """A cleanly stopped log dir: ``partitions`` partitions of three segments; returns the records written."""
    sys.path.insert(0, str(REPO / "src"))
    from samsa.clock import SystemClock
    from samsa.records import Record, build_batch
    from samsa.storage.config import LogConfig
    from samsa.storage.log_manager import LogManager

    manager = LogManager(
        [directory], LogConfig.from_properties({"segment.bytes": SEGMENT_BYTES}), SystemClock()
    )
    manager.startup()
    logs = manager.create_topic(TOPIC, partitions)
    batch = build_batch([Record(i, 1_700_000_000_000 + i, None, b"v" * 100) for i in range(20)])
    written = 0
    for log in logs:
        for segment in range(3):
            for _ in range(6 if segment < 2 else 3):
                log.append_as_leader(bytearray(batch))
                written += 20
            if segment < 2:
                log.roll()
    manager.shutdown()
    return written


def fresh_copy(source: Path, kind: str, work: Path) -> Path:
    target = work / f"copy-{kind}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    if kind == "kill -9":
        (target / ".kafka_cleanshutdown").unlink()
    return target


def load_time(src: Path, directory: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, str(directory)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        check=True,
    )
    seconds, logs = out.stdout.split()
    assert int(logs) > 0, out
    return float(seconds)


def serve_time(src: Path, directory: Path) -> float:
    """Spawn ``samsa serve`` on ``directory``; seconds to its "started" line; then stop it."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "samsa.cli",
            "serve",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
            "--override",
            f"log.dirs={directory}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src), "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if "started" in line:
                return time.perf_counter() - started
        raise RuntimeError("samsa serve did not start")
    finally:
        proc.terminate()
        proc.wait(60)


def baseline_src(ref: str, work: Path) -> Path:
    target = work / "baseline"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target / "src")], check=True)
    return target / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-ref", help="also measure the src/ of this git revision, interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="samsa-startup-") as tmp:
        work = Path(tmp)
        source = work / "prepared"
        started = time.perf_counter()
        written = prepare(source, args.partitions)
        print(
            f"prepared {args.partitions} partitions x 3 segments, {written:,} records, "
            f"{sum(f.stat().st_size for f in source.rglob('*') if f.is_file()) / 1e6:.0f} MB "
            f"in {time.perf_counter() - started:.1f} s"
        )
        trees = {"this tree": REPO / "src"}
        if args.baseline_ref:
            trees[args.baseline_ref] = baseline_src(args.baseline_ref, work)
        results: dict[tuple[str, str, str], list[float]] = {}
        for _ in range(args.runs):
            for kind in ("clean", "kill -9"):
                for name, src in trees.items():
                    results.setdefault((name, kind, "load"), []).append(
                        load_time(src, fresh_copy(source, kind, work))
                    )
                    results.setdefault((name, kind, "serve"), []).append(
                        serve_time(src, fresh_copy(source, kind, work))
                    )
        for kind in ("clean", "kill -9"):
            print(f"after a {kind} stop, {args.partitions} partitions (median of {args.runs}):")
            for what, label in (("load", "LogManager.startup()"), ("serve", "samsa serve spawn -> started")):
                line = f"  {label:30}"
                for name in trees:
                    line += f"  {name}: {statistics.median(results[(name, kind, what)]) * 1000:7.0f} ms"
                if args.baseline_ref:
                    ratio = statistics.median(results[("this tree", kind, what)]) / statistics.median(
                        results[(args.baseline_ref, kind, what)]
                    )
                    line += f"  ratio {ratio:.2f}"
                print(line)


if __name__ == "__main__":
    main()
