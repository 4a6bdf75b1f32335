"""``samsa configs``: describe and alter topic and broker configs, like Kafka's ``kafka-configs.sh``.

Talks to any Kafka-protocol broker through :mod:`samsa.client`: DescribeConfigs (with synonyms) to describe and
IncrementalAlterConfigs to alter (AlterConfigs, with the entity's whole set of dynamic configs, on a broker too old
for it). Output lines follow Kafka's tool::

    Dynamic configs for topic <name> are:              (All configs ... with --all)
      <key>=<value> sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:<key>=<value>, DEFAULT_CONFIG:<broker key>=<v>}
    Default configs for brokers in the cluster are:     (--entity-type brokers --entity-default)
    Completed updating config for topic <name>.
    Completed updating default config for brokers in the cluster.

Without ``--all`` only the entity's own dynamic configs are listed (a topic's overrides; a broker's dynamic
configs). Without ``--entity-name`` every topic, or every broker and then the cluster default, is described.
``--add-config`` takes ``k1=v1,k2=[a,b],k3=v3`` (square brackets keep a list value's commas), ``--add-config-file``
a properties file.

Users and clients are client quotas (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate``), through DescribeClientQuotas and AlterClientQuotas, printed as Kafka's tool prints
them::

    Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=4096.0
    Completed updating config for client app.

Two entity types (``--entity-type users --entity-name alice --entity-type clients --entity-name app``) name a
user's quota for one client; the names go to the types in order, and ``--entity-default`` to the type left
without one (``--user-defaults``/``--client-defaults`` say which).

Bad arguments print their message on stderr, exit 1; a failed broker call prints
``Error while executing config command: <the broker's message>`` on stderr, exit 1.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click

from samsa.client import BrokerError, ConfigEntry, KafkaClient, KafkaError
from samsa.protocol import ApiKey

from .command_config import command_config_option, tool_client
from .quota_configs import (
    QuotaArgumentError,
    alter_quotas,
    check_alter,
    choose_quota_entity,
    describe_quotas,
    describe_scram_credentials,
)

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
# Kafka's ConfigEntry.ConfigSource names, by DescribeConfigs' config_source
SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
}
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER = 1, 2, 3
ENTITY_TYPES = ("topics", "brokers", "users", "clients")
DEFAULT_ENTITY = ""  # the cluster-wide default broker, as Kafka names it on the wire


class ArgumentError(Exception):
    """A bad argument: printed on stderr alone, exit 1."""


@dataclass(frozen=True, slots=True)
class Entity:
    """What the command acts on: ``kind`` is topics or brokers; ``name`` None means every one of them."""

    kind: str
    name: str | None

    @property
    def resource_type(self) -> int:
        return TOPIC_RESOURCE if self.kind == "topics" else BROKER_RESOURCE

    @property
    def singular(self) -> str:
        return self.kind[:-1]


def split_configs(text: str) -> dict[str, str]:
    """``k1=v1,k2=[a,b]`` as a dict; brackets keep a list value's commas and are dropped."""
    configs: dict[str, str] = {}
    for item in re.split(r",(?![^\[]*\])", text):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ArgumentError(f"Invalid config {item.strip()!r}: every config to add must be key=value")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


def read_config_file(path: str) -> dict[str, str]:
    """A properties file's ``key=value`` lines (``#`` and ``!`` start comments)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ArgumentError(f"Cannot read {path}: {exc.strerror}") from None
    configs: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        parts = re.split(r"\s*[=:]\s*", line, maxsplit=1)
        if len(parts) != 2:
            raise ArgumentError(f"Invalid line in {path}: {line!r} is not key=value")
        configs[parts[0]] = parts[1]
    return configs


def config_line(entry: ConfigEntry) -> str:
    synonyms = ", ".join(
        f"{SOURCE_NAMES.get(s.source, s.source)}:{s.name}={_shown(s.value)}" for s in entry.synonyms
    )
    sensitive = "true" if entry.is_sensitive else "false"
    return f"  {entry.name}={_shown(entry.value)} sensitive={sensitive} synonyms={{{synonyms}}}"


def _shown(value: str | None) -> str:
    return "null" if value is None else value


async def entity_names(client: KafkaClient, entity: Entity) -> list[str]:
    """The names to describe: the one given, or every topic, or every broker then the cluster default."""
    if entity.name is not None:
        return [entity.name]
    cluster = await client.metadata()
    if entity.kind == "topics":
        return sorted(cluster.topics)
    return [*map(str, sorted(cluster.brokers)), DEFAULT_ENTITY]


def source_filter(entity: Entity, name: str) -> int:
    """The source of an entity's own dynamic configs, which ``--describe`` without ``--all`` lists."""
    if entity.kind == "topics":
        return DYNAMIC_TOPIC
    return DYNAMIC_DEFAULT_BROKER if name == DEFAULT_ENTITY else DYNAMIC_BROKER


async def describe_entities(client: KafkaClient, entity: Entity, describe_all: bool) -> None:
    for name in await entity_names(client, entity):
        if entity.kind == "brokers" and name != DEFAULT_ENTITY and not name.isdigit():
            raise ArgumentError(f"The entity name for brokers must be a broker id, not {name!r}")
        if name == DEFAULT_ENTITY:
            click.echo("Default configs for brokers in the cluster are:")
        else:
            click.echo(f"{'All' if describe_all else 'Dynamic'} configs for {entity.singular} {name} are:")
        configs = await client.describe_configs(
            [name], resource_type=entity.resource_type, include_synonyms=True
        )
        wanted = source_filter(entity, name)
        for entry in sorted(configs.get(name, {}).values(), key=lambda e: e.name):
            if describe_all or entry.source == wanted:
                click.echo(config_line(entry))


async def alter_entity(
    client: KafkaClient, entity: Entity, added: dict[str, str], deleted: list[str]
) -> None:
    assert entity.name is not None
    incremental = await client.supports(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    current: dict[str, str] = {}
    if deleted or not incremental:
        described = await client.describe_configs([entity.name], resource_type=entity.resource_type)
        wanted = source_filter(entity, entity.name)
        current = {
            e.name: e.value or "" for e in described.get(entity.name, {}).values() if e.source == wanted
        }
        missing = [key for key in deleted if key not in current]
        if missing:
            raise ArgumentError(f"Invalid config(s): {','.join(missing)} (not set on this {entity.singular})")
    if incremental:
        changes: dict[str, str | None] = {**added, **dict.fromkeys(deleted)}
        alter = client.incremental_alter_configs({entity.name: changes}, resource_type=entity.resource_type)
    else:  # an older broker: AlterConfigs replaces the entity's whole set of dynamic configs
        whole = {k: v for k, v in {**current, **added}.items() if k not in deleted}
        alter = client.alter_configs({entity.name: whole}, resource_type=entity.resource_type)
    error = (await alter)[entity.name]
    if error is not None:
        raise error
    if entity.name == DEFAULT_ENTITY:
        click.echo(f"Completed updating default config for {entity.kind} in the cluster.")
    else:
        click.echo(f"Completed updating config for {entity.singular} {entity.name}.")


def choose_entity(
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    topic: str | None,
    broker: str | None,
) -> Entity:
    """The entity from ``--entity-type``/``--entity-name``/``--entity-default`` or the ``--topic``/``--broker``
    shorthands."""
    if topic is not None or broker is not None:
        if entity_type is not None or entity_name is not None or (topic is not None and broker is not None):
            raise ArgumentError("Give either --topic, --broker or --entity-type/--entity-name, not several")
        return Entity("topics", topic) if topic is not None else Entity("brokers", broker)
    if entity_type is None:
        raise ArgumentError("--entity-type must be specified (topics, brokers, users or clients)")
    if entity_name is not None and entity_default:
        raise ArgumentError("--entity-name and --entity-default cannot both be given")
    if entity_default:
        if entity_type != "brokers":
            raise ArgumentError(f"--entity-default applies to brokers only, not {entity_type}")
        return Entity(entity_type, DEFAULT_ENTITY)
    return Entity(entity_type, entity_name)


def changes_asked(
    add_config: str | None, add_config_file: str | None, delete_config: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    if add_config is not None and add_config_file is not None:
        raise ArgumentError("Give --add-config or --add-config-file, not both")
    added = split_configs(add_config) if add_config is not None else {}
    if add_config_file is not None:
        added = read_config_file(add_config_file)
    deleted = [key.strip() for item in delete_config for key in item.split(",") if key.strip()]
    if not added and not deleted:
        raise ArgumentError(
            "--alter needs at least one of --add-config, --add-config-file or --delete-config"
        )
    both = sorted(set(added) & set(deleted))
    if both:
        raise ArgumentError(f"Config(s) {','.join(both)} cannot be both added and deleted")
    return added, deleted


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The Kafka server(s) to connect to, host:port[,host:port]."
)
@command_config_option("--command-config", "admin client")
@click.option(
    "--describe", is_flag=True, help="List the configs of the entity (its dynamic ones; all with --all)."
)
@click.option("--alter", is_flag=True, help="Add or delete configs of the entity.")
@click.option(
    "--all", "describe_all", is_flag=True, help="With --describe: every config, not only dynamic ones."
)
@click.option(
    "--entity-type",
    type=click.Choice(ENTITY_TYPES),
    multiple=True,
    help="topics, brokers, users or clients (users and clients together: a user's quotas for one client).",
)
@click.option(
    "--entity-name",
    multiple=True,
    help="The topic's name, the broker's id, the user or the client id (one per --entity-type, in order); "
    "without it --describe lists all.",
)
@click.option(
    "--entity-default",
    is_flag=True,
    help="The default broker configs, or the default user's or client's quotas.",
)
@click.option("--user", help="Shorthand for --entity-type users --entity-name <user>.")
@click.option("--client", help="Shorthand for --entity-type clients --entity-name <client id>.")
@click.option("--user-defaults", is_flag=True, help="Shorthand for --entity-type users --entity-default.")
@click.option("--client-defaults", is_flag=True, help="Shorthand for --entity-type clients --entity-default.")
@click.option("--topic", help="Shorthand for --entity-type topics --entity-name <topic>.")
@click.option("--broker", help="Shorthand for --entity-type brokers --entity-name <id>.")
@click.option("--add-config", help="Configs to set: k1=v1,k2=[v1,v2],k3=v3 (brackets keep list commas).")
@click.option("--add-config-file", help="A properties file of configs to set.")
@click.option("--delete-config", multiple=True, help="Config keys to remove: k1,k2 (repeatable).")
def configs(
    bootstrap_server: str,
    describe: bool,
    alter: bool,
    describe_all: bool,
    entity_type: tuple[str, ...],
    entity_name: tuple[str, ...],
    entity_default: bool,
    user: str | None,
    client: str | None,
    user_defaults: bool,
    client_defaults: bool,
    topic: str | None,
    broker: str | None,
    add_config: str | None,
    add_config_file: str | None,
    delete_config: tuple[str, ...],
) -> None:
    """Describe or change topic and broker configs and client quotas (like kafka-configs.sh)."""
    try:
        if describe == alter:
            raise ArgumentError("Command must include exactly one action: --describe or --alter")
        quota_entity = choose_quota_entity(
            entity_type, entity_name, entity_default, user, client, user_defaults, client_defaults
        )
    except (ArgumentError, QuotaArgumentError) as exc:
        fail(str(exc))
    if quota_entity is not None:
        try:
            if alter:
                check_alter(quota_entity)
            added, deleted = changes_asked(add_config, add_config_file, delete_config) if alter else ({}, [])
        except (ArgumentError, QuotaArgumentError) as exc:
            fail(str(exc))

        async def on_quotas(client: KafkaClient) -> None:
            assert quota_entity is not None
            if describe:
                await describe_quotas(client, quota_entity)
                await describe_scram_credentials(client, quota_entity)
            else:
                await alter_quotas(client, quota_entity, added, deleted)

        run_with_client(bootstrap_server, on_quotas)
        return
    try:
        if len(entity_type) > 1 or len(entity_name) > 1:
            raise ArgumentError("Only users and clients take two entity types (a user's quotas for a client)")
        entity = choose_entity(
            entity_type[0] if entity_type else None,
            entity_name[0] if entity_name else None,
            entity_default,
            topic,
            broker,
        )
        if alter and entity.name is None:
            raise ArgumentError(
                f"--alter needs --entity-name{' or --entity-default' * (entity.kind == 'brokers')}"
            )
        added, deleted = changes_asked(add_config, add_config_file, delete_config) if alter else ({}, [])
    except ArgumentError as exc:
        fail(str(exc))
    if describe_all and not describe:
        fail("--all applies to --describe only")

    async def on_configs(client: KafkaClient) -> None:
        if describe:
            await describe_entities(client, entity, describe_all)
        else:
            await alter_entity(client, entity, added, deleted)

    run_with_client(bootstrap_server, on_configs)


def run_with_client(bootstrap_server: str, action: Callable[[KafkaClient], Awaitable[None]]) -> None:
    """Run ``action`` with a client of ``bootstrap_server``; a bad argument or a failed call is one line on
    stderr, exit 1."""

    async def run() -> None:
        async with tool_client(bootstrap_server, client_id="samsa-configs") as client:
            await action(client)

    try:
        asyncio.run(run())
    except (ArgumentError, QuotaArgumentError) as exc:
        fail(str(exc))
    except KafkaError as exc:
        message = exc.message or exc.name if isinstance(exc, BrokerError) else str(exc)
        fail(f"Error while executing config command: {message}")


def fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)
