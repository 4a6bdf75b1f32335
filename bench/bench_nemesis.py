"""A longer nemesis run than the test suite's: faults against a 3-broker cluster under acks=all load, then Jepsen's
checks (see ``tests/cluster/nemesis.py``).

Run: ``.venv/bin/python bench/bench_nemesis.py [--seed N] [--seconds 120]``. Prints the seed, the schedule, the
records acknowledged, read back and consumed, and each anomaly count (all must be 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cluster.nemesis import main

if __name__ == "__main__":
    if not any(arg.startswith("--seconds") for arg in sys.argv[1:]):
        sys.argv += ["--seconds", "120"]
    main()
