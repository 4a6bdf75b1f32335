"""A minimal blocking Kafka client over one socket, for tests that need exact requests and timings."""

from __future__ import annotations

import socket
import struct
from typing import Any

from samsa.protocol import RequestHeader, decode_response, encode_request


class WireClient:
    """One connection; ``call`` sends a request and returns the decoded response."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.correlation_id = 0

    def call(self, api_key: int, version: int, request: Any) -> Any:
        self.correlation_id += 1
        header = RequestHeader(api_key, version, self.correlation_id, "wire-test")
        self.sock.sendall(encode_request(header, request))
        (size,) = struct.unpack(">i", self._read(4))
        response_header, response = decode_response(self._read(size), api_key, version)
        assert response_header.correlation_id == self.correlation_id
        return response

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
