"""A broker's metrics: counters the request paths bump, gauges read at scrape time, rendered in the Prometheus
text format with the JMX exporter's names for Kafka's MBeans (package doc).

Counters (``*_total``), each per topic (label ``topic``) and for all topics (no label), as Kafka keeps both:

    kafka_server_brokertopicmetrics_messagesin_total       records appended by produce requests (per batch:
                                                           its record count)
    kafka_server_brokertopicmetrics_bytesin_total          bytes of appended record batches
    kafka_server_brokertopicmetrics_bytesout_total         bytes of records sent to consumers
    kafka_server_brokertopicmetrics_totalproducerequests_total, ..._totalfetchrequests_total
    kafka_server_brokertopicmetrics_failedproducerequests_total, ..._failedfetchrequests_total
    kafka_server_brokertopicmetrics_replicationbytesout_total     bytes sent to followers (no topic label)

Per API (label ``request``, Kafka's API name): ``kafka_network_requestmetrics_requests_total`` (label ``version``
too), ``kafka_network_requestmetrics_totaltimems`` with Kafka's percentiles (label ``quantile``: 0.5, 0.75, 0.95,
0.98, 0.99, 0.999, over the last ``RESERVOIR`` requests, as Kafka's histograms keep a 1,028-sample reservoir) and
``kafka_network_requestmetrics_totaltimems_count``, and a Prometheus histogram of the same times
(``samsa_request_total_time_seconds_bucket{request=...,le=...}``) for rate-of-buckets queries.

Gauges come from ``GaugeSource`` callables the broker supplies, read when scraped.

Not thread-safe: the hot paths and the scrape both run on the broker's event loop.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

__all__ = ["RESERVOIR", "BrokerMetrics", "Gauge", "GaugeSource"]

RESERVOIR = 1028
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# BrokerTopicMetrics counters: index in a topic's row, and the metric's name part
MESSAGES_IN, BYTES_IN, BYTES_OUT, PRODUCE_REQUESTS, FETCH_REQUESTS, FAILED_PRODUCE, FAILED_FETCH = range(7)
TOPIC_COUNTERS = (
    ("messagesin", "Records appended by produce requests"),
    ("bytesin", "Bytes of record batches appended by produce requests"),
    ("bytesout", "Bytes of records sent to consumers"),
    ("totalproducerequests", "Produce requests, per partition written"),
    ("totalfetchrequests", "Consumer fetch requests, per partition read"),
    ("failedproducerequests", "Produce requests that failed, per partition"),
    ("failedfetchrequests", "Consumer fetch requests that failed, per partition"),
)


@dataclass(frozen=True, slots=True)
class Gauge:
    """One gauge sample: its full name, help, labels and value."""

    name: str
    doc: str
    value: float
    labels: Mapping[str, str] = field(default_factory=dict)
    counter: bool = False  # a count that only grows: rendered as ``<name>_total``


GaugeSource = Callable[[], Iterable[Gauge]]
"""What the broker supplies: gauges computed when scraped (partition counts, log sizes, lag...)."""


@dataclass(slots=True)
class _Timer:
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RESERVOIR))
    count: int = 0
    total_s: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS_S) + 1))


class BrokerMetrics(Collector):
    """The counters and request times of one broker, and the gauge sources; a prometheus_client collector."""

    def __init__(self, gauge_sources: Iterable[GaugeSource] = ()) -> None:
        self._topics: dict[str, list[int]] = {}
        self._all = [0] * len(TOPIC_COUNTERS)
        self.replication_bytes_out = 0
        self._requests: dict[tuple[str, int], int] = {}
        self._timers: dict[str, _Timer] = {}
        self.gauge_sources = list(gauge_sources)

    # --- the hot paths: one call per partition or request -----------------------------------------------------

    def produced(self, topic: str, records: int, size: int) -> None:
        row = self._row(topic)
        row[MESSAGES_IN] += records
        row[BYTES_IN] += size
        row[PRODUCE_REQUESTS] += 1
        total = self._all
        total[MESSAGES_IN] += records
        total[BYTES_IN] += size
        total[PRODUCE_REQUESTS] += 1

    def produce_failed(self, topic: str) -> None:
        self._count(topic, PRODUCE_REQUESTS)
        self._count(topic, FAILED_PRODUCE)

    def fetched(self, topic: str, size: int, failed: bool) -> None:
        row = self._row(topic)
        row[BYTES_OUT] += size
        row[FETCH_REQUESTS] += 1
        self._all[BYTES_OUT] += size
        self._all[FETCH_REQUESTS] += 1
        if failed:
            self._count(topic, FAILED_FETCH)

    def request_done(self, request: str, version: int, seconds: float) -> None:
        key = (request, version)
        self._requests[key] = self._requests.get(key, 0) + 1
        timer = self._timers.get(request)
        if timer is None:
            timer = self._timers[request] = _Timer()
        timer.recent.append(seconds)
        timer.count += 1
        timer.total_s += seconds
        timer.buckets[bisect.bisect_left(BUCKETS_S, seconds)] += 1

    def _row(self, topic: str) -> list[int]:
        row = self._topics.get(topic)
        if row is None:
            row = self._topics[topic] = [0] * len(TOPIC_COUNTERS)
        return row

    def _count(self, topic: str, index: int) -> None:
        self._row(topic)[index] += 1
        self._all[index] += 1

    def forget_topic(self, topic: str) -> None:
        """A deleted topic's counters go (Kafka removes its topic metrics)."""
        self._topics.pop(topic, None)

    # --- the scrape ---------------------------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        yield from self._topic_counters()
        yield from self._request_metrics()
        yield from self._gauges()

    def _topic_counters(self) -> Iterator[Metric]:
        for index, (name, doc) in enumerate(TOPIC_COUNTERS):
            family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc, labels=["topic"])
            family.add_sample(f"kafka_server_brokertopicmetrics_{name}_total", {}, self._all[index])
            for topic, row in sorted(self._topics.items()):
                family.add_metric([topic], row[index])
            yield family
        family = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_replicationbytesout",
            "Bytes of records sent to follower replicas",
        )
        family.add_metric([], self.replication_bytes_out)
        yield family

    def _request_metrics(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests served", labels=["request", "version"]
        )
        for (request, version), count in sorted(self._requests.items()):
            requests.add_metric([request, str(version)], count)
        yield requests
        quantiles = GaugeMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time to serve a request, ms, at Kafka's percentiles (last 1,028 requests)",
            labels=["request", "quantile"],
        )
        counts = GaugeMetricFamily(
            "kafka_network_requestmetrics_totaltimems_count", "Requests timed", labels=["request"]
        )
        histogram = HistogramMetricFamily(
            "samsa_request_total_time_seconds", "Time to serve a request", labels=["request"]
        )
        for request, timer in sorted(self._timers.items()):
            ordered = sorted(timer.recent)
            for q in QUANTILES:
                value = ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000 if ordered else 0.0
                quantiles.add_metric([request, str(q)], value)
            counts.add_metric([request], timer.count)
            cumulative, buckets = 0, []
            for bound, hits in zip((*map(str, BUCKETS_S), "+Inf"), timer.buckets, strict=True):
                cumulative += hits
                buckets.append((bound, cumulative))
            histogram.add_metric([request], buckets, timer.total_s)
        yield quantiles
        yield counts
        yield histogram

    def _gauges(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for source in self.gauge_sources:
            for gauge in source():
                family = families.get(gauge.name)
                if family is None:
                    kind = CounterMetricFamily if gauge.counter else GaugeMetricFamily
                    family = families[gauge.name] = kind(gauge.name, gauge.doc)
                sample = f"{gauge.name}_total" if gauge.counter else gauge.name
                family.add_sample(sample, dict(gauge.labels), gauge.value)
        yield from families.values()
