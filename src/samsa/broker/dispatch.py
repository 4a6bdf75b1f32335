"""Request dispatch: decode a frame, route it to its API's handler, encode the answer as response parts.

Protocol failures follow Kafka: an ApiVersions request of a version we do not serve is answered in v0 form with
UNSUPPORTED_VERSION (KIP-511) so the client can retry, without parsing its body; an API key or version we do not
serve is refused from the header's fixed start, before any body is parsed; it, an advertised version outside what
a handler implements (Produce v0-2) and a malformed request close that connection (the other connections carry
on). A handler that fails on storage (``StorageError`` or ``OSError``: a full or failing disk) is answered with an
error code in every entry (KAFKA_STORAGE_ERROR; NOT_COORDINATOR for group APIs, COORDINATOR_NOT_AVAILABLE for
FindCoordinator and InitProducerId), never by dropping the connection. A fetch response's record data stays in the
segment files: the encoder leaves a region there and the network layer sends it with ``sendfile`` (a small one
with the answer's bytes, in one ``send``).

The request log is Kafka's: logger ``kafka.request.logger`` (``samsa serve --request-log`` turns it on) writes one
DEBUG line per served request with its API, version, correlation and client ids, connection, time taken, the
principal it ran as, the listener and the SASL mechanism; off, it costs one level check per request.

Event-loop thread only.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from samsa.protocol import (
    ApiKey,
    ErrorCode,
    InvalidRequestError,
    RemoteProtocolError,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    api_schema,
    decode_request,
)
from samsa.protocol.api import produce_codec
from samsa.protocol.headers import REQUEST_HEADER_START, write_response_header
from samsa.protocol.messages._registry import APIS
from samsa.protocol.primitives import records_size
from samsa.storage import StorageError

from .context import RequestContext
from .downgrade import fit_to_version
from .error_response import error_response
from .handlers import HANDLERS
from .network import ConnectionClosedByHandler, ConnectionInfo, FileRegion, ResponsePart
from .quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, QuotaManager, user_of

if TYPE_CHECKING:
    from samsa.protocol.produce_codec import RawProduce

    from .services import BrokerServices

log = logging.getLogger(__name__)
REQUEST_LOG = logging.getLogger("kafka.request.logger")  # Kafka's logger name, so its users find it

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
        if not self.regions:  # most answers: the buffer itself is the one part
            struct.pack_into(">i", self, 0, len(self) - 4)
            return [self]
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

    def __init__(self, services: BrokerServices) -> None:
        self.services = services  # what the handlers use, by name
        # a test hook (samsa.embedded): consulted after decode; may delay, or return a response to answer with
        self.interceptor: Interceptor | None = None
        # the hook's word that it has nothing to do now (the fast Produce path is then taken despite it)
        self.interceptor_idle: Callable[[], bool] | None = None

    async def handle(self, connection: ConnectionInfo, frame: memoryview) -> Sequence[ResponsePart] | None:
        logged = REQUEST_LOG.isEnabledFor(logging.DEBUG)
        begun = (
            time.perf_counter() if self.services.metrics is not None or logged else 0.0
        )  # nothing timed without metrics or the request log
        if connection.sasl_unwrapped:  # after a v0 SaslHandshake: a bare SASL token, not a request
            from .handlers.sasl_authenticate import unwrapped

            return await unwrapped(connection, frame, self.services)
        start = REQUEST_HEADER_START.unpack_from(frame) if len(frame) >= 8 else None
        handler = HANDLERS.get(start[0]) if start is not None else None
        if start is not None and (
            handler is None or not handler.accepted[0] <= start[1] <= handler.accepted[1]
        ):
            # decided from the header's fixed start, so the body of an API or version we do not serve is never
            # parsed (a newer client's ApiVersions layout is unknown to us; Kafka answers it in v0 form without
            # reading it). A frame too short to tell is left to the decoder, which refuses it
            api_key, version, correlation_id = start
            if api_key == ApiKey.API_VERSIONS:
                return encode(correlation_id, ApiKey.API_VERSIONS, 0, _unsupported_api_versions())
            raise CloseConnection(
                f"api key {api_key} version {version} is not served (from {connection.client_host})"
            )
        if (
            start is not None
            and start[0] == _PRODUCE
            and (self.interceptor is None or (self.interceptor_idle is not None and self.interceptor_idle()))
            and not logged
            and connection.authenticated
            and not connection.session_expires_at
            and self.services.authorizer is None
            and not self.services.quotas.any_active
            and handler is not None
            and handler.implemented[0] <= start[1] <= handler.implemented[1]
        ):
            raw = produce_codec().read_produce_request(frame, start)
            if raw is not None and raw.transactional_id is None:
                answer = self._produce(connection, frame, start, raw, begun)
                return answer if answer is None or isinstance(answer, list) else await answer
        try:
            header, request = decode_request(frame, allow_trailing=True, start=start)
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                return encode(exc.correlation_id, ApiKey.API_VERSIONS, 0, _unsupported_api_versions())
            raise CloseConnection(f"unsupported request from {connection.client_host}: {exc}") from exc
        except InvalidRequestError as exc:
            raise CloseConnection(
                f"malformed request from {connection.client_host}: {exc} (frame starts {bytes(frame[:48]).hex()})"
            ) from exc
        except RemoteProtocolError as exc:
            raise CloseConnection(str(exc)) from exc
        version = header.request_api_version
        if handler is None:  # no header start: the decoder refuses such a frame before this
            raise CloseConnection(f"a frame of {len(frame)} bytes from {connection.client_host}")
        if not connection.authenticated or connection.session_expires_at:
            _check_authenticated(connection, header)
        if not handler.implemented[0] <= version <= handler.implemented[1]:
            raise CloseConnection(
                f"api key {header.request_api_key} version {version} is advertised for compatibility only"
            )
        response = None
        if self.interceptor is not None:
            response = await self.interceptor(header, request)
        quotas = self.services.quotas
        started = time.perf_counter() if quotas.any_active else 0.0
        if response is None:
            module = handler.module or handler.load()
            try:
                response = await module.handle(RequestContext(header, connection, self.services), request)
            except (StorageError, OSError) as exc:
                response = _storage_failure(header, request, connection, exc)
        if logged:
            _log_request(header, connection, time.perf_counter() - begun)
        if response is None:
            return None
        if started:
            response = throttled(quotas, header, connection, request, response, len(frame), started)
        metrics = self.services.metrics
        if metrics is not None:
            metrics.request_done(APIS[header.request_api_key][0], version, time.perf_counter() - begun)
        return encode(header.correlation_id, header.request_api_key, version, response)

    def _produce(
        self,
        connection: ConnectionInfo,
        frame: memoryview,
        start: tuple[int, int, int],
        raw: RawProduce,
        begun: float,
    ) -> list[ResponsePart] | Awaitable[list[ResponsePart] | None] | None:
        """A Produce request on the fast path (``handle`` chose it: no interceptor, request log, authorizer,
        quota, SASL session or transactional id to consider): served from the codec's tuples by the handler's
        ``answer_raw`` and answered by the codec's ``produce_answer_frame``, with no request, context or answer
        dataclass and no coroutine unless acks=all waits (then what to await). A storage failure is answered as
        ``handle`` answers it, from the request decoded again."""
        produce = HANDLERS[_PRODUCE].module or HANDLERS[_PRODUCE].load()
        try:
            results = produce.answer_raw(self.services, start[1], raw.acks, raw.timeout_ms, raw.topics)
        except (StorageError, OSError) as exc:
            header, request = decode_request(frame, allow_trailing=True, start=start)
            return encode(start[2], _PRODUCE, start[1], _storage_failure(header, request, connection, exc))
        if results is None or type(results) is list:
            return self._produce_answer(start, results, begun)
        return self._produce_later(start, results, begun)

    async def _produce_later(
        self, start: tuple[int, int, int], results: Awaitable[Any], begun: float
    ) -> list[ResponsePart] | None:
        return self._produce_answer(start, await results, begun)

    def _produce_answer(
        self, start: tuple[int, int, int], results: Any, begun: float
    ) -> list[ResponsePart] | None:
        _, version, correlation_id = start
        metrics = self.services.metrics
        if metrics is not None:
            metrics.request_done(_PRODUCE_NAME, version, time.perf_counter() - begun)
        if results is None:
            return None
        produce = HANDLERS[_PRODUCE].module
        assert produce is not None
        answers = produce.answers_of(results)
        out = (
            None
            if answers is None
            else produce_codec().produce_answer_frame(correlation_id, version, answers)
        )
        if out is None:
            return encode(correlation_id, _PRODUCE, version, produce.response_of(results))
        return [out]  # an answer with no file region is one buffer


def _log_request(header: RequestHeader, connection: ConnectionInfo, seconds: float) -> None:
    REQUEST_LOG.debug(
        "Completed request:%s v%d correlationId=%d clientId=%r from connection %s (%s:%d);totalTime:%.3f,"
        "principal:%s,listener:%s,saslMechanism:%s",
        APIS[header.request_api_key][0],
        header.request_api_version,
        header.correlation_id,
        header.client_id,
        connection.connection_id,
        connection.client_host,
        connection.client_port,
        seconds * 1000,
        connection.principal,
        connection.listener,
        connection.sasl_mechanism or "-",
    )


def _check_authenticated(connection: ConnectionInfo, header: RequestHeader) -> None:
    """On a SASL listener: only the authentication APIs before a connection authenticated, and only them once its
    session expired (``_check_session``); anything else closes the connection."""
    if header.request_api_key in BEFORE_AUTHENTICATION:
        return
    if not connection.authenticated:
        raise CloseConnection(
            f"{APIS[header.request_api_key][0]} from {connection.client_host} before it authenticated on "
            f"SASL listener {connection.listener}"
        )
    if connection.session_expires_at:
        _check_session(connection, header.client_id)


def _check_session(connection: ConnectionInfo, client_id: str | None) -> None:
    """A SASL session past ``connections.max.reauth.ms`` that did not re-authenticate is closed (KIP-368)."""
    if time.monotonic() > connection.session_expires_at:
        raise CloseConnection(
            f"session of {connection.principal} (client {client_id}) from {connection.client_host} expired: it did "
            f"not re-authenticate within connections.max.reauth.ms on listener {connection.listener}"
        )


BEFORE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
"""What a connection on a SASL listener may ask before it authenticated (anything else closes it, as in Kafka)."""

CLUSTER_APIS = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS,
    }
)
"""What no client quota counts: ApiVersions, and the requests brokers and the controller send each other."""


def throttled(
    quotas: QuotaManager,
    header: RequestHeader,
    connection: ConnectionInfo,
    request: Any,
    response: Any,
    request_size: int,
    started: float,
) -> Any:
    """Count a served request against the client quotas that apply (``quotas``): a produce's bytes, a
    consumer fetch's record bytes, the time it took; over a quota, the answer carries the throttle time and the
    connection reads nothing more for that long (a throttled fetch answers no records)."""
    key = header.request_api_key
    if key in CLUSTER_APIS or (
        key == ApiKey.FETCH and max(request.replica_id, request.replica_state.replica_id) >= 0
    ):
        return response
    user, client_id = user_of(connection.principal), header.client_id or ""
    now_ms = int(time.time() * 1000)
    throttle_ms = 0
    if key == ApiKey.PRODUCE and quotas.active(PRODUCER_BYTE_RATE):
        throttle_ms = quotas.record(PRODUCER_BYTE_RATE, user, client_id, request_size, now_ms)
    elif key == ApiKey.FETCH and quotas.active(CONSUMER_BYTE_RATE):
        size = sum(
            records_size(p.records) for t in response.responses for p in t.partitions if p.records is not None
        )
        throttle_ms = quotas.record(CONSUMER_BYTE_RATE, user, client_id, size, now_ms)
        if throttle_ms:  # Kafka sends no records to a throttled consumer, and counts none
            quotas.unrecord(CONSUMER_BYTE_RATE, user, client_id, size, now_ms)
            response = type(response)(session_id=response.session_id, responses=[])
    if quotas.active(REQUEST_PERCENTAGE):
        percent_seconds = (time.perf_counter() - started) * 100
        throttle_ms = max(
            throttle_ms, quotas.record(REQUEST_PERCENTAGE, user, client_id, percent_seconds, now_ms)
        )
    if throttle_ms <= 0:
        return response
    connection.throttled_until = max(connection.throttled_until, time.monotonic() + throttle_ms / 1000)
    if hasattr(response, "throttle_time_ms"):
        response = dataclasses.replace(response, throttle_time_ms=throttle_ms)
    return response


GROUP_APIS = frozenset(
    {
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.JOIN_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.LIST_GROUPS,
        ApiKey.DELETE_GROUPS,
        ApiKey.OFFSET_DELETE,
    }
)
"""A storage failure under a group API is NOT_COORDINATOR, as Kafka's group coordinator maps it (the client looks
the coordinator up again and retries)."""
COORDINATOR_LOOKUPS = frozenset({ApiKey.FIND_COORDINATOR, ApiKey.INIT_PRODUCER_ID})
"""COORDINATOR_NOT_AVAILABLE (retriable) when the offsets topic or the producer id block cannot be written."""


def _storage_failure(header: RequestHeader, request: Any, connection: ConnectionInfo, exc: Exception) -> Any:
    """A handler failed on storage (a full or failing disk): answer every entry of the request with an error
    code instead of dropping the connection. A produce with acks=0 expects no answer: its connection closes."""
    key = header.request_api_key
    log.warning(
        "%s v%d from %s failed on storage: %s",
        APIS[key][0],
        header.request_api_version,
        connection.client_host,
        exc,
    )
    if key == ApiKey.PRODUCE and getattr(request, "acks", -1) == 0:
        raise CloseConnection(f"acks=0 produce failed on storage: {exc}") from exc
    if key in GROUP_APIS:
        error = ErrorCode.NOT_COORDINATOR
    elif key in COORDINATOR_LOOKUPS:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        error = ErrorCode.KAFKA_STORAGE_ERROR
    return error_response(key, request, error)


def _unsupported_api_versions() -> Any:
    return HANDLERS[ApiKey.API_VERSIONS].load().unsupported_version_response()


def encode(correlation_id: int, api_key: int, api_version: int, message: Any) -> list[ResponsePart]:
    """The response frame's parts: ``message`` fitted to ``api_version`` (``fit_to_version``) and encoded, a
    Produce answer of the common shape by the hand-written codec (``samsa.protocol.produce_codec``)."""
    out = FrameBuffer()
    write_response_header(out, ResponseHeader(correlation_id), api_key, api_version)
    if api_key != _PRODUCE or not produce_codec().encode_produce_response(out, message, api_version):
        api_schema(api_key).response_encoders[api_version](out, fit_to_version(message, api_version))
    return out.parts()


_PRODUCE = int(ApiKey.PRODUCE)
_PRODUCE_NAME = APIS[_PRODUCE][0]
