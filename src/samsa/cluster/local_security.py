"""A SASL_SSL setup for a cluster on this machine, for trying security out (``samsa cluster up --security``).

What ``secure_setup(directory)`` writes under ``<directory>/security/``::

    ca.pem                 a new certificate authority (EC P-256, ten years), the truststore of brokers and clients
    broker.pem             the brokers' private key and certificate (127.0.0.1 and localhost), signed by the CA
    client.properties      Kafka's client properties as user ``admin``: pass it to Kafka's tools
                           (``--command-config``, ``--producer.config``) and to samsa's
    librdkafka.properties  the same for librdkafka's clients (kcat -F, confluent-kafka)

The brokers get one SASL_SSL listener, which is also the inter-broker one: PLAIN between brokers (as ``admin``,
from the listener's JAAS configuration), PLAIN and both SCRAMs for clients, the ACL authorizer with ``User:admin``
the one super user and no access for anyone else until ACLs grant it. The users ``admin`` and ``alice`` have
random PLAIN passwords (in the JAAS configuration; SCRAM users are added with ``samsa configs``). The private key
and the password files are readable by their owner only. Needs the ``cryptography`` package (the ``security``
extra).
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LISTENER", "SecureSetup", "secure_setup"]

LISTENER = "SASL_SSL"
CERTIFICATE_DAYS = 3650


@dataclass(frozen=True, slots=True)
class SecureSetup:
    """What a secured local cluster is started with, and where its client files are."""

    broker_config: dict[str, str]
    client_config: dict[str, str]
    client_properties: Path
    librdkafka_properties: Path
    ca_file: Path
    passwords: dict[str, str]


def secure_setup(directory: Path) -> SecureSetup:
    """Write the CA, the brokers' certificate and the client files under ``directory/security`` (module doc)."""
    home = directory / "security"
    home.mkdir(parents=True, exist_ok=True)
    ca_file, broker_file = home / "ca.pem", home / "broker.pem"
    _write_certificates(ca_file, broker_file)
    passwords = {"admin": secrets.token_urlsafe(18), "alice": secrets.token_urlsafe(18)}
    users = " ".join(f'user_{name}="{password}"' for name, password in passwords.items())
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{passwords["admin"]}" {users};'
    )
    broker_config = {
        "listener.security.protocol.map": f"{LISTENER}:{LISTENER}",
        "inter.broker.listener.name": LISTENER,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        f"listener.name.{LISTENER.lower()}.plain.sasl.jaas.config": jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(broker_file),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_file),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
    }
    client_config = {
        "security.protocol": LISTENER,
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="admin" password="{passwords["admin"]}";'
        ),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_file),
    }
    librdkafka = {
        "security.protocol": LISTENER,
        "sasl.mechanism": "PLAIN",
        "sasl.username": "admin",
        "sasl.password": passwords["admin"],
        "ssl.ca.location": str(ca_file),
    }
    client_properties = _write_properties(home / "client.properties", client_config)
    librdkafka_properties = _write_properties(home / "librdkafka.properties", librdkafka)
    return SecureSetup(
        broker_config, client_config, client_properties, librdkafka_properties, ca_file, passwords
    )


def _write_properties(path: Path, values: dict[str, str]) -> Path:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text("".join(f"{key}={value}\n" for key, value in values.items()))
    return path


def _write_certificates(ca_file: Path, broker_file: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    until = now + datetime.timedelta(days=CERTIFICATE_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Samsa local cluster CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    broker = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "samsa-broker")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(until)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file.write_bytes(ca.public_bytes(pem))
    broker_file.touch(mode=0o600, exist_ok=True)
    broker_file.chmod(0o600)
    broker_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + broker.public_bytes(pem)
        + ca.public_bytes(pem)
    )
