"""One TCP connection to one broker: framing, correlation ids and ApiVersions negotiation.

Requests may be pipelined: each gets a fresh correlation id and a future, completed in the receiving callback as
the matching response frame arrives (no reader task: each task between the socket and the caller costs a loop turn).
Responses are received straight into the buffers they are decoded from (``samsa.framing.FrameProtocol``): a fetched
record set is a view of the bytes the kernel wrote, so a follower appends it with no user-space copy when its frame
fits a receive buffer, one when it does not. Event-loop thread only; not thread-safe.

On a secured listener (``security.ClientSecurity``) the connection is TLS from its first byte (SSL, SASL_SSL), and
on a SASL one it authenticates right after ApiVersions: SaslHandshake v1, then SaslAuthenticate with the
mechanism's tokens; a refusal is a ``BrokerError`` (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM) and the
connection is closed. When the broker gives the session a lifetime (``connections.max.reauth.ms``, KIP-368) the
connection authenticates again before the next request once most of it has passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from typing import Any

from samsa.framing import FrameProtocol
from samsa.protocol import (
    ApiKey,
    ProtocolError,
    RequestHeader,
    api_schema,
    decode_response,
    encode_request,
)
from samsa.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from samsa.protocol.messages._registry import APIS
from samsa.security.scram import MECHANISMS as SCRAM_MECHANISMS
from samsa.security.scram import ScramClient, ScramError

from .errors import BrokerError, KafkaError
from .security import ClientSecurity

_CORRELATION = struct.Struct(">i")
# Versions this client never asks for: Fetch v13+ names topics by id only.
VERSION_CAPS: dict[int, int] = {ApiKey.FETCH: 12}
REAUTH_AT = 0.85  # of the session lifetime the broker gave: authenticate again after it


class BrokerConnection:
    """A connection to ``host:port``; ``open`` connects and negotiates, ``request`` sends one message."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        request_timeout_ms: int,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = request_timeout_ms / 1000
        self.api_versions: dict[int, tuple[int, int]] = {}
        self._reader: FrameProtocol | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self._next_correlation = 0
        self._failure: KafkaError | None = None
        self.security = security
        self._reauth_at = 0.0  # time.monotonic() after which the SASL session is renewed; 0: never
        self._reauth_lock = asyncio.Lock()  # no request goes out between a renewal's SASL frames

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._writer is None or self._failure is not None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        tls = self.security is not None and self.security.uses_tls
        protocol_type = _TlsFrameProtocol if tls else FrameProtocol
        try:
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: protocol_type(DEFAULT_MAX_FRAME_SIZE, loop),
                    self.host,
                    self.port,
                    **self._tls_arguments(),
                ),
                self.timeout,
            )
        except (OSError, asyncio.TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, asyncio.TimeoutError) else str(exc) or type(exc).__name__
            raise KafkaError(f"cannot connect to broker {self.address}: {reason}") from exc
        self._reader = protocol
        self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        protocol.listen(self._frames_arrived)  # answers complete their futures as they arrive, with no task
        await self._negotiate()
        if self.security is not None and self.security.uses_sasl:
            try:
                await self._authenticate()
            except KafkaError:
                await self.close()
                raise

    def _tls_arguments(self) -> dict[str, Any]:
        context = self.security.ssl_context() if self.security is not None else None
        if context is None:
            return {}
        return {"ssl": context, "server_hostname": self.host, "ssl_handshake_timeout": self.timeout}

    async def _authenticate(self) -> None:
        """SaslHandshake, then the mechanism's tokens (module doc)."""
        from samsa.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
        from samsa.protocol.messages.sasl_handshake import SaslHandshakeRequest

        security = self.security
        assert security is not None
        if security.username is None or security.password is None:
            raise KafkaError(f"{security.protocol} to {self.address} needs a SASL username and password")
        mechanism = security.sasl_mechanism
        handshake = await self._request(SaslHandshakeRequest(mechanism=mechanism), ApiKey.SASL_HANDSHAKE, 1)
        if handshake.error_code:
            offered = ", ".join(handshake.mechanisms)
            raise BrokerError.from_code(handshake.error_code, f"{mechanism}; {self.address} offers {offered}")
        version = self.pick_version(ApiKey.SASL_AUTHENTICATE)
        exchange = _SaslExchange(mechanism, security.username, security.password)
        token: bytes | None = exchange.first()
        lifetime_ms = 0
        while token is not None:
            answer = await self._request(
                SaslAuthenticateRequest(auth_bytes=token), ApiKey.SASL_AUTHENTICATE, version
            )
            if answer.error_code:
                raise BrokerError.from_code(answer.error_code, answer.error_message)
            token = exchange.next(answer.auth_bytes)
            lifetime_ms = answer.session_lifetime_ms
        self._reauth_at = time.monotonic() + lifetime_ms * REAUTH_AT / 1000 if lifetime_ms > 0 else 0.0

    async def _negotiate(self) -> None:
        schema = api_schema(ApiKey.API_VERSIONS)
        try:
            response = await self._request(
                schema.request_type(client_software_name="samsa", client_software_version="1"),
                ApiKey.API_VERSIONS,
                3,
            )
        except BrokerError:
            response = None
        if response is None or response.error_code:
            response = await self._request(schema.request_type(), ApiKey.API_VERSIONS, 0)
        if response.error_code:
            raise BrokerError.from_code(response.error_code, f"ApiVersions from {self.address}")
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def pick_version(self, api_key: int) -> int:
        """The highest version of ``api_key`` both this client and the broker support."""
        ours = APIS.get(api_key)
        theirs = self.api_versions.get(api_key)
        if ours is None or theirs is None:
            raise KafkaError(f"broker {self.address} does not support api_key {api_key}")
        high = min(ours[3], theirs[1], VERSION_CAPS.get(api_key, ours[3]))
        if high < max(ours[2], theirs[0]):
            raise KafkaError(
                f"no common version of api_key {api_key}: client {ours[2]}-{ours[3]}, "
                f"broker {self.address} {theirs[0]}-{theirs[1]}"
            )
        return high

    async def request(
        self, message: Any, api_key: int, version: int | None = None, *, timeout_ms: int | None = None
    ) -> Any:
        """Send ``message`` and await its response (None for a Produce with acks=0)."""
        if version is None:
            version = self.pick_version(api_key)
        if self._reauth_lock.locked() or self._reauth_due():
            async with self._reauth_lock:
                if self._reauth_due():
                    await self._authenticate()
        return await self._request(message, api_key, version, timeout_ms)

    def _reauth_due(self) -> bool:
        """Whether the SASL session's renewal time has passed (never without a session lifetime)."""
        return bool(self._reauth_at) and time.monotonic() > self._reauth_at

    def send(self, message: Any, api_key: int, version: int) -> asyncio.Future[Any]:
        """``request`` without a task or a wait of its own: the request is written now and the future of its
        answer returned (cancel it to stop waiting; a late answer is then dropped). There is no wait for the
        transport's buffer to drain, so this is for a caller with one small request in flight at a time, as a
        replica fetcher: awaiting the future directly saves the loop turn a task around ``request`` costs on
        every answer. When a re-authentication is due, the future is ``request``'s task."""
        if self._reauth_lock.locked() or self._reauth_due():
            return asyncio.ensure_future(self.request(message, api_key, version))
        future = self._send(message, api_key, version, None)
        if future is None:
            raise KafkaError("send() needs a request with an answer (not a Produce with acks=0)")
        return future

    async def _request(self, message: Any, api_key: int, version: int, timeout_ms: int | None = None) -> Any:
        future = self._send(message, api_key, version, timeout_ms)
        assert self._writer is not None
        try:
            await self._writer.drain()
        except OSError as exc:
            self._fail(KafkaError(f"connection to broker {self.address} failed: {exc}"))
            raise self._failure from exc  # type: ignore[misc]
        return None if future is None else await future

    def _send(
        self, message: Any, api_key: int, version: int, timeout_ms: int | None
    ) -> asyncio.Future[Any] | None:
        """Write the request; the future of its answer, which fails with a KafkaError when none came within the
        timeout (None: a Produce with acks=0, which has no answer)."""
        if self._failure is not None:
            raise self._failure
        if self._writer is None:
            raise KafkaError(f"connection to {self.address} is not open")
        self._next_correlation = (self._next_correlation + 1) & 0x7FFFFFFF
        correlation_id = self._next_correlation
        try:
            frame = encode_request(RequestHeader(api_key, version, correlation_id, self.client_id), message)
        except ProtocolError as exc:
            raise KafkaError(f"cannot encode {type(message).__name__} v{version}: {exc}") from exc
        expects_reply = not (api_key == ApiKey.PRODUCE and getattr(message, "acks", -1) == 0)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] | None = loop.create_future() if expects_reply else None
        if future is not None:
            self._pending[correlation_id] = (future, api_key, version)
        try:
            self._writer.write(frame)
        except OSError as exc:
            self._fail(KafkaError(f"connection to broker {self.address} failed: {exc}"))
            raise self._failure from exc  # type: ignore[misc]
        if future is not None:
            # a timer rather than ``asyncio.wait_for``, whose own waiter costs one more loop turn per answer (a
            # follower's fetch loop waits for every answer)
            timeout = self.timeout if timeout_ms is None else timeout_ms / 1000
            timer = loop.call_later(timeout, self._timed_out, correlation_id, type(message).__name__, timeout)
            future.add_done_callback(lambda _: timer.cancel())
        return future

    def _timed_out(self, correlation_id: int, what: str, timeout: float) -> None:
        entry = self._pending.pop(correlation_id, None)
        if entry is not None and not entry[0].done():
            entry[0].set_exception(
                KafkaError(f"request {what} to broker {self.address} timed out after {timeout * 1000:.0f} ms")
            )

    def _frames_arrived(self) -> None:
        """The protocol's listener: every answer received is dispatched at once; the end of the stream or its
        failure fails the connection."""
        assert self._reader is not None
        try:
            while (frame := self._reader.take_frame()) is not None:
                self._dispatch(frame)
        except asyncio.IncompleteReadError:  # an EOFError too: first
            self._fail(
                KafkaError(f"connection to broker {self.address} was closed by the broker mid-response")
            )
        except EOFError:
            self._fail(KafkaError(f"connection to broker {self.address} was closed by the broker"))
        except (
            OSError,
            ProtocolError,
            struct.error,
        ) as exc:  # struct.error: a frame too short for its header
            self._fail(KafkaError(f"connection to broker {self.address} failed: {exc}"))

    def _dispatch(self, frame: memoryview) -> None:
        correlation_id = _CORRELATION.unpack_from(frame, 0)[0]
        entry = self._pending.pop(correlation_id, None)
        if entry is None:
            return  # a late reply to a request that timed out
        future, api_key, version = entry
        if future.done():
            return
        try:
            _, message = decode_response(frame, api_key, version)
        except ProtocolError as exc:
            if api_key == ApiKey.API_VERSIONS and version > 0:
                # A broker refusing our ApiVersions version answers with a v0 body.
                future.set_exception(BrokerError.from_code(35, str(exc)))
            else:
                future.set_exception(KafkaError(f"bad response from broker {self.address}: {exc}"))
            return
        future.set_result(message)

    def _fail(self, error: KafkaError) -> None:
        if self._failure is None:
            self._failure = error
        for future, _, _ in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()

    async def close(self) -> None:
        self._fail(KafkaError(f"connection to broker {self.address} was closed"))
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()


class _TlsFrameProtocol(FrameProtocol):
    """A TLS transport cannot stay half-open after the broker's close_notify (asyncio warns when asked to)."""

    def eof_received(self) -> bool | None:
        super().eof_received()
        return None


class _SaslExchange:
    """The client's tokens of one SASL mechanism: ``first()``, then ``next(server_token)`` until it is None."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self._plain = b"\0" + username.encode() + b"\0" + password.encode()
        self._scram = (
            ScramClient(SCRAM_MECHANISMS[mechanism], username, password)
            if mechanism in SCRAM_MECHANISMS
            else None
        )
        self._step = 0

    def first(self) -> bytes:
        return self._plain if self._scram is None else self._scram.first()

    def next(self, server_token: bytes) -> bytes | None:
        if self._scram is None:
            return None
        self._step += 1
        try:
            if self._step == 1:
                return self._scram.final(server_token)
            self._scram.verify(server_token)
        except ScramError as exc:
            raise KafkaError(f"SCRAM with the broker failed: {exc}") from exc
        return None
