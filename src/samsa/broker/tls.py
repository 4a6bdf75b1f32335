"""TLS for SSL listeners, with Kafka's configuration keys: the server's context, and the principal of a client
that presented a certificate.

Keys (each may be set for one listener as ``listener.name.<listener, lower case>.<key>``, which wins):

    ssl.keystore.type                  PEM (Kafka's JKS and PKCS12 stores are refused with a message: convert)
    ssl.keystore.location              a PEM file holding the private key and the certificate chain
    ssl.keystore.certificate.chain     or both inline, as PEM text
    ssl.keystore.key
    ssl.key.password                   the private key's password, when it is encrypted
    ssl.truststore.type                PEM
    ssl.truststore.location            a PEM file of the CA certificates client certificates are checked against
    ssl.truststore.certificates        or the same inline
    ssl.client.auth                    none | requested | required
    ssl.enabled.protocols              TLSv1.2,TLSv1.3 (the oldest listed is the minimum)
    ssl.cipher.suites                  OpenSSL names for TLS 1.2 (TLS 1.3's suites are OpenSSL's own)
    ssl.principal.mapping.rules        Kafka's rules: RULE:<pattern>/<replacement>/[LU], ..., DEFAULT

A client with a certificate is ``User:<its subject DN as RFC 2253 writes it, mapped by the rules>``
(``User:CN=alice,OU=eng,O=acme``); without one, ``User:ANONYMOUS``.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["TlsConfigError", "principal_of", "server_context", "subject_dn"]

ANONYMOUS = "User:ANONYMOUS"
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_SHORT_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:,|$)")


class TlsConfigError(ValueError):
    """An SSL listener's settings cannot make a TLS context (the message names the key)."""


def server_context(setting: Callable[[str], Any]) -> ssl.SSLContext:
    """The server context of one SSL listener; ``setting(key)`` is the key's value for that listener (None:
    unset)."""
    kind = str(setting("ssl.keystore.type") or "JKS").upper()
    location, chain, key = (
        setting(k) for k in ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key")
    )
    if not location and not (chain and key):
        raise TlsConfigError(
            "an SSL listener needs ssl.keystore.type=PEM with ssl.keystore.location (a PEM file of the private "
            "key and its certificate chain), or ssl.keystore.certificate.chain and ssl.keystore.key"
        )
    if kind != "PEM":
        raise TlsConfigError(
            f"ssl.keystore.type {kind} is not supported: set ssl.keystore.type=PEM with ssl.keystore.location "
            "(a PEM file of the key and its certificate chain) or ssl.keystore.certificate.chain and "
            "ssl.keystore.key (convert a JKS store with keytool -importkeystore and openssl pkcs12)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    password = setting("ssl.key.password") or None
    try:
        if location:
            context.load_cert_chain(str(location), password=password)
        else:
            _load_inline_chain(context, str(chain), str(key), password)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"ssl.keystore: cannot load the key and certificate chain: {exc}") from None
    _trust(context, setting)
    auth = str(setting("ssl.client.auth") or "none").lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be one of none, requested, required, not {auth!r}")
    context.verify_mode = CLIENT_AUTH[auth]
    _protocols(context, setting("ssl.enabled.protocols"))
    ciphers = setting("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(
                ":".join(ciphers) if isinstance(ciphers, list) else str(ciphers).replace(",", ":")
            )
        except ssl.SSLError as exc:
            raise TlsConfigError(f"ssl.cipher.suites: {exc}") from None
    rules = setting("ssl.principal.mapping.rules") or "DEFAULT"
    parse_rules(str(rules))  # refused at start, not at the first client
    return context


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """``load_cert_chain`` reads files only: the inline PEM goes through a private temporary file, removed at once."""
    fd, path = tempfile.mkstemp(prefix="samsa-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _trust(context: ssl.SSLContext, setting: Callable[[str], Any]) -> None:
    kind = str(setting("ssl.truststore.type") or "PEM").upper()
    location, inline = setting("ssl.truststore.location"), setting("ssl.truststore.certificates")
    if not location and not inline:
        return
    if kind != "PEM":
        raise TlsConfigError(f"ssl.truststore.type {kind} is not supported: set ssl.truststore.type=PEM")
    try:
        if location:
            context.load_verify_locations(cafile=str(location))
        else:
            context.load_verify_locations(cadata=str(inline))
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"ssl.truststore: cannot load the CA certificates: {exc}") from None


def _protocols(context: ssl.SSLContext, enabled: Any) -> None:
    names = enabled if isinstance(enabled, list) else str(enabled or "TLSv1.2,TLSv1.3").split(",")
    versions = []
    for name in (n.strip() for n in names if n.strip()):
        if name not in PROTOCOLS:
            raise TlsConfigError(f"ssl.enabled.protocols: {name} is not supported (TLSv1.2, TLSv1.3)")
        versions.append(PROTOCOLS[name])
    if not versions:
        raise TlsConfigError("ssl.enabled.protocols names no protocol")
    context.minimum_version, context.maximum_version = min(versions), max(versions)


def subject_dn(peercert: Mapping[str, Any]) -> str:
    """The subject of a certificate (``SSLObject.getpeercert()``) as RFC 2253 writes it, as Java's
    ``X500Principal.getName()`` does: the last relative name first, short attribute names, specials escaped."""
    parts = []
    for rdn in reversed(peercert.get("subject", ())):
        parts.append("+".join(f"{_SHORT_NAMES.get(name, name)}={_escaped(value)}" for name, value in rdn))
    return ",".join(parts)


def _escaped(value: str) -> str:
    escaped = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if escaped.startswith((" ", "#")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def parse_rules(text: str) -> list[tuple[str, str, str] | None]:
    """Kafka's ``ssl.principal.mapping.rules``: per rule (pattern, replacement, case) or None for DEFAULT."""
    rules: list[tuple[str, str, str] | None] = []
    position = 0
    text = text.strip()
    while position < len(text):
        found = _RULE.match(text, position)
        if found is None or found.end() == position:
            raise TlsConfigError(f"ssl.principal.mapping.rules: cannot read {text[position:]!r}")
        rules.append(
            None if found.group(1) == "DEFAULT" else (found.group(2), found.group(3), found.group(4))
        )
        position = found.end()
    return rules


def principal_of(peercert: Mapping[str, Any] | None, rules: str = "DEFAULT") -> str:
    """The principal of a TLS client: ``User:`` and its mapped subject DN, or ANONYMOUS without a certificate."""
    if not peercert:
        return ANONYMOUS
    dn = subject_dn(peercert)
    for rule in parse_rules(rules):
        if rule is None:
            return f"User:{dn}"
        pattern, replacement, case = rule
        matched = re.fullmatch(pattern, dn)
        if matched is None:
            continue
        name = matched.expand(re.sub(r"\$(\d)", r"\\\1", replacement))
        return f"User:{name.lower() if case == 'L' else name.upper() if case == 'U' else name}"
    return f"User:{dn}"
