"""ElectLeaders (43): a preferred or unclean leader election asked by an operator (cluster mode).

Served by the controller (``samsa.cluster.elections``); any other broker answers NOT_CONTROLLER for every
partition named. Per partition: UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (left out when the request named
no partitions: all of them), PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE, or NONE once this
broker's metadata shows the new leader; REQUEST_TIMED_OUT when it does not within ``TimeoutMs``. An unknown topic
or partition carries Kafka's message ("No such topic as t", "No such partition as t-9"), which
``kafka-leader-election`` prints. Alter on the cluster is needed: without it every partition named and the request
answer CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import asyncio
import time

from samsa.cluster.elections import ElectionType
from samsa.protocol import ErrorCode
from samsa.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from samsa.security.acl import AclOperation
from samsa.topic_partition import TopicPartition

from ..context import RequestContext

METADATA_POLL_S = 0.01


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    asked = (
        None
        if request.topic_partitions is None
        else [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    )
    if not ctx.authorize_cluster(AclOperation.ALTER):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _response({tp: denied for tp in asked or []}, denied)
    zk_support = ctx.services.zk_support
    if zk_support is None or not zk_support.controller.is_active:
        return _response({tp: ErrorCode.NOT_CONTROLLER for tp in asked or []}, ErrorCode.NONE)
    try:
        election_type = ElectionType(request.election_type)
    except ValueError:
        return _response({tp: ErrorCode.INVALID_REQUEST for tp in asked or []}, ErrorCode.INVALID_REQUEST)
    answers = await zk_support.controller.elections.elect_leaders(election_type, asked)
    elected = {tp: leader for tp, (error, leader) in answers.items() if error is ErrorCode.NONE}
    deadline = time.monotonic() + max(request.timeout_ms, 0) / 1000
    metadata = zk_support.metadata

    def pending() -> list[TopicPartition]:
        return [
            tp
            for tp, leader in elected.items()
            if (info := metadata.partition(tp)) is None or info.leader != leader
        ]

    while pending() and time.monotonic() < deadline:
        await asyncio.sleep(METADATA_POLL_S)
    late = set(pending())
    errors = {
        tp: (ErrorCode.REQUEST_TIMED_OUT if tp in late else error) for tp, (error, _) in answers.items()
    }
    messages = {
        tp: _unknown(tp, bool(metadata.partitions_of(tp.topic)))
        for tp, error in errors.items()
        if error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    return _response(errors, ErrorCode.NONE, messages)


def _unknown(tp: TopicPartition, topic_exists: bool) -> str:
    if topic_exists:
        return f"No such partition as {tp.topic}-{tp.partition}"
    return f"No such topic as {tp.topic}"


def _response(
    errors: dict[TopicPartition, ErrorCode],
    top: ErrorCode,
    messages: dict[TopicPartition, str] | None = None,
) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = {}
    for tp, error in sorted(errors.items()):
        message = (messages or {}).get(tp)
        by_topic.setdefault(tp.topic, []).append(
            PartitionResult(partition_id=tp.partition, error_code=error, error_message=message)
        )
    return ElectLeadersResponse(
        error_code=top,
        replica_election_results=[
            ReplicaElectionResult(topic=t, partition_result=r) for t, r in by_topic.items()
        ],
    )
