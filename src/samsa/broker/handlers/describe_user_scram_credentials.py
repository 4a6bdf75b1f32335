"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and iterations (never salt or keys), from where
credentials are kept (``broker_configs``). Users asked by name: one without any credential is RESOURCE_NOT_FOUND,
one asked twice DUPLICATE_RESOURCE, with Kafka's messages; no names (null or empty): every user with a credential.
Needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED for the whole request).

The users come in the order Kafka's answer has them: Kafka collects them in a Java ``HashMap``, so its tools
print users in that map's iteration order (``java_hash_order``), which Samsa reproduces for the same output."""

from __future__ import annotations

from collections import Counter

from samsa.protocol import ErrorCode
from samsa.protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from samsa.security.acl import AclOperation
from samsa.security.scram import MECHANISMS, ScramCredential

from ..broker_configs import stored_scram_credentials
from ..context import RequestContext


async def handle(
    ctx: RequestContext, request: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, results=[]
        )
    by_user: dict[str, list[tuple[str, ScramCredential]]] = {}
    for (user, mechanism), credential in sorted((await stored_scram_credentials(ctx.services)).items()):
        by_user.setdefault(user, []).append((mechanism, credential))
    asked = [user.name for user in request.users or []]
    counts = Counter(asked)
    results = []
    for name in java_hash_order(list(dict.fromkeys(asked)) if asked else list(by_user)):
        if counts[name] > 1:
            results.append(_failed(name, ErrorCode.DUPLICATE_RESOURCE, _TWICE + name))
        elif name not in by_user:
            results.append(_failed(name, ErrorCode.RESOURCE_NOT_FOUND, _MISSING + name))
        else:
            infos = [CredentialInfo(MECHANISMS[m].type_code, c.iterations) for m, c in by_user[name]]
            results.append(DescribeUserScramCredentialsResult(name, ErrorCode.NONE, None, infos))
    return DescribeUserScramCredentialsResponse(
        error_code=ErrorCode.NONE, error_message=None, results=results
    )


def java_hash_order(names: list[str]) -> list[str]:
    """``names`` in the iteration order of a Java ``HashMap`` they were put into in this order (default capacity
    16 doubled past a 0.75 load; a bucket is the spread ``String.hashCode``; a bucket's entries in insertion
    order)."""
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = 0
        for unit in name.encode("utf-16-be").hex(" ", 2).split():
            h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(names, key=bucket)  # stable: a bucket keeps insertion order


_MISSING = "Attempt to describe a user credential that does not exist: "
_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


def _failed(user: str, code: ErrorCode, message: str) -> DescribeUserScramCredentialsResult:
    return DescribeUserScramCredentialsResult(user=user, error_code=code, error_message=message)
