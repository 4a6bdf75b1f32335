"""The classic consumer-group coordinator: the group state machine (sans-IO, time passed in), its asyncio shell,
and the ``__consumer_offsets`` record formats."""

from .coordinator import CoordinatorConfig, GroupCoordinator
from .group import (
    Group,
    GroupConfig,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    OffsetAndMetadata,
    Pending,
    Reply,
    SyncResult,
)
from .offsets_log import OffsetsLog

__all__ = [
    "CoordinatorConfig",
    "Group",
    "GroupConfig",
    "GroupCoordinator",
    "GroupState",
    "JoinRequest",
    "JoinResult",
    "Member",
    "OffsetAndMetadata",
    "OffsetsLog",
    "Pending",
    "Reply",
    "SyncResult",
]
