"""Run every benchmark in ``bench/`` one after another and print their figures (``make bench``).

Run: ``.venv/bin/python bench/run_all.py [--only NAME ...] [--json-dir DIR]``. The whole set takes about ten
minutes on 2 cores; each script also runs alone (see its docstring). Scripts run in turn, never together, since
each compares against a baseline measured in the same run and a second benchmark would skew both.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = (
    "records",
    "storage",
    "protocol",
    "embedded",
    "broker",
    "produce_requests",
    "follower_fetch",
    "groups",
    "spark",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=SCRIPTS, help="run only these (repeatable)")
    parser.add_argument("--json-dir", type=Path, help="write each script's figures to DIR/<name>.json")
    args = parser.parse_args()
    failed = []
    for name in args.only or SCRIPTS:
        command = [sys.executable, str(BENCH / f"bench_{name}.py")]
        if args.json_dir is not None and name not in ("records", "storage", "protocol"):
            args.json_dir.mkdir(parents=True, exist_ok=True)
            command += ["--json", str(args.json_dir / f"{name}.json")]
        print(f"=== bench_{name}.py", flush=True)
        started = time.monotonic()
        code = subprocess.call(command)
        print(f"=== bench_{name}.py: exit {code} after {time.monotonic() - started:.0f} s\n", flush=True)
        if code:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
