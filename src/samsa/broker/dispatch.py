"""Request dispatch: decode a frame, route it to its API's handler, encode the answer as response parts.

Protocol failures follow Kafka: an ApiVersions request of a version we do not serve is answered in v0 form with
UNSUPPORTED_VERSION (KIP-511) so the client can retry, without parsing its body; an API key or version we do not
serve is refused from the header's fixed start, before any body is parsed; it, an advertised version outside what
a handler implements (Produce v0-2) and a malformed request close that connection (the other connections carry
on). A fetch response's record data stays in the
segment files: the encoder leaves a region there and the network layer sends it with ``sendfile``.

Event-loop thread only.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from samsa.protocol import (
    InvalidRequestError,
    RemoteProtocolError,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    api_schema,
    decode_request,
)
from samsa.protocol.headers import write_response_header

from .context import RequestContext
from .downgrade import fit_to_version
from .handlers import HANDLERS, api_versions
from .network import ConnectionClosedByHandler, ConnectionInfo, FileRegion, ResponsePart

if TYPE_CHECKING:
    from .broker import KafkaServer

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18

Interceptor = Callable[[RequestHeader, Any], Awaitable[Any]]
"""``(header, request) -> response or None``: None lets the request's handler answer it."""


class CloseConnection(ConnectionClosedByHandler):
    """Raised to the network layer to drop one connection after a request it cannot answer."""


class FrameBuffer(bytearray):
    """An encoding buffer that records where file regions go instead of copying them in."""

    def __init__(self) -> None:
        super().__init__(b"\0\0\0\0")
        self.regions: list[tuple[int, FileRegion]] = []

    def parts(self) -> list[ResponsePart]:
        total = len(self) - 4 + sum(region.size for _, region in self.regions)
        struct.pack_into(">i", self, 0, total)
        view = memoryview(self)
        out: list[ResponsePart] = []
        start = 0
        for position, region in self.regions:
            out.append(view[start:position])
            out.append(region)
            start = position
        out.append(view[start:])
        return out


class RequestDispatcher:
    """Routes requests to handlers (see the module doc). Event-loop thread only."""

    def __init__(self, broker: KafkaServer) -> None:
        self.broker = broker
        # a test hook (samsa.embedded): consulted after decode; may delay, or return a response to answer with
        self.interceptor: Interceptor | None = None

    async def handle(self, connection: ConnectionInfo, frame: memoryview) -> Sequence[ResponsePart] | None:
        unserved = _unserved(frame)
        if unserved is not None:  # decided from the header's fixed start: the body is never parsed
            api_key, version, correlation_id = unserved
            if api_key == API_VERSIONS_KEY:
                return encode(
                    correlation_id, API_VERSIONS_KEY, 0, api_versions.unsupported_version_response()
                )
            raise CloseConnection(
                f"api key {api_key} version {version} is not served (from {connection.client_host})"
            )
        try:
            header, request = decode_request(frame, allow_trailing=True)
        except UnsupportedVersionError as exc:
            if exc.api_key == API_VERSIONS_KEY and exc.correlation_id is not None:
                return encode(
                    exc.correlation_id, API_VERSIONS_KEY, 0, api_versions.unsupported_version_response()
                )
            raise CloseConnection(f"unsupported request from {connection.client_host}: {exc}") from exc
        except InvalidRequestError as exc:
            raise CloseConnection(
                f"malformed request from {connection.client_host}: {exc} (frame starts {bytes(frame[:48]).hex()})"
            ) from exc
        except RemoteProtocolError as exc:
            raise CloseConnection(str(exc)) from exc
        module = HANDLERS.get(header.request_api_key)
        version = header.request_api_version
        if module is None or not module.VERSIONS[0] <= version <= module.VERSIONS[1]:
            if header.request_api_key == API_VERSIONS_KEY:
                return encode(
                    header.correlation_id, API_VERSIONS_KEY, 0, api_versions.unsupported_version_response()
                )
            raise CloseConnection(
                f"api key {header.request_api_key} version {version} is not served (client {header.client_id!r})"
            )
        if not module.IMPLEMENTED[0] <= version <= module.IMPLEMENTED[1]:
            raise CloseConnection(
                f"api key {header.request_api_key} version {version} is advertised for compatibility only"
            )
        response = None
        if self.interceptor is not None:
            response = await self.interceptor(header, request)
        if response is None:
            response = await module.handle(RequestContext(header, connection, self.broker), request)
        if response is None:
            return None
        return encode(
            header.correlation_id, header.request_api_key, version, fit_to_version(response, version)
        )


def _unserved(frame: memoryview) -> tuple[int, int, int] | None:
    """(api key, version, correlation id) of a request this broker does not serve, else None.

    Read from the header's fixed start, so the body of an API or version we do not serve is never parsed (a
    newer client's ApiVersions layout is unknown to us; Kafka answers it in v0 form without reading it). A frame
    too short to tell is left to the decoder, which refuses it.
    """
    if len(frame) < 8:
        return None
    api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
    module = HANDLERS.get(api_key)
    if module is not None and module.VERSIONS[0] <= version <= module.VERSIONS[1]:
        return None
    return int(api_key), int(version), int(correlation_id)


def encode(correlation_id: int, api_key: int, api_version: int, message: Any) -> list[ResponsePart]:
    out = FrameBuffer()
    write_response_header(out, ResponseHeader(correlation_id), api_key, api_version)
    api_schema(api_key).response_encoders[api_version](out, message)
    return out.parts()
