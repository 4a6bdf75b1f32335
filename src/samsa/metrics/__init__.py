"""Kafka's broker metrics, in the names Prometheus dashboards built for Kafka read.

Kafka publishes its metrics as JMX MBeans; dashboards read them through the Prometheus JMX exporter, whose example
Kafka rules name ``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=t`` as
``kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`` and a gauge such as
``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` as
``kafka_server_replicamanager_underreplicatedpartitions``. ``broker_metrics.BrokerMetrics`` keeps the counters
(bumped per request or per batch, never per record) and renders them with the gauges computed at scrape time;
``http.MetricsServer`` answers ``GET /metrics`` on ``metrics.prometheus.port``.

This package knows no broker module: the broker hands it the callables its gauges read.
"""
