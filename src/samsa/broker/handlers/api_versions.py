"""ApiVersions (18): the API keys and version ranges this broker serves, derived from the handler registry."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse

from ..context import RequestContext
from . import HANDLERS


def advertised() -> list[ApiVersion]:
    return [ApiVersion(key, *handler.versions) for key, handler in sorted(HANDLERS.items())]


def unsupported_version_response() -> ApiVersionsResponse:
    """KIP-511: an ApiVersions version we do not serve is answered in v0 form with UNSUPPORTED_VERSION."""
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=advertised())


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=advertised())
