"""Start-up time: ``samsa serve`` spawn to accepting connections, and ``samsa.Broker()`` to its first answer.

Run: ``.venv/bin/python bench/bench_embedded.py`` (about 20 s; ``--runs N``, default 10, ``--json FILE``).

Three measures, each a median, minimum and 90th percentile over ``--runs`` runs:

- ``samsa serve`` (``python -m samsa.cli serve``, as ``bench_broker.py`` starts it: a fresh log dir, a free
  port on 127.0.0.1) from process spawn to the first TCP connection it accepts (a probe connects every 2 ms), and
  to its ready line on stdout. Goal: median <= 150 ms.
- ``samsa.Broker()`` first start, in a fresh interpreter per run, for both forms (``async``: ``await
  broker.start()`` then an asyncio client on that loop; ``thread``: ``start_in_thread()`` then a blocking socket
  client). The clock starts before ``import samsa``, so every import Samsa needs counts: in the thread form
  the child's first statement starts it (asyncio counts); in the async form ``import asyncio`` comes first, as
  it must in a program that awaits ``broker.start()``. "import" and "start" are reported apart, and "spawn ->
  first answer" adds the interpreter's start (time.perf_counter is CLOCK_MONOTONIC, the same clock in both
  processes). The answer is to ApiVersions, the first request every Kafka client sends. Goal: median import +
  start <= 150 ms.
- ``samsa.Broker()`` warm start: repeated in this process, imports done.

Start-up is CPU-bound, so on a shared machine the wall-clock figures grow with the load; each process's CPU
time until the same moment (user + system, interpreter start included) is printed too, as the figure that load
moves least.

Generated protocol modules and handlers are imported when their API's first request comes, and the log, segment
and record modules with the first log (the log dir here is fresh), so these figures are for a broker's start and
its first ApiVersions, not for every API nor for the first topic. Bytecode: ``make`` compiles ``src`` after the
editable install (this machine sets PYTHONDONTWRITEBYTECODE=1, so nothing else would write it).
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
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_broker import start_samsa

GOAL_S = 0.150

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


def _ask_api_versions(bootstrap: str) -> bytes:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(API_VERSIONS_V0)
        return _read_frame(sock)


# --- first start: a fresh interpreter per run; nothing but `time` is imported before the clock starts ---------

COLD_CHILD = """
import time
if FORM == "async":
    import asyncio  # the caller's own: code that awaits broker.start() already runs on asyncio
started = time.perf_counter()
import samsa
broker_type = samsa.Broker
imported = time.perf_counter()
if FORM == "async":

    async def first_answer():
        broker = broker_type()
        await broker.start()
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(REQUEST)
        size = int.from_bytes(await reader.readexactly(4), "big")
        response = await reader.readexactly(size)
        answered = time.perf_counter()
        writer.close()
        await broker.stop()
        return answered, response

    answered, response = asyncio.run(first_answer())
else:
    import socket

    broker = broker_type().start_in_thread()
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(REQUEST)
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            data += sock.recv(65536)
        answered = time.perf_counter()
    response = data[4:]
    broker.stop_thread()
print(started, imported, answered, time.process_time(), response.hex())
"""


def cold_run(form: str) -> dict[str, float]:
    code = f"FORM = {form!r}\nREQUEST = {API_VERSIONS_V0!r}\n" + COLD_CHILD
    spawned = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    started, imported, answered, cpu, response = out.split()
    assert _ok(bytes.fromhex(response)), response
    return {
        "import": float(imported) - float(started),
        "start": float(answered) - float(imported),
        "both": float(answered) - float(started),
        "spawn": float(answered) - spawned,
        "cpu": float(cpu),
    }


# --- warm start: imports done, repeated in this process ----------------------------------------------------------


async def _async_warm(broker_type: Any) -> float:
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


def _thread_warm(broker_type: Any) -> float:
    started = time.perf_counter()
    broker = broker_type().start_in_thread()
    try:
        response = _ask_api_versions(broker.bootstrap_servers)
        elapsed = time.perf_counter() - started
        assert _ok(response)
    finally:
        broker.stop_thread()
    return elapsed


# --- samsa serve -----------------------------------------------------------------------------------------------


def serve_run() -> dict[str, float]:
    """Spawn ``samsa serve`` on a fresh log dir (``bench_broker.start_samsa``); seconds from spawn to the first
    accepted connection and to the ready line, and the CPU it had used when it accepted; then SIGTERM, which must
    end it cleanly."""
    with tempfile.TemporaryDirectory(prefix="samsa-bench-") as work:
        broker = start_samsa(Path(work), profile=None)
        broker.stop()
        if broker.process.returncode != 0 or "first_connection_s" not in broker.ready:
            raise RuntimeError("samsa serve did not start and stop cleanly:\n" + "".join(broker.output))
    return {
        "accepting": broker.ready["first_connection_s"],
        "ready line": broker.ready["started_line_s"],
        "cpu": broker.ready["first_connection_cpu_s"],
    }


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict[str, dict[str, float]] = {}
    serve = [serve_run() for _ in range(args.runs)]
    results["samsa serve: spawn to accepting connections"] = summary([r["accepting"] for r in serve])
    results["samsa serve: spawn to the ready line"] = summary([r["ready line"] for r in serve])
    results["samsa serve: CPU used until accepting"] = summary([r["cpu"] for r in serve])
    for form in ("async", "thread"):
        cold = [cold_run(form) for _ in range(args.runs)]
        results[f"{form} first: import samsa + samsa.Broker"] = summary([r["import"] for r in cold])
        results[f"{form} first: Broker() to first answer"] = summary([r["start"] for r in cold])
        results[f"{form} first: imports + Broker() to first answer"] = summary([r["both"] for r in cold])
        results[f"{form} first: spawn to first answer"] = summary([r["spawn"] for r in cold])
        results[f"{form} first: CPU used until the first answer"] = summary([r["cpu"] for r in cold])

    import samsa

    results["async warm: Broker() to first answer"] = summary(
        [asyncio.run(_async_warm(samsa.Broker)) for _ in range(args.runs)]
    )
    results["thread warm: Broker() to first answer"] = summary(
        [_thread_warm(samsa.Broker) for _ in range(args.runs)]
    )

    print(f"start-up, {args.runs} runs each (goal: median <= {GOAL_S * 1000:.0f} ms where marked)")
    for name, figures in results.items():
        verdict = ""
        if name.endswith(("spawn to accepting connections", "imports + Broker() to first answer")):
            verdict = "  ok" if figures["median"] <= GOAL_S else "  OVER GOAL"
        print(
            f"  {name:<52} median {figures['median'] * 1000:6.1f} ms   min {figures['min'] * 1000:6.1f} ms"
            f"   p90 {figures['p90'] * 1000:6.1f} ms{verdict}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
