"""``samsa configs --entity-type users|clients``: client quotas and users' SCRAM credentials, as
``kafka-configs.sh`` describes and alters them (DescribeClientQuotas, AlterClientQuotas,
DescribeUserScramCredentials, AlterUserScramCredentials), with Kafka's lines::

    Quota configs for the default client-id are producer_byte_rate=100000.0
    Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=4096.0
    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192
    Completed updating config for user alice.
    Completed updating default config for clients in the cluster.

A SCRAM credential is added as ``SCRAM-SHA-256=[iterations=8192,password=alice-secret]`` (iterations 4096 when
left out): the tool salts the password itself (32 random bytes, PBKDF2) and sends only the salt and the salted
password. ``--delete-config SCRAM-SHA-256`` removes one. Quotas and credentials are not altered in one command,
and a default user has no credential (Kafka's tool refuses both).

Values print as Java prints a double (``1024.0``, ``1.0E7``). ``samsa configs`` runs these and reports failures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import EllipsisType

import click

from samsa.client import BrokerError, KafkaClient
from samsa.security.scram import MECHANISMS, ScramMechanism, mechanism_by_type

QUOTA_KEYS = ("consumer_byte_rate", "controller_mutation_rate", "producer_byte_rate", "request_percentage")
WIRE_TYPES = {"users": "user", "clients": "client-id"}
LABELS = {"users": "user-principal", "clients": "client-id"}
EXACT, DEFAULT, ANY = 0, 1, 2  # DescribeClientQuotas match types
DEFAULT_SCRAM_ITERATIONS = 4096  # kafka-configs' when a credential names none


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


async def describe_scram_credentials(client: KafkaClient, entity: QuotaEntity) -> None:
    """The SCRAM lines after a users-only describe without the default user, as Kafka's tool prints them: users
    asked for that have no credential print nothing."""
    if [kind for kind, _ in entity.parts] != ["users"] or entity.parts[0][1] is None:
        return
    name = entity.parts[0][1]
    for user, error, infos in await client.describe_user_scram_credentials(
        [] if name is ... else [str(name)]
    ):
        if error is not None:
            if error.name != "RESOURCE_NOT_FOUND":
                click.echo(
                    f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                    f"ExecutionException: org.apache.kafka.common.errors.{error.exception_name}: {error.message}"
                )
            continue
        shown = ", ".join(f"{_mechanism_name(kind)}=iterations={iterations}" for kind, iterations in infos)
        click.echo(f"SCRAM credential configs for user-principal '{user}' are {shown}")


def _mechanism_name(type_code: int) -> str:
    mechanism = mechanism_by_type(type_code)
    return mechanism.name if mechanism is not None else "UNKNOWN"


async def alter_quotas(
    client: KafkaClient, entity: QuotaEntity, added: dict[str, str], deleted: Sequence[str]
) -> None:
    """Alter a quota entity's quotas, or a user's SCRAM credentials, then print Kafka's completion line."""
    if _scram_asked(entity, added, deleted):
        user = entity.parts[0][1]
        await alter_scram_credentials(client, str(user), added, deleted)
    else:
        await _alter_quota_values(client, entity, added, deleted)
    first_kind, first_name = entity.parts[0]
    if first_name is None:
        click.echo(f"Completed updating default config for {first_kind} in the cluster.")
    else:
        click.echo(f"Completed updating config for {first_kind[:-1]} {first_name}.")


def _scram_asked(entity: QuotaEntity, added: dict[str, str], deleted: Sequence[str]) -> bool:
    """Whether the change is of SCRAM credentials (QuotaArgumentError with Kafka's words for a mix it refuses)."""
    kinds = [kind for kind, _ in entity.parts]
    scram = [key for key in [*added, *deleted] if key in MECHANISMS]
    quotas = [key for key in [*added, *deleted] if key in QUOTA_KEYS]
    for verb, keys in (("added", list(added)), ("deleted", list(deleted))):
        unknown = sorted(key for key in keys if key not in QUOTA_KEYS and key not in MECHANISMS)
        if kinds != ["users"]:
            unknown = sorted(set(unknown) | {key for key in keys if key in MECHANISMS})
            if unknown:
                raise QuotaArgumentError(
                    f"Only quota configs can be {verb} for 'clients' using --bootstrap-server. "
                    f"Unexpected config names: {','.join(unknown)}"
                )
        elif unknown:
            raise QuotaArgumentError(
                f"Only quota and SCRAM credential configs can be {verb} for 'users' using --bootstrap-server. "
                f"Unexpected config names: {','.join(unknown)}"
            )
    if not scram:
        return False
    if entity.parts[0][1] is None:
        raise QuotaArgumentError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials using "
            "--bootstrap-server."
        )
    if quotas:
        raise QuotaArgumentError(
            "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using "
            "--bootstrap-server."
        )
    return True


def scram_upsertion(mechanism: ScramMechanism, text: str) -> tuple[int, bytes, bytes]:
    """(iterations, salt, salted password) of ``[iterations=<n>,]password=<p>``, salted here as Kafka's tool
    does, so the password never leaves the client."""
    import re
    import secrets

    match = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", text, re.DOTALL)
    if match is None:
        raise QuotaArgumentError(f"Invalid credential property {mechanism.name}={text}")
    given = match[1]
    iterations = int(given) if given and given != "-1" else DEFAULT_SCRAM_ITERATIONS
    if iterations < mechanism.min_iterations:
        raise QuotaArgumentError(
            f"Iterations {iterations} is less than the minimum {mechanism.min_iterations} required for "
            f"{mechanism.name}"
        )
    salt = secrets.token_bytes(32)
    return iterations, salt, mechanism.salted_password(match[2], salt, iterations)


async def alter_scram_credentials(
    client: KafkaClient, user: str, added: dict[str, str], deleted: Sequence[str]
) -> None:
    """Upsert and delete one user's SCRAM credentials (AlterUserScramCredentials); the user's error raised."""
    upsertions = []
    for name, text in added.items():
        mechanism = MECHANISMS[name]
        upsertions.append((user, mechanism.type_code, *scram_upsertion(mechanism, text)))
    deletions = [(user, MECHANISMS[name].type_code) for name in deleted]
    results = await client.alter_user_scram_credentials(upsertions, deletions)
    for error in results.values():
        if isinstance(error, BrokerError):
            raise error


async def _alter_quota_values(
    client: KafkaClient, entity: QuotaEntity, added: dict[str, str], deleted: Sequence[str]
) -> None:
    changes: dict[str, float | None] = dict.fromkeys(deleted)
    for key, text in added.items():
        try:
            changes[key] = float(text)
        except ValueError:
            raise QuotaArgumentError(f"Invalid value {text!r} for {key}: a number is expected") from None
    wire = [(WIRE_TYPES[kind], None if name is None else str(name)) for kind, name in entity.parts]
    await client.alter_client_quotas(wire, changes)


def check_alter(entity: QuotaEntity) -> None:
    """An alter names every entity type's name or default (QuotaArgumentError otherwise)."""
    if any(name is ... for _, name in entity.parts):
        raise QuotaArgumentError("--alter needs --entity-name or --entity-default for every entity type")
