"""SaslAuthenticate (36): a SASL token of the mechanism SaslHandshake chose (``samsa.broker.sasl``). Success makes
the connection ``User:<name>`` and tells the session lifetime (``connections.max.reauth.ms``); failure answers
SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms`` and closes the connection, with
one log line. A token before the handshake is ILLEGAL_SASL_STATE. After a v0 handshake the token comes bare
(``unwrapped``)."""

from __future__ import annotations

import asyncio
import logging

from samsa.protocol import ErrorCode
from samsa.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse

from ..config import KafkaConfig
from ..context import RequestContext
from ..network import ConnectionInfo
from ..sasl import PlainAuthenticator, SaslSettings

log = logging.getLogger(__name__)


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    connection = ctx.connection
    sasl = connection.sasl
    if sasl is None or connection.sasl_mechanism is None:
        connection.close_after_response = True
        return SaslAuthenticateResponse(
            ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake", b"", 0
        )
    if not await authenticate(connection, sasl, request.auth_bytes, ctx.services.config):
        return SaslAuthenticateResponse(
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Authentication failed: Invalid username or password",
            b"",
            0,
        )
    return SaslAuthenticateResponse(ErrorCode.NONE, None, b"", sasl.reauth_ms)


async def unwrapped(connection: ConnectionInfo, token: memoryview, config: KafkaConfig) -> list[bytes]:
    """The bare token after a v0 SaslHandshake: on success an empty bare answer (a zero size), on failure none
    (the connection closes after Kafka's delay)."""
    assert connection.sasl is not None
    connection.sasl_unwrapped = False
    if await authenticate(connection, connection.sasl, bytes(token), config):
        return [b"\x00\x00\x00\x00"]
    return []


async def authenticate(
    connection: ConnectionInfo, sasl: SaslSettings, token: bytes, config: KafkaConfig
) -> bool:
    """Check ``token``: on success the connection is ``User:<name>``; on failure one log line, Kafka's delay, and
    the connection closes after the answer."""
    user = PlainAuthenticator(sasl.plain_users).authenticate(token)
    if user is not None and connection.authenticated and connection.principal != f"User:{user}":
        user = None  # a re-authentication must be the same principal (KIP-368)
    if user is None:
        log.info(
            "failed authentication with %s:%d on listener %s (%s): invalid credentials",
            connection.client_host,
            connection.client_port,
            connection.listener,
            connection.sasl_mechanism,
        )
        await asyncio.sleep(int(config.get("connection.failed.authentication.delay.ms")) / 1000)
        connection.close_after_response = True
        return False
    connection.principal = f"User:{user}"
    connection.authenticated = True
    return True
