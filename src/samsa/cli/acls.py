"""``samsa acls``: add, remove and list ACL bindings through CreateAcls/DeleteAcls/DescribeAcls, with
``kafka-acls.sh``'s flags and lines (``Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t,
patternType=LITERAL)`:`` then one tab-indented ``(principal=..., host=..., operation=..., permissionType=...)``
per entry). ``--producer`` grants Write, Describe and Create on the topics (and IdempotentWrite on the cluster with
``--idempotent``), ``--consumer`` Read and Describe on the topics and Read on the groups, as kafka-acls.sh does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from itertools import groupby

import click

from samsa.client import BrokerError, KafkaClient, KafkaError
from samsa.protocol.api_keys import ApiKey
from samsa.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from samsa.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from samsa.protocol.messages.describe_acls import DescribeAclsRequest
from samsa.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

from .command_config import command_config_option, tool_client

CLUSTER_NAME = "kafka-cluster"


def pattern_text(p: ResourcePattern) -> str:
    return f"ResourcePattern(resourceType={p.resource_type.name}, name={p.name}, patternType={p.pattern_type.name})"


def entry_text(e: AccessControlEntry) -> str:
    return f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, permissionType={e.permission.name})"


def format_bindings(header: str, bindings: Sequence[AclBinding]) -> list[str]:
    lines: list[str] = []
    for pattern, group in groupby(sorted(bindings), key=lambda b: b.pattern):
        lines.append(f"{header} `{pattern_text(pattern)}`: ")
        lines += [f" \t{entry_text(b.entry)} " for b in group]
        lines.append("")
    return lines


def resources(
    topics: Sequence[str], groups: Sequence[str], cluster: bool, txn_ids: Sequence[str], pattern: PatternType
) -> list[ResourcePattern]:
    out = [ResourcePattern(ResourceType.TOPIC, t, pattern) for t in topics]
    out += [ResourcePattern(ResourceType.GROUP, g, pattern) for g in groups]
    out += [ResourcePattern(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in txn_ids]
    if cluster:
        out.append(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    return out


def shortcut_operations(
    pattern: ResourcePattern, producer: bool, consumer: bool, idempotent: bool
) -> list[AclOperation]:
    ops: list[AclOperation] = []
    if pattern.resource_type is ResourceType.TOPIC:
        if producer:
            ops += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
        if consumer:
            ops += [AclOperation.READ, AclOperation.DESCRIBE]
    elif pattern.resource_type is ResourceType.GROUP and consumer:
        ops.append(AclOperation.READ)
    elif pattern.resource_type is ResourceType.TRANSACTIONAL_ID and producer:
        ops += [AclOperation.WRITE, AclOperation.DESCRIBE]
    elif pattern.resource_type is ResourceType.CLUSTER and producer and idempotent:
        ops.append(AclOperation.IDEMPOTENT_WRITE)
    return list(dict.fromkeys(ops))


def entries(
    operations: Sequence[AclOperation],
    allow: Sequence[str],
    deny: Sequence[str],
    allow_hosts: Sequence[str],
    deny_hosts: Sequence[str],
) -> list[AccessControlEntry]:
    out = [
        AccessControlEntry(p, h, op, AclPermissionType.ALLOW)
        for p in allow
        for h in (allow_hosts or ["*"])
        for op in operations
    ]
    out += [
        AccessControlEntry(p, h, op, AclPermissionType.DENY)
        for p in deny
        for h in (deny_hosts or ["*"])
        for op in operations
    ]
    return out


async def describe(
    client: KafkaClient, pattern: ResourcePattern | None, principal: str | None
) -> list[AclBinding]:
    request = DescribeAclsRequest(
        resource_type_filter=pattern.resource_type if pattern else ResourceType.ANY,
        resource_name_filter=pattern.name if pattern else None,
        pattern_type_filter=pattern.pattern_type if pattern else PatternType.ANY,
        principal_filter=principal,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    response = await client.send(request, api_key=ApiKey.DESCRIBE_ACLS)
    if response.error_code:
        raise BrokerError.from_code(response.error_code)
    return [
        AclBinding(
            ResourcePattern(ResourceType(r.resource_type), r.resource_name, PatternType(r.pattern_type)),
            AccessControlEntry(
                a.principal, a.host, AclOperation(a.operation), AclPermissionType(a.permission_type)
            ),
        )
        for r in response.resources
        for a in r.acls
    ]


async def add(client: KafkaClient, bindings: Sequence[AclBinding]) -> None:
    creations = [
        AclCreation(
            resource_type=b.pattern.resource_type,
            resource_name=b.pattern.name,
            resource_pattern_type=b.pattern.pattern_type,
            principal=b.entry.principal,
            host=b.entry.host,
            operation=b.entry.operation,
            permission_type=b.entry.permission,
        )
        for b in bindings
    ]
    response = await client.send(CreateAclsRequest(creations=creations), api_key=ApiKey.CREATE_ACLS)
    for result in response.results:
        if result.error_code:
            raise KafkaError(f"{BrokerError.from_code(result.error_code)}: {result.error_message or ''}")


async def remove(
    client: KafkaClient, pattern: ResourcePattern, acl_entries: Sequence[AccessControlEntry]
) -> None:
    wanted = list(acl_entries) or [AccessControlEntry("", "", AclOperation.ANY, AclPermissionType.ANY)]
    filters = [
        DeleteAclsFilter(
            resource_type_filter=pattern.resource_type,
            resource_name_filter=pattern.name,
            pattern_type_filter=pattern.pattern_type,
            principal_filter=e.principal or None,
            host_filter=e.host or None,
            operation=e.operation,
            permission_type=e.permission,
        )
        for e in wanted
    ]
    response = await client.send(DeleteAclsRequest(filters=filters), api_key=ApiKey.DELETE_ACLS)
    for result in response.filter_results:
        if result.error_code:
            raise KafkaError(f"{BrokerError.from_code(result.error_code)}: {result.error_message or ''}")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@command_config_option("--command-config", "admin client")
@click.option("--add", "add_", is_flag=True, help="Add ACLs.")
@click.option("--remove", "remove_", is_flag=True, help="Remove ACLs.")
@click.option("--list", "list_", is_flag=True, help="List ACLs (of the given resources, else all).")
@click.option("--allow-principal", "allow", multiple=True, help="Principal (User:NAME) to allow; repeatable.")
@click.option("--deny-principal", "deny", multiple=True, help="Principal (User:NAME) to deny; repeatable.")
@click.option("--principal", help="With --list: only this principal's ACLs.")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Host allowed (default *).")
@click.option("--deny-host", "deny_hosts", multiple=True, help="Host denied (default *).")
@click.option(
    "--operation", "operations", multiple=True, help="Read, Write, Create, Delete, Alter, Describe, ..."
)
@click.option("--topic", "topics", multiple=True, help="Topic resource (repeatable; * for all).")
@click.option("--group", "groups", multiple=True, help="Consumer group resource (repeatable).")
@click.option("--cluster", is_flag=True, help="The cluster resource.")
@click.option("--transactional-id", "txn_ids", multiple=True, help="Transactional id resource.")
@click.option(
    "--resource-pattern-type",
    default="literal",
    type=click.Choice(["literal", "prefixed", "any", "match"], case_sensitive=False),
    show_default=True,
)
@click.option("--producer", is_flag=True, help="Shortcut: what a producer needs.")
@click.option("--consumer", is_flag=True, help="Shortcut: what a consumer needs (with --group).")
@click.option("--idempotent", is_flag=True, help="With --producer: IdempotentWrite on the cluster too.")
@click.option("--force", is_flag=True, help="Remove without asking.")
def acls(
    bootstrap_server: str,
    add_: bool,
    remove_: bool,
    list_: bool,
    allow: tuple[str, ...],
    deny: tuple[str, ...],
    principal: str | None,
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    operations: tuple[str, ...],
    topics: tuple[str, ...],
    groups: tuple[str, ...],
    cluster: bool,
    txn_ids: tuple[str, ...],
    resource_pattern_type: str,
    producer: bool,
    consumer: bool,
    idempotent: bool,
    force: bool,
) -> None:
    """Add, remove and list ACLs (kafka-acls.sh)."""
    if [add_, remove_, list_].count(True) != 1:
        raise click.UsageError("Command must include exactly one action: --list, --add, --remove.")
    pattern_type = PatternType[resource_pattern_type.upper()]
    if add_ and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise click.UsageError(
            "A '--resource-pattern-type' value of 'any' or 'match' is not valid when adding acls."
        )
    targets = resources(topics, groups, cluster or (producer and idempotent), txn_ids, pattern_type)
    if (add_ or remove_) and not targets:
        raise click.UsageError("You must specify one of: --topic, --cluster, --group, --transactional-id")
    try:
        lines = asyncio.run(
            _run(
                bootstrap_server,
                "add" if add_ else "remove" if remove_ else "list",
                targets,
                lambda p: _entries(
                    p, operations, producer, consumer, idempotent, allow, deny, allow_hosts, deny_hosts
                ),
                principal,
                force,
            )
        )
    except (KafkaError, ValueError) as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(1) from None
    for line in lines:
        click.echo(line)


def _entries(
    pattern: ResourcePattern,
    operations: Sequence[str],
    producer: bool,
    consumer: bool,
    idempotent: bool,
    allow: Sequence[str],
    deny: Sequence[str],
    allow_hosts: Sequence[str],
    deny_hosts: Sequence[str],
) -> list[AccessControlEntry]:
    if producer or consumer:
        ops = shortcut_operations(pattern, producer, consumer, idempotent)
    else:
        ops = [AclOperation.from_kafka_name(o) for o in operations] or [AclOperation.ALL]
    return entries(ops, allow, deny, allow_hosts, deny_hosts)


async def _run(
    bootstrap: str,
    action: str,
    targets: list[ResourcePattern],
    entries_of: object,
    principal: str | None,
    force: bool,
) -> list[str]:
    assert callable(entries_of)
    lines: list[str] = []
    async with tool_client(bootstrap) as client:
        if action == "list":
            found: list[AclBinding] = []
            listed: list[ResourcePattern | None] = list(targets) or [None]
            for target in listed:
                found += await describe(client, target, principal)  # None: every ACL
            return format_bindings("Current ACLs for resource", found)
        for target in targets:
            acl_entries: list[AccessControlEntry] = entries_of(target)
            if action == "add":
                if not acl_entries:
                    continue
                lines += format_bindings(
                    "Adding ACLs for resource", [AclBinding(target, e) for e in acl_entries]
                )
                await add(client, [AclBinding(target, e) for e in acl_entries])
            else:
                if not force and not click.confirm(
                    f"Are you sure you want to remove ACLs: \n {' '.join(entry_text(e) for e in acl_entries)} \n"
                    f" from resource filter `{pattern_text(target)}`?"
                ):
                    continue
                await remove(client, target, acl_entries)
        for target in targets:
            lines += format_bindings("Current ACLs for resource", await describe(client, target, None))
    return lines
