"""Sync protocol messages: snapshot, commit, identity and error bodies (spec 06.3-06.6)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from oharness.sync.protocol.base import (
    CURRENT_PROTOCOL,
    ERROR_STATUS,
    REJECT_REASONS,
    ChangeOp,
    JsonObject,
    Plan,
    PlanLimits,
    Quotas,
    RejectReason,
    SyncScope,
    _bool,
    _fail,
    _int,
    _list,
    _object,
    _optional_int,
    _optional_str,
    _plan,
    _str,
    _str_list,
    parse_plan_limits,
    parse_quotas,
    parse_scope,
    read_protocol,
)

# --------------------------------------------------------------------------- snapshot


@dataclass(frozen=True)
class SnapshotRequest:
    """``POST /v1/memory/snapshot`` (spec 06.3)."""

    scope: SyncScope
    protocol: int = CURRENT_PROTOCOL
    since: int | None = None
    have: frozenset[str] = frozenset()
    want: tuple[str, ...] = ()
    #: The storage generation and the commit id at ``since`` the client recorded (a reset or
    #: restore since then is answered ``reset``); ``None``: unknown.
    generation: str | None = None
    since_commit: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {"protocol": self.protocol, "scope": self.scope.to_json()}
        if self.since is not None:
            body["since"] = self.since
        if self.generation is not None:
            body["generation"] = self.generation
        if self.since_commit is not None:
            body["sinceCommit"] = self.since_commit
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
        generation=_optional_str(obj, "generation"),
        since_commit=_optional_str(obj, "sinceCommit"),
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
    #: The storage was reset or restored since the client's ``since``: no listing follows.
    reset: bool = False
    generation: str | None = None
    commit: str | None = None

    def _head(self) -> JsonObject:
        body: JsonObject = {"version": self.version}
        if self.generation is not None:
            body["generation"] = self.generation
        if self.commit is not None:
            body["commit"] = self.commit
        return body

    def to_json(self, protocol: int = CURRENT_PROTOCOL) -> JsonObject:
        """The wire form. An unchanged answer carries nothing but the version, or, when the
        request named revisions in ``want``, those bodies (``objects``, ``pending``)."""
        if self.reset:
            body = {**self._head(), "reset": True}
            return {**body, "quotas": self.quotas.to_json(), "plan": self.plan}
        if self.unchanged:
            body = {**self._head(), "unchanged": True}
            if self.objects or self.pending:
                body["objects"] = dict(self.objects)
                body["pending"] = list(self.pending)
            return {**body, "quotas": self.quotas.to_json(), "plan": self.plan}
        return {
            **self._head(),
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
    marks: dict[str, Any] = {
        "generation": _optional_str(obj, "generation"),
        "commit": _optional_str(obj, "commit"),
    }
    if obj.get("reset") is True:
        return SnapshotResponse(version, plan, quotas, reset=True, **marks)
    if obj.get("unchanged") is True:
        return SnapshotResponse(
            version, plan, quotas, unchanged=True, objects=dict(objects), pending=pending, **marks
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
        **marks,
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
    #: Whether this commit wrote ``version`` (false: every change was already there, or all
    #: were refused); ``None`` from servers that do not say.
    changed: bool | None = None
    generation: str | None = None
    commit: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body: JsonObject = {"version": self.version}
        if self.changed is not None:
            body["changed"] = self.changed
        if self.generation is not None:
            body["generation"] = self.generation
        if self.commit is not None:
            body["commit"] = self.commit
        return {
            **body,
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
        changed=_bool(obj, "changed") if obj.get("changed") is not None else None,
        generation=_optional_str(obj, "generation"),
        commit=_optional_str(obj, "commit"),
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
