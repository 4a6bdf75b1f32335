"""ApiVersions (18): the API keys and version ranges this broker serves, derived from the handler registry."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse

from ..context import RequestContext

API_KEY = 18
VERSIONS = (0, 3)
IMPLEMENTED = VERSIONS


def advertised() -> list[ApiVersion]:
    from . import HANDLERS

    return [ApiVersion(key, m.VERSIONS[0], m.VERSIONS[1]) for key, m in sorted(HANDLERS.items())]


def unsupported_version_response() -> ApiVersionsResponse:
    """KIP-511: an ApiVersions version we do not serve is answered in v0 form with UNSUPPORTED_VERSION."""
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=advertised())


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=advertised())
