"""SaslAuthenticate (36): a SASL token of the mechanism SaslHandshake chose (``samsa.broker.sasl``). PLAIN takes
one token; SCRAM two (client-first, then client-final), the connection keeping its exchange between them. Success
makes the connection ``User:<name>`` and tells the session lifetime (``connections.max.reauth.ms``: past it the
dispatcher serves the connection nothing but a re-authentication, and closes it on any other request); failure
answers SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms`` and closes the connection,
with one log line. A token before the handshake is ILLEGAL_SASL_STATE. After a v0 handshake the tokens come bare
(``unwrapped``)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from samsa.protocol import ErrorCode
from samsa.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from samsa.security.scram import MECHANISMS as SCRAM_MECHANISMS
from samsa.security.scram import ScramError, ScramServer

from ..context import RequestContext
from ..network import ConnectionInfo
from ..sasl import PlainAuthenticator, SaslSettings
from ..services import BrokerServices

log = logging.getLogger(__name__)

PLAIN_FAILURE = "Authentication failed: Invalid username or password"


@dataclass(frozen=True, slots=True)
class Step:
    """One token's outcome: the answer token, whether the exchange is done, and the failure message if any."""

    token: bytes = b""
    complete: bool = True
    failure: str | None = None


async def handle(ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    connection = ctx.connection
    sasl = connection.sasl
    if sasl is None or connection.sasl_mechanism is None:
        connection.close_after_response = True
        return SaslAuthenticateResponse(
            ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake", b"", 0
        )
    step = await authenticate(connection, sasl, request.auth_bytes, ctx.services)
    if step.failure is not None:
        return SaslAuthenticateResponse(ErrorCode.SASL_AUTHENTICATION_FAILED, step.failure, b"", 0)
    return SaslAuthenticateResponse(ErrorCode.NONE, None, step.token, sasl.reauth_ms if step.complete else 0)


async def unwrapped(connection: ConnectionInfo, token: memoryview, services: BrokerServices) -> list[bytes]:
    """A bare token after a v0 SaslHandshake: the mechanism's answer as a bare frame (PLAIN's is empty, a zero
    size); on failure none (the connection closes after Kafka's delay)."""
    assert connection.sasl is not None
    step = await authenticate(connection, connection.sasl, bytes(token), services)
    if step.failure is not None:
        connection.sasl_unwrapped = False
        return []
    connection.sasl_unwrapped = not step.complete
    return [len(step.token).to_bytes(4, "big"), step.token] if step.token else [b"\x00\x00\x00\x00"]


async def authenticate(
    connection: ConnectionInfo, sasl: SaslSettings, token: bytes, services: BrokerServices
) -> Step:
    """Take one token of the chosen mechanism: on completion the connection is ``User:<name>``; on failure one
    log line, Kafka's delay, and the connection closes after the answer."""
    mechanism = connection.sasl_mechanism or "PLAIN"
    if mechanism in SCRAM_MECHANISMS:
        step, user = _scram_step(connection, mechanism, token, services)
    else:
        user = PlainAuthenticator(sasl.plain_users).authenticate(token)
        step = Step() if user is not None else Step(failure=PLAIN_FAILURE)
    if user is not None and connection.authenticated and connection.principal != f"User:{user}":
        # a re-authentication must be the same principal (KIP-368)
        step = Step(
            failure=PLAIN_FAILURE if mechanism == "PLAIN" else _generic_failure(connection, mechanism)
        )
    if step.failure is not None:
        log.info(
            "failed authentication with %s:%d on listener %s (%s): invalid credentials",
            connection.client_host,
            connection.client_port,
            connection.listener,
            mechanism,
        )
        connection.sasl_exchange = None
        await asyncio.sleep(int(services.config.get("connection.failed.authentication.delay.ms")) / 1000)
        connection.close_after_response = True
        return step
    if step.complete and user is not None:
        connection.principal = f"User:{user}"
        connection.authenticated = True
        if sasl.reauth_ms:
            connection.session_expires_at = time.monotonic() + sasl.reauth_ms / 1000
    return step


def _scram_step(
    connection: ConnectionInfo, mechanism: str, token: bytes, services: BrokerServices
) -> tuple[Step, str | None]:
    exchange = connection.sasl_exchange
    try:
        if exchange is None:
            credentials = services.scram_credentials
            exchange = ScramServer(
                SCRAM_MECHANISMS[mechanism],
                credentials.get if credentials is not None else lambda _u, _m: None,
            )
            answer = exchange.first(token)
            connection.sasl_exchange = exchange
            return Step(answer, complete=False), None
        connection.sasl_exchange = None
        return Step(exchange.final(token)), exchange.user
    except ScramError as exc:
        log.debug("SCRAM exchange with %s failed: %s", connection.client_host, exc)
        return Step(failure=_generic_failure(connection, mechanism)), None


def _generic_failure(connection: ConnectionInfo, mechanism: str) -> str:
    """Kafka's message for a mechanism's failure, naming nothing but the phase and the mechanism."""
    phase = "re-authentication" if connection.authenticated else "authentication"
    return f"Authentication failed during {phase} due to invalid credentials with SASL mechanism {mechanism}"
