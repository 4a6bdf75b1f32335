"""Produce and consume throughput over TLS against PLAINTEXT, on one broker, in one run.

One ``samsa serve`` with a PLAINTEXT and an SSL listener (a CA and certificate made by ``trustme``); confluent-kafka
produces N x 100 B over 8 partitions (``linger.ms=5``, acks=1) and reads them back through each listener in
turn, the order alternating by round, each listener on its own topic. Prints each round's records/s and the
median ratio SSL/PLAINTEXT (issue 31's goal: >= 0.6). Under TLS the broker cannot ``sendfile``: a fetch's records
are read from the segment and encrypted in Python.

    .venv/bin/python bench/bench_tls.py [--records 300000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trustme
from confluent_kafka.admin import AdminClient, NewTopic

from bench_metrics import PARTITIONS, consume, free_port, produce


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    ca = trustme.CA()
    ca_file, server_file = work / "ca.pem", work / "server.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(server_file))
    plain_port, tls_port = free_port(), free_port()
    settings = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{tls_port}",
        "log.dirs": str(work / "data"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server_file),
    }
    command = [sys.executable, "-m", "samsa.cli", "serve"]
    for key, value in settings.items():
        command += ["--override", f"{key}={value}"]
    broker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", plain_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        plain = f"127.0.0.1:{plain_port}"
        admin = AdminClient({"bootstrap.servers": plain})
        for topic in ("plain", "tls"):
            admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        tls_client = {"security.protocol": "ssl", "ssl.ca.location": str(ca_file)}
        runs = (("PLAINTEXT", plain, "plain", {}), ("SSL", f"127.0.0.1:{tls_port}", "tls", tls_client))
        ratios: dict[str, list[float]] = {"produce": [], "consume": []}
        for round_no in range(args.rounds):
            rates = {}
            for name, bootstrap, topic, client in runs[:: 1 if round_no % 2 else -1]:
                rates[name] = (
                    produce(bootstrap, args.records, topic, **client),
                    consume(bootstrap, args.records, round_no, topic, **client),
                )
            for index, phase in enumerate(("produce", "consume")):
                ratios[phase].append(rates["SSL"][index] / rates["PLAINTEXT"][index])
                print(
                    f"round {round_no + 1} {phase:8s} PLAINTEXT {rates['PLAINTEXT'][index]:>10,.0f} rec/s   "
                    f"SSL {rates['SSL'][index]:>10,.0f} rec/s   SSL/PLAINTEXT {ratios[phase][-1]:.3f}"
                )
    finally:
        broker.terminate()
        broker.wait(30)
    for phase, values in ratios.items():
        print(
            f"{phase}: median SSL/PLAINTEXT {statistics.median(values):.3f} over {len(values)} rounds (goal >= 0.6)"
        )


if __name__ == "__main__":
    main()
