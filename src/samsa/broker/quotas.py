"""Client quotas, as Kafka's ``ClientQuotaManager`` applies them: byte rates for producers and consumers and a
share of the broker's request time, per user principal, per client id, or per both.

Entities and where a quota is looked up, first match winning (Kafka's order)::

    user=<user>, client-id=<client-id>        user=<default>, client-id=<client-id>      client-id=<client-id>
    user=<user>, client-id=<default>          user=<default>, client-id=<default>        client-id=<default>
    user=<user>                               user=<default>

``<default>`` (a None name) is the entity every user or client id without its own falls back to. The user is the
connection's principal name (``ANONYMOUS`` before authentication).

Keys: ``producer_byte_rate`` (bytes of produce requests per second), ``consumer_byte_rate`` (bytes of fetched
records per second), ``request_percentage`` (the time the broker spends serving the client's requests, as a
percentage of one thread), ``controller_mutation_rate`` (kept and described; Samsa's controller mutations are
not rate-limited).

Measuring, as Kafka's quota sensors do: one rate per matched entity with its default names made concrete (so a
``client-id=<default>`` quota limits every client id on its own, while a ``user=alice`` quota is shared by all of
alice's clients), summed over ``quota.window.num`` (11) samples of ``quota.window.size.seconds`` (1) and divided
by the window's elapsed time, which counts as at least 10 samples' length: a client may send 10 seconds of its
quota at once before it is slowed. A request that takes the rate over the bound is answered with a
throttle time, ``(rate - bound) / bound * window``, at most the whole window, and the connection reads nothing
more from the client for that long (Kafka's KIP-219 muting); a throttled fetch answers no records.

Not thread-safe: the event loop's thread. Time comes from the caller.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = [
    "CLIENT_ID",
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "USER",
    "Entity",
    "QuotaManager",
    "Rate",
    "entity",
    "lookup_order",
    "path_entity",
    "quotas_of",
    "user_of",
]

USER = "user"
CLIENT_ID = "client-id"
ENTITY_TYPES = (USER, CLIENT_ID)
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)
ENFORCED = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
DEFAULT_NAME = "<default>"  # the default entity's name in ZooKeeper paths
SAMPLES = 11  # quota.window.num's default
SAMPLE_MS = 1000  # quota.window.size.seconds' default, in ms

Entity = tuple[tuple[str, str | None], ...]
"""A quota entity: (type, name) pairs sorted by type, a None name for the default."""


ABSENT: object = object()
"""A component left out of an entity (``entity(user="alice")`` has no client id)."""


def entity(user: object = ABSENT, client_id: object = ABSENT) -> Entity:
    """The entity of the given components, each a name, None for its default, or ``ABSENT``."""
    parts: list[tuple[str, str | None]] = []
    if client_id is not ABSENT:
        parts.append((CLIENT_ID, client_id if isinstance(client_id, str) else None))
    if user is not ABSENT:
        parts.append((USER, user if isinstance(user, str) else None))
    return tuple(parts)


def user_of(principal: str) -> str:
    """The quota user of a principal (``User:alice`` -> ``alice``)."""
    return principal.partition(":")[2] or principal


def lookup_order(user: str, client_id: str) -> list[tuple[Entity, Entity]]:
    """(entity, sensor key) in the order Kafka looks quotas up; the sensor key is the entity with its default
    names made the request's own (what the rate is kept for)."""
    concrete_both = entity(user, client_id)
    return [
        (entity(user, client_id), concrete_both),
        (entity(user, None), concrete_both),
        (entity(user), entity(user, "")),
        (entity(None, client_id), concrete_both),
        (entity(None, None), concrete_both),
        (entity(None), entity(user, "")),
        (entity(client_id=client_id), entity("", client_id)),
        (entity(client_id=None), entity("", client_id)),
    ]


class Rate:
    """A value summed over the last ``samples`` samples of ``sample_ms``, per second (module doc)."""

    def __init__(self, samples: int = SAMPLES, sample_ms: int = SAMPLE_MS) -> None:
        self.samples, self.sample_ms = samples, sample_ms
        self._samples: deque[list[int | float]] = deque()  # [sample start ms, total]

    def record(self, value: float, now_ms: int) -> None:
        self._expire(now_ms)
        if self._samples and now_ms - self._samples[-1][0] < self.sample_ms:
            self._samples[-1][1] += value
        else:
            self._samples.append([now_ms, value])

    def window_ms(self, now_ms: int) -> int:
        """The elapsed time the total is divided by: from the oldest sample, at least ``samples - 1`` samples'
        length (one sample's with a single one)."""
        elapsed = now_ms - int(self._samples[0][0]) if self._samples else 0
        full = elapsed // self.sample_ms
        least = max(self.samples - 1, 1)
        if full < least:
            elapsed += (least - full) * self.sample_ms
        return max(elapsed, 1)

    def value(self, now_ms: int) -> float:
        self._expire(now_ms)
        return sum(float(total) for _, total in self._samples) * 1000 / self.window_ms(now_ms)

    def _expire(self, now_ms: int) -> None:
        while self._samples and now_ms - self._samples[0][0] >= self.samples * self.sample_ms:
            self._samples.popleft()


@dataclass(frozen=True, slots=True)
class _Bound:
    sensor: Entity
    bound: float


class QuotaManager:
    """The configured quotas and the rates measured against them (module doc)."""

    def __init__(self, samples: int = SAMPLES, sample_ms: int = SAMPLE_MS) -> None:
        self.samples, self.sample_ms = samples, sample_ms  # quota.window.num, quota.window.size.seconds
        self.quotas: dict[Entity, dict[str, float]] = {}
        self._active: set[str] = set()
        self._rates: dict[tuple[str, Entity], Rate] = {}

    def replace(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """Take a new set of quotas (all of them); rates measured so far are kept."""
        self.quotas = {e: dict(values) for e, values in quotas.items() if values}
        self._active = {key for values in self.quotas.values() for key in values}

    @property
    def any_active(self) -> bool:
        """Whether any quota is set (the dispatcher measures nothing otherwise)."""
        return bool(self._active)

    def active(self, key: str) -> bool:
        """Whether any entity has a quota of ``key`` (nothing is measured otherwise)."""
        return key in self._active

    def bound(self, key: str, user: str, client_id: str) -> tuple[Entity, float] | None:
        """The quota of ``key`` that applies to this user and client id, with the sensor it is measured on."""
        for candidate, sensor in lookup_order(user, client_id):
            values = self.quotas.get(candidate)
            if values is not None and key in values:
                return sensor, values[key]
        return None

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Count ``value`` against the quota of ``key`` that applies; the throttle time in ms (0: within it)."""
        found = self.bound(key, user, client_id)
        if found is None:
            return 0
        sensor, bound = found
        rate = self._rates.get((key, sensor))
        if rate is None:
            rate = self._rates[(key, sensor)] = Rate(self.samples, self.sample_ms)
        rate.record(value, now_ms)
        observed = rate.value(now_ms)
        if observed <= bound or bound <= 0:
            return 0
        window = rate.window_ms(now_ms)
        return int(min((observed - bound) / bound * window, self.samples * self.sample_ms))

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded ``value`` (a throttled fetch that sent nothing)."""
        found = self.bound(key, user, client_id)
        if found is not None and (rate := self._rates.get((key, found[0]))) is not None:
            rate.record(-value, now_ms)


def describe(
    quotas: Mapping[Entity, Mapping[str, float]],
    components: Iterable[tuple[str, int, str | None]],
    strict: bool,
) -> list[tuple[Entity, dict[str, float]]]:
    """The entities DescribeClientQuotas matches: each (entity type, match type, name) component must hold
    (match type 0: that name, 1: the default, 2: any name, the default too, as Kafka 4 matches it); ``strict``:
    no other entity types. Defaults come before names, names in order."""
    wanted = list(components)
    found: list[tuple[Entity, dict[str, float]]] = []
    for candidate, values in sorted(quotas.items(), key=lambda item: _order(item[0])):
        names = dict(candidate)
        if strict and set(names) != {kind for kind, _, _ in wanted}:
            continue
        if all(_matches(names, kind, match, name) for kind, match, name in wanted) and values:
            found.append((candidate, dict(values)))
    return found


def _matches(names: Mapping[str, str | None], kind: str, match: int, name: str | None) -> bool:
    if kind not in names:
        return False
    if match == 0:
        return names[kind] == name
    if match == 1:
        return names[kind] is None
    return True


def _order(candidate: Entity) -> tuple[tuple[str, bool, str], ...]:
    return tuple((kind, name is not None, name or "") for kind, name in candidate)


def path_entity(path: str) -> Entity | None:
    """The quota entity of a path under ``/config``; None for another kind of path."""
    parts = path.split("/")
    names: dict[str, str | None] = {}
    for kind, name in zip(parts[::2], parts[1::2], strict=False):
        if kind not in ("users", "clients") or not name:
            return None
        names[USER if kind == "users" else CLIENT_ID] = None if name == DEFAULT_NAME else unquote(name)
    if len(parts) % 2 or not names or (len(names) == 2 and parts[0] != "users"):
        return None
    return tuple(sorted(names.items()))


def quotas_of(raw: Mapping[str, Mapping[str, str]]) -> dict[Entity, dict[str, float]]:
    """Quotas as kept (entity path -> key -> value text) as the manager takes them; other paths and values
    that are no number are left out."""
    quotas: dict[Entity, dict[str, float]] = {}
    for path, values in raw.items():
        found = path_entity(path)
        if found is not None:
            quotas[found] = {key: float(value) for key, value in values.items() if _is_number(value)}
    return quotas


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
