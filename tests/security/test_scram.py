"""SCRAM (samsa.security.scram) against an independent implementation, scramp's client: both mechanisms
authenticate, a wrong password, an unknown user, a tampered nonce or proof fail with ScramError, the credential
text is Kafka's, and samsa's own client agrees with the server."""

from __future__ import annotations

import base64

import pytest
import scramp

from samsa.security.scram import (
    MECHANISMS,
    ScramClient,
    ScramCredential,
    ScramError,
    ScramServer,
    credentials_of,
)

NAMES = sorted(MECHANISMS)


def server_for(name: str, user: str, password: str) -> ScramServer:
    credential = ScramCredential.from_password(MECHANISMS[name], password, 4096)
    return ScramServer(MECHANISMS[name], lambda u, m: credential if (u, m) == (user, name) else None)


@pytest.mark.parametrize("name", NAMES)
def test_scramp_client_authenticates_and_checks_the_server_signature(name: str) -> None:
    server = server_for(name, "al,i=ce", "secret")
    client = scramp.ScramClient([name], "al,i=ce", "secret")
    client.set_server_first(server.first(client.get_client_first().encode()).decode())
    client.set_server_final(server.final(client.get_client_final().encode()).decode())  # raises if wrong
    assert server.user == "al,i=ce"


@pytest.mark.parametrize("name", NAMES)
def test_wrong_password_and_unknown_user_fail_alike(name: str) -> None:
    server = server_for(name, "alice", "secret")
    client = scramp.ScramClient([name], "alice", "wrong")
    client.set_server_first(server.first(client.get_client_first().encode()).decode())
    with pytest.raises(ScramError):
        server.final(client.get_client_final().encode())
    assert server.user is None
    with pytest.raises(ScramError):
        server_for(name, "alice", "secret").first(
            scramp.ScramClient([name], "bob", "x").get_client_first().encode()
        )


def test_a_tampered_nonce_or_proof_fails() -> None:
    name = "SCRAM-SHA-256"
    for tamper in (lambda f: f.replace(b",p=", b"x,p="), lambda f: f[:-4] + b"AAA="):
        server = server_for(name, "alice", "secret")
        client = ScramClient(MECHANISMS[name], "alice", "secret")
        final = client.final(server.first(client.first()))
        with pytest.raises(ScramError):
            server.final(tamper(final))


@pytest.mark.parametrize("name", NAMES)
def test_samsas_client_against_the_server(name: str) -> None:
    server = server_for(name, "alice", "secret")
    client = ScramClient(MECHANISMS[name], "alice", "secret")
    client.verify(server.final(client.final(server.first(client.first()))))
    assert server.user == "alice"


def test_credential_text_is_kafkas_and_credentials_come_from_user_configs() -> None:
    mechanism = MECHANISMS["SCRAM-SHA-512"]
    credential = ScramCredential.from_password(mechanism, "secret", 8192, salt=b"salt")
    text = credential.to_config()
    assert text.startswith(f"salt={base64.b64encode(b'salt').decode()},stored_key=")
    assert text.endswith(",iterations=8192")
    raw = {
        "users/al%40ce": {"SCRAM-SHA-512": text, "producer_byte_rate": "1024"},
        "users/bob/clients/app": {"SCRAM-SHA-512": text},
        "clients/app": {"SCRAM-SHA-256": text},
    }
    assert credentials_of(raw) == {("al@ce", "SCRAM-SHA-512"): credential}


def test_librdkafkas_doubled_client_nonce_is_taken_as_kafka_3_9_takes_it() -> None:
    """librdkafka before 2.6.1 (kcat 1.7) puts its nonce once more before the server's in the client-final, and
    signs that message; Kafka 3.8.1-3.9 accept it, so does Samsa. A nonce not ending with the server's fails."""
    mechanism = MECHANISMS["SCRAM-SHA-256"]
    credential = ScramCredential.from_password(mechanism, "secret", 4096)
    for prefix, accepted in (("cnonce", True), ("", True), ("cnonce", False)):
        server = ScramServer(mechanism, lambda u, m: credential)
        server_first = server.first(b"n,,n=alice,r=cnonce").decode()
        nonce = server_first.split(",")[0][2:] + ("" if accepted else "x")
        without_proof = f"c=biws,r={prefix}{nonce}"
        auth = f"n=alice,r=cnonce,{server_first},{without_proof}".encode()
        client_key = mechanism.client_key(mechanism.salted_password("secret", credential.salt, 4096))
        signature = mechanism.hmac(mechanism.hash(client_key), auth)
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
        final = f"{without_proof},p={proof}".encode()
        if accepted:
            server.final(final)
            assert server.user == "alice"
        else:
            with pytest.raises(ScramError):
                server.final(final)
