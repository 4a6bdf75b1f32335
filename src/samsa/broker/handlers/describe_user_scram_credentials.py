"""DescribeUserScramCredentials (50): Samsa keeps no SCRAM credentials yet (SASL is not served), so every user
asked for is RESOURCE_NOT_FOUND with Kafka's message and a request for all users finds none. Kafka's
``kafka-configs --entity-type users --describe`` asks for them beside the users' quotas."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)

from ..context import RequestContext


async def handle(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    results = [
        DescribeUserScramCredentialsResult(
            user=user.name,
            error_code=ErrorCode.RESOURCE_NOT_FOUND,
            error_message=f"Attempt to describe a user credential that does not exist: {user.name}",
        )
        for user in request.users or []
    ]
    return DescribeUserScramCredentialsResponse(
        error_code=ErrorCode.NONE, error_message=None, results=results
    )
