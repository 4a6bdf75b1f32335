"""Protocol hot paths: Produce request decode/encode and Fetch response encode/decode, 100 partitions each.

Run: ``.venv/bin/python bench/bench_protocol.py`` (a few seconds). Best of repeated runs, one process, one core.
The Produce request carries a 1 KiB record set per partition (decoded as a zero-copy ``memoryview``); the Fetch
response is what the broker encodes before it sends the file slices, so its records are empty here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from samsa.protocol import (
    ApiKey,
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from samsa.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from samsa.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

PARTITIONS = 100


def best(fn: Callable[[], object], budget: float = 0.5, at_least: int = 5) -> float:
    times = []
    deadline = time.perf_counter() + budget
    while len(times) < at_least or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def produce_request() -> ProduceRequest:
    records = bytes(1024)
    partitions = [PartitionProduceData(index=i, records=records) for i in range(PARTITIONS)]
    return ProduceRequest(
        acks=-1, timeout_ms=30000, topic_data=[TopicProduceData(name="bench", partition_data=partitions)]
    )


def fetch_response() -> FetchResponse:
    partitions = [
        PartitionData(
            partition_index=i,
            high_watermark=1 << 30,
            last_stable_offset=1 << 30,
            log_start_offset=0,
            records=b"",
        )
        for i in range(PARTITIONS)
    ]
    return FetchResponse(responses=[FetchableTopicResponse(topic="bench", partitions=partitions)])


def report(name: str, seconds: float) -> None:
    print(f"{name:<44} {seconds * 1e6:9.1f} µs   {PARTITIONS / seconds / 1e6:6.2f} M partitions/s")


def main() -> None:
    for version in (7, 9):
        header = RequestHeader(ApiKey.PRODUCE, version, 1, "bench")
        request = produce_request()
        frame = encode_request(header, request)[4:]
        report(f"Produce v{version} request decode", best(lambda frame=frame: decode_request(frame)))
        report(f"Produce v{version} request encode", best(lambda h=header, r=request: encode_request(h, r)))
    for version in (11, 12):
        response = fetch_response()
        out = encode_response(ResponseHeader(1), 1, version, response)[4:]
        report(
            f"Fetch v{version} response encode",
            best(lambda v=version, r=response: encode_response(ResponseHeader(1), 1, v, r)),
        )
        report(f"Fetch v{version} response decode", best(lambda o=out, v=version: decode_response(o, 1, v)))


if __name__ == "__main__":
    main()
