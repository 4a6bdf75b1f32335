"""DescribeLogDirs (35): each log dir with the size of every partition in it and the disk's space.

A dir holding a log that went offline (a failed append that could not be undone) answers KAFKA_STORAGE_ERROR; its
other partitions keep serving and are still listed. Describe on the cluster is needed: without it no dir is listed
and (v3+) the answer is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import shutil

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from samsa.security.acl import AclOperation

from ..context import RequestContext


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):  # Kafka: no dirs, and the error from v3
        return DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for log_dir, sizes in ctx.services.replica_manager.describe_log_dirs().items():
        by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
        for tp, size in sizes.items():
            if wanted is None or (tp.topic, tp.partition) in wanted:
                by_topic.setdefault(tp.topic, []).append(
                    DescribeLogDirsPartition(tp.partition, size, 0, False)
                )
        usage = shutil.disk_usage(log_dir)
        failed = ctx.services.replica_manager.log_dir_failed(log_dir)
        results.append(
            DescribeLogDirsResult(
                error_code=ErrorCode.KAFKA_STORAGE_ERROR if failed else ErrorCode.NONE,
                log_dir=str(log_dir.resolve()),
                topics=[DescribeLogDirsTopic(name, parts) for name, parts in by_topic.items()],
                total_bytes=usage.total,
                usable_bytes=usage.free,
            )
        )
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)
