"""Kafka's error codes as data, and the exceptions of the protocol layer.

Exception tree::

    ProtocolError                      anything this package raises on purpose
    ├── RemoteProtocolError            the peer sent something malformed or unsupported
    │   ├── InvalidRequestError        bytes that do not parse (carries api_key, api_version, offset)
    │   │   └── InvalidResponseError   the same, for a response read by a client
    │   ├── UnsupportedVersionError    an API key or version this code does not know (carries the header)
    │   └── FrameError                 a frame's size prefix is negative
    │       └── FrameTooLargeError     a frame's size is above the configured limit
    └── LocalProtocolError             the caller asked for something illegal (a programmer error)
        └── EncodeError                a value the version cannot carry (null in a non-nullable field,
                                       a non-ignorable field in a version that lacks it, a wrong type)

``DecodeError`` is internal: the primitive readers raise it and :mod:`samsa.protocol.api` converts it (and any
``struct.error``/``IndexError``/``ValueError`` from a truncated buffer) into ``InvalidRequestError`` at its one
boundary. Error codes are not exceptions: handlers put an :class:`ErrorCode` into a response per partition.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Kafka's error codes, with their protocol names and whether a client may retry."""

    retriable: bool

    def __new__(cls, code: int, retriable: bool) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        return member

    UNKNOWN_SERVER_ERROR = (-1, False)
    NONE = (0, False)
    OFFSET_OUT_OF_RANGE = (1, False)
    CORRUPT_MESSAGE = (2, True)
    UNKNOWN_TOPIC_OR_PARTITION = (3, True)
    INVALID_FETCH_SIZE = (4, False)
    LEADER_NOT_AVAILABLE = (5, True)
    NOT_LEADER_OR_FOLLOWER = (6, True)
    REQUEST_TIMED_OUT = (7, True)
    BROKER_NOT_AVAILABLE = (8, False)
    REPLICA_NOT_AVAILABLE = (9, True)
    MESSAGE_TOO_LARGE = (10, False)
    STALE_CONTROLLER_EPOCH = (11, False)
    OFFSET_METADATA_TOO_LARGE = (12, False)
    NETWORK_EXCEPTION = (13, True)
    COORDINATOR_LOAD_IN_PROGRESS = (14, True)
    COORDINATOR_NOT_AVAILABLE = (15, True)
    NOT_COORDINATOR = (16, True)
    INVALID_TOPIC_EXCEPTION = (17, False)
    RECORD_LIST_TOO_LARGE = (18, False)
    NOT_ENOUGH_REPLICAS = (19, True)
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True)
    INVALID_REQUIRED_ACKS = (21, False)
    ILLEGAL_GENERATION = (22, False)
    INCONSISTENT_GROUP_PROTOCOL = (23, False)
    INVALID_GROUP_ID = (24, False)
    UNKNOWN_MEMBER_ID = (25, False)
    INVALID_SESSION_TIMEOUT = (26, False)
    REBALANCE_IN_PROGRESS = (27, False)
    INVALID_COMMIT_OFFSET_SIZE = (28, False)
    TOPIC_AUTHORIZATION_FAILED = (29, False)
    GROUP_AUTHORIZATION_FAILED = (30, False)
    CLUSTER_AUTHORIZATION_FAILED = (31, False)
    INVALID_TIMESTAMP = (32, False)
    UNSUPPORTED_SASL_MECHANISM = (33, False)
    ILLEGAL_SASL_STATE = (34, False)
    UNSUPPORTED_VERSION = (35, False)
    TOPIC_ALREADY_EXISTS = (36, False)
    INVALID_PARTITIONS = (37, False)
    INVALID_REPLICATION_FACTOR = (38, False)
    INVALID_REPLICA_ASSIGNMENT = (39, False)
    INVALID_CONFIG = (40, False)
    NOT_CONTROLLER = (41, True)
    INVALID_REQUEST = (42, False)
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False)
    POLICY_VIOLATION = (44, False)
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False)
    DUPLICATE_SEQUENCE_NUMBER = (46, False)
    INVALID_PRODUCER_EPOCH = (47, False)
    INVALID_TXN_STATE = (48, False)
    INVALID_PRODUCER_ID_MAPPING = (49, False)
    INVALID_TRANSACTION_TIMEOUT = (50, False)
    CONCURRENT_TRANSACTIONS = (51, True)
    TRANSACTION_COORDINATOR_FENCED = (52, False)
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False)
    SECURITY_DISABLED = (54, False)
    OPERATION_NOT_ATTEMPTED = (55, False)
    KAFKA_STORAGE_ERROR = (56, True)
    LOG_DIR_NOT_FOUND = (57, False)
    SASL_AUTHENTICATION_FAILED = (58, False)
    UNKNOWN_PRODUCER_ID = (59, False)
    REASSIGNMENT_IN_PROGRESS = (60, False)
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False)
    DELEGATION_TOKEN_NOT_FOUND = (62, False)
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False)
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False)
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False)
    DELEGATION_TOKEN_EXPIRED = (66, False)
    INVALID_PRINCIPAL_TYPE = (67, False)
    NON_EMPTY_GROUP = (68, False)
    GROUP_ID_NOT_FOUND = (69, False)
    FETCH_SESSION_ID_NOT_FOUND = (70, True)
    INVALID_FETCH_SESSION_EPOCH = (71, True)
    LISTENER_NOT_FOUND = (72, True)
    TOPIC_DELETION_DISABLED = (73, False)
    FENCED_LEADER_EPOCH = (74, True)
    UNKNOWN_LEADER_EPOCH = (75, True)
    UNSUPPORTED_COMPRESSION_TYPE = (76, False)
    STALE_BROKER_EPOCH = (77, False)
    OFFSET_NOT_AVAILABLE = (78, True)
    MEMBER_ID_REQUIRED = (79, False)
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True)
    GROUP_MAX_SIZE_REACHED = (81, False)
    FENCED_INSTANCE_ID = (82, False)
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True)
    ELECTION_NOT_NEEDED = (84, True)
    NO_REASSIGNMENT_IN_PROGRESS = (85, False)
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False)
    INVALID_RECORD = (87, False)
    UNSTABLE_OFFSET_COMMIT = (88, True)
    THROTTLING_QUOTA_EXCEEDED = (89, True)
    PRODUCER_FENCED = (90, False)
    RESOURCE_NOT_FOUND = (91, False)
    DUPLICATE_RESOURCE = (92, False)
    UNACCEPTABLE_CREDENTIAL = (93, False)
    INCONSISTENT_VOTER_SET = (94, False)
    INVALID_UPDATE_VERSION = (95, False)
    FEATURE_UPDATE_FAILED = (96, False)
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False)
    SNAPSHOT_NOT_FOUND = (98, False)
    POSITION_OUT_OF_RANGE = (99, False)
    UNKNOWN_TOPIC_ID = (100, True)
    DUPLICATE_BROKER_REGISTRATION = (101, False)
    BROKER_ID_NOT_REGISTERED = (102, False)
    INCONSISTENT_TOPIC_ID = (103, True)
    INCONSISTENT_CLUSTER_ID = (104, False)
    TRANSACTIONAL_ID_NOT_FOUND = (105, False)
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True)
    INELIGIBLE_REPLICA = (107, False)
    NEW_LEADER_ELECTED = (108, False)
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False)
    FENCED_MEMBER_EPOCH = (110, False)
    UNRELEASED_INSTANCE_ID = (111, False)
    UNSUPPORTED_ASSIGNOR = (112, False)
    STALE_MEMBER_EPOCH = (113, False)
    MISMATCHED_ENDPOINT_TYPE = (114, False)
    UNSUPPORTED_ENDPOINT_TYPE = (115, False)
    UNKNOWN_CONTROLLER_ID = (116, False)
    UNKNOWN_SUBSCRIPTION_ID = (117, False)
    TELEMETRY_TOO_LARGE = (118, False)
    INVALID_REGISTRATION = (119, False)
    TRANSACTION_ABORTABLE = (120, False)
    INVALID_RECORD_STATE = (121, False)
    SHARE_SESSION_NOT_FOUND = (122, True)
    INVALID_SHARE_SESSION_EPOCH = (123, True)
    FENCED_STATE_EPOCH = (124, False)
    INVALID_VOTER_KEY = (125, False)
    DUPLICATE_VOTER = (126, False)
    VOTER_NOT_FOUND = (127, False)
    INVALID_REGULAR_EXPRESSION = (128, False)
    REBOOTSTRAP_REQUIRED = (129, False)


class ProtocolError(Exception):
    """Base of every exception the protocol package raises on purpose."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that are malformed or that this code does not support."""


class InvalidRequestError(RemoteProtocolError):
    """A frame that does not parse as the request (or response) its header names."""

    def __init__(
        self, reason: str, api_key: int | None = None, api_version: int | None = None, offset: int = -1
    ):
        super().__init__(f"{reason} (api_key={api_key}, api_version={api_version}, offset={offset})")
        self.reason = reason
        self.api_key = api_key
        self.api_version = api_version
        self.offset = offset


class InvalidResponseError(InvalidRequestError):
    """A response frame that does not parse."""


class UnsupportedVersionError(RemoteProtocolError):
    """An API key or version the generated code does not know.

    ``correlation_id`` and ``client_id`` are set when the request header could be read, so a broker can still
    answer (ApiVersions answers an unsupported version with a v0 body and error 35).
    """

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int | None = None, client_id: str | None = None
    ):
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id


class FrameError(RemoteProtocolError):
    """A frame size prefix that cannot be right (negative)."""

    def __init__(self, size: int, message: str | None = None):
        super().__init__(message or f"invalid frame size {size}")
        self.size = size


class FrameTooLargeError(FrameError):
    """A frame whose size prefix is above the limit."""

    def __init__(self, size: int, limit: int):
        super().__init__(size, f"frame of {size} bytes exceeds the limit of {limit}")
        self.limit = limit


class LocalProtocolError(ProtocolError):
    """The caller asked for something the protocol cannot express: a programming error."""


class EncodeError(LocalProtocolError):
    """A message value that cannot be encoded at the requested version."""


class DecodeError(ValueError):
    """Internal: a primitive reader found malformed bytes at ``offset``; converted at the API boundary."""

    def __init__(self, reason: str, offset: int):
        super().__init__(f"{reason} at offset {offset}")
        self.reason = reason
        self.offset = offset
