"""How ``format("samsa")``'s reader and writer reach the broker: one ``SyncClient`` per task or driver, and the one
error they raise when it cannot be reached or refuses a request (named by the option that points at it).

The source and the sink both stand on this module; neither imports the other's internals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from samsa.client import SyncClient

REQUEST_TIMEOUT_MS = 10000


class SamsaBrokerError(RuntimeError):
    """The broker could not be reached or refused a request; the message names the option or partition."""


def connect(bootstrap_servers: str) -> SyncClient:
    """A ``SyncClient`` for ``kafka.bootstrap.servers`` (connections open on first use; failures then go through
    ``broker_error``)."""
    from samsa.client import SyncClient  # executors import this module; the client loads only when used

    return SyncClient(bootstrap_servers, request_timeout_ms=REQUEST_TIMEOUT_MS)


def broker_error(bootstrap_servers: str, exc: Exception) -> SamsaBrokerError:
    """``exc`` from a request to ``bootstrap_servers`` as the error the reader and writer raise."""
    return SamsaBrokerError(f"option 'kafka.bootstrap.servers' = {bootstrap_servers!r}: {exc}")
