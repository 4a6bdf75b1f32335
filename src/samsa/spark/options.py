"""The options of ``format("samsa")``, named and valued as Spark's Kafka connector names them.

Spark hands a data source its options lower-cased with string values; ``SourceOptions.parse`` validates them once,
on the driver, and every error names the option at fault.

Offset JSON (the connector's form, also what the streaming checkpoint holds):

    {"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}      -2 = earliest, -1 = latest

Checkpointed offsets are the next offset to read per partition, keys sorted (Spark compares offsets as JSON text).

Security: as Spark's connector hands every ``kafka.``-prefixed option to its Kafka clients, the reader and writer
connect with those options' client properties (``client_properties``): ``kafka.security.protocol``,
``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location`` with
``kafka.ssl.truststore.type=PEM`` (``samsa.client.security`` lists them all); checked once on the driver.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

EARLIEST = -2
LATEST = -1


class SamsaOptionError(ValueError):
    """An option is missing, unknown in this context or malformed; the message names it."""


PartitionOffsets = dict[tuple[str, int], int]
ClientProperties = tuple[tuple[str, str], ...]
"""The ``kafka.*`` options without their prefix, as Kafka client properties (picklable, for the executors)."""


def client_properties(options: Mapping[str, str]) -> ClientProperties:
    """The Kafka client properties of the ``kafka.*`` options (module doc); a SamsaOptionError names a security
    option the client cannot connect with."""
    from samsa.client.security import ClientSecurity, SecurityConfigError

    props = {
        key[len("kafka.") :]: str(value)
        for key, value in options.items()
        if key.startswith("kafka.") and key != "kafka.bootstrap.servers"
    }
    try:
        ClientSecurity.from_properties(props).ssl_context()
    except SecurityConfigError as exc:
        raise SamsaOptionError(
            f"options kafka.*: {exc} (the option is the key with kafka. before it)"
        ) from None
    return tuple(sorted(props.items()))


def parse_partition_json(option: str, text: str, *, allow_negative: bool = True) -> PartitionOffsets:
    """``{"topic": {"0": n}}`` into ``{(topic, 0): n}``; a SamsaOptionError names ``option`` otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SamsaOptionError(
            f"option {option!r}: malformed JSON ({exc.msg} at char {exc.pos}): {text!r}"
        ) from None
    if not isinstance(data, dict):
        raise SamsaOptionError(
            f'option {option!r}: expected a JSON object {{"topic": {{"0": n}}}}, got {text!r}'
        )
    out: PartitionOffsets = {}
    for topic, parts in data.items():
        if not isinstance(parts, dict):
            raise SamsaOptionError(
                f"option {option!r}: topic {topic!r} must map partitions to numbers, got {parts!r}"
            )
        for part, value in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise SamsaOptionError(
                    f"option {option!r}: partition {part!r} of topic {topic!r} is not an integer"
                ) from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise SamsaOptionError(
                    f"option {option!r}: {topic}-{partition} has a non-integer value {value!r}"
                )
            if value < 0 and not allow_negative:
                raise SamsaOptionError(f"option {option!r}: {topic}-{partition} has a negative value {value}")
            out[(topic, partition)] = value
    return out


def parse_assign(text: str) -> list[tuple[str, int]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SamsaOptionError(f"option 'assign': malformed JSON ({exc.msg}): {text!r}") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in v)
        for v in data.values()
    ):
        raise SamsaOptionError(f"option 'assign': expected {{\"topic\": [0, 1]}}, got {text!r}")
    return sorted((t, p) for t, parts in data.items() for p in parts)


def offsets_json(offsets: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """The checkpoint form: topics sorted, partitions sorted numerically (as strings)."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return out


def offsets_from_json(data: Mapping[str, Any]) -> PartitionOffsets:
    return {(topic, int(p)): int(v) for topic, parts in data.items() for p, v in parts.items()}


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    value = str(raw).strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise SamsaOptionError(f"option {name!r} must be true or false, got {raw!r}")


def _int(options: Mapping[str, str], name: str, *, minimum: int = 1) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(str(raw))
    except ValueError:
        raise SamsaOptionError(f"option {name!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SamsaOptionError(f"option {name!r} must be >= {minimum}, got {value}")
    return value


@dataclass(frozen=True)
class Subscription:
    """Which partitions a query reads: exactly one of ``subscribe``, ``subscribePattern`` and ``assign``."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return any(t == topic for t, _ in self.assigned)
        return topic in self.topics


def parse_subscription(options: Mapping[str, str], *, required: bool = True) -> Subscription | None:
    given = [n for n in ("subscribe", "subscribePattern", "assign") if options.get(n.lower()) is not None]
    if len(given) > 1:
        raise SamsaOptionError(
            f"only one of 'subscribe', 'subscribePattern' and 'assign' may be set, got {given}"
        )
    if not given:
        if required:
            raise SamsaOptionError(
                "one of the options 'subscribe', 'subscribePattern' or 'assign' is required"
            )
        return None
    name = given[0]
    raw = str(options[name.lower()])
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise SamsaOptionError(f"option 'subscribe' names no topic: {raw!r}")
        return Subscription(topics=topics)
    if name == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise SamsaOptionError(
                f"option 'subscribePattern' is not a valid regex ({exc}): {raw!r}"
            ) from None
        return Subscription(pattern=raw)
    return Subscription(assigned=tuple(parse_assign(raw)))


@dataclass(frozen=True)
class StartSpec:
    """Where reading starts (or ends): ``earliest``/``latest``, per-partition offsets, or timestamps."""

    mode: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: PartitionOffsets = field(default_factory=dict)
    timestamp: int | None = None


def _position(
    options: Mapping[str, str], prefix: str, default: str, *, batch: bool, ending: bool
) -> StartSpec:
    ts_all = options.get(f"{prefix}timestamp")
    ts_each = options.get(f"{prefix}offsetsbytimestamp")
    name = f"{prefix}Timestamp"
    if ts_all is not None:
        try:
            return StartSpec("timestamp", timestamp=int(str(ts_all)))
        except ValueError:
            raise SamsaOptionError(
                f"option {name!r} must be milliseconds since the epoch, got {ts_all!r}"
            ) from None
    if ts_each is not None:
        return StartSpec(
            "timestamps", offsets=parse_partition_json(f"{prefix}OffsetsByTimestamp", str(ts_each))
        )
    option = f"{prefix}Offsets"
    raw = str(options.get(option.lower(), default)).strip()
    if raw in ("earliest", "latest"):
        if batch and not ending and raw == "latest":
            raise SamsaOptionError("option 'startingOffsets' cannot be 'latest' for a batch query")
        if ending and raw == "earliest":
            raise SamsaOptionError("option 'endingOffsets' cannot be 'earliest'")
        return StartSpec(raw)
    offsets = parse_partition_json(option, raw)
    for tp, value in offsets.items():
        if value < EARLIEST:
            raise SamsaOptionError(f"option {option!r}: {tp[0]}-{tp[1]} has invalid offset {value}")
        if ending and value == EARLIEST:
            raise SamsaOptionError(f"option {option!r}: {tp[0]}-{tp[1]} cannot end at earliest (-2)")
        if batch and not ending and value == LATEST:
            raise SamsaOptionError(
                f"option {option!r}: {tp[0]}-{tp[1]} cannot start at latest (-1) in a batch query"
            )
    return StartSpec("offsets", offsets=offsets)


@dataclass(frozen=True)
class SourceOptions:
    """Validated source options (see the module doc)."""

    bootstrap_servers: str
    subscription: Subscription
    starting: StartSpec
    ending: StartSpec
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    poll_timeout_ms: int = 120000
    isolation_level: int = 0  # kafka.isolation.level: 0 read_uncommitted (Spark's default), 1 read_committed
    client_properties: ClientProperties = ()  # kafka.*: security (module doc)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, batch: bool) -> SourceOptions:
        servers = options.get("kafka.bootstrap.servers")
        if not servers:
            raise SamsaOptionError("option 'kafka.bootstrap.servers' is required (host:port[,host:port])")
        subscription = parse_subscription(options)
        assert subscription is not None
        return cls(
            bootstrap_servers=str(servers),
            subscription=subscription,
            starting=_position(
                options, "starting", "earliest" if batch else "latest", batch=batch, ending=False
            ),
            ending=_position(options, "ending", "latest", batch=batch, ending=True),
            fail_on_data_loss=_bool(options, "failOnDataLoss", True),
            include_headers=_bool(options, "includeHeaders", False),
            max_offsets_per_trigger=_int(options, "maxOffsetsPerTrigger"),
            min_partitions=_int(options, "minPartitions"),
            poll_timeout_ms=_int(options, "kafkaConsumer.pollTimeoutMs") or 120000,
            isolation_level=_isolation(options),
            client_properties=client_properties(options),
        )


def _isolation(options: Mapping[str, str]) -> int:
    value = str(options.get("kafka.isolation.level", "read_uncommitted")).lower()
    if value not in ("read_uncommitted", "read_committed"):
        raise SamsaOptionError(
            f"option 'kafka.isolation.level' must be read_uncommitted or read_committed, got {value!r}"
        )
    return 1 if value == "read_committed" else 0


def split_range(start: int, end: int, pieces: int) -> list[tuple[int, int]]:
    """[start, end) cut into at most ``pieces`` contiguous, non-empty ranges."""
    total = end - start
    if total <= 0:
        return []
    pieces = max(1, min(pieces, total))
    step, extra = divmod(total, pieces)
    out = []
    at = start
    for i in range(pieces):
        size = step + (1 if i < extra else 0)
        out.append((at, at + size))
        at += size
    return out


def cap_offsets(
    start: Mapping[tuple[str, int], int], latest: Mapping[tuple[str, int], int], limit: int
) -> PartitionOffsets:
    """Kafka's ``maxOffsetsPerTrigger``: the available offsets shared proportionally, never past ``latest``."""
    lag = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(lag.values())
    if total <= limit:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        share = int(limit * lag[tp] / total)
        out[tp] = min(end, begin + share)
    granted = sum(out[tp] - start.get(tp, out[tp]) for tp in out)
    for tp in sorted(out):  # hand out rounding leftovers so every trigger makes progress
        if granted >= limit:
            break
        if out[tp] < latest[tp]:
            out[tp] += 1
            granted += 1
    return out
