"""Encode and decode whole frames: header plus body, for both ends of a connection.

Server side: :func:`decode_request` (a frame from :class:`~samsa.protocol.frames.FrameSplitter`) and
:func:`encode_response`. Client side: :func:`encode_request` and :func:`decode_response`. Frames passed in carry
no size prefix; frames returned carry it.

This is the one boundary where malformed input becomes :class:`~samsa.protocol.errors.RemoteProtocolError`:
whatever a peer sends, ``decode_request`` returns a request or raises a ``RemoteProtocolError``. Generated API
modules are imported on first use, so importing :mod:`samsa.protocol` stays cheap.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .api_keys import ApiKey
from .errors import (
    DecodeError,
    EncodeError,
    InvalidRequestError,
    InvalidResponseError,
    LocalProtocolError,
    UnsupportedVersionError,
)
from .headers import (
    RequestHeader,
    ResponseHeader,
    check_version,
    read_request_header,
    read_response_header,
    write_request_header,
    write_response_header,
)
from .messages._registry import APIS

Decoder = Callable[[memoryview, int], tuple[Any, int]]
Encoder = Callable[[bytearray, Any], None]
_MALFORMED = (struct.error, IndexError, ValueError, OverflowError, RecursionError)


@dataclass(frozen=True, slots=True)
class ApiSchema:
    """The generated codecs of one API: message classes and per-version encoders/decoders."""

    api_key: int
    name: str
    request_type: type
    response_type: type
    request_decoders: dict[int, Decoder]
    request_encoders: dict[int, Encoder]
    response_decoders: dict[int, Decoder]
    response_encoders: dict[int, Encoder]


_SCHEMAS: dict[int, ApiSchema] = {}


def api_schema(api_key: int) -> ApiSchema:
    """The schema of ``api_key``, importing its generated module on first use."""
    schema = _SCHEMAS.get(api_key)
    if schema is None:
        entry = APIS.get(api_key)
        if entry is None:
            raise UnsupportedVersionError(api_key, -1)
        name, module_name = entry[0], entry[1]
        module = importlib.import_module(f"{__package__}.messages.{module_name}")
        schema = _SCHEMAS[api_key] = _build_schema(api_key, name, module)
    return schema


def _build_schema(api_key: int, name: str, module: ModuleType) -> ApiSchema:
    req, resp = f"{name}Request", f"{name}Response"
    return ApiSchema(
        api_key=api_key,
        name=name,
        request_type=getattr(module, req),
        response_type=getattr(module, resp),
        request_decoders=getattr(module, f"{req.upper()}_DECODERS"),
        request_encoders=getattr(module, f"{req.upper()}_ENCODERS"),
        response_decoders=getattr(module, f"{resp.upper()}_DECODERS"),
        response_encoders=getattr(module, f"{resp.upper()}_ENCODERS"),
    )


# ---------------------------------------------------------------- server side

_PRODUCE = int(ApiKey.PRODUCE)
_CODECS: list[ModuleType] = []


def produce_codec() -> ModuleType:
    """``samsa.protocol.produce_codec``, the hand-written Produce codec, imported on first use (as the generated
    messages are, so a broker that serves no Produce loads neither)."""
    if not _CODECS:
        _CODECS.append(importlib.import_module(f"{__package__}.produce_codec"))
    return _CODECS[0]


def decode_request(
    frame: bytes | bytearray | memoryview,
    *,
    allow_trailing: bool = False,
    start: tuple[int, int, int] | None = None,
) -> tuple[RequestHeader, Any]:
    """Parse one request frame (without its size prefix) into its header and request message.

    ``allow_trailing`` ignores bytes after the body, as Kafka's own broker does (librdkafka's Metadata v12
    request carries three bytes past the fields of Kafka's schema).

    Raises :class:`UnsupportedVersionError` (with the correlation id when the header was readable) for an API
    key or version the generated code lacks, and :class:`InvalidRequestError` for anything malformed,
    including trailing bytes after the body. ``start``: the header's fixed start (api key, version,
    correlation id) when the caller has read it already, so it is not unpacked twice.
    """
    buf = memoryview(frame)
    if start is not None and start[0] == _PRODUCE:
        fast = produce_codec().decode_produce_request(buf, start)
        if fast is not None and (fast[2] == len(buf) or allow_trailing):
            return fast[0], fast[1]
    try:
        header, pos = read_request_header(buf, start)
    except UnsupportedVersionError:
        raise
    except DecodeError as exc:
        raise InvalidRequestError(f"malformed request header: {exc.reason}", offset=exc.offset) from exc
    except _MALFORMED as exc:
        raise InvalidRequestError(f"malformed request header: {exc}") from exc
    key, version = header.request_api_key, header.request_api_version
    decoder = api_schema(key).request_decoders[version]
    try:
        message, end = decoder(buf, pos)
    except DecodeError as exc:
        raise InvalidRequestError(exc.reason, key, version, exc.offset) from exc
    except _MALFORMED as exc:
        raise InvalidRequestError(f"malformed body: {exc}", key, version) from exc
    if end != len(buf) and not allow_trailing:
        raise InvalidRequestError(f"{len(buf) - end} trailing bytes after the body", key, version, end)
    return header, message


def encode_response(header: ResponseHeader, api_key: int, api_version: int, message: Any) -> bytes:
    """A response frame with its 4-byte size prefix; the header version follows from the API and version."""
    schema = _checked_schema(api_key, api_version, message, response=True)
    out = bytearray(b"\0\0\0\0")
    write_response_header(out, header, api_key, api_version)
    _encode_body(out, schema.response_encoders[api_version], message)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


# ---------------------------------------------------------------- client side


def encode_request(header: RequestHeader, message: Any) -> bytes:
    """A request frame with its size prefix; API key and version come from ``header``."""
    key, version = header.request_api_key, header.request_api_version
    schema = _checked_schema(key, version, message, response=False)
    out = bytearray(b"\0\0\0\0")
    write_request_header(out, header)
    _encode_body(out, schema.request_encoders[version], message)
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> tuple[ResponseHeader, Any]:
    """Parse one response frame (without its size prefix) for the request the caller sent."""
    schema = _checked_schema(api_key, api_version, None, response=True)
    buf = memoryview(frame)
    try:
        header, pos = read_response_header(buf, api_key, api_version)
        message, end = schema.response_decoders[api_version](buf, pos)
    except DecodeError as exc:
        raise InvalidResponseError(exc.reason, api_key, api_version, exc.offset) from exc
    except _MALFORMED as exc:
        raise InvalidResponseError(f"malformed response: {exc}", api_key, api_version) from exc
    if end != len(buf):
        raise InvalidResponseError(
            f"{len(buf) - end} trailing bytes after the body", api_key, api_version, end
        )
    return header, message


# ---------------------------------------------------------------- helpers


def _checked_schema(api_key: int, api_version: int, message: Any, response: bool) -> ApiSchema:
    try:
        check_version(api_key, api_version)
    except UnsupportedVersionError as exc:
        raise LocalProtocolError(f"no codec for api_key={api_key} version={api_version}") from exc
    schema = api_schema(api_key)
    expected = schema.response_type if response else schema.request_type
    if message is not None and type(message) is not expected:
        raise LocalProtocolError(f"expected a {expected.__name__}, got {type(message).__name__}")
    return schema


def _encode_body(out: bytearray, encoder: Encoder, message: Any) -> None:
    try:
        encoder(out, message)
    except (struct.error, TypeError, AttributeError, UnicodeEncodeError, OverflowError) as exc:
        raise EncodeError(f"cannot encode {type(message).__name__}: {exc}") from exc
