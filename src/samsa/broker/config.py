"""Broker configuration: Kafka's ``server.properties`` keys, types and defaults.

A key that a layer below the broker also reads (the log, the cleaner, fetchers, groups, elections) takes its
default from ``samsa.server_defaults``, the one statement of it, which those layers read too; the others state
theirs here.

``KafkaConfig.from_properties`` validates every key it knows (a clear ``ConfigError`` naming the key, the value and
what was expected); unknown keys are kept and reported by ``unknown_keys`` (Kafka logs them and carries on).
``topic_defaults()`` turns the broker's ``log.*`` keys into the topic-level defaults (``segment.bytes`` from
``log.segment.bytes`` and so on), the way Kafka derives a topic's config from the broker's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from samsa.server_defaults import INT_MAX, LONG_MAX, SERVER_DEFAULTS

if TYPE_CHECKING:
    import ssl

    from samsa.client.security import ClientSecurity

    from .sasl import SaslSettings

_SERVER_DEFAULT: Any = object()

# Kafka's security protocols, and its default listener.security.protocol.map (each protocol's name is a listener
# name mapped to itself)
SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
DEFAULT_SECURITY_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
SOCKET_REQUEST_MIN_BYTES = 1024
"""A ``ConfigKey``'s default when none is given: the key's entry in ``SERVER_DEFAULTS``."""


class ConfigError(ValueError):
    """A configuration value that Kafka would refuse."""


class ConfigType(Enum):
    BOOLEAN = "boolean"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    STRING = "string"
    LIST = "list"
    PASSWORD = "password"


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any = _SERVER_DEFAULT
    minimum: float | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""
    topic_key: str | None = None  # the topic-level key this broker key sets the default of

    def __post_init__(self) -> None:
        if self.default is _SERVER_DEFAULT:
            value = SERVER_DEFAULTS[self.name]
            object.__setattr__(self, "default", list(value) if self.type is ConfigType.LIST else value)

    def parse(self, raw: str) -> Any:
        """Parse and validate a raw string value; raise ConfigError naming this key."""
        text = raw.strip()
        try:
            value = _PARSERS[self.type](text)
        except ValueError:
            raise ConfigError(
                f"invalid value {raw!r} for configuration {self.name}: expected {_ARTICLES.get(self.type, 'a')} {self.type.value}"
            ) from None
        if self.minimum is not None and isinstance(value, (int, float)) and value < self.minimum:
            raise ConfigError(
                f"invalid value {raw!r} for configuration {self.name}: value must be at least {self.minimum:g}"
            )
        if self.choices is not None:
            values = value if isinstance(value, list) else [value]
            for item in values:
                if item not in self.choices:
                    raise ConfigError(
                        f"invalid value {raw!r} for configuration {self.name}: "
                        f"must be one of {', '.join(self.choices)}"
                    )
        return value

    def render(self, value: Any) -> str | None:
        """The value as Kafka shows it in DescribeConfigs (a password never: None, as Kafka hides it)."""
        if value is None or self.type is ConfigType.PASSWORD:
            return None
        if self.type is ConfigType.BOOLEAN:
            return "true" if value else "false"
        if self.type is ConfigType.LIST:
            return ",".join(value)
        return str(value)


_ARTICLES = {ConfigType.INT: "an"}


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError(text)
    return lowered == "true"


def _parse_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _parse_int(text: str) -> int:
    value = int(text)
    if not -(2**31) <= value <= INT_MAX:
        raise ValueError(text)
    return value


def _parse_long(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value <= LONG_MAX:
        raise ValueError(text)
    return value


_PARSERS: dict[ConfigType, Callable[[str], Any]] = {
    ConfigType.BOOLEAN: _parse_bool,
    ConfigType.INT: _parse_int,
    ConfigType.LONG: _parse_long,
    ConfigType.DOUBLE: float,
    ConfigType.STRING: str,
    ConfigType.LIST: _parse_list,
    ConfigType.PASSWORD: str,
}

B, INT, L, S, LS = ConfigType.BOOLEAN, ConfigType.INT, ConfigType.LONG, ConfigType.STRING, ConfigType.LIST
PW = ConfigType.PASSWORD

BROKER_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("node.id", INT, -1, doc="this node's id (KRaft name)"),
    ConfigKey(
        "broker.id", INT, -1, doc="this broker's id (ZooKeeper-era name); node.id wins when both are set"
    ),
    ConfigKey("listeners", LS, ["PLAINTEXT://127.0.0.1:9092"]),
    ConfigKey("ssl.keystore.type", S, "JKS", doc="PEM is served (samsa.broker.tls)"),
    ConfigKey("ssl.keystore.location", S, None),
    ConfigKey("ssl.keystore.password", PW, None),
    ConfigKey("ssl.keystore.certificate.chain", PW, None),
    ConfigKey("ssl.keystore.key", PW, None),
    ConfigKey("ssl.key.password", PW, None),
    ConfigKey("ssl.truststore.type", S, "JKS"),
    ConfigKey("ssl.truststore.location", S, None),
    ConfigKey("ssl.truststore.password", PW, None),
    ConfigKey("ssl.truststore.certificates", PW, None),
    ConfigKey("ssl.client.auth", S, "none", choices=("none", "requested", "required")),
    ConfigKey("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"]),
    ConfigKey("ssl.cipher.suites", LS, []),
    ConfigKey("ssl.principal.mapping.rules", S, "DEFAULT"),
    ConfigKey("ssl.endpoint.identification.algorithm", S, "https"),
    ConfigKey(
        "sasl.enabled.mechanisms",
        LS,
        ["GSSAPI"],
        doc="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (samsa.broker.sasl)",
    ),
    ConfigKey("sasl.jaas.config", PW, None),
    ConfigKey("connections.max.reauth.ms", L, 0, minimum=0),
    ConfigKey("connection.failed.authentication.delay.ms", INT, 100, minimum=0),
    ConfigKey(
        "authorizer.class.name",
        S,
        "",
        doc="Kafka's AclAuthorizer or StandardAuthorizer class name turns ACL authorization on; empty: off",
    ),
    ConfigKey(
        "super.users", S, "", doc="principals allowed everything, ';'-separated (User:admin;User:broker)"
    ),
    ConfigKey(
        "allow.everyone.if.no.acl.found", B, False, doc="a resource no ACL names is open to every principal"
    ),
    ConfigKey("advertised.listeners", LS, None),
    ConfigKey(
        "controller.listener.names", LS, None, doc="KRaft controller listeners: never served to clients"
    ),
    ConfigKey("log.dir", S, "/tmp/kafka-logs"),
    ConfigKey("log.dirs", LS, None),
    ConfigKey("num.partitions", INT, 1, minimum=1),
    ConfigKey("auto.create.topics.enable", B, True),
    ConfigKey("default.replication.factor", INT, 1, minimum=1),
    ConfigKey("delete.topic.enable", B, True),
    ConfigKey("message.max.bytes", INT, minimum=0, topic_key="max.message.bytes"),
    # Kafka's minimum is 1, and it starts with 10; below 1 KiB not even a Produce request of one small batch fits,
    # so every client would be disconnected at its first request: refused at start instead
    ConfigKey("socket.request.max.bytes", INT, 104857600, minimum=SOCKET_REQUEST_MIN_BYTES),
    ConfigKey("connections.max.idle.ms", L, 600000, minimum=1),
    ConfigKey("socket.listen.backlog.size", INT, 50, minimum=1),
    ConfigKey("max.connections", INT, INT_MAX, minimum=0),
    ConfigKey("max.connections.per.ip", INT, INT_MAX, minimum=0),
    ConfigKey("max.connections.per.ip.overrides", S, ""),
    ConfigKey("socket.send.buffer.bytes", INT, 102400),
    ConfigKey("socket.receive.buffer.bytes", INT, 102400),
    ConfigKey("num.network.threads", INT, 3, minimum=1),
    ConfigKey("num.io.threads", INT, 8, minimum=1),
    ConfigKey("broker.rack", S, None),
    ConfigKey("cluster.id", S, None),
    ConfigKey("zookeeper.connect", S, None),
    ConfigKey("zookeeper.session.timeout.ms", INT, 18000, minimum=1),
    ConfigKey(
        "zookeeper.connection.timeout.ms", INT, None, minimum=1, doc="default: zookeeper.session.timeout.ms"
    ),
    ConfigKey(
        "listener.security.protocol.map",
        S,
        DEFAULT_SECURITY_PROTOCOL_MAP,
        doc="NAME:PROTOCOL for each listener name; a name with no entry is refused",
    ),
    ConfigKey(
        "inter.broker.listener.name",
        S,
        None,
        doc="the listener brokers reach each other on (default: the first)",
    ),
    ConfigKey(
        "security.inter.broker.protocol",
        S,
        "PLAINTEXT",
        doc="without inter.broker.listener.name, when set: the listener of that name is the inter-broker one",
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        S,
        "GSSAPI",
        doc="the mechanism brokers authenticate to each other with; unset (GSSAPI, not served): PLAIN when the "
        "listener enables it, else its first mechanism",
    ),
    ConfigKey("replica.lag.time.max.ms", L, 30000, minimum=1),
    ConfigKey("replica.fetch.max.bytes", INT, minimum=0),
    ConfigKey("replica.fetch.response.max.bytes", INT, minimum=0),
    ConfigKey("replica.fetch.wait.max.ms", INT, minimum=0),
    ConfigKey("max.incremental.fetch.session.cache.slots", INT, 1000, minimum=0),
    ConfigKey("replica.fetch.min.bytes", INT, minimum=1),
    ConfigKey("replica.fetch.backoff.ms", INT, minimum=0),
    ConfigKey("replica.socket.timeout.ms", INT, minimum=1),
    ConfigKey("controlled.shutdown.enable", B, True),
    ConfigKey("controlled.shutdown.max.retries", INT, 3, minimum=0),
    ConfigKey("controlled.shutdown.retry.backoff.ms", L, 5000, minimum=0),
    ConfigKey("controller.socket.timeout.ms", INT, 30000, minimum=0),
    ConfigKey("auto.leader.rebalance.enable", B),
    ConfigKey("leader.imbalance.per.broker.percentage", INT, minimum=0),
    ConfigKey("leader.imbalance.check.interval.seconds", L, minimum=1),
    ConfigKey("log.segment.bytes", INT, minimum=14, topic_key="segment.bytes"),
    ConfigKey("log.roll.ms", L, None, minimum=1),
    ConfigKey("log.roll.hours", INT, minimum=1),
    ConfigKey("log.roll.jitter.ms", L, None, minimum=0),
    ConfigKey("log.roll.jitter.hours", INT, minimum=0),
    ConfigKey("log.index.size.max.bytes", INT, minimum=4, topic_key="segment.index.bytes"),
    ConfigKey("log.index.interval.bytes", INT, minimum=0, topic_key="index.interval.bytes"),
    ConfigKey("log.retention.ms", L, None),
    ConfigKey("log.retention.minutes", INT, None),
    ConfigKey("log.retention.hours", INT),
    # -1 is unlimited; Kafka takes any negative value as unlimited without a word, so -5 (a typo for 5?, a size
    # meant to be set?) slips through: only -1 is accepted
    ConfigKey("log.retention.bytes", L, minimum=-1, doc="-1: unlimited", topic_key="retention.bytes"),
    ConfigKey("log.retention.check.interval.ms", L, minimum=1),
    ConfigKey("log.cleanup.policy", LS, choices=("delete", "compact"), topic_key="cleanup.policy"),
    ConfigKey("log.segment.delete.delay.ms", L, minimum=0, topic_key="file.delete.delay.ms"),
    ConfigKey("log.flush.interval.messages", L, minimum=1, topic_key="flush.messages"),
    ConfigKey("log.flush.interval.ms", L, None),
    ConfigKey("log.flush.scheduler.interval.ms", L),
    ConfigKey("log.flush.offset.checkpoint.interval.ms", INT, minimum=0),
    ConfigKey("log.flush.start.offset.checkpoint.interval.ms", INT, minimum=0),
    ConfigKey("replica.high.watermark.checkpoint.interval.ms", L),
    ConfigKey("log.preallocate", B, topic_key="preallocate"),
    ConfigKey("log.cleaner.enable", B),
    ConfigKey("log.cleaner.threads", INT, 1, minimum=0),
    ConfigKey("log.cleaner.backoff.ms", L, minimum=0),
    ConfigKey("log.cleaner.dedupe.buffer.size", L),
    ConfigKey("log.cleaner.io.buffer.load.factor", ConfigType.DOUBLE),
    ConfigKey("log.cleaner.delete.retention.ms", L, minimum=0, topic_key="delete.retention.ms"),
    ConfigKey("log.cleaner.min.compaction.lag.ms", L, minimum=0, topic_key="min.compaction.lag.ms"),
    ConfigKey("log.cleaner.max.compaction.lag.ms", L, minimum=1, topic_key="max.compaction.lag.ms"),
    ConfigKey(
        "log.cleaner.min.cleanable.ratio",
        ConfigType.DOUBLE,
        minimum=0,
        topic_key="min.cleanable.dirty.ratio",
    ),
    ConfigKey(
        "log.message.timestamp.type",
        S,
        choices=("CreateTime", "LogAppendTime"),
        topic_key="message.timestamp.type",
    ),
    ConfigKey("min.insync.replicas", INT, minimum=1, topic_key="min.insync.replicas"),
    ConfigKey("unclean.leader.election.enable", B, topic_key="unclean.leader.election.enable"),
    ConfigKey("compression.type", S, topic_key="compression.type"),
    ConfigKey("offsets.topic.num.partitions", INT, minimum=1),
    ConfigKey("offsets.topic.replication.factor", INT, 3, minimum=1),
    ConfigKey("offsets.topic.segment.bytes", INT, minimum=1),
    ConfigKey("offsets.retention.minutes", INT, minimum=1),
    ConfigKey("offsets.retention.check.interval.ms", L, minimum=1),
    ConfigKey("offsets.commit.timeout.ms", INT, minimum=1),
    ConfigKey("group.initial.rebalance.delay.ms", INT, minimum=0),
    ConfigKey("group.min.session.timeout.ms", INT),
    ConfigKey("group.max.session.timeout.ms", INT),
    ConfigKey("group.max.size", INT, minimum=1),
    ConfigKey("offset.metadata.max.bytes", INT, minimum=0),
    ConfigKey("transactional.id.expiration.ms", INT, 604800000, minimum=1),
    ConfigKey("producer.id.expiration.ms", INT, 86400000, minimum=1),
    ConfigKey("quota.window.num", INT, 11, minimum=1, doc="samples in a client quota's window"),
    ConfigKey(
        "metrics.prometheus.port", INT, None, minimum=0, doc="serve GET /metrics here (0: a free port)"
    ),
    ConfigKey("quota.window.size.seconds", INT, 1, minimum=1, doc="the length of a client quota's sample"),
    ConfigKey("transaction.state.log.num.partitions", INT, 50, minimum=1),
    ConfigKey("transaction.state.log.replication.factor", INT, 3, minimum=1),
    # Kafka's default is true; Samsa's is false until a coordinator killed mid-transaction on a cluster no longer
    # stalls a producer whose first batch waits on verification (issue 30's closing note)
    ConfigKey("transaction.partition.verification.enable", B, True),
    ConfigKey("transaction.state.log.min.isr", INT, 2, minimum=1),
    ConfigKey("transaction.state.log.segment.bytes", INT, 104857600, minimum=1),
    ConfigKey("transaction.max.timeout.ms", INT, 900000, minimum=1),
    ConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000, minimum=1),
    ConfigKey("num.recovery.threads.per.data.dir", INT, 1, minimum=1),
    ConfigKey("controlled.shutdown.enable", B, True),
)

KEYS_BY_NAME: dict[str, ConfigKey] = {key.name: key for key in BROKER_KEYS}


def _id_synonym(props: Mapping[str, str]) -> dict[str, str]:
    """``node.id`` and ``broker.id`` are one setting under two names: one set alone sets the other too, as Kafka
    does before it reads its properties (so DescribeConfigs shows ``broker.id=1`` set, not -1, with only
    ``node.id=1`` in the file). The key to add, or none."""
    if "node.id" in props and "broker.id" not in props:
        return {"broker.id": props["node.id"]}
    if "broker.id" in props and "node.id" not in props:
        return {"node.id": props["broker.id"]}
    return {}


class KafkaConfig:
    """A broker's validated configuration. Immutable after construction; safe to share."""

    def __init__(
        self, values: Mapping[str, Any], explicit: Mapping[str, str], unknown: Mapping[str, str]
    ) -> None:
        self._values = dict(values)
        self._explicit = dict(explicit)
        self._unknown = dict(unknown)

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> KafkaConfig:
        config = cls._parse(props)  # checked as given, so that an error names the key the file set
        synonym = _id_synonym(props)
        return cls._parse({**props, **synonym}) if synonym else config

    @classmethod
    def _parse(cls, props: Mapping[str, str]) -> KafkaConfig:
        values = {key.name: key.default for key in BROKER_KEYS}
        explicit: dict[str, str] = {}
        unknown: dict[str, str] = {}
        for name, raw in props.items():
            key = KEYS_BY_NAME.get(name)
            if key is None:
                unknown[name] = raw
                continue
            values[name] = key.parse(raw)
            explicit[name] = raw
        config = cls(values, explicit, unknown)
        config._check()
        return config

    def with_overrides(self, props: Mapping[str, str]) -> KafkaConfig:
        """This config with ``props`` laid over what ``server.properties`` set, checked as a whole (dynamic broker
        configs: ``dynamic_config``)."""
        return KafkaConfig.from_properties({**self._explicit, **self._unknown, **props})

    def _check(self) -> None:
        for name in ("node.id", "broker.id"):
            if name in self._explicit and int(self._values[name]) < 0:
                raise ConfigError(
                    f"invalid value {self._explicit[name]!r} for configuration {name}: must be at least 0"
                )
        for name in ("log.dirs", "log.dir"):
            if name in self._explicit and not self._explicit[name].strip(" ,"):
                raise ConfigError(
                    f"invalid value {self._explicit[name]!r} for configuration {name}: must name at least one directory"
                )
        for listener in self.listeners:
            _parse_listener(listener)
        from .network import ConnectionLimits

        try:
            ConnectionLimits.parse_overrides(str(self.get("max.connections.per.ip.overrides")))
        except ValueError as exc:
            raise ConfigError(
                f"invalid value for configuration {exc}; expected host:count,host:count"
            ) from None
        protocols = self.security_protocol_map
        for name in ("listeners", "advertised.listeners"):
            for listener in self._values[name] or ():
                self._security_protocol(name, listener, protocols)  # every listener has a known protocol
        if not self.listener_addresses:
            raise ConfigError(
                f"invalid value {','.join(self.listeners)!r} for configuration listeners: "
                "no listener is left for clients once the controller listeners are set aside"
            )
        self._check_advertised_routable()
        self._check_topic_defaults()
        for listener_name in self.ssl_listeners:
            self.tls_context(listener_name)  # a bad keystore or truststore stops the start here
        for listener_name in self.sasl_listeners:
            self.sasl_settings(listener_name)
        if self._values.get("zookeeper.connect"):
            self.inter_broker_security()  # a cluster broker's own login must be there before it starts

    @property
    def security_protocol_map(self) -> dict[str, str]:
        """``listener.security.protocol.map`` as listener name -> security protocol (ConfigError when malformed)."""
        raw = str(self._values["listener.security.protocol.map"])
        mapping: dict[str, str] = {}
        for pair in _parse_list(raw):
            name, colon, protocol = (part.strip() for part in pair.partition(":"))
            if not colon or not name or protocol not in SECURITY_PROTOCOLS:
                raise ConfigError(
                    f"invalid value {raw!r} for configuration listener.security.protocol.map: {pair!r} is not "
                    f"NAME:PROTOCOL with PROTOCOL one of {', '.join(sorted(SECURITY_PROTOCOLS))}"
                )
            mapping[name] = protocol
        return mapping

    def _security_protocol(self, key: str, listener: str, protocols: Mapping[str, str]) -> str:
        """The security protocol of ``listener`` (a value of ``key``), as Kafka finds it: the listener name must
        be in ``listener.security.protocol.map``, except a controller listener name while the map is not given
        (Kafka then maps it to PLAINTEXT)."""
        name = _parse_listener(listener)[0]
        protocol = protocols.get(name)
        if protocol is not None:
            return protocol
        if name in self.controller_listener_names and "listener.security.protocol.map" not in self._explicit:
            return "PLAINTEXT"
        raise ConfigError(
            f"invalid value {listener!r} for configuration {key}: no security protocol defined for listener "
            f"{name} (add {name}:PLAINTEXT to listener.security.protocol.map, or name the listener PLAINTEXT)"
        )

    def _check_advertised_routable(self) -> None:
        """Clients cannot connect to the wildcard address, so it is never advertised (Kafka refuses it too);
        without ``advertised.listeners`` the listeners are what is advertised."""
        given = bool(self._values["advertised.listeners"])
        for name, host, port in self.advertised_addresses:
            if host == "0.0.0.0":
                hint = (
                    ""
                    if given
                    else f" (set advertised.listeners, e.g. {name}://<this host's name or IP>:{port})"
                )
                raise ConfigError(
                    "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. "
                    f"Use a routable IP address{hint}."
                )

    def _check_topic_defaults(self) -> None:
        """The topic-level values derived from the broker's keys, checked as a topic's config would be, errors
        naming the broker key that was set."""
        from samsa.storage.config import LogConfig
        from samsa.storage.errors import InvalidConfigError

        try:
            LogConfig.from_properties(self.topic_defaults())
        except InvalidConfigError as exc:
            name = self._broker_key_for(exc.key)
            raw = self._explicit.get(name, exc.value)
            raise ConfigError(f"invalid value {raw!r} for configuration {name}: {exc.reason}") from None

    def _broker_key_for(self, topic_key: str) -> str:
        derived = {
            "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
            "segment.ms": ("log.roll.ms", "log.roll.hours"),
            "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
            "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
        }
        names = derived.get(topic_key) or tuple(k.name for k in BROKER_KEYS if k.topic_key == topic_key)
        return next((name for name in names if name in self._explicit), names[0] if names else topic_key)

    def get(self, name: str) -> Any:
        return self._values[name]

    def listener_setting(self, listener: str, name: str) -> Any:
        """A key's value for one listener: ``listener.name.<listener, lower case>.<key>`` when set, as Kafka
        reads per-listener settings, else the key's own."""
        own = self._unknown.get(f"listener.name.{listener.lower()}.{name}")
        if own is not None:
            key = KEYS_BY_NAME.get(name)
            return key.parse(own) if key is not None else own
        return self._values.get(name)

    @property
    def ssl_listeners(self) -> list[str]:
        """The names of the client listeners whose security protocol is SSL."""
        protocols = self.security_protocol_map
        return [name for name, _, _ in self.listener_addresses if protocols.get(name) in ("SSL", "SASL_SSL")]

    @property
    def sasl_listeners(self) -> list[str]:
        """The names of the client listeners whose security protocol is SASL_PLAINTEXT or SASL_SSL."""
        protocols = self.security_protocol_map
        return [
            name
            for name, _, _ in self.listener_addresses
            if protocols.get(name) in ("SASL_PLAINTEXT", "SASL_SSL")
        ]

    @property
    def inter_broker_listener(self) -> str:
        """The listener name brokers reach each other on: ``inter.broker.listener.name``, else the listener named
        by an explicit ``security.inter.broker.protocol``, else the first listener."""
        named = self._values["inter.broker.listener.name"]
        if named:
            return str(named)
        if "security.inter.broker.protocol" in self._explicit:
            return str(self._values["security.inter.broker.protocol"])
        return self.listener_addresses[0][0]

    def inter_broker_security(self) -> ClientSecurity | None:
        """How this broker connects to the others' inter-broker listener (controller requests, follower
        fetches, ISR changes, transaction markers): None on PLAINTEXT; else TLS trusting the listener's
        truststore (and presenting its keystore file, for mTLS), and SASL as the ``username``/``password`` of
        the listener's JAAS configuration for the inter-broker mechanism, as Kafka's brokers log in."""
        from samsa.client.security import ClientSecurity, jaas_options

        listener = self.inter_broker_listener
        protocol = self.security_protocol_map.get(listener, "PLAINTEXT")
        if protocol == "PLAINTEXT":
            return None

        def setting(name: str) -> Any:
            return self.listener_setting(listener, name)

        mechanism = str(self._values["sasl.mechanism.inter.broker.protocol"]).upper()
        username = password = None
        if protocol.startswith("SASL_"):
            enabled = [str(m).upper() for m in setting("sasl.enabled.mechanisms") or []]
            if mechanism not in enabled:
                mechanism = "PLAIN" if "PLAIN" in enabled else (enabled[0] if enabled else "PLAIN")
            jaas = setting(f"{mechanism.lower()}.sasl.jaas.config") or setting("sasl.jaas.config") or ""
            options = jaas_options(str(jaas))
            username, password = options.get("username"), options.get("password")
            if username is None or password is None:
                raise ConfigError(
                    f"inter-broker listener {listener}: {mechanism} needs the broker's own login, "
                    f'username="..." password="..." in listener.name.{listener.lower()}.'
                    f"{mechanism.lower()}.sasl.jaas.config"
                )
        algorithm = str(setting("ssl.endpoint.identification.algorithm") or "")
        keystore = setting("ssl.keystore.location") if setting("ssl.client.auth") != "none" else None
        return ClientSecurity(
            protocol=protocol,
            sasl_mechanism=mechanism,
            username=username,
            password=password,
            ca_file=setting("ssl.truststore.location"),
            ca_data=setting("ssl.truststore.certificates"),
            cert_file=keystore,
            key_file=keystore,
            key_password=setting("ssl.key.password"),
            check_hostname=algorithm.lower() == "https",
        )

    def sasl_settings(self, listener: str) -> SaslSettings:
        """A SASL listener's mechanisms and users (``samsa.broker.sasl``); ConfigError naming what is wrong."""
        from .sasl import SaslSettings

        try:
            return SaslSettings.for_listener(lambda name: self.listener_setting(listener, name), listener)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def tls_context(self, listener: str) -> ssl.SSLContext:
        """The TLS server context of an SSL listener (``samsa.broker.tls``); ConfigError naming what is wrong."""
        from .tls import TlsConfigError, server_context

        try:
            return server_context(lambda name: self.listener_setting(listener, name))
        except TlsConfigError as exc:
            raise ConfigError(f"listener {listener}: {exc}") from None

    def is_explicit(self, name: str) -> bool:
        return name in self._explicit

    @property
    def unknown_keys(self) -> dict[str, str]:
        """Keys no broker setting has (per-listener settings, ``listener.name.<l>.<key>``, are known)."""
        return {k: v for k, v in self._unknown.items() if not k.startswith("listener.name.")}

    # --- typed accessors for what the broker reads ------------------------------------------------------------

    @property
    def node_id(self) -> int:
        node = int(self._values["node.id"])
        return node if node >= 0 else max(int(self._values["broker.id"]), 0)

    @property
    def listeners(self) -> list[str]:
        return list(self._values["listeners"])

    @property
    def controller_listener_names(self) -> set[str]:
        """Listener names kept for a KRaft controller (``controller.listener.names``, else ``CONTROLLER``)."""
        names = self._values["controller.listener.names"]
        return set(names) if names else {"CONTROLLER"}

    @property
    def listener_addresses(self) -> list[tuple[str, str, int]]:
        """(name, host, port) for each listener served to clients: controller listeners are left out."""
        parsed = [_parse_listener(item) for item in self.listeners]
        return [address for address in parsed if address[0] not in self.controller_listener_names]

    @property
    def advertised_addresses(self) -> list[tuple[str, str, int]]:
        advertised = self._values["advertised.listeners"]
        if not advertised:
            return self.listener_addresses
        parsed = [_parse_listener(item) for item in advertised]
        return [address for address in parsed if address[0] not in self.controller_listener_names]

    def check_log_dirs(self) -> None:
        """Each log dir is a directory or can become one: a file in its place is a ConfigError naming it."""
        from pathlib import Path

        name = "log.dirs" if self._values["log.dirs"] else "log.dir"
        for item in self.log_dirs:
            path = Path(item)
            try:
                blocker = next((p for p in (path, *path.parents) if p.exists()), None)
            except PermissionError as exc:  # a parent this user may not enter
                raise ConfigError(
                    f"invalid value {item!r} for configuration {name}: {exc.filename} cannot be entered "
                    "(permission denied)"
                ) from None
            if blocker is not None and not blocker.is_dir():
                raise ConfigError(
                    f"invalid value {item!r} for configuration {name}: {blocker} is a file, not a directory"
                )

    @property
    def log_dirs(self) -> list[str]:
        dirs = self._values["log.dirs"]
        return list(dirs) if dirs else [str(self._values["log.dir"])]

    @property
    def retention_ms(self) -> int:
        if self._values["log.retention.ms"] is not None:
            return int(self._values["log.retention.ms"])
        if self._values["log.retention.minutes"] is not None:
            return int(self._values["log.retention.minutes"]) * 60_000
        return int(self._values["log.retention.hours"]) * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self._values["log.roll.ms"] is not None:
            return int(self._values["log.roll.ms"])
        return int(self._values["log.roll.hours"]) * 3_600_000

    @property
    def roll_jitter_ms(self) -> int:
        if self._values["log.roll.jitter.ms"] is not None:
            return int(self._values["log.roll.jitter.ms"])
        return int(self._values["log.roll.jitter.hours"]) * 3_600_000

    def topic_defaults(self) -> dict[str, str]:
        """Topic-level defaults derived from the broker's log.* keys, as topic config strings."""
        out: dict[str, str] = {}
        for key in BROKER_KEYS:
            if key.topic_key is not None and self._values[key.name] is not None:
                rendered = key.render(self._values[key.name])
                if rendered is not None:
                    out[key.topic_key] = rendered
        out["segment.ms"] = str(self.roll_ms)
        out["segment.jitter.ms"] = str(self.roll_jitter_ms)
        out["retention.ms"] = str(self.retention_ms)
        flush_ms = self._values["log.flush.interval.ms"]
        out["flush.ms"] = str(
            flush_ms if flush_ms is not None else self._values["log.flush.scheduler.interval.ms"]
        )
        return out


def _parse_listener(text: str) -> tuple[str, str, int]:
    """``NAME://host:port`` -> (NAME, host, port); an empty host means all interfaces."""
    name, sep, rest = text.partition("://")
    host, colon, port_text = rest.rpartition(":")
    if not sep or not colon or not port_text.isdigit():
        raise ConfigError(f"invalid listener {text!r}: expected NAME://host:port")
    port = int(port_text)
    if port > 65535:
        raise ConfigError(f"invalid listener {text!r}: port {port} out of range")
    return name, host.strip("[]"), port
