"""``bench/bench_vs_kafka.py --quick``, Samsa's side only, so that the script cannot rot between full runs: a single
broker and a 3-broker ZooKeeper cluster, confluent-kafka only (Kafka's JVMs and tools are left to the full run).
Every figure the full run reports for Samsa must come out, and each rate must be a rate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_vs_kafka.py"

pytestmark = [pytest.mark.slow, pytest.mark.clients, pytest.mark.timeout(240)]


def test_quick_run_reports_every_samsa_figure(tmp_path: Path) -> None:
    figures_file = tmp_path / "figures.json"
    args = ["--quick", "--only", "samsa", "--clients", "confluent", "--json", str(figures_file)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=220,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(figures_file.read_text())
    for kind in ("single", "cluster"):
        samsa = figures[kind]["samsa"]
        assert 0 < samsa["startup_s"] < 60
        assert 0 < samsa["idle_rss_mib"] < 1024
        for size in (100, 1024):
            for partitions in (1, 64):
                for op in ("produce acks=1", "produce acks=all", "consume"):
                    phase = samsa[f"confluent|{size}|{partitions}|{op}"]
                    assert phase["msgs_s"] > 0, (kind, size, partitions, op, phase)
    assert "single:" in done.stdout and "cluster:" in done.stdout


def test_repeated_phases_report_the_median_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--repeat``: every phase runs once per round, and its figure is the round with the median rate."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import bench_vs_kafka as bench
    finally:
        sys.path.remove(str(SCRIPT.parent))
    seconds = iter([1.0, 4.0, 2.0, 8.0, 3.0, 5.0])  # per round: the produce phase, then the consume phase
    phases = [bench.Phase("confluent", 100, 1, "produce acks=1"), bench.Phase("confluent", 100, 1, "consume")]

    def rounds(*_args: object) -> object:
        for phase in phases:
            yield phase, {"records": 100, "seconds": next(seconds), "broker_cpu_s": 0.0}

    monkeypatch.setattr(bench, "run_phases", rounds)
    deployment = bench.Deployment("samsa", [], [], 1, lambda: None, startup_s=0.1, idle_rss_mib=20.0)
    figures = bench.measure(deployment, ["confluent"], {100: 100}, None, repeat=3)
    produce, consume = figures["confluent|100|1|produce acks=1"], figures["confluent|100|1|consume"]
    assert [r["seconds"] for r in produce["rounds"]] == [1.0, 2.0, 3.0]
    assert produce["seconds"] == 2.0 and produce["msgs_s"] == 50.0
    assert [r["seconds"] for r in consume["rounds"]] == [4.0, 8.0, 5.0]
    assert consume["seconds"] == 5.0 and consume["msgs_s"] == 20.0


def test_an_unknown_client_is_refused_by_name() -> None:
    """``--clients`` with a name the script does not run stops before any broker starts, naming the choices (a
    typo used to start Kafka's cluster and fail minutes later, at the first table row)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", "confluent,rdkafka_performance"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode != 0
    assert "unknown rdkafka_performance" in done.stderr and "confluent, rdkafka, java" in done.stderr
