"""A longer nemesis run than the test suite's: faults against a 3-broker cluster under acks=all load, then Jepsen's
checks (see ``tests/cluster/nemesis.py``).

Run: ``.venv/bin/python bench/bench_nemesis.py [--seed N] [--seconds 120]``. Prints the seed, the schedule, the
records acknowledged, read back and consumed, each anomaly count (all must be 0), and the failover times of the
faults that take leaderships away (kill -9, a pause past the session, a clean restart, a controller kill): from the
fault to new live leaders in the metadata and to acknowledged writes on every partition the broker led, each fault
and then min / median / max per kind (``tests/cluster/failover.py``).
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
