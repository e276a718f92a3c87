"""The building blocks of the sync protocol's declarations (spec 06).

Every wire message is a :class:`Wire` struct (msgspec): its fields, their JSON names (camelCase),
their types with the constraints of :data:`Count`, :data:`ProtocolNumber` and :data:`SegmentId`,
and which fields may be left out. From that one declaration come parsing (:func:`convert`,
:func:`decode`), serialising (``to_json`` / ``encode``) and the JSON Schemas of the server's
OpenAPI document. This module also holds the error table and the parts every message shares:
the scope, the quotas and the free plan's limits.

Omission: a field with a plain default is left out of the JSON while it holds that default; a
field declared with :func:`sent` has a default but is always sent (``"baseRev": null``).
Unknown fields are ignored, so a newer peer can add fields without breaking an older one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, TypeVar, cast

import msgspec
from msgspec import Meta

from oharness.errors import ValidationError
from oharness.types import Scope

JsonObject = dict[str, Any]
Plan = Literal["free", "paid"]
ChangeOp = Literal["put", "delete"]
RejectReason = Literal[
    "conflict", "invalid_request", "case_collision", "too_large", "quota_exceeded", "plan_limit"
]

#: Every protocol this code speaks; a server may be configured to serve fewer.
PROTOCOL_VERSIONS: Final[tuple[int, ...]] = (1, 2)
CURRENT_PROTOCOL: Final = 2
MANIFEST_FORMAT: Final = 2

#: The error table of spec 06.6: code -> HTTP status.
ERROR_STATUS: Final[Mapping[str, int]] = {
    "invalid_request": 400,
    "unauthorized": 401,
    "account_erased": 403,
    "plan_limit": 403,
    "conflict": 409,
    "encrypted_account": 409,
    "manifest_changed": 412,
    "too_large": 413,
    "quota_exceeded": 422,
    "protocol_unsupported": 426,
    "rate_limited": 429,
    "unavailable": 503,
}
REJECT_REASONS: Final[tuple[RejectReason, ...]] = (
    "conflict",
    "invalid_request",
    "case_collision",
    "too_large",
    "quota_exceeded",
    "plan_limit",
)

#: Project ids and note ids: no dots, no slashes, so a request cannot name a key outside its prefix.
SEGMENT_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
#: A verified subject usable as a key segment as it is (else it is hashed, spec 06.1).
USER_SEGMENT_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
REVISION_PATTERN: Final = re.compile(r"[0-9a-f]{32}")

#: A count, a size or a version: an integer >= 0.
Count = Annotated[int, Meta(ge=0)]
#: A protocol version number.
ProtocolNumber = Annotated[int, Meta(ge=1)]
#: A project id (anchored for JSON Schema; :func:`is_valid_segment` also refuses a final newline,
#: which Python's ``$`` lets through).
SegmentId = Annotated[str, Meta(pattern=f"^{SEGMENT_PATTERN.pattern}$")]

_T = TypeVar("_T")


def sent(default: _T) -> _T:
    """A default that is sent all the same (``omit_defaults`` leaves out plain defaults only:
    msgspec never compares a value with what a factory of its own makes)."""
    return msgspec.field(default_factory=lambda: _fresh(default))


def _fresh(default: _T) -> _T:
    return cast(_T, {}) if default == {} else default


class Wire(msgspec.Struct, frozen=True, rename="camel", omit_defaults=True):
    """A message of the sync protocol (fields in Python's snake_case, camelCase on the wire)."""

    def to_json(self) -> JsonObject:
        """The wire form as JSON values (what :meth:`encode` sends, decoded)."""
        return json_values(self)

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON."""
        return msgspec.json.encode(self)


def json_values(message: msgspec.Struct, *, sort_sets: bool = False) -> JsonObject:
    """A struct's wire form as JSON values: dicts, lists, strings, numbers, booleans, null."""
    data = msgspec.json.encode(message, order="deterministic" if sort_sets else None)
    return cast(JsonObject, msgspec.json.decode(data))


_AT: Final = re.compile(r" - at `\$(?P<path>[^`]*)`$")

_W = TypeVar("_W")


def refusal(exc: msgspec.ValidationError, what: str) -> ValidationError:
    """msgspec's complaint as one line naming the field: ``request body: expected `int` >= 0,
    got `-1` (at `$.since`); send what docs/sync-protocol.md shows``."""
    text = str(exc)
    match = _AT.search(text)
    path = match.group("path") if match else ""
    reason = text[: match.start()] if match else text
    reason = reason[:1].lower() + reason[1:]
    where = f" (at `${path}`)" if path else ""
    field_name = path.rsplit(".", 1)[-1] if path else what
    return ValidationError(
        f"{what}: {reason}{where}; send what docs/sync-protocol.md shows", field=field_name
    )


def convert(value: object, kind: type[_W], what: str) -> _W:
    """Decoded JSON (dicts, lists, …) as the declared message ``kind``, or a ValidationError."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise refusal(exc, what) from exc


def decode(data: bytes, kind: type[_W], what: str) -> _W:
    """JSON bytes as the declared message ``kind``, or a ValidationError."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise refusal(exc, what) from exc
    except msgspec.DecodeError as exc:
        raise ValidationError(f"{what} is not valid JSON: {exc}", field=what) from exc


def is_valid_segment(value: str) -> bool:
    """True for a safe project id or note id (``[A-Za-z0-9][A-Za-z0-9_-]{0,127}``)."""
    return SEGMENT_PATTERN.fullmatch(value) is not None


def is_revision(value: str) -> bool:
    """True for a revision id: 32 lower-case hex digits."""
    return REVISION_PATTERN.fullmatch(value) is not None


class ProtocolHead(Wire, frozen=True):
    """The field of a request body read before anything else in it."""

    protocol: ProtocolNumber


def read_protocol(obj: object) -> int:
    """The ``protocol`` field of a request body (checked before anything else in it)."""
    return convert(obj, ProtocolHead, "request body").protocol


def parse_protocols(value: str) -> tuple[int, ...]:
    """Parse a protocol list such as ``"1,2"`` or ``"1"`` (the server's served versions)."""
    versions: list[int] = []
    for part in value.replace(" ", "").split(","):
        if not part.isdigit() or int(part) not in PROTOCOL_VERSIONS:
            raise ValidationError(
                f"unknown sync protocol {part!r}: use a comma-separated list of "
                f"{', '.join(str(v) for v in PROTOCOL_VERSIONS)}",
                field="protocols",
            )
        if int(part) not in versions:
            versions.append(int(part))
    return tuple(sorted(versions))


# --------------------------------------------------------------------------- quotas, plans


class Quotas(Wire, frozen=True):
    """The server's configured limits, sent with every JSON response (spec 06.2)."""

    max_notes: Count = sent(5000)
    max_changes_per_commit: Count = sent(500)
    max_body_bytes: Count = sent(131072)
    max_response_bytes: Count = sent(16 * 1024 * 1024)
    tombstone_days: Count = sent(90)
    #: The largest request body the server reads (``None``: not announced, an older server).
    max_request_bytes: Count | None = None


def parse_quotas(value: object) -> Quotas:
    """Parse a ``quotas`` object."""
    return convert(value, Quotas, "quotas")


class PlanLimits(Wire, frozen=True):
    """The free plan's limits from ``memory-entitlements.json`` (``None``: no such limit)."""

    max_notes: Count | None = sent(None)
    max_body_bytes: Count | None = sent(None)


class Entitlements(Wire, frozen=True):
    """``memory-entitlements.json``: ``{"free": {"maxNotes": 200, "maxBodyBytes": …}}``."""

    free: PlanLimits | None = None


def parse_plan_limits(value: object) -> PlanLimits:
    """Parse a ``planLimits`` object (or the ``free`` entry of the entitlements file)."""
    return convert(value, PlanLimits, "planLimits")


def parse_entitlements(value: object) -> PlanLimits | None:
    """Parse ``memory-entitlements.json`` into the free plan's limits (``None``: no entry)."""
    return convert(value, Entitlements, "entitlements").free


# --------------------------------------------------------------------------- scope


class SyncScope(Wire, frozen=True):
    """Which notes a request is about: a project's (by project id) or the user's own."""

    kind: Scope
    project_id: SegmentId | None = None

    def __post_init__(self) -> None:
        if self.kind == "user":
            msgspec.structs.force_setattr(self, "project_id", None)
        elif self.project_id is None or not is_valid_segment(self.project_id):
            raise ValidationError(
                f"scope.projectId {self.project_id!r} is invalid: 1-128 letters, digits, '-' or "
                "'_', starting with a letter or digit",
                field="scope",
            )


def parse_scope(value: object) -> SyncScope:
    """Parse ``scope``; a project id must be a safe key segment."""
    return convert(value, SyncScope, "scope")
