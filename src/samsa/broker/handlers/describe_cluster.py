"""DescribeCluster (60): the cluster id, the controller and the brokers."""

from __future__ import annotations

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    broker = ctx.broker
    host, port = broker.advertised()
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=request.endpoint_type,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[DescribeClusterBroker(broker.node_id, host, port, broker.config.get("broker.rack"))],
    )
