"""The sync server's settings: one frozen dataclass, built by the edge from the environment.

Nothing here reads the environment or files: :func:`settings_from_environ` parses a mapping
and the already-read contents of the files it names (see :mod:`oharness.server.environment`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import msgspec

from oharness.errors import ConfigError, ValidationError
from oharness.sync.protocol import (
    PROTOCOL_VERSIONS,
    PlanLimits,
    Quotas,
    parse_entitlements,
    parse_protocols,
)

DEFAULT_MAX_REQUEST_BYTES: Final = 32 * 1024 * 1024
DEFAULT_RATE_PER_MINUTE: Final = 60
MIN_SECRET_BYTES: Final = 32

#: Every environment variable the server reads, with its default (documented in
#: docs/self-hosting.md; a test checks the two agree).
ENVIRONMENT_DEFAULTS: Final[Mapping[str, str]] = {
    "OHARNESS_SYNC_STORAGE": "",
    "OHARNESS_SYNC_JWT_SECRET": "",
    "OHARNESS_SYNC_JWT_PUBLIC_KEY": "",
    "OHARNESS_SYNC_JWT_ISSUER": "",
    "OHARNESS_SYNC_JWT_AUDIENCE": "",
    "OHARNESS_SYNC_ADMIN_KEY": "",
    "OHARNESS_SYNC_MAX_NOTES": "5000",
    "OHARNESS_SYNC_MAX_CHANGES_PER_COMMIT": "500",
    "OHARNESS_SYNC_MAX_BODY_BYTES": "131072",
    "OHARNESS_SYNC_MAX_RESPONSE_BYTES": "16777216",
    "OHARNESS_SYNC_MAX_REQUEST_BYTES": str(DEFAULT_MAX_REQUEST_BYTES),
    "OHARNESS_SYNC_TOMBSTONE_DAYS": "90",
    "OHARNESS_SYNC_RATE_PER_MINUTE": str(DEFAULT_RATE_PER_MINUTE),
    "OHARNESS_SYNC_ENTITLEMENTS": "",
    "OHARNESS_SYNC_PROTOCOLS": "1,2",
}


@dataclass(frozen=True)
class JwtSettings:
    """How bearer tokens are verified: an HS256 secret or a PEM public key (Ed25519 or RSA)."""

    secret: str | None = None
    public_key_pem: str | None = None
    issuer: str | None = None
    audience: str | None = None
    #: Seconds of clock skew tolerated on ``exp``.
    leeway_seconds: int = 30

    def __post_init__(self) -> None:
        if (self.secret is None) == (self.public_key_pem is None):
            raise ConfigError(
                "the sync server needs exactly one token key: set OHARNESS_SYNC_JWT_SECRET "
                "(HS256, at least 32 bytes) or OHARNESS_SYNC_JWT_PUBLIC_KEY (Ed25519 or RSA "
                "public key, PEM), not both and not neither",
                key="OHARNESS_SYNC_JWT_SECRET",
            )
        if self.secret is not None and len(self.secret.encode("utf-8")) < MIN_SECRET_BYTES:
            raise ConfigError(
                f"OHARNESS_SYNC_JWT_SECRET is shorter than {MIN_SECRET_BYTES} bytes: use a "
                "longer random secret (e.g. `openssl rand -hex 32`)",
                key="OHARNESS_SYNC_JWT_SECRET",
            )


@dataclass(frozen=True)
class ServerSettings:
    """Everything the sync server is configured with (spec 08)."""

    jwt: JwtSettings
    quotas: Quotas = field(default_factory=Quotas)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    #: Requests a minute per account on one replica; 0 switches rate limiting off.
    rate_per_minute: int = DEFAULT_RATE_PER_MINUTE
    #: The free plan's limits (``None``: no entitlements file, no limits beyond the quotas).
    free_plan_limits: PlanLimits | None = None
    protocols: tuple[int, ...] = PROTOCOL_VERSIONS
    admin_key: str | None = None
    #: Manifest compare-and-swap attempts before answering 503.
    commit_attempts: int = 12
    #: Bytes of frontmatter a note may carry on top of ``maxBodyBytes``.
    frontmatter_allowance: int = 65536
    #: Seconds sent in ``Retry-After`` on 503.
    unavailable_retry_after: int = 5
    #: Concurrent object reads or writes within one request.
    io_concurrency: int = 16
    #: Parsed manifests kept per replica (checked against the stored ETag on every use).
    manifest_cache_size: int = 32
    #: Manifest heads (version, generation, commit; ~200 bytes each) kept per replica for
    #: conditional idle checks (checked against the stored ETag on every use).
    manifest_head_cache_size: int = 100_000
    #: Seconds a replica trusts what it read of a team's erase marker (it decides a plan only).
    team_erase_lifetime: float = 300.0

    def __post_init__(self) -> None:
        if self.quotas.max_request_bytes != self.max_request_bytes:
            # Announced with the other limits, so clients size their commits to fit.
            announced = msgspec.structs.replace(
                self.quotas, max_request_bytes=self.max_request_bytes
            )
            object.__setattr__(self, "quotas", announced)
        if not self.protocols or any(v not in PROTOCOL_VERSIONS for v in self.protocols):
            raise ConfigError(f"unsupported protocol list {self.protocols!r}", key="protocols")
        if self.commit_attempts < 1:
            raise ConfigError("commit_attempts must be at least 1", key="commit_attempts")


def _int_variable(environ: Mapping[str, str], name: str, *, minimum: int) -> int:
    raw = environ.get(name, "").strip() or ENVIRONMENT_DEFAULTS[name]
    if not raw.isdigit() or int(raw) < minimum:
        raise ConfigError(f"{name}={raw!r}: must be an integer >= {minimum}", key=name)
    return int(raw)


def _text_variable(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "").strip()
    return value or None


def settings_from_environ(
    environ: Mapping[str, str], read_text: Callable[[str], str]
) -> ServerSettings:
    """Build settings from ``OHARNESS_SYNC_*`` variables; ``read_text`` reads a named file."""
    public_key = _text_variable(environ, "OHARNESS_SYNC_JWT_PUBLIC_KEY")
    if public_key is not None and not public_key.startswith("-----BEGIN"):
        public_key = read_text(public_key)
    jwt = JwtSettings(
        secret=_text_variable(environ, "OHARNESS_SYNC_JWT_SECRET"),
        public_key_pem=public_key,
        issuer=_text_variable(environ, "OHARNESS_SYNC_JWT_ISSUER"),
        audience=_text_variable(environ, "OHARNESS_SYNC_JWT_AUDIENCE"),
    )
    quotas = Quotas(
        max_notes=_int_variable(environ, "OHARNESS_SYNC_MAX_NOTES", minimum=1),
        max_changes_per_commit=_int_variable(
            environ, "OHARNESS_SYNC_MAX_CHANGES_PER_COMMIT", minimum=1
        ),
        max_body_bytes=_int_variable(environ, "OHARNESS_SYNC_MAX_BODY_BYTES", minimum=1),
        max_response_bytes=_int_variable(environ, "OHARNESS_SYNC_MAX_RESPONSE_BYTES", minimum=1),
        tombstone_days=_int_variable(environ, "OHARNESS_SYNC_TOMBSTONE_DAYS", minimum=1),
    )
    entitlements_path = _text_variable(environ, "OHARNESS_SYNC_ENTITLEMENTS")
    free_limits = None
    if entitlements_path is not None:
        free_limits = parse_entitlements_text(read_text(entitlements_path), entitlements_path)
    protocols_raw = environ.get("OHARNESS_SYNC_PROTOCOLS", "").strip()
    try:
        protocols = parse_protocols(
            protocols_raw or ENVIRONMENT_DEFAULTS["OHARNESS_SYNC_PROTOCOLS"]
        )
    except ValidationError as exc:
        raise ConfigError(
            f"OHARNESS_SYNC_PROTOCOLS: {exc.message}", key="OHARNESS_SYNC_PROTOCOLS"
        ) from exc
    return ServerSettings(
        jwt=jwt,
        quotas=quotas,
        max_request_bytes=_int_variable(environ, "OHARNESS_SYNC_MAX_REQUEST_BYTES", minimum=1024),
        rate_per_minute=_int_variable(environ, "OHARNESS_SYNC_RATE_PER_MINUTE", minimum=0),
        free_plan_limits=free_limits,
        protocols=protocols,
        admin_key=_text_variable(environ, "OHARNESS_SYNC_ADMIN_KEY"),
    )


def parse_entitlements_text(text: str, source: str) -> PlanLimits | None:
    """Parse the contents of ``memory-entitlements.json`` (``source`` names it in errors)."""
    import json

    try:
        return parse_entitlements(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc.msg})", file=source) from exc
    except ValidationError as exc:
        raise ConfigError(
            f'{source}: {exc.message}; expected {{"free": {{"maxNotes": 200, '
            '"maxBodyBytes": 16384}}',
            file=source,
        ) from exc
