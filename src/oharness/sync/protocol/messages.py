"""Sync protocol messages: snapshot, commit, identity and error bodies (spec 06.3-06.6).

Each message is declared once, as a :class:`~oharness.sync.protocol.fields.Wire` struct; the
``parse_*`` functions turn decoded JSON into them (a :class:`~oharness.errors.ValidationError`
naming the bad field otherwise), ``to_json`` / ``encode`` give the wire form. Where the wire
form depends on a value (the three forms of a snapshot answer, ``currentRev`` only on
conflicts, no ``typed`` in protocol 1) the message's ``to_json`` says so next to its fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final

import msgspec
from msgspec import Meta

from oharness.errors import ValidationError
from oharness.sync.protocol.fields import (
    CURRENT_PROTOCOL,
    ERROR_STATUS,
    ChangeOp,
    Count,
    JsonObject,
    Plan,
    PlanLimits,
    ProtocolNumber,
    Quotas,
    RejectReason,
    SyncScope,
    Wire,
    convert,
    json_values,
    read_protocol,
    sent,
)

#: Protocol 1 serves the project scope only (what JSON Schema can say of it; the server checks
#: it with :func:`protocol_scope_problem`).
PROTOCOL_1_PROJECT_ONLY: Final[dict[str, Any]] = {
    "if": {"properties": {"protocol": {"const": 1}}, "required": ["protocol"]},
    "then": {"properties": {"scope": {"properties": {"kind": {"const": "project"}}}}},
}


def request_rules(kind: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of a request body beyond its struct's: ``protocol`` is required on the
    wire (in Python it has a default) and protocol 1 serves the project scope only."""
    required = [f.encode_name for f in msgspec.structs.fields(kind) if f.required]
    return {"required": ["protocol", *required], **PROTOCOL_1_PROJECT_ONLY}


def protocol_scope_problem(protocol: int, scope: SyncScope) -> str | None:
    """Why a request's scope is not served under its protocol (``None``: it is)."""
    if protocol < 2 and scope.kind != "project":
        return "protocol 1 syncs project notes only"
    return None


# --------------------------------------------------------------------------- snapshot

_NO_HASHES: Final[frozenset[str]] = frozenset()


class SnapshotRequest(Wire, frozen=True):
    """``POST /v1/memory/snapshot`` (spec 06.3)."""

    scope: SyncScope
    protocol: ProtocolNumber = sent(CURRENT_PROTOCOL)
    since: Count | None = None
    have: frozenset[str] = _NO_HASHES
    want: tuple[str, ...] = ()
    #: The storage generation and the commit id at ``since`` the client recorded (a reset or
    #: restore since then is answered ``reset``); ``None``: unknown.
    generation: str | None = None
    since_commit: str | None = None

    def __post_init__(self) -> None:
        # The declared types, whatever a caller passed (a list is not the default ``()``, so
        # it would be sent empty), and each revision wanted once.
        if type(self.want) is not tuple or len(set(self.want)) != len(self.want):
            msgspec.structs.force_setattr(self, "want", tuple(dict.fromkeys(self.want)))
        if not self.have:  # msgspec leaves a set out only when it is the default object
            msgspec.structs.force_setattr(self, "have", _NO_HASHES)
        elif type(self.have) is not frozenset:
            msgspec.structs.force_setattr(self, "have", frozenset(self.have))

    def to_json(self) -> JsonObject:
        """The wire form (``have`` sorted)."""
        return json_values(self, sort_sets=True)

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON (``have`` sorted)."""
        return msgspec.json.encode(self, order="deterministic")


SnapshotRequestBody = Annotated[
    SnapshotRequest, Meta(extra_json_schema=request_rules(SnapshotRequest))
]


def parse_snapshot_request(value: object) -> SnapshotRequest:
    """Parse a snapshot request body (``protocol`` is required on the wire)."""
    read_protocol(value)
    return convert(value, SnapshotRequest, "request body")


class NoteEntry(Wire, frozen=True):
    """A live note in a listing (protocol 1 has no ``typed``: it reads as untyped)."""

    id: str
    rev: str
    hash: str
    size: Count
    typed: bool = sent(False)
    #: Defaulted only because ``typed``, absent in protocol 1, comes before it.
    changed_at: Count = sent(0)

    def to_json(self, protocol: int = CURRENT_PROTOCOL) -> JsonObject:
        """The wire form (protocol 1 has no ``typed`` field)."""
        body = json_values(self)
        if protocol < 2:
            del body["typed"]
        return body


class TombstoneEntry(Wire, frozen=True):
    """A deleted note in a listing."""

    id: str
    rev: str
    deleted_at: Count


#: The fields of a full or delta listing, left out of the other two answers.
_LISTING: Final = ("full", "notes", "tombstones")


class SnapshotResponse(Wire, frozen=True):
    """The answer to a snapshot: unchanged, a delta, or a full listing, with some bodies.

    On the wire a ``reset`` answer carries the version, the marks, quotas and plan only; an
    ``unchanged`` one adds ``objects`` and ``pending`` only when the request named revisions in
    ``want``; a listing carries every field but ``unchanged`` and ``reset``."""

    version: Count
    plan: Plan
    quotas: Quotas
    unchanged: bool = False
    full: bool = sent(False)
    notes: tuple[NoteEntry, ...] = sent(())
    tombstones: tuple[TombstoneEntry, ...] = sent(())
    objects: Mapping[str, str] = sent({})
    pending: tuple[str, ...] = sent(())
    #: The storage was reset or restored since the client's ``since``: no listing follows.
    reset: bool = False
    generation: str | None = None
    commit: str | None = None

    def _left_out(self) -> tuple[str, ...]:
        if self.reset:
            return (*_LISTING, "objects", "pending")
        if self.unchanged:
            return _LISTING if self.objects or self.pending else (*_LISTING, "objects", "pending")
        return ()

    def to_json(self, protocol: int = CURRENT_PROTOCOL) -> JsonObject:
        """The wire form of this answer under ``protocol``."""
        body = json_values(self)
        for name in self._left_out():
            del body[name]
        if protocol < 2:
            for note in body.get("notes", ()):
                del note["typed"]
        return body

    def encode(self, protocol: int = CURRENT_PROTOCOL) -> bytes:
        """The wire form as compact UTF-8 JSON (a protocol-2 listing straight from the
        declaration: the large case)."""
        if protocol >= 2 and not self._left_out():
            return msgspec.json.encode(self)
        return msgspec.json.encode(self.to_json(protocol))


def parse_snapshot_response(value: object) -> SnapshotResponse:
    """Parse a snapshot response body."""
    return convert(value, SnapshotResponse, "snapshot response")


# --------------------------------------------------------------------------- commit


class Change(Wire, frozen=True):
    """One note change of a commit. A malformed change is rejected on its own (spec 06.4):
    the parser keeps it, with ``problem`` saying what is wrong; ``problem`` is never sent."""

    op: Annotated[str, Meta(extra_json_schema={"enum": ["put", "delete"]})]
    id: str
    base_rev: str | None = sent(None)
    #: The full note file text (puts only).
    content: str | None = None
    problem: Annotated[
        str | None,
        Meta(description="set by the server's parser for a malformed change; never sent"),
    ] = None

    def to_json(self) -> JsonObject:
        """The wire form (without ``problem``)."""
        body = json_values(self)
        body.pop("problem", None)
        return body

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON (without ``problem``)."""
        if self.problem is None:
            return msgspec.json.encode(self)
        return msgspec.json.encode(self.to_json())


def change_problem(value: Mapping[str, Any]) -> str | None:
    """What is wrong with one change of a commit on its own (``None``: nothing)."""
    op, base_rev = value.get("op"), value.get("baseRev")
    if op not in ("put", "delete"):
        return f"op must be 'put' or 'delete', got {op!r}"
    if base_rev is not None and not isinstance(base_rev, str):
        return "baseRev must be a revision string or null"
    if op == "delete" and base_rev is None:
        return "a delete needs the baseRev of the note it deletes"
    if op == "put" and not isinstance(value.get("content"), str):
        return "a put needs 'content': the full note file text"
    return None


def _parse_change(value: object, index: int) -> Change:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        raise ValidationError(
            f"changes[{index}] must be an object with a string 'id'", field="changes"
        )
    op, base_rev, content = value.get("op"), value.get("baseRev"), value.get("content")
    return Change(
        op=op if isinstance(op, str) else "",
        id=value["id"],
        base_rev=base_rev if isinstance(base_rev, str) else None,
        content=content if isinstance(content, str) else None,
        problem=change_problem(value),
    )


class CommitRequest(Wire, frozen=True):
    """``POST /v1/memory/commit`` (spec 06.4)."""

    scope: SyncScope
    changes: tuple[Change, ...]
    protocol: ProtocolNumber = sent(CURRENT_PROTOCOL)
    base_version: Count | None = sent(None)
    atomic: bool = sent(False)


CommitRequestBody = Annotated[CommitRequest, Meta(extra_json_schema=request_rules(CommitRequest))]


def parse_commit_request(value: object) -> CommitRequest:
    """Parse a commit body; per-change problems are kept in :attr:`Change.problem`."""
    read_protocol(value)
    body = convert(value, dict[str, Any], "request body")
    raw_changes = body.get("changes")
    if not isinstance(raw_changes, list):
        raise ValidationError("'changes' must be a list", field="changes")
    changes = tuple(_parse_change(item, index) for index, item in enumerate(raw_changes))
    request = convert({**body, "changes": []}, CommitRequest, "request body")
    if request.atomic and request.base_version is None:
        raise ValidationError("an atomic commit needs 'baseVersion'", field="baseVersion")
    return msgspec.structs.replace(request, changes=changes)


class AppliedEntry(Wire, frozen=True):
    """A change the server applied (or found already applied: a safe retry)."""

    id: str
    op: ChangeOp
    rev: str


class RejectedEntry(Wire, frozen=True):
    """A change the server refused; ``current_rev`` is sent with conflicts only (null: no live
    note)."""

    id: str
    reason: RejectReason
    message: str
    current_rev: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body = json_values(self)
        if self.reason == "conflict":
            body["currentRev"] = self.current_rev
        else:
            body.pop("currentRev", None)
        return body

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON."""
        return msgspec.json.encode(self.to_json())


class CommitResponse(Wire, frozen=True):
    """The answer to a commit: the new version, what was applied and what was refused."""

    version: Count
    plan: Plan
    quotas: Quotas
    applied: tuple[AppliedEntry, ...] = sent(())
    rejected: tuple[RejectedEntry, ...] = sent(())
    #: Whether this commit wrote ``version`` (false: every change was already there, or all
    #: were refused); ``None`` from servers that do not say.
    changed: bool | None = None
    generation: str | None = None
    commit: str | None = None

    def to_json(self) -> JsonObject:
        """The wire form."""
        body = json_values(self)
        body["rejected"] = [entry.to_json() for entry in self.rejected]
        return body

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON."""
        return msgspec.json.encode(self.to_json())


def parse_commit_response(value: object) -> CommitResponse:
    """Parse a commit response body."""
    return convert(value, CommitResponse, "commit response")


# --------------------------------------------------------------------------- identity, errors


class TeamEntitlement(Wire, frozen=True):
    """A team the account belongs to and that team's plan."""

    id: str
    plan: Plan


class Identity(Wire, frozen=True):
    """``GET /v1/memory/identity`` (spec 06.2); ``encrypted`` when the account keeps a key
    envelope (end-to-end encryption is on: only sealed scopes are served)."""

    user_id: str
    plan: Plan
    teams: tuple[TeamEntitlement, ...]
    protocols: tuple[int, ...]
    quotas: Quotas
    plan_limits: PlanLimits | None
    encrypted: bool = False


class KeysRequest(Wire, frozen=True):
    """``PUT /v1/memory/keys``: store the account's key envelope (``null``: turn end-to-end
    encryption off) if the stored one is still at ``baseVersion`` (0: none stored yet)."""

    envelope: JsonObject | None
    base_version: Count
    protocol: ProtocolNumber = sent(CURRENT_PROTOCOL)


KeysRequestBody = Annotated[
    KeysRequest, Meta(extra_json_schema={"required": ["protocol", "envelope", "baseVersion"]})
]


def parse_keys_request(value: object) -> KeysRequest:
    """Parse a key envelope body."""
    read_protocol(value)
    return convert(value, KeysRequest, "request body")


class ScopesResponse(Wire, frozen=True):
    """``GET /v1/memory/scopes``: every scope the account keeps on the server."""

    scopes: tuple[SyncScope, ...]
    quotas: Quotas
    plan: Plan


class ScopeEraseRequest(Wire, frozen=True):
    """``POST /v1/memory/scopes/erase``: remove one scope of the account, notes and history."""

    scope: SyncScope
    protocol: ProtocolNumber = sent(CURRENT_PROTOCOL)


ScopeEraseRequestBody = Annotated[
    ScopeEraseRequest, Meta(extra_json_schema={"required": ["protocol", "scope"]})
]


def parse_scope_erase_request(value: object) -> ScopeEraseRequest:
    """Parse a scope erase body."""
    read_protocol(value)
    return convert(value, ScopeEraseRequest, "request body")


class ScopeEraseResponse(Wire, frozen=True):
    """What a scope erase removed (objects, the manifest included)."""

    deleted: Count
    quotas: Quotas
    plan: Plan


class KeysResponse(Wire, frozen=True):
    """``GET`` and ``PUT /v1/memory/keys``: the envelope (``null`` when none) and its version."""

    envelope: JsonObject | None
    version: Count
    quotas: Quotas
    plan: Plan


def parse_identity(value: object) -> Identity:
    """Parse an identity response body."""
    return convert(value, Identity, "identity")


#: The code-specific fields of an error body, in :attr:`ErrorResponse.details`.
_DETAILS: Final = ("conflicts", "protocols", "version")


class ErrorResponse(Wire, frozen=True):
    """An error body: ``{"error", "message", "quotas", "plan"}`` plus code-specific fields
    (``conflicts`` for 409, ``version`` for 412, ``protocols`` for 426)."""

    error: str
    message: str
    quotas: Quotas
    plan: Plan = sent("free")
    conflicts: tuple[RejectedEntry, ...] | None = None
    version: Count | None = None
    protocols: tuple[int, ...] | None = None

    @property
    def status(self) -> int:
        """The HTTP status of this error code (500 for codes outside the table)."""
        return ERROR_STATUS.get(self.error, 500)

    @property
    def details(self) -> JsonObject:
        """The code-specific fields this body carries, as JSON values."""
        body = self.to_json()
        return {name: body[name] for name in _DETAILS if name in body}

    def to_json(self) -> JsonObject:
        """The wire form."""
        body = json_values(self)
        if self.conflicts is not None:
            body["conflicts"] = [
                entry.to_json() if isinstance(entry, RejectedEntry) else entry
                for entry in self.conflicts
            ]
        return body

    def encode(self) -> bytes:
        """The wire form as compact UTF-8 JSON."""
        return msgspec.json.encode(self.to_json())


def error_from_details(
    error: str, message: str, quotas: Quotas, plan: Plan, details: Mapping[str, Any]
) -> ErrorResponse:
    """An error body with the code-specific fields of ``details`` (others are not sent)."""
    extra = {name: details[name] for name in _DETAILS if name in details}
    for name in ("conflicts", "protocols"):
        if extra.get(name) is not None:
            extra[name] = tuple(extra[name])
    return ErrorResponse(error, message, quotas, plan, **extra)


def parse_error_response(value: object) -> ErrorResponse:
    """Parse an error body."""
    return convert(value, ErrorResponse, "error response")
