"""Sans-IO Kafka wire protocol: primitives, headers, frames, error codes and generated message codecs.

Bytes in, messages out; no sockets, no event loop. Message classes live in ``samsa.protocol.messages.<api>``
(generated from Kafka's JSON descriptors by ``tools/generate_protocol.py``) and are imported lazily. ``ApiKey``
names every API: code names an API by its member, never by its number.
"""

from __future__ import annotations

from .api import ApiSchema, api_schema, decode_request, decode_response, encode_request, encode_response
from .api_keys import ApiKey
from .errors import (
    EncodeError,
    ErrorCode,
    FrameError,
    FrameTooLargeError,
    InvalidRequestError,
    InvalidResponseError,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    UnsupportedVersionError,
)
from .frames import DEFAULT_MAX_FRAME_SIZE, FrameSplitter
from .headers import (
    RequestHeader,
    ResponseHeader,
    is_flexible,
    request_header_version,
    response_header_version,
)

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "ApiKey",
    "ApiSchema",
    "EncodeError",
    "ErrorCode",
    "FrameError",
    "FrameSplitter",
    "FrameTooLargeError",
    "InvalidRequestError",
    "InvalidResponseError",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestHeader",
    "ResponseHeader",
    "UnsupportedVersionError",
    "api_schema",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "is_flexible",
    "request_header_version",
    "response_header_version",
]
