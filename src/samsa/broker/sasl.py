"""SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka runs it (KIP-43, KIP-152): a client sends ApiVersions
and SaslHandshake (v1: the mechanism), then its tokens in SaslAuthenticate requests; nothing else is served before
it has authenticated, and a failed authentication is answered with SASL_AUTHENTICATION_FAILED after
``connection.failed.authentication.delay.ms`` (100) and the connection closed.

Mechanisms (``sasl.enabled.mechanisms``, per listener as ``listener.name.<l>.sasl.enabled.mechanisms``):

- PLAIN (RFC 4616): one token ``authzid NUL user NUL password``; the users are the ``user_<name>="<password>"``
  entries of the listener's JAAS configuration, ``listener.name.<l>.plain.sasl.jaas.config`` (or
  ``sasl.jaas.config``), as Kafka's ``PlainLoginModule`` reads them.
- SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802/7677, ``samsa.security.scram``): two tokens each way, against the
  salted credentials kept in ``/config/users/<user>`` (or the single broker's store), managed with
  AlterUserScramCredentials (``samsa configs --entity-type users --add-config 'SCRAM-SHA-256=[password=...]'``).
  Every failure (unknown user, wrong proof, malformed message) is answered with Kafka's one message, "Authentication
  failed during authentication due to invalid credentials with SASL mechanism <m>", naming nothing more.

A connection that authenticated is ``User:<name>``. ``connections.max.reauth.ms`` (0: never) is told to the client
as the session lifetime (KIP-368), after which Kafka's clients authenticate again on the same connection.

Not yet: OAUTHBEARER, GSSAPI.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MECHANISMS", "PlainAuthenticator", "SaslSettings", "jaas_users"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_users(jaas: str) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of a JAAS configuration line, as name -> password."""
    return {
        key[len("user_") :]: value.replace('\\"', '"')
        for key, value in _JAAS_OPTION.findall(jaas)
        if key.startswith("user_")
    }


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """One SASL listener's mechanisms and PLAIN users."""

    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]
    reauth_ms: int = 0

    @classmethod
    def for_listener(cls, setting: Callable[[str], Any], listener: str) -> SaslSettings:
        """``setting(key)``: the key's value for this listener (``KafkaConfig.listener_setting``)."""
        enabled = setting("sasl.enabled.mechanisms") or []
        mechanisms = tuple(
            m.strip().upper() for m in (enabled if isinstance(enabled, list) else [enabled]) if m
        )
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown:
            raise ValueError(
                f"listener {listener}: sasl.enabled.mechanisms {', '.join(unknown)} not supported "
                f"(Samsa serves {', '.join(MECHANISMS)})"
            )
        if not mechanisms:
            raise ValueError(f"listener {listener}: sasl.enabled.mechanisms names no mechanism")
        jaas = setting("plain.sasl.jaas.config") or setting("sasl.jaas.config") or ""
        users = jaas_users(str(jaas))
        if "PLAIN" in mechanisms and not users:
            raise ValueError(
                f"listener {listener}: PLAIN needs users: listener.name.{listener.lower()}.plain.sasl.jaas.config="
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="...";'
            )
        return cls(mechanisms, users, int(setting("connections.max.reauth.ms") or 0))


class PlainAuthenticator:
    """PLAIN's single step: the user on success, None on failure (the password compared in constant time)."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users

    def authenticate(self, token: bytes) -> str | None:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            return None
        authzid, user, password = (part.decode("utf-8", "replace") for part in parts)
        if authzid and authzid != user:
            return None  # Kafka: an authorization id must be the user itself
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return None
        return user
