"""``bench/bench_broker.py``'s ratios over several rounds: each phase's median of the rounds' Samsa / mock ratios,
with each round's own ratio beside it (``--rounds N``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_broker import print_ratios


def phase(records_per_s: float) -> dict[str, float]:
    return {"records": 1_000_000, "seconds": 1_000_000 / records_per_s}


def one_round(samsa_64p: float, mock_64p: float) -> dict[str, dict[str, Any]]:
    same = {"produce_1p": phase(800_000), "consume_64p": phase(300_000)}
    return {
        "samsa": {**same, "produce_64p": phase(samsa_64p)},
        "mock": {**same, "produce_64p": phase(mock_64p)},
    }


def test_the_median_of_the_rounds_ratios_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    rounds = [one_round(400_000, 500_000), one_round(450_000, 400_000), one_round(300_000, 600_000)]
    print_ratios(rounds, "title")
    lines = {
        line.split("  ")[1].strip(): line for line in capsys.readouterr().out.splitlines() if "  " in line
    }
    assert (
        " 0.80 " in lines["produce 64 partitions"]
    )  # ratios 0.80, 1.12, 0.50: the median, not the mean (0.81)
    assert "(rounds: 0.80, 1.12, 0.50)" in lines["produce 64 partitions"]
    assert " 1.00 " in lines["produce 1 partition"]
    assert "C rdkafka_performance, produce 1 partition" not in lines  # a phase no round measured is left out
