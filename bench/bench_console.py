"""The console's page load time on a 1,000-partition cluster, and its screenshot.

One broker (in this process, on its own loop thread), or with ``--brokers 3`` three brokers over a real ZooKeeper
(replication factor 3), with four topics of 400 + 300 + 200 + 100 partitions (``--topics big=1000`` for one topic
of 1,000), some records in each, a consumer group that stopped half-way (lag) and a producer that keeps writing (the chart);
``samsa console`` runs as its own process, as an operator would run it. Measured:

- ``gather``: one picture of the cluster (Metadata, ListOffsets x2, DescribeLogDirs, groups), in this process;
- ``/api/cluster`` and ``/api/topic`` (the largest topic): HTTP answer time from the running console;
- Chromium: from navigation start to the first rendered page (``window.consoleFirstRenderMs``), for the cluster
  page and the largest topic's page, with the console warm (its poller has a picture) and cold (the page is
  asked for the moment the console listens).

Prints medians and maxima over ``--rounds``; with ``--screenshot PATH`` saves the cluster page as PNG.

    .venv/bin/python bench/bench_console.py [--rounds 5] [--brokers 3] [--topics big=1000] [--screenshot PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import samsa
from samsa.client import KafkaClient
from samsa.console.cluster_state import gather

TOPICS = {"clicks": 400, "orders": 300, "payments": 200, "audit": 100}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_brokers(work: Path, count: int, stack: contextlib.ExitStack) -> list[samsa.Broker]:
    if count == 1:
        broker = samsa.Broker(log_dir=work / "broker").start_in_thread()
        stack.callback(broker.stop_thread)
        return [broker]
    from samsa.cluster.zookeeper import ZooKeeperServer

    zookeeper = ZooKeeperServer(work / "zookeeper")
    zookeeper.start()
    stack.callback(zookeeper.stop)
    brokers = []
    for node_id in range(1, count + 1):
        config = {"zookeeper.connect": zookeeper.connect_string, "node.id": str(node_id),
                  "offsets.topic.replication.factor": str(count)}  # fmt: skip
        broker = samsa.Broker(log_dir=work / f"broker-{node_id}", config=config).start_in_thread()
        stack.callback(_stop_quietly, broker)
        brokers.append(broker)
    return brokers


def _stop_quietly(broker: samsa.Broker) -> None:
    """Stop a broker of the cluster; the last ones may wait long for leaderships to move (none to take them)."""
    with contextlib.suppress(RuntimeError):
        broker.stop_thread(timeout=60)


def fill(bootstrap: str, replication_factor: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(n, p, replication_factor) for n, p in TOPICS.items()])
    for future in created.values():
        future.result(120)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for name, partitions in TOPICS.items():
        for i in range(partitions * 20):
            producer.produce(name, value=b"v" * 200, partition=i % partitions)
    producer.flush(60)
    first = next(iter(TOPICS))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing"})
    consumer.commit(
        offsets=[KafkaTopicPartition(first, p, 10) for p in range(TOPICS[first])], asynchronous=False
    )
    consumer.close()


def traffic(bootstrap: str, stop: threading.Event) -> None:
    """Records to the first topic as fast as one producer goes, and a consumer of the last two topics that
    commits as it reads (messages out)."""
    first = next(iter(TOPICS))
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "fraud-check", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(list(TOPICS)[-2:])
    n = 0
    while not stop.is_set():
        for _ in range(200):
            producer.produce(first, value=b"c" * 100, partition=n % TOPICS[first])
            n += 1
        producer.poll(0)
        consumer.consume(200, 0.1)
    producer.flush(10)
    consumer.close()


def start_console(bootstrap: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "samsa.cli",
        "console",
        "--bootstrap-server",
        bootstrap,
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/"
        except OSError:
            time.sleep(0.01)
    proc.kill()
    raise RuntimeError("the console did not start")


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1400", "--hide-scrollbars"):  # fmt: skip
        options.add_argument(argument)
    return webdriver.Chrome(
        service=Service(executable_path=str(shutil.which("chromedriver"))), options=options
    )


def first_render_ms(driver: Any, url: str) -> float:
    driver.get("about:blank")
    driver.get(url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        value = driver.execute_script("return window.consoleFirstRenderMs")
        if value is not None:
            return float(value)
        time.sleep(0.01)
    raise RuntimeError(f"{url} never rendered")


def http_ms(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        response.read()
    return (time.perf_counter() - started) * 1000


async def gather_ms(bootstrap: str, rounds: int) -> list[float]:
    async with KafkaClient(bootstrap) as client:
        await gather(client)
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            state = await gather(client)
            times.append((time.perf_counter() - started) * 1000)
        assert sum(len(t["partitions"]) for n, t in state.topics.items() if n in TOPICS) == sum(
            TOPICS.values()
        )
        return times


def report(name: str, values: list[float]) -> None:
    print(
        f"{name:<44} median {statistics.median(values):7.1f} ms   max {max(values):7.1f} ms   (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--screenshot", type=Path, default=None)
    parser.add_argument("--brokers", type=int, choices=(1, 3), default=1)
    parser.add_argument("--topics", default=None, help="name=partitions,... (default: the four topics above)")
    args = parser.parse_args()
    if args.topics:
        TOPICS.clear()
        TOPICS.update({n: int(p) for n, p in (item.split("=") for item in args.topics.split(","))})
    biggest = max(TOPICS, key=lambda t: TOPICS[t])
    with tempfile.TemporaryDirectory() as work, contextlib.ExitStack() as stack:
        brokers = start_brokers(Path(work), args.brokers, stack)
        bootstrap = ",".join(b.bootstrap_servers for b in brokers)
        fill(bootstrap, args.brokers)
        print(
            f"{sum(TOPICS.values()):,} partitions on {args.brokers} broker(s), replication factor {args.brokers}"
        )
        report("gather (one picture of the cluster)", asyncio.run(gather_ms(bootstrap, args.rounds)))
        stop = threading.Event()
        mover = threading.Thread(target=traffic, args=(bootstrap, stop), daemon=True)
        mover.start()
        stack.callback(mover.join, 30)
        stack.callback(stop.set)
        driver = browser()
        stack.callback(driver.quit)
        cold: list[float] = []
        for _ in range(args.rounds):
            proc, url = start_console(bootstrap)
            try:
                cold.append(first_render_ms(driver, url))
            finally:
                proc.terminate()
                proc.wait(10)
        proc, url = start_console(bootstrap)
        stack.callback(proc.wait, 10)
        stack.callback(proc.terminate)
        time.sleep(2)
        rounds = range(args.rounds)
        report("GET /api/cluster", [http_ms(url + "api/cluster") for _ in rounds])
        report(
            f"GET /api/topic ({TOPICS[biggest]} partitions)",
            [http_ms(url + f"api/topic?name={biggest}") for _ in rounds],
        )
        report("Chromium: cluster page, console cold", cold)
        report("Chromium: cluster page, console warm", [first_render_ms(driver, url) for _ in rounds])
        report(f"Chromium: topic page ({TOPICS[biggest]} partitions), warm", [first_render_ms(driver, url + f"#/topic/{biggest}") for _ in rounds])  # fmt: skip
        if args.screenshot is not None:
            driver.get(url)
            time.sleep(20)  # twenty points of the chart
            driver.execute_script("document.body.style.zoom = '0.9'")
            time.sleep(1.2)
            driver.save_screenshot(str(args.screenshot))
            print(f"screenshot: {args.screenshot}")


if __name__ == "__main__":
    main()
