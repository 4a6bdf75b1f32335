"""How ``format("samsa")``'s reader and writer reach the broker: one ``SyncClient`` per task or driver, and the one
error they raise when it cannot be reached or refuses a request (named by the option that points at it).

Spark shows an error from a Python data source as the Python traceback under its own one-line header, and a
streaming query's as well after the JVM's stack; ``short_errors`` makes that traceback one frame and the error's
own line, so "no broker at kafka.bootstrap.servers=..." is the line a user reads first.

The source and the sink both stand on this module; neither imports the other's internals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    from samsa.client import SyncClient

REQUEST_TIMEOUT_MS = 10000
CONNECT_FAILED = "cannot connect to broker"  # how samsa.client words a bootstrap it could not reach

P = ParamSpec("P")
T = TypeVar("T")


class SamsaBrokerError(RuntimeError):
    """The broker could not be reached or refused a request; the message names the option or partition."""


def connect(
    bootstrap_servers: str, isolation_level: int = 0, properties: tuple[tuple[str, str], ...] = ()
) -> SyncClient:
    """A ``SyncClient`` for ``kafka.bootstrap.servers`` (connections open on first use; failures then go through
    ``broker_error``); ``isolation_level`` 1 reads and lists offsets as read_committed; ``properties``: the
    ``kafka.*`` client properties (``options.client_properties``), whose security the connections use."""
    from samsa.client import ClientSecurity, SyncClient  # executors import this; the client loads when used

    security = ClientSecurity.from_properties(dict(properties)) if properties else None
    return SyncClient(
        bootstrap_servers,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        isolation_level=isolation_level,
        security=security,
    )


def broker_error(bootstrap_servers: str, exc: Exception) -> SamsaBrokerError:
    """``exc`` from a request to ``bootstrap_servers`` as the error the reader and writer raise."""
    if CONNECT_FAILED in str(exc):
        return SamsaBrokerError(
            f"no broker answers at kafka.bootstrap.servers={bootstrap_servers} ({exc}): start one there "
            "(`samsa serve config/server.properties`) or set the option to a running broker's host:port"
        )
    return SamsaBrokerError(f"option 'kafka.bootstrap.servers' = {bootstrap_servers!r}: {exc}")


def short_errors(errors: tuple[type[Exception], ...]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Wrap a reader or planner method so an error of ``errors`` (whose message says it all) leaves it without
    the frames below it or its chained cause (module doc)."""

    def wrap(method: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return method(*args, **kwargs)
            except errors as error:
                raise error.with_traceback(None) from None

        return call

    return wrap


def short_iteration(rows: Iterator[T], errors: tuple[type[Exception], ...]) -> Iterator[T]:
    """``rows``, with an error of ``errors`` raised during iteration shortened as ``short_errors`` does."""
    try:
        yield from rows
    except errors as error:
        raise error.with_traceback(None) from None
