"""A minimal blocking Kafka client over one socket, for tests that need exact requests and timings."""

from __future__ import annotations

from tests.badinput.wire import Connection


class WireClient(Connection):
    """One connection to ``host:port``; ``call`` sends a request and returns the decoded response."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        super().__init__(int(port), client_id="wire-test", timeout=30, host=host)

    call = Connection.request
