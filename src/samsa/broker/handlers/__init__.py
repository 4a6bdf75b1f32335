"""One module per Kafka API. Each defines ``API_KEY``, ``VERSIONS`` (the range advertised in ApiVersions),
``IMPLEMENTED`` (the versions actually served; a request in an advertised version outside it closes its
connection, as Kafka 4 does for Produce v0-2, which it advertises only for old librdkafka's sake) and ``async def handle(ctx, request)`` returning the
response message, or None when the request gets no response (Produce with acks=0).

``HANDLERS`` is the registry the dispatcher serves and ApiVersions advertises: what is advertised is what works.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sync_group,
)

MODULES: tuple[ModuleType, ...] = (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    produce,
    sync_group,
)

HANDLERS: dict[int, ModuleType] = {module.API_KEY: module for module in MODULES}
