"""A broker process per test module, data acknowledged before any bad input, and the check run after each test.

``kept`` is produced once per module through the normal path; after every test a *new* connection must still get
an ApiVersions answer and a Metadata answer, and must fetch ``kept`` byte for byte as it was before the test. The
broker's own log must never show an unexpected error (a traceback means an exception escaped a handler).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from samsa.protocol import ApiKey
from samsa.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from tests.clients.harness import BrokerProcess

from . import wire

MAX_REQUEST = 200_000  # socket.request.max.bytes of the test broker
MAX_MESSAGE = 20_000  # message.max.bytes


@dataclass(frozen=True)
class Kept:
    topic: str
    raw: dict[int, bytes]  # partition -> fetched record bytes
    values: dict[int, list[bytes | None]]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        data_dir=tmp_path_factory.mktemp("badinput"),
        overrides={"socket.request.max.bytes": str(MAX_REQUEST), "message.max.bytes": str(MAX_MESSAGE)},
    )
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def kept(broker: BrokerProcess) -> Kept:
    with wire.Connection(broker.port) as conn:
        assert wire.create_topic(conn, "kept", 2).topics[0].error_code == 0
        for n in range(3):
            for partition in (0, 1):
                batch = wire.batch(*(f"kept-{partition}-{n}-{i}".encode() for i in range(5)))
                assert wire.produce(conn, "kept", {partition: batch})[partition][0] == 0
        raw = {p: wire.fetch_records(conn, "kept", p)[1] for p in (0, 1)}
        values = {p: wire.fetch_values(conn, "kept", p) for p in (0, 1)}
    assert len(values[0]) == len(values[1]) == 15
    return Kept("kept", raw, values)


@pytest.fixture(autouse=True)
def still_serving(broker: BrokerProcess, kept: Kept) -> Iterator[None]:
    seen = len(broker.output)
    yield
    assert_still_serving(broker, kept, seen)


def assert_still_serving(broker: BrokerProcess, kept: Kept, seen: int = 0) -> None:
    """The checks of the module doc; only broker log lines after ``seen`` are examined."""
    assert broker.process is not None and broker.process.poll() is None, "the broker process died"
    with wire.Connection(broker.port, client_id="after-check") as conn:
        versions: ApiVersionsResponse = conn.request(
            ApiKey.API_VERSIONS, 3, ApiVersionsRequest("after-check", "1")
        )
        assert versions.error_code == 0 and {k.api_key for k in versions.api_keys} >= {0, 1, 3, 18}
        meta = wire.metadata(conn, kept.topic)
        assert [(t.name, t.error_code, len(t.partitions)) for t in meta.topics] == [(kept.topic, 0, 2)]
        for partition, raw in kept.raw.items():
            assert wire.fetch_records(conn, kept.topic, partition) == (0, raw)
    time.sleep(0.05)  # let the log drain catch up
    lines = broker.output[seen:]
    problems = [n for n, line in enumerate(lines) if "Traceback" in line or "unexpected error" in line]
    assert not problems, "".join(lines[max(problems[0] - 5, 0) : problems[0] + 40])


def wait_for_output(broker: BrokerProcess, fragment: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(broker.output):
            if fragment in line:
                return line
        time.sleep(0.02)
    raise AssertionError(f"the broker never logged {fragment!r}:\n" + "".join(broker.output[-20:]))
