"""The broker's log lines: Kafka's text form by default, or one JSON object per line (``samsa serve --log-format
json``) with what a log pipeline indexes::

    {"time": "2026-11-28T08:12:01.123Z", "level": "WARNING", "logger": "samsa.storage.log_manager",
     "message": "...", "broker_id": 1, "topic_partition": "orders-3", "exception": "Traceback ..."}

``topic_partition`` is there when the line names a partition (a ``TopicPartition`` or a partition's directory among
its arguments),
``exception`` when it carries one. Times are UTC with milliseconds.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import PurePath

from samsa.topic_partition import TopicPartition

__all__ = ["LOG_FORMATS", "JsonFormatter", "configure_logging"]

LOG_FORMATS = ("text", "json")
_PARTITION_DIR = re.compile(r".+-\d+")  # <topic>-<partition>, as a log dir names a partition's directory
TEXT_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (module doc)."""

    def __init__(self, broker_id: int) -> None:
        super().__init__()
        self.broker_id = broker_id

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        line: dict[str, object] = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "broker_id": self.broker_id,
        }
        partition = _partition_named(record.args if isinstance(record.args, tuple) else ())
        if partition is not None:
            line["topic_partition"] = partition
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def _partition_named(args: tuple[object, ...]) -> str | None:
    """The partition a log line's arguments name: a ``TopicPartition``, or a partition's log directory."""
    for arg in args:
        if isinstance(arg, TopicPartition):
            return str(arg)
    for arg in args:
        if isinstance(arg, PurePath) and _PARTITION_DIR.fullmatch(arg.name):
            return arg.name
    return None


def configure_logging(log_format: str, broker_id: int) -> None:
    """The root logger at INFO on stderr, in ``log_format`` (one of ``LOG_FORMATS``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(broker_id) if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
