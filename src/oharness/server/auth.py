"""Bearer-token verification (spec 06.2): who is calling, and on which plan.

The key type fixes the one accepted algorithm — HS256 for a shared secret, EdDSA for an Ed25519
public key, RS256 for an RSA public key — so ``alg: none`` and HS/RS confusion (an attacker
signing HS256 with the public key as secret) never verify. ``exp`` and ``sub`` are required;
``iss`` and ``aud`` are checked when configured. The time claims (``exp``, and ``nbf`` and
``iat`` when present) must be JSON numbers, as RFC 7519 defines a NumericDate: a string such as
``"9999999999"``, a boolean or a non-finite number is refused, whatever a JWT library would
coerce. The user's storage prefix comes from ``sub`` only, never from the request body.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from oharness.errors import ConfigError, OHarnessError
from oharness.server.config import JwtSettings
from oharness.sync.protocol import Plan, TeamEntitlement, is_reserved_subject, user_key_segment


class TokenRejected(OHarnessError):
    """The bearer token is missing, malformed, badly signed or expired (answered 401)."""

    code = "unauthorized"


@dataclass(frozen=True)
class Principal:
    """A verified caller: its id (``sub``), storage key segment and claimed entitlements."""

    user_id: str
    segment: str
    own_plan: Plan
    teams: tuple[TeamEntitlement, ...]

    @property
    def claimed_plan(self) -> Plan:
        """The plan the token claims, before erased teams are taken out."""
        return effective_plan(self, frozenset())


def effective_plan(principal: Principal, erased_teams: frozenset[str]) -> Plan:
    """Paid when the user's own plan, or any team not erased, is paid."""
    if principal.own_plan == "paid":
        return "paid"
    for team in principal.teams:
        if team.plan == "paid" and user_key_segment(team.id) not in erased_teams:
            return "paid"
    return "free"


def _plan(value: object) -> Plan:
    return "paid" if value == "paid" else "free"


def _entitlements(claims: Mapping[str, Any]) -> tuple[Plan, tuple[TeamEntitlement, ...]]:
    ent = claims.get("ent")
    if not isinstance(ent, dict):
        return "free", ()
    teams: list[TeamEntitlement] = []
    raw_teams = ent.get("teams")
    if isinstance(raw_teams, list):
        for item in raw_teams:
            if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
                teams.append(TeamEntitlement(item["id"], _plan(item.get("plan"))))
    return _plan(ent.get("plan")), tuple(teams)


class TokenVerifier:
    """Verifies bearer tokens against the configured key."""

    def __init__(self, settings: JwtSettings) -> None:
        self._settings = settings
        self._key: Any
        if settings.secret is not None:
            self._key = settings.secret
            self._algorithms = ["HS256"]
        else:
            assert settings.public_key_pem is not None
            self._key, self._algorithms = _load_public_key(settings.public_key_pem)

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The only algorithms accepted."""
        return tuple(self._algorithms)

    def verify(self, authorization: str | None) -> Principal:
        """Check an ``Authorization`` header value; raise :class:`TokenRejected` if bad."""
        if not authorization:
            raise TokenRejected("no bearer token: send 'Authorization: Bearer <token>'")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise TokenRejected("the Authorization header must be 'Bearer <token>'")
        settings = self._settings
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=self._algorithms,
                issuer=settings.issuer,
                audience=settings.audience,
                leeway=settings.leeway_seconds,
                options={
                    "require": ["exp", "sub"],
                    "verify_aud": settings.audience is not None,
                    "verify_iss": settings.issuer is not None,
                },
            )
        except jwt.ExpiredSignatureError as exc:
            raise TokenRejected("the token has expired: sign in again") from exc
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"the token was refused ({type(exc).__name__})") from exc
        _check_numeric_dates(claims)
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise TokenRejected("the token has no subject ('sub')")
        own_plan, teams = _entitlements(claims)
        reserved = [
            name for name in (sub, *(team.id for team in teams)) if is_reserved_subject(name)
        ]
        if reserved:
            raise TokenRejected(
                f"the token names {reserved[0]!r}, a user or team id of the shape the server "
                "reserves for hashed ids (u- and 32 hex digits); the identity provider must "
                "issue another id"
            )
        return Principal(user_id=sub, segment=user_key_segment(sub), own_plan=own_plan, teams=teams)


def _check_numeric_dates(claims: Mapping[str, Any]) -> None:
    for name in ("exp", "nbf", "iat"):
        if name not in claims:
            continue
        value = claims[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TokenRejected(f"the token's {name!r} must be a number of seconds, not text")
        if not math.isfinite(value):
            raise TokenRejected(f"the token's {name!r} must be a finite number of seconds")


def _load_public_key(pem: str) -> tuple[Any, list[str]]:
    try:
        key = load_pem_public_key(pem.encode("utf-8"))
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            "OHARNESS_SYNC_JWT_PUBLIC_KEY is not a PEM public key (expected '-----BEGIN PUBLIC "
            "KEY-----')",
            key="OHARNESS_SYNC_JWT_PUBLIC_KEY",
        ) from exc
    if isinstance(key, Ed25519PublicKey):
        return key, ["EdDSA"]
    if isinstance(key, RSAPublicKey):
        if key.key_size < 2048:
            raise ConfigError(
                "OHARNESS_SYNC_JWT_PUBLIC_KEY: RSA keys must have at least 2048 bits",
                key="OHARNESS_SYNC_JWT_PUBLIC_KEY",
            )
        return key, ["RS256"]
    raise ConfigError(
        "OHARNESS_SYNC_JWT_PUBLIC_KEY must be an Ed25519 or RSA public key",
        key="OHARNESS_SYNC_JWT_PUBLIC_KEY",
    )


def mint_token(
    secret: str,
    user_id: str,
    *,
    now: int,
    ttl_seconds: int,
    plan: Plan = "free",
    teams: tuple[TeamEntitlement, ...] = (),
    issuer: str | None = None,
    audience: str | None = None,
) -> str:
    """An HS256 development token (``now`` in seconds since the epoch)."""
    claims: dict[str, Any] = {
        "sub": user_id,
        "iat": now,
        "exp": now + ttl_seconds,
        "ent": {"plan": plan, "teams": [team.to_json() for team in teams]},
    }
    if issuer is not None:
        claims["iss"] = issuer
    if audience is not None:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm="HS256")
