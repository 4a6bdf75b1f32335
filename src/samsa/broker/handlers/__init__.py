"""One module per Kafka API, each defining ``async def handle(ctx, request)`` that returns the response message, or
None when the request gets no response (Produce with acks=0).

``HANDLERS`` is the registry the dispatcher serves and ApiVersions advertises (what is advertised is what works):
per API key, the handler's module, ``versions`` (the range advertised in ApiVersions) and ``implemented`` (the
versions actually served; a request in an advertised version outside it closes its connection, as Kafka 4 does for
Produce v0-2, which it advertises only for old librdkafka's sake). The table is data, so advertising costs no
import: a handler module, and the generated message module it uses, is imported when its API's first request
comes. That keeps a broker's start from paying for every API's message classes.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType


@dataclass(slots=True)
class Handler:
    """One served API. ``module`` is None until ``load`` imports it (event-loop thread; imports are idempotent);
    the dispatcher reads ``handler.module or handler.load()``, a plain attribute on the hot path."""

    api_key: int
    module_name: str
    versions: tuple[int, int]
    implemented: tuple[int, int]
    module: ModuleType | None = field(default=None, repr=False)

    def load(self) -> ModuleType:
        if self.module is None:
            self.module = importlib.import_module(f"{__name__}.{self.module_name}")
        return self.module


def _served(
    api_key: int, module_name: str, low: int, high: int, implemented_from: int | None = None
) -> Handler:
    return Handler(api_key, module_name, (low, high), (implemented_from or low, high))


HANDLERS: dict[int, Handler] = {
    h.api_key: h
    for h in (
        _served(0, "produce", 0, 9, implemented_from=3),  # v0-2 advertised for old librdkafka, then refused
        _served(1, "fetch", 4, 12),
        _served(2, "list_offsets", 1, 7),
        _served(3, "metadata", 0, 12),
        _served(4, "leader_and_isr", 5, 7),  # from the controller (cluster mode)
        _served(5, "stop_replica", 3, 4),  # from the controller (cluster mode)
        _served(6, "update_metadata", 0, 8),  # from the controller (cluster mode)
        _served(7, "controlled_shutdown", 1, 3),  # to the controller (cluster mode)
        _served(8, "offset_commit", 0, 8),
        _served(9, "offset_fetch", 0, 8),
        _served(10, "find_coordinator", 0, 4),
        _served(11, "join_group", 0, 9),
        _served(12, "heartbeat", 0, 4),
        _served(13, "leave_group", 0, 5),
        _served(14, "sync_group", 0, 5),
        _served(15, "describe_groups", 0, 5),
        _served(16, "list_groups", 0, 5),
        _served(18, "api_versions", 0, 3),
        _served(19, "create_topics", 2, 7),
        _served(20, "delete_topics", 1, 5),
        _served(21, "delete_records", 0, 2),
        _served(22, "init_producer_id", 0, 4),
        _served(23, "offset_for_leader_epoch", 0, 4),
        _served(32, "describe_configs", 0, 4),
        _served(33, "alter_configs", 0, 2),
        _served(35, "describe_log_dirs", 0, 4),
        _served(37, "create_partitions", 0, 3),
        _served(42, "delete_groups", 0, 2),
        _served(43, "elect_leaders", 0, 2),  # to the controller (cluster mode)
        _served(44, "incremental_alter_configs", 0, 1),
        _served(45, "alter_partition_reassignments", 0, 0),  # on the controller (cluster mode)
        _served(46, "list_partition_reassignments", 0, 0),  # on the controller (cluster mode)
        _served(47, "offset_delete", 0, 0),
        _served(56, "alter_partition", 0, 3),  # to the controller (cluster mode)
        _served(60, "describe_cluster", 0, 1),
    )
}
