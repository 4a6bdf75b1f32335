"""How a client reaches a secured listener: TLS, SASL, or both, from Kafka's client properties.

``ClientSecurity.from_properties`` reads the keys of Kafka's Java clients (what ``--command-config`` files and
Spark's ``kafka.*`` options carry) and librdkafka's spellings of the same settings:

    security.protocol                    PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism (sasl.mechanisms)     PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
    sasl.username, sasl.password         the user, or:
    sasl.jaas.config                     ... PlainLoginModule|ScramLoginModule required username="u" password="p";
    ssl.truststore.type                  PEM only (a JKS store is refused with a message: convert it)
    ssl.truststore.location              a PEM file of the CA certificates the broker's certificate is checked with
    ssl.truststore.certificates          or the same inline
    ssl.ca.location                      librdkafka's name for the truststore file
    ssl.keystore.type / .location        PEM: the client's key and certificate chain in one file (mTLS)
    ssl.certificate.location,            librdkafka's: the certificate and the key in two files
      ssl.key.location, ssl.key.password
    ssl.endpoint.identification.algorithm  https (default: the broker's name is checked) or empty (not checked)
    enable.ssl.certificate.verification    librdkafka's: false trusts any certificate (tests only)

Other keys are left to whoever reads the properties. The SASL exchange itself runs in ``connection`` after
ApiVersions: SaslHandshake v1 naming the mechanism, then the mechanism's tokens in SaslAuthenticate requests (PLAIN
one, SCRAM two, ``samsa.security.scram``). Immutable; the TLS context is built once per settings.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["PLAINTEXT", "ClientSecurity", "SecurityConfigError"]

PLAINTEXT = "PLAINTEXT"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityConfigError(ValueError):
    """Client properties that cannot make a connection's security (the message names the key)."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """A client's security settings (module doc); the default is PLAINTEXT."""

    protocol: str = PLAINTEXT
    sasl_mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    ca_data: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    verify: bool = True

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for this protocol (None without TLS), made once per distinct settings."""
        return _context(self) if self.uses_tls else None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ClientSecurity:
        """The settings Kafka's client keys in ``props`` name (module doc); SecurityConfigError on a bad one."""
        protocol = str(props.get("security.protocol") or PLAINTEXT).strip().upper()
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(f"security.protocol {protocol} is not one of {', '.join(PROTOCOLS)}")
        mechanism = (
            str(props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "PLAIN").strip().upper()
        )
        username, password = props.get("sasl.username"), props.get("sasl.password")
        jaas = props.get("sasl.jaas.config")
        if jaas and username is None:
            options = jaas_options(jaas)
            username, password = options.get("username"), options.get("password")
        if protocol.startswith("SASL_"):
            if mechanism not in MECHANISMS:
                raise SecurityConfigError(
                    f"sasl.mechanism {mechanism} is not supported (Samsa's clients speak {', '.join(MECHANISMS)})"
                )
            if username is None or password is None:
                raise SecurityConfigError(
                    f"{protocol} needs sasl.username and sasl.password, or sasl.jaas.config with "
                    'username="..." password="..."'
                )
        return dataclasses.replace(
            _tls_settings(props),
            protocol=protocol,
            sasl_mechanism=mechanism,
            username=username,
            password=password,
        )


def jaas_options(jaas: str) -> dict[str, str]:
    """The ``key="value"`` options of a JAAS configuration line (``username``, ``password``, ``user_<name>``)."""
    return {key: value.replace('\\"', '"') for key, value in _JAAS_OPTION.findall(jaas)}


def _tls_settings(props: Mapping[str, str]) -> ClientSecurity:
    for kind_key in ("ssl.truststore.type", "ssl.keystore.type"):
        kind = str(props.get(kind_key) or "PEM").strip().upper()
        if kind != "PEM":
            raise SecurityConfigError(
                f"{kind_key} {kind} is not supported: set {kind_key}=PEM with a PEM file (convert a JKS store "
                "with keytool -importkeystore and openssl pkcs12)"
            )
    keystore = props.get("ssl.keystore.location")
    algorithm = props.get("ssl.endpoint.identification.algorithm")
    verify = str(props.get("enable.ssl.certificate.verification", "true")).strip().lower() != "false"
    return ClientSecurity(
        ca_file=props.get("ssl.truststore.location") or props.get("ssl.ca.location"),
        ca_data=props.get("ssl.truststore.certificates") or props.get("ssl.ca.pem"),
        cert_file=props.get("ssl.certificate.location") or keystore,
        key_file=props.get("ssl.key.location") or keystore,
        key_password=props.get("ssl.key.password"),
        check_hostname=verify and (algorithm is None or algorithm.strip().lower() == "https"),
        verify=verify,
    )


@functools.lru_cache(maxsize=16)
def _context(security: ClientSecurity) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=security.ca_file, cadata=security.ca_data)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityConfigError(f"cannot load the truststore's CA certificates: {exc}") from None
    context.check_hostname = security.check_hostname
    if not security.verify:
        context.verify_mode = ssl.CERT_NONE
    if security.cert_file:
        try:
            context.load_cert_chain(security.cert_file, security.key_file, security.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise SecurityConfigError(f"cannot load the client certificate and key: {exc}") from None
    return context
