"""Sync protocol basics: types, the error table, parsing helpers, quotas, plans, scopes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

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
_USER_SEGMENT: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
_REV: Final = re.compile(r"[0-9a-f]{32}")


# --------------------------------------------------------------------------- helpers


def _fail(message: str, field_name: str) -> ValidationError:
    return ValidationError(message, field=field_name)


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(f"{what} must be a JSON object", what)
    return cast(Mapping[str, Any], value)


def _int(obj: Mapping[str, Any], key: str, *, minimum: int = 0) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(f"{key!r} must be an integer >= {minimum}", key)
    return value


def _optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    if obj.get(key) is None:
        return None
    return _int(obj, key)


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _fail(f"{key!r} must be a string", key)
    return value


def _optional_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(f"{key!r} must be a string or null", key)
    return value


def _bool(obj: Mapping[str, Any], key: str, default: bool | None = None) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise _fail(f"{key!r} must be true or false", key)
    return value


def _str_list(obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _fail(f"{key!r} must be a list of strings", key)
    return tuple(value)


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise _fail(f"{key!r} must be a list", key)
    return value


def _plan(value: object) -> Plan:
    if value == "paid":
        return "paid"
    if value == "free":
        return "free"
    raise _fail(f"plan must be 'free' or 'paid', got {value!r}", "plan")


def is_valid_segment(value: str) -> bool:
    """True for a safe project id or note id (``[A-Za-z0-9][A-Za-z0-9_-]{0,127}``)."""
    return SEGMENT_PATTERN.fullmatch(value) is not None


def is_revision(value: str) -> bool:
    """True for a revision id: 32 lower-case hex digits."""
    return _REV.fullmatch(value) is not None


def read_protocol(obj: object) -> int:
    """The ``protocol`` field of a request body (checked before anything else in it)."""
    body = _object(obj, "request body")
    return _int(body, "protocol", minimum=1)


def parse_protocols(value: str) -> tuple[int, ...]:
    """Parse a protocol list such as ``"1,2"`` or ``"1"`` (the server's served versions)."""
    versions: list[int] = []
    for part in value.replace(" ", "").split(","):
        if not part.isdigit() or int(part) not in PROTOCOL_VERSIONS:
            raise _fail(
                f"unknown sync protocol {part!r}: use a comma-separated list of "
                f"{', '.join(str(v) for v in PROTOCOL_VERSIONS)}",
                "protocols",
            )
        if int(part) not in versions:
            versions.append(int(part))
    return tuple(sorted(versions))


# --------------------------------------------------------------------------- quotas, plans


@dataclass(frozen=True)
class Quotas:
    """The server's configured limits, sent with every JSON response (spec 06.2)."""

    max_notes: int = 5000
    max_changes_per_commit: int = 500
    max_body_bytes: int = 131072
    max_response_bytes: int = 16 * 1024 * 1024
    tombstone_days: int = 90
    #: The largest request body the server reads (``None``: not announced, an older server).
    max_request_bytes: int | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {
            "maxNotes": self.max_notes,
            "maxChangesPerCommit": self.max_changes_per_commit,
            "maxBodyBytes": self.max_body_bytes,
            "maxResponseBytes": self.max_response_bytes,
            "tombstoneDays": self.tombstone_days,
        }
        if self.max_request_bytes is not None:
            body["maxRequestBytes"] = self.max_request_bytes
        return body


def parse_quotas(value: object) -> Quotas:
    """Parse a ``quotas`` object."""
    obj = _object(value, "quotas")
    return Quotas(
        max_notes=_int(obj, "maxNotes"),
        max_changes_per_commit=_int(obj, "maxChangesPerCommit"),
        max_body_bytes=_int(obj, "maxBodyBytes"),
        max_response_bytes=_int(obj, "maxResponseBytes"),
        tombstone_days=_int(obj, "tombstoneDays"),
        max_request_bytes=_optional_int(obj, "maxRequestBytes"),
    )


@dataclass(frozen=True)
class PlanLimits:
    """The free plan's limits from ``memory-entitlements.json`` (``None``: no such limit)."""

    max_notes: int | None = None
    max_body_bytes: int | None = None

    def to_json(self) -> JsonObject:
        """The wire form (the ``free`` entry of the entitlements file)."""
        return {"maxNotes": self.max_notes, "maxBodyBytes": self.max_body_bytes}


def parse_plan_limits(value: object) -> PlanLimits:
    """Parse a ``planLimits`` object (or the ``free`` entry of the entitlements file)."""
    obj = _object(value, "planLimits")
    return PlanLimits(
        max_notes=_optional_int(obj, "maxNotes"), max_body_bytes=_optional_int(obj, "maxBodyBytes")
    )


def parse_entitlements(value: object) -> PlanLimits | None:
    """Parse ``memory-entitlements.json``: ``{"free": {"maxNotes": 200, "maxBodyBytes": …}}``."""
    obj = _object(value, "entitlements")
    free = obj.get("free")
    return None if free is None else parse_plan_limits(free)


# --------------------------------------------------------------------------- scope


@dataclass(frozen=True)
class SyncScope:
    """Which notes a request is about: a project's (by project id) or the user's own."""

    kind: Scope
    project_id: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        if self.kind == "project":
            return {"kind": "project", "projectId": self.project_id}
        return {"kind": "user"}


def parse_scope(value: object) -> SyncScope:
    """Parse ``scope``; a project id must be a safe key segment."""
    obj = _object(value, "scope")
    kind = obj.get("kind")
    if kind == "user":
        return SyncScope("user")
    if kind != "project":
        raise _fail(f"scope.kind must be 'project' or 'user', got {kind!r}", "scope")
    project_id = obj.get("projectId")
    if not isinstance(project_id, str) or not is_valid_segment(project_id):
        raise _fail(
            f"scope.projectId {project_id!r} is invalid: 1-128 letters, digits, '-' or '_', "
            "starting with a letter or digit",
            "scope",
        )
    return SyncScope("project", project_id)
