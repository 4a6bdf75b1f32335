"""One module per Kafka API, each defining ``async def handle(ctx, request)`` that returns the response message, or
None when the request gets no response (Produce with acks=0).

``HANDLERS`` is the registry the dispatcher serves and ApiVersions advertises (what is advertised is what works):
per API key, the handler's module, ``versions`` (the range advertised in ApiVersions) and ``implemented`` (the
versions actually served; a request in an advertised version outside it closes its connection, as Kafka 4 does for
Produce v0-2, which it advertises only for old librdkafka's sake), and ``accepted`` (the versions decoded and served:
the advertised ones, and for Fetch also v13-17, which Kafka 3.9's ZooKeeper-mode followers send in a mixed cluster
without asking ApiVersions, while clients keep to the advertised v12 and topic names). The table is data, so advertising costs no
import: a handler module, and the generated message module it uses, is imported when its API's first request
comes. That keeps a broker's start from paying for every API's message classes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

from samsa.protocol.api_keys import ApiKey


@dataclass(slots=True)
class Handler:
    """One served API. ``module`` is None until ``load`` imports it (event-loop thread; imports are idempotent);
    the dispatcher reads ``handler.module or handler.load()``, a plain attribute on the hot path."""

    api_key: ApiKey
    module_name: str
    versions: tuple[int, int]
    implemented: tuple[int, int]
    accepted: tuple[int, int]
    module: ModuleType | None = field(default=None, repr=False)

    def load(self) -> ModuleType:
        if self.module is None:
            self.module = importlib.import_module(f"{__name__}.{self.module_name}")
        return self.module


def _served(
    api_key: ApiKey,
    module_name: str,
    low: int,
    high: int,
    implemented_from: int | None = None,
    accepted_to: int | None = None,
) -> Handler:
    top = accepted_to or high
    return Handler(api_key, module_name, (low, high), (implemented_from or low, top), (low, top))


HANDLERS: dict[int, Handler] = {
    int(h.api_key): h  # plain int keys: a lookup by a header's int then finds its key without an enum compare
    for h in (
        _served(
            ApiKey.PRODUCE, "produce", 0, 9, implemented_from=3
        ),  # v0-2 advertised for old librdkafka, then refused
        _served(ApiKey.FETCH, "fetch", 4, 12, accepted_to=17),  # v13-17 for Kafka 3.9 followers (module doc)
        _served(ApiKey.LIST_OFFSETS, "list_offsets", 1, 7),
        _served(ApiKey.METADATA, "metadata", 0, 12),
        _served(ApiKey.LEADER_AND_ISR, "leader_and_isr", 5, 7),  # from the controller (cluster mode)
        _served(ApiKey.STOP_REPLICA, "stop_replica", 3, 4),  # from the controller (cluster mode)
        _served(ApiKey.UPDATE_METADATA, "update_metadata", 0, 8),  # from the controller (cluster mode)
        _served(ApiKey.CONTROLLED_SHUTDOWN, "controlled_shutdown", 1, 3),  # to the controller (cluster mode)
        _served(ApiKey.OFFSET_COMMIT, "offset_commit", 0, 8),
        _served(ApiKey.OFFSET_FETCH, "offset_fetch", 0, 8),
        _served(ApiKey.FIND_COORDINATOR, "find_coordinator", 0, 4),
        _served(ApiKey.JOIN_GROUP, "join_group", 0, 9),
        _served(ApiKey.HEARTBEAT, "heartbeat", 0, 4),
        _served(ApiKey.LEAVE_GROUP, "leave_group", 0, 5),
        _served(ApiKey.SYNC_GROUP, "sync_group", 0, 5),
        _served(ApiKey.DESCRIBE_GROUPS, "describe_groups", 0, 5),
        _served(ApiKey.LIST_GROUPS, "list_groups", 0, 5),
        _served(ApiKey.API_VERSIONS, "api_versions", 0, 3),
        _served(ApiKey.CREATE_TOPICS, "create_topics", 2, 7),
        _served(ApiKey.DELETE_TOPICS, "delete_topics", 1, 5),
        _served(ApiKey.DELETE_RECORDS, "delete_records", 0, 2),
        _served(ApiKey.INIT_PRODUCER_ID, "init_producer_id", 0, 4),
        _served(ApiKey.ADD_PARTITIONS_TO_TXN, "add_partitions_to_txn", 0, 5),
        _served(ApiKey.ADD_OFFSETS_TO_TXN, "add_offsets_to_txn", 0, 4),
        _served(ApiKey.END_TXN, "end_txn", 0, 4),
        _served(ApiKey.TXN_OFFSET_COMMIT, "txn_offset_commit", 0, 4),
        _served(ApiKey.DESCRIBE_TRANSACTIONS, "describe_transactions", 0, 0),
        _served(ApiKey.DESCRIBE_PRODUCERS, "describe_producers", 0, 0),
        _served(ApiKey.LIST_TRANSACTIONS, "list_transactions", 0, 1),
        _served(ApiKey.WRITE_TXN_MARKERS, "write_txn_markers", 0, 1),  # from transaction coordinators
        _served(ApiKey.OFFSET_FOR_LEADER_EPOCH, "offset_for_leader_epoch", 0, 4),
        _served(ApiKey.DESCRIBE_CONFIGS, "describe_configs", 0, 4),
        _served(ApiKey.ALTER_CONFIGS, "alter_configs", 0, 2),
        _served(ApiKey.DESCRIBE_LOG_DIRS, "describe_log_dirs", 0, 4),
        _served(ApiKey.CREATE_PARTITIONS, "create_partitions", 0, 3),
        _served(ApiKey.DELETE_GROUPS, "delete_groups", 0, 2),
        _served(ApiKey.DESCRIBE_ACLS, "describe_acls", 0, 3),
        _served(ApiKey.CREATE_ACLS, "create_acls", 0, 3),
        _served(ApiKey.DELETE_ACLS, "delete_acls", 0, 3),
        _served(ApiKey.ELECT_LEADERS, "elect_leaders", 0, 2),  # to the controller (cluster mode)
        _served(ApiKey.INCREMENTAL_ALTER_CONFIGS, "incremental_alter_configs", 0, 1),
        _served(ApiKey.DESCRIBE_CLIENT_QUOTAS, "describe_client_quotas", 0, 1),
        _served(ApiKey.ALTER_CLIENT_QUOTAS, "alter_client_quotas", 0, 1),
        _served(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "describe_user_scram_credentials", 0, 0),
        _served(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "alter_user_scram_credentials", 0, 0),
        _served(ApiKey.SASL_HANDSHAKE, "sasl_handshake", 0, 1),
        _served(ApiKey.SASL_AUTHENTICATE, "sasl_authenticate", 0, 2),
        _served(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS, "alter_partition_reassignments", 0, 0
        ),  # on the controller (cluster mode)
        _served(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, "list_partition_reassignments", 0, 0
        ),  # on the controller (cluster mode)
        _served(ApiKey.OFFSET_DELETE, "offset_delete", 0, 0),
        _served(ApiKey.ALTER_PARTITION, "alter_partition", 0, 3),  # to the controller (cluster mode)
        _served(ApiKey.DESCRIBE_CLUSTER, "describe_cluster", 0, 1),
        _served(
            ApiKey.ALLOCATE_PRODUCER_IDS, "allocate_producer_ids", 0, 0
        ),  # to the controller (cluster mode)
    )
}
