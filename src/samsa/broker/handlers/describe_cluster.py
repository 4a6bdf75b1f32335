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
    if broker.zk_broker is not None:  # cluster mode: the brokers and controller the controller last sent
        cache = broker.zk_broker.metadata
        nodes = [(n, n.address(ctx.connection.listener)) for n in cache.alive_brokers()]
        return DescribeClusterResponse(
            error_code=ErrorCode.NONE,
            endpoint_type=request.endpoint_type,
            cluster_id=broker.cluster_id,
            controller_id=cache.controller_id if cache.controller_id is not None else -1,
            brokers=[
                DescribeClusterBroker(n.broker_id, a[0], a[1], n.rack) for n, a in nodes if a is not None
            ],
        )
    host, port = broker.advertised()
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=request.endpoint_type,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[DescribeClusterBroker(broker.node_id, host, port, broker.config.get("broker.rack"))],
    )
