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
    for tamper in (lambda f: f.replace(b"r=", b"r=x"), lambda f: f[:-4] + b"AAA="):
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
