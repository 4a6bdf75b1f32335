"""Kafka's ACL check on a config resource (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs): a topic's
configs need the operation on that Topic (else TOPIC_AUTHORIZATION_FAILED), a broker's or a broker logger's on the
Cluster (else CLUSTER_AUTHORIZATION_FAILED). Other resource types are left to the handler, which refuses them."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.security.acl import AclOperation, ResourceType

from ..context import RequestContext

CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER = 2, 4, 8  # ConfigResource.Type's wire codes


def config_access(ctx: RequestContext, operation: AclOperation, resource_type: int, name: str) -> ErrorCode:
    """NONE when this request's principal may do ``operation`` (DescribeConfigs or AlterConfigs) on the config
    resource, else the error Kafka answers for that resource."""
    if resource_type == CONFIG_TOPIC:
        allowed = ctx.authorize(operation, ResourceType.TOPIC, name)
        return ErrorCode.NONE if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (CONFIG_BROKER, CONFIG_BROKER_LOGGER):
        return ErrorCode.NONE if ctx.authorize_cluster(operation) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return ErrorCode.NONE
