"""Start-up time of the in-process broker: ``samsa.Broker(...)`` to the first answered request.

Run: ``.venv/bin/python bench/bench_embedded.py`` (about 15 s; ``--runs N``, default 20, ``--json FILE``).

One run times, with ``time.perf_counter``, from constructing ``samsa.Broker()`` (temporary log dir, port 0) to
the first TCP connection to it being accepted *and* its ApiVersions request answered (the first thing every Kafka
client sends), for both forms:

- ``async``: ``await broker.start()`` on the caller's loop, then an asyncio client on that loop;
- ``thread``: ``broker.start_in_thread()``, then a blocking socket client in the calling thread.

Each form is measured cold (a fresh interpreter per run; ``import samsa`` and ``samsa.Broker`` are resolved
before the clock starts and reported apart, as "import") and warm (repeated in one process). Figures are medians
over the runs, with the minimum and the 90th percentile. Goal: median start to first answer < 0.3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOAL_S = 0.3

API_VERSIONS_V0 = struct.pack(
    ">ihhih", 10, 18, 0, 1, 0
)  # size, key 18, version 0, correlation id 1, null client


def _ok(response: bytes) -> bool:
    correlation_id, error_code = struct.unpack_from(">ih", response, 0)
    return correlation_id == 1 and error_code == 0


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


async def _async_once(broker_type: Any) -> float:
    started = time.perf_counter()
    broker = broker_type()
    await broker.start()
    try:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(API_VERSIONS_V0)
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        response = await reader.readexactly(size)
        elapsed = time.perf_counter() - started
        assert _ok(response)
        writer.close()
        await writer.wait_closed()
    finally:
        await broker.stop()
    return elapsed


def _thread_once(broker_type: Any) -> float:
    started = time.perf_counter()
    broker = broker_type().start_in_thread()
    try:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(API_VERSIONS_V0)
            response = _read_frame(sock)
            elapsed = time.perf_counter() - started
        assert _ok(response)
    finally:
        broker.stop_thread()
    return elapsed


def child(form: str) -> dict[str, float]:
    """One cold run in this fresh interpreter."""
    started = time.perf_counter()
    import samsa

    broker_type = samsa.Broker
    imported = time.perf_counter() - started
    start = asyncio.run(_async_once(broker_type)) if form == "async" else _thread_once(broker_type)
    return {"import": imported, "start": start}


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", choices=["async", "thread"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return

    results: dict[str, dict[str, float]] = {}
    for form in ("async", "thread"):
        cold = [
            json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--child", form], check=True, capture_output=True, text=True
                ).stdout
            )
            for _ in range(args.runs)
        ]
        results[f"{form} cold: import samsa + samsa.Broker"] = summary([r["import"] for r in cold])
        results[f"{form} cold: Broker() to first ApiVersions answer"] = summary([r["start"] for r in cold])
        results[f"{form} cold: both (fresh process to first answer)"] = summary(
            [r["import"] + r["start"] for r in cold]
        )

    import samsa

    warm_async = [asyncio.run(_async_once(samsa.Broker)) for _ in range(args.runs)]
    results["async warm: Broker() to first ApiVersions answer"] = summary(warm_async)
    warm_thread = [_thread_once(samsa.Broker) for _ in range(args.runs)]
    results["thread warm: Broker() to first ApiVersions answer"] = summary(warm_thread)

    print(f"samsa.Broker start-up, {args.runs} runs each (seconds; goal: median start < {GOAL_S} s)")
    for name, figures in results.items():
        verdict = ""
        if "first ApiVersions" in name:
            verdict = "  ok" if figures["median"] < GOAL_S else "  OVER GOAL"
        print(
            f"  {name:<52} median {figures['median'] * 1000:7.1f} ms   min {figures['min'] * 1000:7.1f} ms"
            f"   p90 {figures['p90'] * 1000:7.1f} ms{verdict}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
