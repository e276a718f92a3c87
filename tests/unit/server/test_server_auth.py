"""Token verification (spec 06.2): algorithms, expiry, issuer, audience, plans, attack cases."""

from __future__ import annotations

import base64
import json
import time
import warnings
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from sync_server_support import SECRET, token_for

from oharness.errors import ConfigError
from oharness.server.auth import (
    TokenRejected,
    TokenVerifier,
    effective_plan,
    mint_token,
)
from oharness.server.config import JwtSettings
from oharness.sync.protocol import TeamEntitlement


def pem_public(key: Any) -> str:
    data: bytes = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return data.decode()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def ed_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "alice", "exp": int(time.time()) + 600, **extra}


def bearer(token: str) -> str:
    return f"Bearer {token}"


def unsigned(payload: dict[str, Any]) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(payload)}."


def test_hs256_tokens_verify_and_give_the_subject() -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET))
    principal = verifier.verify(bearer(token_for("alice@example.com")))
    assert principal.user_id == "alice@example.com"
    assert principal.segment.startswith("u-")
    assert principal.claimed_plan == "free"
    assert verifier.algorithms == ("HS256",)


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic abc", "Token x", "Bearer not-a-jwt", "Bearer a.b.c"],
)
def test_missing_or_malformed_headers_are_refused(header: str | None) -> None:
    with pytest.raises(TokenRejected):
        TokenVerifier(JwtSettings(secret=SECRET)).verify(header)


def hs512_with_the_right_secret() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the secret is short for HS512; irrelevant here
        return jwt.encode(claims(), SECRET, algorithm="HS512")


def test_attack_tokens_are_refused(rsa_key: rsa.RSAPrivateKey) -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET))
    expired = token_for("alice", expires_in=-3600)
    with pytest.raises(TokenRejected, match="expired"):
        verifier.verify(bearer(expired))
    for token in (
        unsigned(claims()),
        token_for("alice", secret="another-secret-0123456789abcdef0123456789"),
        jwt.encode(claims(), rsa_key, algorithm="RS256"),
        jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256"),  # no exp
        jwt.encode({"exp": int(time.time()) + 60}, SECRET, algorithm="HS256"),  # no sub
        jwt.encode(claims(sub=""), SECRET, algorithm="HS256"),
        hs512_with_the_right_secret(),
    ):
        with pytest.raises(TokenRejected):
            verifier.verify(bearer(token))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("exp", "4102444800"),  # a string that a library would coerce (year 2100)
        ("exp", True),
        ("exp", float("inf")),
        ("exp", [4102444800]),
        ("nbf", "0"),
        ("iat", "1700000000"),
    ],
    ids=["exp-string", "exp-bool", "exp-inf", "exp-list", "nbf-string", "iat-string"],
)
def test_time_claims_must_be_numbers(name: str, value: object) -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET))
    token = jwt.encode({**claims(), name: value}, SECRET, algorithm="HS256")
    with pytest.raises(TokenRejected):
        verifier.verify(bearer(token))


def test_time_claims_as_numbers_pass() -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET))
    now = time.time()
    token = jwt.encode({**claims(), "exp": now + 600.5, "nbf": int(now) - 5, "iat": now}, SECRET)
    assert verifier.verify(bearer(token)).user_id == "alice"


def test_rs256_public_key_and_hs_rs_confusion(rsa_key: rsa.RSAPrivateKey) -> None:
    public = pem_public(rsa_key)
    verifier = TokenVerifier(JwtSettings(public_key_pem=public))
    assert verifier.algorithms == ("RS256",)
    assert verifier.verify(bearer(jwt.encode(claims(), rsa_key, algorithm="RS256"))).user_id
    # The classic confusion: HS256 signed with the public key's PEM as the shared secret.
    import hashlib
    import hmac

    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims()).encode()).rstrip(b"=")
    signature = hmac.new(public.encode(), header + b"." + body, hashlib.sha256).digest()
    forged = header + b"." + body + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")
    with pytest.raises(TokenRejected):
        verifier.verify(bearer(forged.decode()))
    with pytest.raises(TokenRejected):
        verifier.verify(bearer(unsigned(claims())))
    with pytest.raises(TokenRejected):
        verifier.verify(bearer(token_for("alice")))


def test_eddsa_public_key(ed_key: ed25519.Ed25519PrivateKey) -> None:
    verifier = TokenVerifier(JwtSettings(public_key_pem=pem_public(ed_key)))
    assert verifier.algorithms == ("EdDSA",)
    assert verifier.verify(bearer(jwt.encode(claims(), ed_key, algorithm="EdDSA"))).user_id
    other = ed25519.Ed25519PrivateKey.generate()
    with pytest.raises(TokenRejected):
        verifier.verify(bearer(jwt.encode(claims(), other, algorithm="EdDSA")))


def test_issuer_and_audience_when_configured() -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET, issuer="https://id", audience="sync"))
    good = jwt.encode(claims(iss="https://id", aud="sync"), SECRET, algorithm="HS256")
    assert verifier.verify(bearer(good)).user_id == "alice"
    for bad in (
        claims(iss="https://evil", aud="sync"),
        claims(iss="https://id", aud="other"),
        claims(aud="sync"),
        claims(iss="https://id"),
    ):
        with pytest.raises(TokenRejected):
            verifier.verify(bearer(jwt.encode(bad, SECRET, algorithm="HS256")))
    # Without configuration, iss and aud claims are not checked.
    lenient = TokenVerifier(JwtSettings(secret=SECRET))
    assert lenient.verify(bearer(jwt.encode(claims(aud="x", iss="y"), SECRET, "HS256"))).user_id


def test_plans_from_entitlements() -> None:
    verifier = TokenVerifier(JwtSettings(secret=SECRET))

    def principal(**ent: Any) -> Any:
        return verifier.verify(bearer(jwt.encode(claims(ent=ent), SECRET, algorithm="HS256")))

    assert principal(plan="paid").claimed_plan == "paid"
    assert principal(plan="free").claimed_plan == "free"
    assert principal(plan="gold").claimed_plan == "free"
    team = principal(plan="free", teams=[{"id": "t1", "plan": "paid"}, {"id": 3}])
    assert team.teams == (TeamEntitlement("t1", "paid"),)
    assert effective_plan(team, frozenset()) == "paid"
    assert effective_plan(team, frozenset({"t1"})) == "free"
    no_ent = verifier.verify(bearer(token_for("alice")))
    assert no_ent.claimed_plan == "free" and no_ent.teams == ()


def test_minted_tokens_verify() -> None:
    token = mint_token(
        SECRET,
        "bob",
        now=int(time.time()),
        ttl_seconds=60,
        plan="paid",
        teams=(TeamEntitlement("t1", "free"),),
        issuer="i",
        audience="a",
    )
    principal = TokenVerifier(JwtSettings(secret=SECRET, issuer="i", audience="a")).verify(
        bearer(token)
    )
    assert principal.user_id == "bob" and principal.claimed_plan == "paid"


def test_key_configuration_errors(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        JwtSettings()
    with pytest.raises(ConfigError, match="exactly one"):
        JwtSettings(secret=SECRET, public_key_pem=pem_public(rsa_key))
    with pytest.raises(ConfigError, match="32 bytes"):
        JwtSettings(secret="short")
    with pytest.raises(ConfigError, match="PEM"):
        TokenVerifier(JwtSettings(public_key_pem="-----BEGIN PUBLIC KEY-----\nnope"))
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(ConfigError, match="2048"):
        TokenVerifier(JwtSettings(public_key_pem=pem_public(small)))
