"""AlterUserScramCredentials (51): upsert (from the salt and salted password a client computed; the broker keeps
salt, StoredKey, ServerKey and iterations, never a password) and delete users' SCRAM credentials, checked as
Kafka's controller checks them, one result per user:

- an empty user name: UNACCEPTABLE_CREDENTIAL "Username must not be empty";
- a mechanism that is neither SCRAM-SHA-256 (1) nor SCRAM-SHA-512 (2): UNSUPPORTED_SASL_MECHANISM;
- iterations under the mechanism's 4096 or over 16384: UNACCEPTABLE_CREDENTIAL "Too few/many iterations";
- a user named twice in the request (upserted or deleted, any mechanism): DUPLICATE_RESOURCE;
- deleting a credential the user does not have: RESOURCE_NOT_FOUND.

A user that fails changes nothing; the others are kept where credentials live (``broker_configs``: ZooKeeper's
``/config/users/<user>`` with a change notification, so every broker takes them; the single broker's store) and
apply at once. Needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every user)."""

from __future__ import annotations

from dataclasses import dataclass

from samsa.protocol import ErrorCode
from samsa.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from samsa.security.acl import AclOperation
from samsa.security.scram import MAX_ITERATIONS, ScramCredential, mechanism_by_type

from ..broker_configs import store_scram_credentials, stored_scram_credentials
from ..context import RequestContext

Failure = tuple[ErrorCode, str]


@dataclass(frozen=True, slots=True)
class Change:
    """A user's credential for a mechanism set (None: deleted)."""

    mechanism: str
    credential: ScramCredential | None


_TWICE = "A user credential cannot be altered twice in the same request"


async def handle(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    if not ctx.authorize_cluster(AclOperation.ALTER):
        failed = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "")
        return AlterUserScramCredentialsResponse(results=[_result(name, failed) for name in names])
    errors: dict[str, Failure] = {}
    changes: dict[str, dict[str, ScramCredential | None]] = {}
    stored = await stored_scram_credentials(ctx.services)
    items: list[ScramCredentialDeletion | ScramCredentialUpsertion] = [
        *request.deletions,
        *request.upsertions,
    ]
    for item in items:
        if item.name in errors:
            continue
        if item.name in changes:
            errors[item.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            del changes[item.name]
            continue
        change = _change(item, stored)
        if isinstance(change, Change):
            changes[item.name] = {change.mechanism: change.credential}
        else:
            errors[item.name] = change
    for user, user_changes in changes.items():
        await store_scram_credentials(ctx.services, user, user_changes)
    results = [_result(user, None) for user in changes] + [_result(u, e) for u, e in errors.items()]
    return AlterUserScramCredentialsResponse(results=results)


def _change(
    item: ScramCredentialDeletion | ScramCredentialUpsertion,
    stored: dict[tuple[str, str], ScramCredential],
) -> Failure | Change:
    """What one deletion or upsertion sets for its user's mechanism, or why it cannot."""
    if not item.name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    mechanism = mechanism_by_type(item.mechanism)
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if isinstance(item, ScramCredentialDeletion):
        if (item.name, mechanism.name) not in stored:
            return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return Change(mechanism.name, None)
    if item.iterations < mechanism.min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if item.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    credential = ScramCredential.from_salted_password(
        mechanism, item.salt, item.salted_password, item.iterations
    )
    return Change(mechanism.name, credential)


def _result(user: str, failure: Failure | None) -> AlterUserScramCredentialsResult:
    if failure is None:
        return AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE, error_message=None)
    return AlterUserScramCredentialsResult(user=user, error_code=failure[0], error_message=failure[1])
