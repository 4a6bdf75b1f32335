"""SaslHandshake (17): the client names its SASL mechanism (``samsa.broker.sasl``); one the listener does not
enable is UNSUPPORTED_SASL_MECHANISM with the list it does (then the connection closes, as in Kafka), and a handshake on a listener without SASL, or a
second one before authenticating, is ILLEGAL_SASL_STATE; an authenticated client may start again (KIP-368).
After version 0 the client sends its token as a bare frame, not in SaslAuthenticate (``sasl_authenticate.
unwrapped``), as clients before Kafka 1.0 and some librdkafka builds still do."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

from ..context import RequestContext


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    connection = ctx.connection
    sasl = connection.sasl
    again = connection.authenticated and sasl is not None  # re-authentication (KIP-368) on a live session
    if sasl is None or (connection.sasl_mechanism is not None and not again):
        connection.close_after_response = True
        return SaslHandshakeResponse(ErrorCode.ILLEGAL_SASL_STATE, list(sasl.mechanisms) if sasl else [])
    if request.mechanism not in sasl.mechanisms:
        connection.close_after_response = True  # Kafka answers, then closes
        return SaslHandshakeResponse(ErrorCode.UNSUPPORTED_SASL_MECHANISM, list(sasl.mechanisms))
    connection.sasl_mechanism = request.mechanism
    connection.sasl_exchange = None
    connection.sasl_unwrapped = ctx.api_version == 0  # v0: the token follows as a bare frame (Kafka < 1.0)
    return SaslHandshakeResponse(ErrorCode.NONE, list(sasl.mechanisms))
