"""Sync protocol version 2: the wire models shared by the client and the server (spec 06).

Everything here is pure: typed dataclasses for every request, response and the stored manifest,
``parse_*`` functions that turn decoded JSON into them (raising
:class:`~oharness.errors.ValidationError` with a message naming the bad field), ``to_json``
methods for the other direction, the error table, and the object-key layout of spec 06.1.

Parsers ignore unknown keys, so a newer peer can add fields without breaking an older one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {
            "maxNotes": self.max_notes,
            "maxChangesPerCommit": self.max_changes_per_commit,
            "maxBodyBytes": self.max_body_bytes,
            "maxResponseBytes": self.max_response_bytes,
            "tombstoneDays": self.tombstone_days,
        }


def parse_quotas(value: object) -> Quotas:
    """Parse a ``quotas`` object."""
    obj = _object(value, "quotas")
    return Quotas(
        max_notes=_int(obj, "maxNotes"),
        max_changes_per_commit=_int(obj, "maxChangesPerCommit"),
        max_body_bytes=_int(obj, "maxBodyBytes"),
        max_response_bytes=_int(obj, "maxResponseBytes"),
        tombstone_days=_int(obj, "tombstoneDays"),
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


# --------------------------------------------------------------------------- snapshot


@dataclass(frozen=True)
class SnapshotRequest:
    """``POST /v1/memory/snapshot`` (spec 06.3)."""

    scope: SyncScope
    protocol: int = CURRENT_PROTOCOL
    since: int | None = None
    have: frozenset[str] = frozenset()
    want: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {"protocol": self.protocol, "scope": self.scope.to_json()}
        if self.since is not None:
            body["since"] = self.since
        if self.have:
            body["have"] = sorted(self.have)
        if self.want:
            body["want"] = list(self.want)
        return body


def parse_snapshot_request(value: object) -> SnapshotRequest:
    """Parse a snapshot request body."""
    obj = _object(value, "request body")
    return SnapshotRequest(
        protocol=read_protocol(obj),
        scope=parse_scope(obj.get("scope")),
        since=_optional_int(obj, "since"),
        have=frozenset(_str_list(obj, "have")),
        want=tuple(dict.fromkeys(_str_list(obj, "want"))),
    )


@dataclass(frozen=True)
class NoteEntry:
    """A live note in a listing."""

    id: str
    rev: str
    hash: str
    size: int
    typed: bool
    changed_at: int

    def to_json(self, protocol: int = CURRENT_PROTOCOL) -> JsonObject:
        """The wire form (protocol 1 has no ``typed`` field)."""
        body: JsonObject = {"id": self.id, "rev": self.rev, "hash": self.hash, "size": self.size}
        if protocol >= 2:
            body["typed"] = self.typed
        body["changedAt"] = self.changed_at
        return body


@dataclass(frozen=True)
class TombstoneEntry:
    """A deleted note in a listing."""

    id: str
    rev: str
    deleted_at: int

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {"id": self.id, "rev": self.rev, "deletedAt": self.deleted_at}


@dataclass(frozen=True)
class SnapshotResponse:
    """The answer to a snapshot: unchanged, a delta, or a full listing, with some bodies."""

    version: int
    plan: Plan
    quotas: Quotas
    unchanged: bool = False
    full: bool = False
    notes: tuple[NoteEntry, ...] = ()
    tombstones: tuple[TombstoneEntry, ...] = ()
    objects: Mapping[str, str] = field(default_factory=dict)
    pending: tuple[str, ...] = ()

    def to_json(self, protocol: int = CURRENT_PROTOCOL) -> JsonObject:
        """The wire form. An unchanged answer carries nothing but the version, or, when the
        request named revisions in ``want``, those bodies (``objects``, ``pending``)."""
        if self.unchanged:
            body: JsonObject = {"version": self.version, "unchanged": True}
            if self.objects or self.pending:
                body["objects"] = dict(self.objects)
                body["pending"] = list(self.pending)
            return {**body, "quotas": self.quotas.to_json(), "plan": self.plan}
        return {
            "version": self.version,
            "full": self.full,
            "notes": [note.to_json(protocol) for note in self.notes],
            "tombstones": [tomb.to_json() for tomb in self.tombstones],
            "objects": dict(self.objects),
            "pending": list(self.pending),
            "quotas": self.quotas.to_json(),
            "plan": self.plan,
        }


def parse_snapshot_response(value: object) -> SnapshotResponse:
    """Parse a snapshot response body."""
    obj = _object(value, "snapshot response")
    version = _int(obj, "version")
    plan = _plan(obj.get("plan"))
    quotas = parse_quotas(obj.get("quotas"))
    objects = _object(obj.get("objects", {}), "objects")
    if not all(isinstance(text, str) for text in objects.values()):
        raise _fail("objects must map revisions to file text", "objects")
    pending = _str_list(obj, "pending")
    if obj.get("unchanged") is True:
        return SnapshotResponse(
            version, plan, quotas, unchanged=True, objects=dict(objects), pending=pending
        )
    notes = []
    for item in _list(obj, "notes"):
        entry = _object(item, "notes[]")
        notes.append(
            NoteEntry(
                id=_str(entry, "id"),
                rev=_str(entry, "rev"),
                hash=_str(entry, "hash"),
                size=_int(entry, "size"),
                typed=_bool(entry, "typed", False),
                changed_at=_int(entry, "changedAt"),
            )
        )
    tombstones = []
    for item in _list(obj, "tombstones"):
        entry = _object(item, "tombstones[]")
        tombstones.append(
            TombstoneEntry(_str(entry, "id"), _str(entry, "rev"), _int(entry, "deletedAt"))
        )
    return SnapshotResponse(
        version,
        plan,
        quotas,
        full=_bool(obj, "full", False),
        notes=tuple(notes),
        tombstones=tuple(tombstones),
        objects=dict(objects),
        pending=pending,
    )


# --------------------------------------------------------------------------- commit


@dataclass(frozen=True)
class Change:
    """One note change of a commit. ``problem`` is set by the parser for a malformed change
    (it is then rejected on its own, spec 06.4) and never sent."""

    op: str
    id: str
    base_rev: str | None = None
    content: str | None = None
    problem: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {"op": self.op, "id": self.id, "baseRev": self.base_rev}
        if self.op == "put":
            body["content"] = self.content
        return body


def _parse_change(value: object, index: int) -> Change:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise _fail(f"changes[{index}] must be an object with a string 'id'", "changes")
    note_id: str = value["id"]
    op = value.get("op")
    base_rev = value.get("baseRev")
    content = value.get("content")
    problem = None
    if op not in ("put", "delete"):
        problem = f"op must be 'put' or 'delete', got {op!r}"
    elif base_rev is not None and not isinstance(base_rev, str):
        problem = "baseRev must be a revision string or null"
    elif op == "delete" and base_rev is None:
        problem = "a delete needs the baseRev of the note it deletes"
    elif op == "put" and not isinstance(content, str):
        problem = "a put needs 'content': the full note file text"
    return Change(
        op=op if isinstance(op, str) else "",
        id=note_id,
        base_rev=base_rev if isinstance(base_rev, str) else None,
        content=content if isinstance(content, str) else None,
        problem=problem,
    )


@dataclass(frozen=True)
class CommitRequest:
    """``POST /v1/memory/commit`` (spec 06.4)."""

    scope: SyncScope
    changes: tuple[Change, ...]
    protocol: int = CURRENT_PROTOCOL
    base_version: int | None = None
    atomic: bool = False

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {
            "protocol": self.protocol,
            "scope": self.scope.to_json(),
            "baseVersion": self.base_version,
            "atomic": self.atomic,
            "changes": [change.to_json() for change in self.changes],
        }


def parse_commit_request(value: object) -> CommitRequest:
    """Parse a commit body; per-change problems are kept in :attr:`Change.problem`."""
    obj = _object(value, "request body")
    atomic = _bool(obj, "atomic", False)
    base_version = _optional_int(obj, "baseVersion")
    if atomic and base_version is None:
        raise _fail("an atomic commit needs 'baseVersion'", "baseVersion")
    raw_changes = obj.get("changes")
    if not isinstance(raw_changes, list):
        raise _fail("'changes' must be a list", "changes")
    return CommitRequest(
        protocol=read_protocol(obj),
        scope=parse_scope(obj.get("scope")),
        base_version=base_version,
        atomic=atomic,
        changes=tuple(_parse_change(item, index) for index, item in enumerate(raw_changes)),
    )


@dataclass(frozen=True)
class AppliedEntry:
    """A change the server applied (or found already applied: a safe retry)."""

    id: str
    op: ChangeOp
    rev: str

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {"id": self.id, "op": self.op, "rev": self.rev}


@dataclass(frozen=True)
class RejectedEntry:
    """A change the server refused; ``current_rev`` is sent with conflicts (null: no live note)."""

    id: str
    reason: RejectReason
    message: str
    current_rev: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {"id": self.id, "reason": self.reason, "message": self.message}
        if self.reason == "conflict":
            body["currentRev"] = self.current_rev
        return body


def _parse_reason(value: object) -> RejectReason:
    for reason in REJECT_REASONS:
        if value == reason:
            return reason
    raise _fail(f"unknown rejection reason {value!r}", "reason")


@dataclass(frozen=True)
class CommitResponse:
    """The answer to a commit: the new version, what was applied and what was refused."""

    version: int
    plan: Plan
    quotas: Quotas
    applied: tuple[AppliedEntry, ...] = ()
    rejected: tuple[RejectedEntry, ...] = ()

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {
            "version": self.version,
            "applied": [entry.to_json() for entry in self.applied],
            "rejected": [entry.to_json() for entry in self.rejected],
            "quotas": self.quotas.to_json(),
            "plan": self.plan,
        }


def parse_commit_response(value: object) -> CommitResponse:
    """Parse a commit response body."""
    obj = _object(value, "commit response")
    applied = []
    for item in _list(obj, "applied"):
        entry = _object(item, "applied[]")
        op = entry.get("op")
        if op not in ("put", "delete"):
            raise _fail(f"applied op must be 'put' or 'delete', got {op!r}", "applied")
        applied.append(AppliedEntry(_str(entry, "id"), cast(ChangeOp, op), _str(entry, "rev")))
    rejected = []
    for item in _list(obj, "rejected"):
        entry = _object(item, "rejected[]")
        rejected.append(
            RejectedEntry(
                id=_str(entry, "id"),
                reason=_parse_reason(entry.get("reason")),
                message=_str(entry, "message"),
                current_rev=_optional_str(entry, "currentRev"),
            )
        )
    return CommitResponse(
        version=_int(obj, "version"),
        plan=_plan(obj.get("plan")),
        quotas=parse_quotas(obj.get("quotas")),
        applied=tuple(applied),
        rejected=tuple(rejected),
    )


# --------------------------------------------------------------------------- identity, errors


@dataclass(frozen=True)
class TeamEntitlement:
    """A team the account belongs to and that team's plan."""

    id: str
    plan: Plan

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {"id": self.id, "plan": self.plan}


@dataclass(frozen=True)
class Identity:
    """``GET /v1/memory/identity`` (spec 06.2)."""

    user_id: str
    plan: Plan
    teams: tuple[TeamEntitlement, ...]
    protocols: tuple[int, ...]
    quotas: Quotas
    plan_limits: PlanLimits | None

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {
            "userId": self.user_id,
            "plan": self.plan,
            "teams": [team.to_json() for team in self.teams],
            "protocols": list(self.protocols),
            "quotas": self.quotas.to_json(),
            "planLimits": None if self.plan_limits is None else self.plan_limits.to_json(),
        }


def parse_identity(value: object) -> Identity:
    """Parse an identity response body."""
    obj = _object(value, "identity")
    teams = []
    for item in _list(obj, "teams"):
        entry = _object(item, "teams[]")
        teams.append(TeamEntitlement(_str(entry, "id"), _plan(entry.get("plan"))))
    protocols = obj.get("protocols")
    if not isinstance(protocols, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in protocols
    ):
        raise _fail("'protocols' must be a list of integers", "protocols")
    limits = obj.get("planLimits")
    return Identity(
        user_id=_str(obj, "userId"),
        plan=_plan(obj.get("plan")),
        teams=tuple(teams),
        protocols=tuple(protocols),
        quotas=parse_quotas(obj.get("quotas")),
        plan_limits=None if limits is None else parse_plan_limits(limits),
    )


@dataclass(frozen=True)
class ErrorResponse:
    """An error body: ``{"error", "message", "quotas", "plan"}`` plus code-specific fields
    (``conflicts`` for 409, ``protocols`` for 426)."""

    error: str
    message: str
    quotas: Quotas
    plan: Plan = "free"
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> int:
        """The HTTP status of this error code (500 for codes outside the table)."""
        return ERROR_STATUS.get(self.error, 500)

    def to_json(self) -> JsonObject:
        """The wire form."""
        return {
            "error": self.error,
            "message": self.message,
            **self.details,
            "quotas": self.quotas.to_json(),
            "plan": self.plan,
        }


def parse_error_response(value: object) -> ErrorResponse:
    """Parse an error body."""
    obj = _object(value, "error response")
    known = {"error", "message", "quotas", "plan"}
    plan = obj.get("plan", "free")
    return ErrorResponse(
        error=_str(obj, "error"),
        message=_str(obj, "message"),
        quotas=parse_quotas(obj.get("quotas")),
        plan=_plan(plan),
        details={key: value for key, value in obj.items() if key not in known},
    )


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class ManifestNote:
    """A live note in the stored manifest."""

    rev: str
    hash: str
    size: int
    typed: bool
    changed_at: int
    v: int


@dataclass(frozen=True)
class ManifestTombstone:
    """A deleted note in the stored manifest."""

    rev: str
    deleted_at: int
    v: int


@dataclass(frozen=True)
class Manifest:
    """``manifest.json`` of one scope (spec 06.1)."""

    version: int = 0
    updated_at: int = 0
    gc_version: int = 0
    notes: Mapping[str, ManifestNote] = field(default_factory=dict)
    tombstones: Mapping[str, ManifestTombstone] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        """The stored JSON form (always format 2)."""
        return {
            "format": MANIFEST_FORMAT,
            "version": self.version,
            "updatedAt": self.updated_at,
            "gcVersion": self.gc_version,
            "notes": {
                note_id: {
                    "rev": note.rev,
                    "hash": note.hash,
                    "size": note.size,
                    "typed": note.typed,
                    "changedAt": note.changed_at,
                    "v": note.v,
                }
                for note_id, note in sorted(self.notes.items())
            },
            "tombstones": {
                note_id: {"rev": tomb.rev, "deletedAt": tomb.deleted_at, "v": tomb.v}
                for note_id, tomb in sorted(self.tombstones.items())
            },
        }


def manifest_to_bytes(manifest: Manifest) -> bytes:
    """Serialise a manifest for storage (compact UTF-8 JSON, keys sorted by note id)."""
    return json.dumps(manifest.to_json(), separators=(",", ":"), ensure_ascii=False).encode()


_MANIFEST_HEAD: Final = re.compile(rb'\{"format":2,"version":(\d+),')


def peek_manifest_version(data: bytes) -> int | None:
    """The version of a manifest this code wrote, read from its first bytes without parsing
    the rest (``None`` when the head is not in the expected form: parse it fully)."""
    match = _MANIFEST_HEAD.match(data, 0, 64)
    return int(match.group(1)) if match else None


def parse_manifest(data: bytes) -> Manifest:
    """Parse a stored manifest (format 2; format 1, written before typed notes, has no
    ``typed`` and reads as untyped)."""
    try:
        obj = _object(json.loads(data.decode("utf-8")), "manifest")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(f"the manifest is not valid JSON: {exc}", "manifest") from exc
    fmt = obj.get("format", 1)
    if fmt not in (1, 2):
        raise _fail(
            f"manifest format {fmt!r} is newer than this server understands: upgrade it",
            "manifest",
        )
    # A scope's manifest can list thousands of notes and is read by every request: check
    # the entries with plain type tests rather than the per-field helpers.
    notes: dict[str, ManifestNote] = {}
    tombstones: dict[str, ManifestTombstone] = {}
    try:
        for note_id, entry in _object(obj.get("notes", {}), "manifest.notes").items():
            note = ManifestNote(
                entry["rev"],
                entry["hash"],
                entry["size"],
                entry.get("typed", False),
                entry["changedAt"],
                entry["v"],
            )
            if not (
                type(note.rev) is str
                and type(note.hash) is str
                and type(note.size) is int
                and type(note.typed) is bool
                and type(note.changed_at) is int
                and type(note.v) is int
            ):
                raise _fail(f"manifest entry {note_id!r} has a field of the wrong type", "manifest")
            notes[note_id] = note
        for note_id, entry in _object(obj.get("tombstones", {}), "manifest.tombstones").items():
            tomb = ManifestTombstone(entry["rev"], entry["deletedAt"], entry["v"])
            if not (type(tomb.rev) is str and type(tomb.deleted_at) is int and type(tomb.v) is int):
                raise _fail(f"tombstone {note_id!r} has a field of the wrong type", "manifest")
            tombstones[note_id] = tomb
    except (KeyError, TypeError, AttributeError) as exc:
        raise _fail(f"a manifest entry is incomplete ({exc!r})", "manifest") from exc
    return Manifest(
        version=_int(obj, "version"),
        updated_at=_int(obj, "updatedAt"),
        gc_version=_int(obj, "gcVersion"),
        notes=notes,
        tombstones=tombstones,
    )


# --------------------------------------------------------------------------- key layout


def user_key_segment(sub: str) -> str:
    """The key segment of a verified user (or team) id: itself when it is a safe segment,
    else ``u-`` + the first 32 hex digits of its SHA-256 (spec 06.1)."""
    if _USER_SEGMENT.fullmatch(sub):
        return sub
    return "u-" + hashlib.sha256(sub.encode("utf-8")).hexdigest()[:32]


def user_prefix(user_segment: str) -> str:
    """Everything stored for one user's memory: ``users/<segment>/``."""
    return f"users/{user_segment}/"


def scope_prefix(user_segment: str, scope: SyncScope) -> str:
    """The key prefix of one scope, ending in ``/``."""
    if scope.kind == "user":
        return f"users/{user_segment}/memory/"
    if scope.project_id is None or not is_valid_segment(scope.project_id):
        raise _fail(f"invalid project id {scope.project_id!r}", "scope")
    return f"users/{user_segment}/projects/{scope.project_id}/memory/"


def manifest_key(prefix: str) -> str:
    """The manifest of the scope at ``prefix``."""
    return prefix + "manifest.json"


def object_key(prefix: str, note_id: str, rev: str) -> str:
    """The immutable object holding revision ``rev`` of note ``note_id``."""
    if not is_valid_segment(note_id) or not is_revision(rev):
        raise _fail(f"invalid object name {note_id!r}/{rev!r}", "id")
    return f"{prefix}objects/{note_id}/{rev}.md"


def user_erase_marker_key(user_segment: str) -> str:
    """The erase marker of a user."""
    return f"erased/users/{user_segment}.json"


def team_erase_marker_key(team_segment: str) -> str:
    """The erase marker of a team."""
    return f"erased/teams/{team_segment}.json"


def user_feed_prefix(user_segment: str) -> str:
    """A user's feed objects (removed by an erase)."""
    return f"feed/{user_segment}/"


def team_feed_prefix(team_segment: str) -> str:
    """A team's feed objects (removed by a team erase)."""
    return f"feed/team-{team_segment}/"
