"""``samsa configs --entity-type users|clients``: client quotas, as ``kafka-configs.sh`` describes and alters them
(DescribeClientQuotas, AlterClientQuotas), with Kafka's lines::

    Quota configs for the default client-id are producer_byte_rate=100000.0
    Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=4096.0
    Completed updating config for user alice.
    Completed updating default config for clients in the cluster.

Values print as Java prints a double (``1024.0``, ``1.0E7``). ``samsa configs`` runs these and reports failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import EllipsisType

import click

from samsa.client import KafkaClient

QUOTA_KEYS = ("consumer_byte_rate", "controller_mutation_rate", "producer_byte_rate", "request_percentage")
WIRE_TYPES = {"users": "user", "clients": "client-id"}
LABELS = {"users": "user-principal", "clients": "client-id"}
EXACT, DEFAULT, ANY = 0, 1, 2  # DescribeClientQuotas match types


class QuotaArgumentError(Exception):
    """A bad argument: printed on stderr alone, exit 1."""


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """``parts``: (users|clients, name) in the order given; a name None is the default, ``...`` any (describe)."""

    parts: tuple[tuple[str, str | EllipsisType | None], ...]


def choose_quota_entity(
    entity_types: Sequence[str],
    entity_names: Sequence[str],
    entity_default: bool,
    user: str | None,
    client: str | None,
    user_defaults: bool,
    client_defaults: bool,
) -> QuotaEntity | None:
    """The quota entity the arguments name; None when they name a topic or broker instead."""
    parts: list[tuple[str, str | EllipsisType | None]] = []
    if user is not None or user_defaults:
        parts.append(("users", None if user_defaults else user))
    if client is not None or client_defaults:
        parts.append(("clients", None if client_defaults else client))
    if parts:
        if entity_types:
            raise QuotaArgumentError(
                "Give either --user/--client (or their defaults) or --entity-type, not both"
            )
        return QuotaEntity(tuple(parts))
    if not any(kind in WIRE_TYPES for kind in entity_types):
        return None
    if any(kind not in WIRE_TYPES for kind in entity_types) or len(set(entity_types)) != len(entity_types):
        raise QuotaArgumentError("Only users and clients may be given together, each once")
    if len(entity_names) > len(entity_types):
        raise QuotaArgumentError("More --entity-name than --entity-type")
    names: list[str | EllipsisType | None] = list(entity_names)
    if entity_default:
        if len(names) == len(entity_types):
            raise QuotaArgumentError("--entity-default needs an --entity-type without an --entity-name")
        names.append(None)
    names += [...] * (len(entity_types) - len(names))
    parts = list(zip(entity_types, names, strict=True))
    parts.sort(key=lambda part: part[0] != "users")  # the user first, as Kafka names the entity
    return QuotaEntity(tuple(parts))


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` prints it (what kafka-configs shows)."""
    if value == 0:
        return "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "e" not in text else f"{value:.1f}"
    mantissa, exponent = f"{value:.16e}".split("e")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


def entity_text(entity: Sequence[tuple[str, str | None]]) -> str:
    """Kafka's words for an entity: ``user-principal 'alice', client-id 'app'``, ``the default client-id``."""
    words = []
    for kind, name in sorted(entity, key=lambda part: part[0] != "user"):
        label = "user-principal" if kind == "user" else kind
        words.append(f"the default {label}" if name is None else f"{label} '{name}'")
    return ", ".join(words)


async def describe_quotas(client: KafkaClient, entity: QuotaEntity) -> None:
    components: list[tuple[str, int, str | None]] = []
    for kind, name in entity.parts:
        if name is ...:
            components.append((WIRE_TYPES[kind], ANY, None))
        elif name is None:
            components.append((WIRE_TYPES[kind], DEFAULT, None))
        else:
            components.append((WIRE_TYPES[kind], EXACT, str(name)))
    found = await client.describe_client_quotas(components, strict=True)
    for described, values in found:
        shown = ", ".join(f"{key}={java_double(value)}" for key, value in sorted(values.items()))
        click.echo(f"Quota configs for {entity_text(described)} are {shown}")


async def alter_quotas(
    client: KafkaClient, entity: QuotaEntity, added: dict[str, str], deleted: Sequence[str]
) -> None:
    kinds = [kind for kind, _ in entity.parts]
    unexpected = sorted(set(added) - set(QUOTA_KEYS))
    if unexpected:
        raise QuotaArgumentError(
            f"Only quota configs can be added for '{kinds[0]}' using --bootstrap-server. "
            f"Unexpected config names: {','.join(unexpected)}"
        )
    changes: dict[str, float | None] = dict.fromkeys(deleted)
    for key, text in added.items():
        try:
            changes[key] = float(text)
        except ValueError:
            raise QuotaArgumentError(f"Invalid value {text!r} for {key}: a number is expected") from None
    wire = [(WIRE_TYPES[kind], None if name is None else str(name)) for kind, name in entity.parts]
    await client.alter_client_quotas(wire, changes)
    first_kind, first_name = entity.parts[0]
    if first_name is None:
        click.echo(f"Completed updating default config for {first_kind} in the cluster.")
    else:
        click.echo(f"Completed updating config for {first_kind[:-1]} {first_name}.")


def check_alter(entity: QuotaEntity) -> None:
    """An alter names every entity type's name or default (QuotaArgumentError otherwise)."""
    if any(name is ... for _, name in entity.parts):
        raise QuotaArgumentError("--alter needs --entity-name or --entity-default for every entity type")
