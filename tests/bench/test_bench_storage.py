"""``bench/bench_storage.py``'s reads at the log end go through the produce path and ``Log.read``: each read
finds exactly the batch just appended (the bench asserts it), and the figure is printed."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_storage import bench_tail_reads


def test_reads_at_the_log_end_find_the_batch_just_appended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench_tail_reads(tmp_path, reads=300)
    out = capsys.readouterr().out
    found = re.search(
        r"Log\.read \(locate batch, no copy\)\s+([0-9.]+) us\s+os\.pread of the batch\s+([0-9.]+) us", out
    )
    assert found is not None, out
    assert float(found.group(1)) > 0
