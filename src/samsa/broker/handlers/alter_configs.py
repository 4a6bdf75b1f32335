"""AlterConfigs (33): replace a topic's whole set of overrides (keys not given go back to their defaults);
AlterConfigs on the topic (or the cluster, for a broker) is needed (``_config_acls``)."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext
from ..topic_configs import ResourceType, replace_topic_overrides
from ._config_acls import config_access


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    responses = []
    for resource in request.resources:
        code: ErrorCode
        message: str | None
        denied = config_access(
            ctx, AclOperation.ALTER_CONFIGS, resource.resource_type, resource.resource_name
        )
        if denied is not ErrorCode.NONE:
            code, message = denied, "Authorization failed."
        elif resource.resource_type != ResourceType.TOPIC:
            code, message = (
                ErrorCode.INVALID_REQUEST,
                "only topic configurations can be altered on this broker",
            )
        else:
            overrides = {c.name: c.value for c in resource.configs if c.value is not None}
            code, message = await replace_topic_overrides(
                ctx.services, resource.resource_name, overrides, validate_only=request.validate_only
            )
        responses.append(
            AlterConfigsResourceResponse(code, message, resource.resource_type, resource.resource_name)
        )
    return AlterConfigsResponse(responses=responses)
