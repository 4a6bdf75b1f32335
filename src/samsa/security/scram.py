"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them (KIP-84), sans-IO: bytes in, bytes
out, no socket. The broker keeps salted credentials only, never a password.

A credential, as Kafka writes it in ``/config/users/<user>`` (key ``SCRAM-SHA-256`` or ``SCRAM-SHA-512``)::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    StoredKey      = H(HMAC-H(SaltedPassword, "Client Key"))
    ServerKey      = HMAC-H(SaltedPassword, "Server Key")

The exchange (two SaslAuthenticate round trips)::

    client-first  n,[a=<authzid>],n=<saslname>,r=<client nonce>[,<extension>=<value>...]
    server-first  r=<client nonce><server nonce>,s=<salt base64>,i=<iterations>
    client-final  c=biws,r=<nonce>,p=<ClientProof base64>
    server-final  v=<ServerSignature base64>

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC-H(StoredKey, AuthMessage);  ClientProof = ClientKey XOR ClientSignature
    ServerSignature = HMAC-H(ServerKey, AuthMessage)

The client-final nonce must end with the server-first one, as Kafka 3.8.1 to 3.9 (the ZooKeeper-era brokers)
check it: librdkafka before 2.6.1 (kcat 1.7 among them) sends its own nonce once more in front of it; the proof
still covers the whole server nonce. (Kafka 4 wants the two equal and refuses those clients.)

A saslname escapes ``,`` as ``=2C`` and ``=`` as ``=3D``. An unknown user, a credential under the mechanism's
minimum iterations and a wrong proof all raise ``ScramError`` alike, so the answer tells nothing of which (the
broker sends Kafka's one message for all). Iterations: 4096 at least (both mechanisms), 16384 at most for a new
credential (``MAX_ITERATIONS``, AlterUserScramCredentials' bound).

``ScramServer`` and ``ScramClient`` hold one exchange each; not thread-safe, one per connection.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "ScramClient",
    "ScramCredential",
    "ScramCredentialCache",
    "ScramError",
    "ScramMechanism",
    "ScramServer",
    "credentials_of",
    "mechanism_by_type",
]

MAX_ITERATIONS = 16384


class ScramError(Exception):
    """A SCRAM exchange failed: a malformed message, an unknown user, a wrong proof (the reason is for the log,
    never for the client)."""


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    """One SCRAM mechanism: its SASL name, hash, AlterUserScramCredentials type code and minimum iterations."""

    name: str
    hash_name: str
    type_code: int
    min_iterations: int = 4096

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """RFC 5802's Hi(): PBKDF2 with this mechanism's HMAC (the password taken as UTF-8, as Kafka's clients
        send it)."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def client_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Client Key")

    def server_key(self, salted: bytes) -> bytes:
        return self.hmac(salted, b"Server Key")


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}


def mechanism_by_type(type_code: int) -> ScramMechanism | None:
    """The mechanism of an AlterUserScramCredentials / DescribeUserScramCredentials type code (None: unknown)."""
    return next((m for m in MECHANISMS.values() if m.type_code == type_code), None)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A salted credential as the broker keeps it (module doc)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
    ) -> ScramCredential:
        """What AlterUserScramCredentials keeps from the salted password a client sent."""
        stored = mechanism.hash(mechanism.client_key(salted))
        return cls(salt, stored, mechanism.server_key(salted), iterations)

    @classmethod
    def from_password(
        cls, mechanism: ScramMechanism, password: str, iterations: int, salt: bytes | None = None
    ) -> ScramCredential:
        import secrets  # here: it imports random, which a broker's start does without

        salt = salt if salt is not None else secrets.token_bytes(32)
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_config(self) -> str:
        """Kafka's text of the credential (``ScramCredentialUtils.credentialToString``'s layout)."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def from_config(cls, text: str) -> ScramCredential:
        """The credential of Kafka's text; ScramError when it is not one."""
        try:
            fields = dict(part.split("=", 1) for part in text.split(","))
            return cls(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (ValueError, KeyError) as exc:
            raise ScramError(f"not a SCRAM credential: {exc}") from None


def credentials_of(raw: Mapping[str, Mapping[str, str]]) -> dict[tuple[str, str], ScramCredential]:
    """The SCRAM credentials in the user entity configs as kept (``users/<sanitized user>`` -> key -> value,
    the shape of ``/config/users``): (user, mechanism name) -> credential; unreadable ones are left out."""
    from urllib.parse import unquote

    found: dict[tuple[str, str], ScramCredential] = {}
    for path, config in raw.items():
        kind, _, name = path.partition("/")
        if kind != "users" or not name or "/" in name or name == "<default>":
            continue
        for key, value in config.items():
            if key in MECHANISMS:
                try:
                    found[(unquote(name), key)] = ScramCredential.from_config(value)
                except ScramError:
                    continue
    return found


class ScramCredentialCache:
    """The credentials a broker authenticates against, replaced whole when the stored ones change (at start and
    on each change notification). Event-loop thread only."""

    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def replace(self, credentials: Mapping[tuple[str, str], ScramCredential]) -> None:
        self._credentials = dict(credentials)

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def __len__(self) -> int:
        return len(self._credentials)


_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<name>[^,]*),r=(?P<nonce>[^,]+)(?P<ext>.*))"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without>c=(?P<binding>[^,]*),r=(?P<nonce>[^,]+)(?:,[^,]*)*?),p=(?P<proof>[^,]+)"
)
_SERVER_FIRST = re.compile(r"r=(?P<nonce>[^,]+),s=(?P<salt>[^,]+),i=(?P<iterations>\d+)(?:,.*)?")


def sasl_name(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


def user_of_sasl_name(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise ScramError(f"invalid saslname {name!r}")
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """The broker's side of one exchange: ``first`` answers the client-first message, ``final`` the client-final
    one; ``user`` is set once ``final`` succeeded. Any failure raises ScramError and ends the exchange."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str, str], ScramCredential | None],
        nonce: Callable[[], str] = lambda: _random_nonce(),
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self.candidate: str | None = None  # the user the client-first names
        self.user: str | None = None  # set on success

    def first(self, message: bytes) -> bytes:
        match = _CLIENT_FIRST.fullmatch(_text(message))
        if match is None:
            raise ScramError("invalid client-first message")
        user = user_of_sasl_name(match["name"])
        self.candidate = user
        credential = self._lookup(user, self.mechanism.name)
        if credential is None:
            raise ScramError(f"no {self.mechanism.name} credential for user {user!r}")
        if match["authzid"] and match["authzid"] != user:
            raise ScramError("the authorization id is not the user")
        if credential.iterations < self.mechanism.min_iterations:
            raise ScramError(f"iterations {credential.iterations} below {self.mechanism.min_iterations}")
        self._credential = credential
        self._client_first_bare = match["bare"]
        nonce = match["nonce"] + self._nonce()
        self._server_first = f"r={nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        credential, self._credential = self._credential, None
        if credential is None:
            raise ScramError("client-final message before the client-first")
        match = _CLIENT_FINAL.fullmatch(_text(message))
        if match is None:
            raise ScramError("invalid client-final message")
        if not match["nonce"].endswith(self._server_first[2:].split(",", 1)[0]):
            raise ScramError("invalid client nonce in the client-final message")
        auth = f"{self._client_first_bare},{self._server_first},{match['without']}".encode()
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except ValueError:
            raise ScramError("the client proof is not base64") from None
        signature = self.mechanism.hmac(credential.stored_key, auth)
        if len(proof) != len(signature):
            raise ScramError("invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise ScramError("invalid client credentials")
        self.user = self.candidate
        return f"v={_b64(self.mechanism.hmac(credential.server_key, auth))}".encode()


class ScramClient:
    """A client's side of one exchange (samsa's own tools): ``first()``, then ``final(server_first)``, then
    ``verify(server_final)``; ScramError when the server's answers are wrong."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or _random_nonce()
        self._bare = f"n={sasl_name(user)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        match = _SERVER_FIRST.fullmatch(_text(server_first))
        if match is None or not match["nonce"].startswith(self._nonce):
            raise ScramError("invalid server-first message")
        iterations = int(match["iterations"])
        if iterations < self.mechanism.min_iterations:
            raise ScramError(
                f"the server asks {iterations} iterations, fewer than {self.mechanism.min_iterations}"
            )
        salted = self.mechanism.salted_password(self._password, base64.b64decode(match["salt"]), iterations)
        without_proof = f"c=biws,r={match['nonce']}"
        auth = f"{self._bare},{_text(server_first)},{without_proof}".encode()
        client_key = self.mechanism.client_key(salted)
        signature = self.mechanism.hmac(self.mechanism.hash(client_key), auth)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self.mechanism.hmac(self.mechanism.server_key(salted), auth)
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        text = _text(server_final)
        if text.startswith("e="):
            raise ScramError(f"the server refused: {text[2:]}")
        if not hmac.compare_digest(text.encode(), b"v=" + _b64(self._server_signature).encode()):
            raise ScramError("the server's signature is wrong")


def _random_nonce() -> str:
    """130 random bits in base 36, as Kafka makes its nonces: letters and digits only (librdkafka 2.0 mangles a
    nonce with ``-`` or ``_``)."""
    import secrets

    value, digits = secrets.randbits(130), []
    while value:
        value, digit = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return "".join(digits) or "0"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _text(message: bytes) -> str:
    try:
        return message.decode()
    except UnicodeDecodeError:
        raise ScramError("a SCRAM message is not UTF-8") from None
