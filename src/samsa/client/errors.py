"""The errors of :mod:`samsa.client`.

Exception tree::

    KafkaError              anything the client raises on purpose: connection failures, timeouts, bad replies
    └── BrokerError         a broker answered with a non-zero Kafka error code (carries the code and its name)
"""

from __future__ import annotations

from samsa.protocol import ErrorCode

_CODES: dict[int, ErrorCode] = {int(code): code for code in ErrorCode}
# Error names whose Java exception class does not follow "CamelCase of the name + Exception".
_EXCEPTION_NAMES = {
    "TOPIC_ALREADY_EXISTS": "TopicExistsException",
    "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "INVALID_CONFIG": "InvalidConfigurationException",
    "NOT_LEADER_OR_FOLLOWER": "NotLeaderOrFollowerException",
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "REQUEST_TIMED_OUT": "TimeoutException",
    "NETWORK_EXCEPTION": "NetworkException",
    "CORRUPT_MESSAGE": "CorruptRecordException",
    "MESSAGE_TOO_LARGE": "RecordTooLargeException",
    "RECORD_LIST_TOO_LARGE": "RecordBatchTooLargeException",
}


class KafkaError(Exception):
    """A failure talking to a Kafka-protocol broker."""


class BrokerError(KafkaError):
    """A broker's answer carried ``error_code`` (Kafka's name for it is ``name``)."""

    def __init__(self, error_code: int, name: str, message: str | None = None) -> None:
        self.error_code = error_code
        self.name = name
        self.message = message
        super().__init__(f"{name} ({error_code})" + (f": {message}" if message else ""))

    @classmethod
    def from_code(cls, error_code: int, message: str | None = None) -> BrokerError:
        code = _CODES.get(error_code)
        return cls(error_code, code.name if code is not None else f"UNKNOWN_ERROR_CODE_{error_code}", message)

    @property
    def retriable(self) -> bool:
        code = _CODES.get(self.error_code)
        return code is not None and code.retriable

    @property
    def exception_name(self) -> str:
        """The name of the Java exception Kafka's own tools would print for this error."""
        special = _EXCEPTION_NAMES.get(self.name)
        if special is not None:
            return special
        camel = "".join(part.capitalize() for part in self.name.split("_"))
        if camel.endswith("Error"):  # KAFKA_STORAGE_ERROR is KafkaStorageException
            camel = camel[: -len("Error")]
        return camel if camel.endswith("Exception") else camel + "Exception"


def check(error_code: int, message: str | None = None) -> None:
    """Raise :class:`BrokerError` unless ``error_code`` is 0."""
    if error_code:
        raise BrokerError.from_code(error_code, message)
