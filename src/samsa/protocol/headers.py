"""Request and response headers (Kafka's RequestHeader v0-v2 and ResponseHeader v0-v1).

    RequestHeader                         v0   v1   v2
    ------------------------------------  ---  ---  ---
    request_api_key      int16            x    x    x
    request_api_version  int16            x    x    x
    correlation_id       int32            x    x    x
    client_id            nullable_string       x    x     (always the int16-length form, even in v2)
    tagged_fields                                   x

    ResponseHeader                        v0   v1
    ------------------------------------  ---  ---
    correlation_id       int32            x    x
    tagged_fields                              x

Which version a message uses follows from the API's flexible versions: a flexible request uses request header
v2, others v1 (v0 only for ControlledShutdown v0); a flexible response uses response header v1, others v0.
ApiVersions responses always use header v0 (KIP-511), so a client can read the error whatever it asked for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .api_keys import ApiKey
from .errors import UnsupportedVersionError
from .messages._registry import APIS
from .primitives import (
    I16,
    I32,
    read_nullable_string,
    skip_tagged_fields,
    write_nullable_string,
)

# read once, as plain ints: on a per-request path, a member read through the enum class (about 60 ns) or compared
# as an int subclass costs more than the compare itself
_API_VERSIONS = int(ApiKey.API_VERSIONS)
_CONTROLLED_SHUTDOWN = int(ApiKey.CONTROLLED_SHUTDOWN)


@dataclass(frozen=True, slots=True)
class RequestHeader:
    request_api_key: int
    request_api_version: int
    correlation_id: int
    client_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseHeader:
    correlation_id: int


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether ``api_version`` of ``api_key`` is a flexible (KIP-482) version; unknown keys are not."""
    entry = APIS.get(api_key)
    return entry is not None and entry[4] is not None and api_version >= entry[4]


def request_header_version(api_key: int, api_version: int) -> int:
    if is_flexible(api_key, api_version):
        return 2
    if api_key == _CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == _API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def check_version(
    api_key: int, api_version: int, correlation_id: int | None = None, client_id: str | None = None
) -> None:
    """Raise UnsupportedVersionError unless the generated code has ``api_key`` at ``api_version``."""
    entry = APIS.get(api_key)
    if entry is None or not entry[2] <= api_version <= entry[3]:
        raise UnsupportedVersionError(api_key, api_version, correlation_id, client_id)


REQUEST_HEADER_START = struct.Struct(">hhi")
"""request_api_key, request_api_version, correlation_id: the fixed start of every request header."""


def read_request_header(
    buf: memoryview, start: tuple[int, int, int] | None = None
) -> tuple[RequestHeader, int]:
    """Parse a request header at the start of a frame; returns the header and where the body starts.
    ``start``: its first three fields when the caller has already read them (``REQUEST_HEADER_START``).

    The header is read field by field so that an unsupported API key or version still yields the correlation id
    (``UnsupportedVersionError.correlation_id``); an unsupported ApiVersions version is reported before its
    tagged fields are read, since the broker answers it with a v0 body whatever follows.
    """
    api_key, api_version, correlation_id = start or REQUEST_HEADER_START.unpack_from(buf)
    pos = 8
    client_id = None
    if request_header_version(api_key, api_version) >= 1:
        client_id, pos = read_nullable_string(buf, pos)
    check_version(api_key, api_version, correlation_id, client_id)
    if is_flexible(api_key, api_version):
        pos = skip_tagged_fields(buf, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def write_request_header(out: bytearray, header: RequestHeader) -> None:
    version = request_header_version(header.request_api_key, header.request_api_version)
    out += I16.pack(header.request_api_key)
    out += I16.pack(header.request_api_version)
    out += I32.pack(header.correlation_id)
    if version >= 1:
        write_nullable_string(out, header.client_id)
    if version >= 2:
        out.append(0)


def read_response_header(buf: memoryview, api_key: int, api_version: int) -> tuple[ResponseHeader, int]:
    correlation_id = I32.unpack_from(buf, 0)[0]
    pos = 4
    if response_header_version(api_key, api_version) >= 1:
        pos = skip_tagged_fields(buf, pos)
    return ResponseHeader(correlation_id), pos


def write_response_header(out: bytearray, header: ResponseHeader, api_key: int, api_version: int) -> None:
    out += I32.pack(header.correlation_id)
    if response_header_version(api_key, api_version) >= 1:
        out.append(0)
