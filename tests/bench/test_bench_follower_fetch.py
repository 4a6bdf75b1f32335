"""``bench/bench_follower_fetch.py`` runs its rounds through the broker's dispatcher: each round's fetch waits for
the append and answers with it (the bench raises otherwise), and it reports a CPU figure per session size."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_follower_fetch import main


def test_each_round_parks_then_answers_with_the_appended_batch(capsys: pytest.CaptureFixture[str]) -> None:
    figures = main(["--partitions", "1,4", "--rounds", "20", "--repeats", "1"])
    assert set(figures) == {1, 4} and all(seconds > 0 for seconds in figures.values())
    out = capsys.readouterr().out
    assert "per partition of the session" in out
