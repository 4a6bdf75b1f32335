"""Samsa against librdkafka's in-memory mock cluster, with the same confluent-kafka client, in one run.

Run: ``.venv/bin/python bench/bench_broker.py`` (about 40 s at the default 1M records; ``--records N`` scales
the throughput phases down). Each broker runs in its own process and every client phase in another process, over
loopback. The mock is C, keeps data in memory and parses no records (``../shared/tools/rdkafka_mock.py`` beside the project, see
``clients.md`` section 2); Samsa validates every batch and writes it to disk (``log.dirs`` on the root file system).

Phases, per broker:

1. produce N x 100 B into one partition (``linger.ms=5``, ``batch.size=1048576``, ``acks=1``), as ``clients.md``
   section 2.5 does it;
2. produce N x 100 B round-robin over 64 partitions, then one consumer (assign, from the beginning) reads all
   of them back, timed to the last record (the mock keeps only 5 MiB per partition, hence 64 partitions), with
   the client's defaults (the issue's phase) and again with ``fetch.queue.backoff.ms=10`` (``LIBRDKAFKA_CONSUMER``:
   with the default, librdkafka's 1 s backoff can decide the phase);
3. produce latency, ``produce()`` to delivery callback, at a fixed rate with ``linger.ms=0``, ``acks=1``;
4. Samsa only: process spawn to the "started" line and to the first accepted TCP connection, and the resident
   memory of the idle broker once its topics exist.

``--c-client PATH`` adds a phase per broker: librdkafka's C ``rdkafka_performance`` (built by
``bench/build_rdkafka_performance.sh``) produces ``--c-records`` (3M) x 100 B into one partition, ``linger.ms=5``,
``batch.size=1000000``, ``acks=1``; its rate is timed from its start to its exit (all delivered).

Each produce phase prints the broker's CPU and the client's (confluent-kafka: the client process's CPU over the
timed loop, librdkafka's threads included; ``rdkafka_performance``: its whole process), to tell which of the two
bounds a phase on two shared cores.

``--rounds N`` runs both brokers N times in alternating order and prints, per phase, the median of the rounds'
Samsa / mock ratios: on two shared cores the mock's own 64-partition rate moves between about 0.35M and 0.6M
records/s from one run to the next, so one round's ratio says little.

``--profile DIR`` runs the Samsa broker under cProfile and writes ``DIR/samsa.prof`` when it stops; ``--strace FILE``
runs it under ``strace -f -c`` and writes the count of sendfile/pread64/pwrite64 calls there (broker CPU figures
are then strace's, not the broker's).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MOCK_TOOL = Path(os.environ.get("SAMSA_MOCK_TOOL", HERE.parents[1] / "shared" / "tools" / "rdkafka_mock.py"))
PAYLOAD_SIZE = 100
TOPIC_1 = "bench"
TOPIC_64 = "bench64"
TOPIC_LAT = "benchlat"
PRODUCER_CONF: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1048576,
    "acks": 1,
    "delivery.report.only.error": True,
}
# librdkafka's consumers (confluent-kafka's, and rdkafka_performance's in bench_vs_kafka) against any broker: once a
# partition's local queue holds queued.min.messages (100,000) librdkafka stops fetching it for
# fetch.queue.backoff.ms (1,000 ms by default), and an application that drains the queue sooner then waits out the
# rest. Whether a run meets that stall depends on how fast the queue filled: with the default, one consume of
# 500,000 x 100 B read 0.35-0.4M records/s in some runs and 1.8M in others, against Kafka as against Samsa
# (docs/benchmarks.md). librdkafka's mock answers a Fetch with one batch per partition where Kafka and Samsa send
# up to the request's byte limits, so it meets the stall less often: with the defaults the consume phase here can
# time the client's timer (1M x 100 B from 64 partitions: Samsa 3.4-3.7 s with 0.15 s of broker CPU). 10 ms keeps
# the client's queue thresholds and leaves the broker's serving rate as the figure; bench_broker runs both.
LIBRDKAFKA_CONSUMER: dict[str, Any] = {"fetch.queue.backoff.ms": 10}


# --- broker processes ----------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_times(pid: int) -> tuple[float, float]:
    """(user + system, system) CPU seconds of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, from /proc."""
    return cpu_times(pid)[0]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Broker:
    name: str
    process: subprocess.Popen[str]
    bootstrap: str
    output: list[str] = field(default_factory=list)
    ready: dict[str, float] = field(default_factory=dict)
    traced: bool = False

    def stop(self) -> None:
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if (
            self.traced and children.exists()
        ):  # stop the broker under strace, so that strace writes its summary
            for child in children.read_text().split():
                os.kill(int(child), signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                pass
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _drain(stream: Any, sink: list[str]) -> None:
    for line in stream:
        sink.append(line)


def start_mock(work: Path) -> Broker:
    bs_file = work / "bs.txt"
    args = [sys.executable, str(MOCK_TOOL), "--topic", f"{TOPIC_1}:1", "--topic", f"{TOPIC_64}:64"]
    args += ["--topic", f"{TOPIC_LAT}:1", "--bootstrap-file", str(bs_file)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 20
    while not (bs_file.exists() and bs_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the mock did not start")
        time.sleep(0.01)
    broker = Broker("mock", proc, bs_file.read_text().strip())
    threading.Thread(target=_drain, args=(proc.stdout, broker.output), daemon=True).start()
    return broker


def start_samsa(work: Path, profile: Path | None, strace: Path | None = None, uvloop: bool = False) -> Broker:
    """Spawn ``samsa serve``; time spawn -> "started" line and spawn -> first accepted TCP connection."""
    port = free_port()
    data = work / "data"
    args = (
        ["strace", "-f", "-c", "-e", "trace=sendfile,pread64,pwrite64", "-o", str(strace)] if strace else []
    )
    args += [sys.executable]
    if profile is not None:
        args += ["-m", "cProfile", "-o", str(profile / "samsa.prof")]
    args += ["-m", "samsa.cli", "serve"] + (["--uvloop"] if uvloop else [])
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(data),
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "4",
    }
    for key, value in overrides.items():
        args += ["--override", f"{key}={value}"]
    connected: list[float] = []
    cpu: list[float] = []

    t0 = time.perf_counter()
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    def probe() -> None:
        while proc.poll() is None and time.perf_counter() - t0 < 30:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    connected.append(time.perf_counter() - t0)
                    cpu.append(cpu_seconds(proc.pid))
                    return
            except OSError:
                time.sleep(0.002)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    broker = Broker("samsa", proc, f"127.0.0.1:{port}", traced=strace is not None)
    assert proc.stdout is not None
    for line in proc.stdout:
        broker.output.append(line)
        if "started" in line:
            broker.ready["started_line_s"] = time.perf_counter() - t0
            break
    else:
        raise RuntimeError("samsa did not start:\n" + "".join(broker.output))
    prober.join(30)
    if connected:
        broker.ready["first_connection_s"] = connected[0]
        broker.ready["first_connection_cpu_s"] = cpu[0]
    threading.Thread(target=_drain, args=(proc.stdout, broker.output), daemon=True).start()
    return broker


# --- client phases (each runs in its own process) ----------------------------------------------------------


def client_create_topics(bootstrap: str) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(TOPIC_1, 1, 1), NewTopic(TOPIC_64, 64, 1), NewTopic(TOPIC_LAT, 1, 1)]
    for future in admin.create_topics(topics, operation_timeout=30).values():
        future.result(30)
    return {}


def client_produce(bootstrap: str, topic: str, partitions: int, records: int) -> dict[str, Any]:
    from confluent_kafka import KafkaException, Producer

    errors: list[Any] = []
    producer = Producer(
        {**PRODUCER_CONF, "bootstrap.servers": bootstrap, "on_delivery": lambda err, _msg: errors.append(err)}
    )
    producer.list_topics(topic, timeout=10)  # warm-up, not timed
    payload = os.urandom(PAYLOAD_SIZE)
    produce = producer.produce
    poll = producer.poll
    t0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(records):
        while True:
            try:
                if partitions == 1:
                    produce(topic, payload)
                else:
                    produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                poll(0.005)
        if i % 20000 == 0:
            poll(0)
    left = producer.flush(120)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if left or errors:
        raise KafkaException(f"{left} undelivered, {len(errors)} errors, first {errors[:1]}")
    return {"records": records, "seconds": seconds, "client_cpu_s": cpu}


def client_consume(
    bootstrap: str, topic: str, partitions: int, records: int, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **(settings or {}),
        }
    )
    consumer.list_topics(topic, timeout=10)
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
    got = 0
    last = t0
    idle_since = time.perf_counter()
    while got < records and time.perf_counter() - idle_since < 5:
        batch = consumer.consume(num_messages=10000, timeout=0.5)
        if batch:
            for message in batch:
                if message.error() is None:
                    got += 1
            last = time.perf_counter()
            idle_since = last
    consumer.close()
    return {"records": got, "seconds": last - t0}


def client_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict[str, Any]:
    from confluent_kafka import Producer

    latencies: list[float] = []
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
    producer.list_topics(topic, timeout=10)
    payload = os.urandom(PAYLOAD_SIZE)

    def delivered(err: Any, _msg: Any, *, sent: float) -> None:
        if err is not None:
            errors.append(err)
        else:
            latencies.append(time.perf_counter() - sent)

    count = int(rate * seconds)
    interval = 1.0 / rate
    start = time.perf_counter()
    for i in range(count):
        due = start + i * interval
        while (now := time.perf_counter()) < due:
            producer.poll(min(due - now, 0.001))
        producer.produce(topic, payload, on_delivery=functools.partial(delivered, sent=time.perf_counter()))
        producer.poll(0)
    producer.flush(30)
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "sent": count,
        "delivered": len(latencies),
        "errors": len(errors),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": latencies[-1] * 1000,
    }


def run_c_producer(binary: Path, bootstrap: str, records: int) -> dict[str, Any]:
    """``rdkafka_performance -P`` into partition 0 of ``TOPIC_1``; every message must be delivered."""
    args = [str(binary), "-P", "-t", TOPIC_1, "-p", "0", "-b", bootstrap, "-s", str(PAYLOAD_SIZE)]
    args += ["-c", str(records), "-a", "1", "-X", "linger.ms=5", "-X", "batch.size=1000000", "-q"]
    started, cpu0 = time.perf_counter(), _children_cpu()
    out = subprocess.run(args, capture_output=True, text=True, timeout=240)
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu0
    if out.returncode != 0 or f"{records} delivered" not in out.stdout + out.stderr:
        raise RuntimeError(f"rdkafka_performance failed:\n{(out.stdout + out.stderr)[-3000:]}")
    return {"records": records, "seconds": seconds, "client_cpu_s": cpu}


def _children_cpu() -> float:
    """User + system CPU seconds of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_client(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--client", *args], capture_output=True, text=True, timeout=240
    )
    if out.returncode != 0:
        raise RuntimeError(f"client {args} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# --- orchestration -------------------------------------------------------------------------------------------


def measure(
    broker: Broker, records: int, rate: int, lat_seconds: float, c_client: Path | None, c_records: int
) -> dict[str, Any]:
    pid = broker.process.pid
    bs = broker.bootstrap
    res: dict[str, Any] = {}
    if broker.name == "samsa":
        run_client("create", bs)
        time.sleep(1.0)
        res["idle_rss_mib"] = rss_mib(pid)

    def phase(key: str, *args: str) -> None:
        cpu0 = cpu_seconds(pid)
        res[key] = run_client(*args, bs)
        res[key]["broker_cpu_s"] = cpu_seconds(pid) - cpu0

    phase("produce_1p", "produce", TOPIC_1, "1", str(records))
    phase("produce_64p", "produce", TOPIC_64, "64", str(records))
    phase("consume_64p", "consume", TOPIC_64, "64", str(records))
    phase("consume_64p_backoff", "consume-backoff", TOPIC_64, "64", str(records))
    phase("latency", "latency", TOPIC_LAT, str(rate), str(lat_seconds))
    if c_client is not None:
        cpu0 = cpu_seconds(pid)
        res["c_produce_1p"] = run_c_producer(c_client, bs, c_records)
        res["c_produce_1p"]["broker_cpu_s"] = cpu_seconds(pid) - cpu0
    res["rss_after_mib"] = rss_mib(pid)
    res.update(broker.ready)
    return res


def rate_line(label: str, r: dict[str, Any]) -> str:
    rps = r["records"] / r["seconds"]
    return (
        f"  {label:28} {r['records']:>9,} rec {r['seconds']:7.2f} s {rps:>11,.0f} rec/s "
        f"{rps * PAYLOAD_SIZE / 1e6:7.1f} MB/s  broker CPU {r['broker_cpu_s']:5.2f} s"
        + (f", client CPU {r['client_cpu_s']:5.2f} s" if "client_cpu_s" in r else "")
    )


def report(name: str, res: dict[str, Any]) -> None:
    print(f"{name}:")
    print(rate_line("produce 1 partition", res["produce_1p"]))
    print(rate_line("produce 64 partitions", res["produce_64p"]))
    print(rate_line("consume 64 partitions", res["consume_64p"]))
    if "consume_64p_backoff" in res:
        print(rate_line("  the same, backoff 10 ms", res["consume_64p_backoff"]))
    if "c_produce_1p" in res:
        print(rate_line("C rdkafka_performance 1 p.", res["c_produce_1p"]))
    lat = res["latency"]
    print(
        f"  {'produce latency':28} p50 {lat['p50_ms']:.2f} ms  p99 {lat['p99_ms']:.2f} ms  max {lat['max_ms']:.1f} ms"
        f"  ({lat['delivered']}/{lat['sent']} delivered, {lat['errors']} errors)"
    )
    if "started_line_s" in res:
        print(
            f"  {'start':28} spawn -> 'started' {res['started_line_s'] * 1000:.0f} ms, "
            f"spawn -> first TCP connection {res.get('first_connection_s', float('nan')) * 1000:.0f} ms"
        )
    if "idle_rss_mib" in res:
        print(
            f"  {'RSS':28} idle with 3 topics (66 partitions) {res['idle_rss_mib']:.1f} MiB, after the run "
            f"{res['rss_after_mib']:.1f} MiB"
        )


def run_broker(name: str, a: argparse.Namespace) -> dict[str, Any]:
    """Start ``name`` (samsa or mock) in a fresh directory, measure every phase, stop it."""
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name}-", dir="/var/tmp"))
    try:
        if name == "mock":
            broker = start_mock(work)
        else:
            if a.profile:
                a.profile.mkdir(parents=True, exist_ok=True)
            broker = start_samsa(work, a.profile, a.strace, a.uvloop)
        try:
            return measure(broker, a.records, a.rate, a.latency_seconds, a.c_client, a.c_records)
        finally:
            broker.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


RATIO_PHASES = (
    ("produce_1p", "produce 1 partition", 1.0),
    ("produce_64p", "produce 64 partitions", 1.0),
    ("consume_64p", "consume 64 partitions", 1.0),
    ("consume_64p_backoff", "consume 64 p., fetch.queue.backoff.ms=10", None),
    ("c_produce_1p", "C rdkafka_performance, produce 1 partition", 0.9),
)


def print_ratios(rounds: list[dict[str, dict[str, Any]]], title: str) -> None:
    """Each phase's Samsa / mock rate ratio: the ratio of one round, or the median of the rounds' ratios (each
    round's ratio pairs two brokers measured minutes apart at most)."""
    print(f"\n{title}")
    for key, label, goal in RATIO_PHASES:
        ratios = [
            (r["samsa"][key]["records"] / r["samsa"][key]["seconds"])
            / (r["mock"][key]["records"] / r["mock"][key]["seconds"])
            for r in rounds
            if key in r["samsa"] and key in r["mock"]
        ]
        if not ratios:
            continue
        each = f"  (rounds: {', '.join(f'{x:.2f}' for x in ratios)})" if len(ratios) > 1 else ""
        aim = f"(goal >= {goal})" if goal is not None else "(no goal: the client's backoff left out)"
        print(f"  {label:44} {statistics.median(ratios):.2f}   {aim}{each}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rate", type=int, default=2000, help="latency phase: messages per second")
    ap.add_argument("--latency-seconds", type=float, default=10.0)
    ap.add_argument("--only", choices=("samsa", "mock"))
    ap.add_argument("--profile", type=Path, help="run samsa under cProfile, write DIR/samsa.prof")
    ap.add_argument(
        "--strace", type=Path, help="run samsa under strace -c (sendfile/pread/pwrite counts) to FILE"
    )
    ap.add_argument("--json", type=Path, help="also write all figures here")
    ap.add_argument("--uvloop", action="store_true", help="serve Samsa on uvloop (samsa serve --uvloop)")
    ap.add_argument("--c-client", type=Path, help="rdkafka_performance (bench/build_rdkafka_performance.sh)")
    ap.add_argument("--c-records", type=int, default=3_000_000)
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run both brokers this many times, in alternating order, and report each ratio's median over the "
        "rounds (the mock's own rates move by half on a shared machine)",
    )
    ap.add_argument("--client", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.client:
        kind, *rest = a.client
        if kind == "create":
            out = client_create_topics(rest[0])
        elif kind == "produce":
            out = client_produce(rest[3], rest[0], int(rest[1]), int(rest[2]))
        elif kind in ("consume", "consume-backoff"):
            settings = LIBRDKAFKA_CONSUMER if kind == "consume-backoff" else None
            out = client_consume(rest[3], rest[0], int(rest[1]), int(rest[2]), settings)
        else:
            out = client_latency(rest[3], rest[0], int(rest[1]), float(rest[2]))
        print(json.dumps(out))
        return

    import confluent_kafka

    found: Any = confluent_kafka.version()  # a str in 2.16, a (str, int) tuple in older releases
    ck_version = found if isinstance(found, str) else found[0]
    print(
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, confluent-kafka {ck_version}, "
        f"librdkafka {confluent_kafka.libversion()[0]}; {a.records:,} records x {PAYLOAD_SIZE} B\n"
    )
    rounds: list[dict[str, dict[str, Any]]] = []
    for round_index in range(a.rounds):
        results: dict[str, dict[str, Any]] = {}
        order = ("samsa", "mock") if round_index % 2 == 0 else ("mock", "samsa")
        for name in order:
            if a.only and a.only != name:
                continue
            if a.rounds > 1:
                print(f"[round {round_index + 1}/{a.rounds}] ", end="")
            results[name] = run_broker(name, a)
            report(name, results[name])
        rounds.append(results)
        if len(results) == 2:
            print_ratios([results], "Samsa / mock (records/s):")
    if a.rounds > 1 and all(len(r) == 2 for r in rounds):
        print_ratios(rounds, f"Samsa / mock (records/s), median of {a.rounds} rounds' ratios:")
    if a.json:
        a.json.write_text(json.dumps(rounds[0] if a.rounds == 1 else rounds, indent=2))


if __name__ == "__main__":
    main()
