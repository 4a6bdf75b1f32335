"""``samsa console``: a read-only web console for any Kafka-protocol cluster (Samsa or Apache Kafka).

It speaks only the Kafka protocol, through :mod:`samsa.client` (Metadata, ListOffsets, DescribeLogDirs,
DescribeConfigs, ListGroups, DescribeGroups, OffsetFetch), and reads segment files only when given log dirs on
its own machine, read-only, through :mod:`samsa.storage.log_dir_reader`. Pages are plain HTML and one small
vanilla script served from this package (``static/``): no build step.

Modules: ``cluster_state`` (one batched picture of the cluster), ``rates`` (messages in/out from offsets),
``segments`` (a partition's files), ``http`` (the GET-only server), ``console`` (the poller and the routes).
"""

from .console import Console

__all__ = ["Console"]
