"""SyncClient: the KafkaClient's methods as blocking calls, usable from any thread.

A private event loop runs in a daemon thread; each call is submitted to it and waited for. Thread-safe: many
threads may call one SyncClient at once (calls interleave on the loop).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from .client import KafkaClient
from .security import ClientSecurity

T = TypeVar("T")
P = ParamSpec("P")


def _blocking(
    method: Callable[Concatenate[KafkaClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncClient, P], T]:
    """``method`` of the KafkaClient as a SyncClient method: same arguments, same answer, waited for."""

    @functools.wraps(method)
    def call(self: SyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(method(self._client, *args, **kwargs))

    return call


class SyncClient:
    """A blocking :class:`KafkaClient`; ``close`` stops its loop thread."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str = "samsa",
        request_timeout_ms: int = 30000,
        isolation_level: int = 0,
        security: ClientSecurity | None = None,
    ) -> None:
        self._client = KafkaClient(
            bootstrap_servers,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            isolation_level=isolation_level,
            security=security,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="samsa-client", daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def client(self) -> KafkaClient:
        """The underlying async client (use only on this SyncClient's loop)."""
        return self._client

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine of the underlying client (``self.client``) on its loop and wait for it."""
        return self._run(coro)

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

    send = _blocking(KafkaClient.send)
    metadata = _blocking(KafkaClient.metadata)
    list_offsets = _blocking(KafkaClient.list_offsets)
    fetch = _blocking(KafkaClient.fetch)
    produce = _blocking(KafkaClient.produce)
    create_topics = _blocking(KafkaClient.create_topics)
    delete_topics = _blocking(KafkaClient.delete_topics)
    create_partitions = _blocking(KafkaClient.create_partitions)
    describe_configs = _blocking(KafkaClient.describe_configs)
    incremental_alter_configs = _blocking(KafkaClient.incremental_alter_configs)
    describe_log_dirs = _blocking(KafkaClient.describe_log_dirs)
    delete_records = _blocking(KafkaClient.delete_records)
