"""SyncClient: the KafkaClient's methods as blocking calls, usable from any thread.

A private event loop runs in a daemon thread; each call is submitted to it and waited for. Thread-safe: many
threads may call one SyncClient at once (calls interleave on the loop).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from .client import KafkaClient
from .errors import BrokerError
from .types import ClusterMetadata, ConfigEntry, FetchedPartition, LogDir, NewTopic, TopicPartition

T = TypeVar("T")


class SyncClient:
    """A blocking :class:`KafkaClient`; ``close`` stops its loop thread."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str = "samsa",
        request_timeout_ms: int = 30000,
    ) -> None:
        self._client = KafkaClient(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="samsa-client", daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def client(self) -> KafkaClient:
        """The underlying async client (use only on this SyncClient's loop)."""
        return self._client

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("SyncClient is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._client.close(), self._loop).result()
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def send(
        self,
        request: Any,
        *,
        api_key: int,
        node_id: int | None = None,
        version: int | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        return self._run(
            self._client.send(
                request, api_key=api_key, node_id=node_id, version=version, timeout_ms=timeout_ms
            )
        )

    def metadata(
        self, topics: Sequence[str] | None = None, *, allow_auto_topic_creation: bool = False
    ) -> ClusterMetadata:
        return self._run(self._client.metadata(topics, allow_auto_topic_creation=allow_auto_topic_creation))

    def list_offsets(
        self, timestamps: Mapping[TopicPartition, int], *, isolation_level: int = 0
    ) -> dict[TopicPartition, tuple[int, int]]:
        return self._run(self._client.list_offsets(timestamps, isolation_level=isolation_level))

    def fetch(
        self,
        positions: Mapping[TopicPartition, int],
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        partition_max_bytes: int = 1048576,
        isolation_level: int = 0,
    ) -> dict[TopicPartition, FetchedPartition]:
        return self._run(
            self._client.fetch(
                positions,
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
                max_bytes=max_bytes,
                partition_max_bytes=partition_max_bytes,
                isolation_level=isolation_level,
            )
        )

    def produce(
        self, tp: TopicPartition, batch: bytes, *, acks: int = -1, timeout_ms: int = 30000
    ) -> tuple[int, int]:
        return self._run(self._client.produce(tp, batch, acks=acks, timeout_ms=timeout_ms))

    def create_topics(
        self, topics: Sequence[NewTopic], *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> dict[str, BrokerError | None]:
        return self._run(
            self._client.create_topics(topics, timeout_ms=timeout_ms, validate_only=validate_only)
        )

    def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 30000
    ) -> dict[str, BrokerError | None]:
        return self._run(self._client.delete_topics(names, timeout_ms=timeout_ms))

    def create_partitions(
        self, counts: Mapping[str, int], *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> dict[str, BrokerError | None]:
        return self._run(
            self._client.create_partitions(counts, timeout_ms=timeout_ms, validate_only=validate_only)
        )

    def describe_configs(
        self,
        names: Sequence[str],
        *,
        resource_type: int = 2,
        keys: Sequence[str] | None = None,
        node_id: int | None = None,
    ) -> dict[str, dict[str, ConfigEntry]]:
        return self._run(
            self._client.describe_configs(names, resource_type=resource_type, keys=keys, node_id=node_id)
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[str, Mapping[str, str | None]],
        *,
        resource_type: int = 2,
        validate_only: bool = False,
    ) -> dict[str, BrokerError | None]:
        return self._run(
            self._client.incremental_alter_configs(
                changes, resource_type=resource_type, validate_only=validate_only
            )
        )

    def describe_log_dirs(
        self, topics: Mapping[str, Sequence[int]] | None = None, *, node_ids: Sequence[int] | None = None
    ) -> dict[int, list[LogDir]]:
        return self._run(self._client.describe_log_dirs(topics, node_ids=node_ids))

    def delete_records(
        self, offsets: Mapping[TopicPartition, int], *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, int]:
        return self._run(self._client.delete_records(offsets, timeout_ms=timeout_ms))
