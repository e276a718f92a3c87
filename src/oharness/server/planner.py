"""The pure core of the server: what a commit or a snapshot does to, or reads from, a manifest.

No I/O here. :func:`prepare_changes` validates each change once (id, frontmatter, size, protocol);
:func:`plan_commit` applies the prepared changes to a manifest with per-note compare-and-swap,
quotas and plan limits, and is re-run on every manifest CAS attempt; :func:`plan_listing` and
:func:`plan_objects` decide what a snapshot lists and which bodies it sends.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import NoteFormatError
from oharness.notes.format import file_revision, parse_note_bytes
from oharness.sync.protocol import (
    HISTORY_LENGTH,
    AppliedEntry,
    Change,
    CommitRequest,
    Manifest,
    ManifestNote,
    ManifestTombstone,
    NoteEntry,
    PlanLimits,
    Quotas,
    RejectedEntry,
    RejectReason,
    SnapshotRequest,
    TombstoneEntry,
    is_valid_segment,
    object_key,
)
from oharness.sync.protocol.sealed import (
    SEAL_OVERHEAD,
    bucket_size,
    is_opaque_id,
    is_sealed,
    sealed_bytes,
)

DAY_MS: Final = 86_400_000


@dataclass(frozen=True)
class PreparedChange:
    """A change after the checks that do not depend on the manifest."""

    change: Change
    rejection: RejectedEntry | None = None
    data: bytes = b""
    rev: str = ""
    hash: str = ""
    size: int = 0
    body_bytes: int = 0
    typed: bool = False
    #: For sealed content (an encrypted scope): the padded plaintext's length, else 0.
    sealed_padded: int = 0


@dataclass(frozen=True)
class CommitLimits:
    """The limits one commit is held to."""

    quotas: Quotas
    #: The free plan's limits when the caller is on it, else ``None``.
    plan_limits: PlanLimits | None = None
    frontmatter_allowance: int = 65536


@dataclass(frozen=True)
class CommitPlan:
    """The outcome of a commit against one manifest."""

    manifest: Manifest
    changed: bool
    applied: tuple[AppliedEntry, ...] = ()
    rejected: tuple[RejectedEntry, ...] = ()
    #: Objects to write (key -> bytes) before the manifest.
    objects: Mapping[str, bytes] = field(default_factory=dict)


def _reject(change: Change, reason: RejectReason, message: str) -> PreparedChange:
    return PreparedChange(change, RejectedEntry(change.id, reason, message))


def _prepare_sealed(change: Change, sealed_scope: bool) -> PreparedChange:
    """A put into an end-to-end encrypted scope: stored as sent, never parsed
    (:mod:`oharness.sync.protocol.sealed`)."""
    assert change.content is not None
    if not sealed_scope:
        return _reject(
            change,
            "invalid_request",
            "sealed content belongs in an end-to-end encrypted scope (an opaque scope id)",
        )
    if not is_sealed(change.content):
        return _reject(
            change,
            "invalid_request",
            "this scope is end-to-end encrypted: it takes sealed notes only; enter the "
            "passphrase on this device ('oharness sync unlock')",
        )
    if not is_opaque_id(change.id):
        return _reject(change, "invalid_request", "a sealed note needs an opaque id (e-…)")
    raw = sealed_bytes(change.content)
    if raw is None or len(raw) < SEAL_OVERHEAD:
        return _reject(change, "invalid_request", "the sealed content is not valid base64url")
    data = change.content.encode("ascii")
    return PreparedChange(
        change,
        data=data,
        rev=file_revision(data),
        hash="sha256:" + hashlib.sha256(data).hexdigest(),
        size=len(data),
        sealed_padded=len(raw) - SEAL_OVERHEAD,
    )


def _prepare_put(
    change: Change, protocol: int, frontmatter_allowance: int, sealed_scope: bool = False
) -> PreparedChange:
    assert change.content is not None
    if sealed_scope or is_sealed(change.content):
        return _prepare_sealed(change, sealed_scope)
    try:
        data = change.content.encode("utf-8")
    except UnicodeEncodeError:
        return _reject(change, "invalid_request", "the content is not valid Unicode text")
    try:
        note = parse_note_bytes(data)
    except NoteFormatError as exc:
        return _reject(change, "invalid_request", f"the content is not a note file: {exc.message}")
    if note.id != change.id:
        return _reject(
            change,
            "invalid_request",
            f"the frontmatter id {note.id!r} differs from the change's id {change.id!r}",
        )
    typed = note.type is not None
    if typed and protocol < 2:
        return _reject(
            change,
            "invalid_request",
            "typed notes need sync protocol 2: upgrade the client",
        )
    body_bytes = len(note.body.encode("utf-8"))
    if len(data) - body_bytes > frontmatter_allowance:
        return _reject(
            change,
            "too_large",
            f"the frontmatter is over {frontmatter_allowance} bytes: remove unused keys",
        )
    return PreparedChange(
        change,
        data=data,
        rev=file_revision(data),
        hash=note.content_hash,
        size=len(data),
        body_bytes=body_bytes,
        typed=typed,
    )


def prepare_changes(request: CommitRequest, frontmatter_allowance: int) -> list[PreparedChange]:
    """Validate every change on its own: shape, id, duplicates, note syntax, protocol."""
    prepared: list[PreparedChange] = []
    seen: set[str] = set()
    scope = request.scope
    sealed_scope = scope.kind == "project" and is_opaque_id(scope.project_id)
    for change in request.changes:
        if change.problem is not None:
            prepared.append(_reject(change, "invalid_request", change.problem))
        elif not is_valid_segment(change.id):
            prepared.append(
                _reject(
                    change,
                    "invalid_request",
                    f"invalid note id {change.id!r}: 1-128 letters, digits, '-' or '_', "
                    "starting with a letter or digit",
                )
            )
        elif change.id in seen:
            prepared.append(
                _reject(
                    change,
                    "invalid_request",
                    "the same note appears twice in one commit: send one change per note",
                )
            )
        elif change.op == "put":
            prepared.append(
                _prepare_put(change, request.protocol, frontmatter_allowance, sealed_scope)
            )
        else:
            prepared.append(PreparedChange(change))
        seen.add(change.id)
    return prepared


class _Working:
    """The manifest being changed by one commit plan."""

    def __init__(self, manifest: Manifest, now: int, prefix: str) -> None:
        self.prefix = prefix
        self.notes = dict(manifest.notes)
        self.tombstones = dict(manifest.tombstones)
        self.lower: dict[str, set[str]] = {}
        for note_id in self.notes:
            self.lower.setdefault(note_id.lower(), set()).add(note_id)
        self.version = manifest.version + 1
        self.now = now
        self.changed = False

    def remove(self, note_id: str) -> None:
        note = self.notes.pop(note_id)
        self.lower[note_id.lower()].discard(note_id)
        self.tombstones[note_id] = ManifestTombstone(note.rev, self.now, self.version)
        self.changed = True

    def store(self, note_id: str, prepared: PreparedChange) -> None:
        self.notes[note_id] = ManifestNote(
            rev=prepared.rev,
            hash=prepared.hash,
            size=prepared.size,
            typed=prepared.typed,
            changed_at=self.now,
            v=self.version,
        )
        self.tombstones.pop(note_id, None)
        self.lower.setdefault(note_id.lower(), set()).add(note_id)
        self.changed = True

    def case_twin(self, note_id: str) -> str | None:
        others = self.lower.get(note_id.lower(), set()) - {note_id}
        return min(others) if others else None


def _conflict(note_id: str, message: str, current: str | None) -> RejectedEntry:
    return RejectedEntry(note_id, "conflict", message, current)


def _plan_delete(work: _Working, change: Change) -> AppliedEntry | RejectedEntry:
    current = work.notes.get(change.id)
    if current is None:
        # Already deleted (or never there): the wanted end state holds, a safe retry.
        tomb = work.tombstones.get(change.id)
        return AppliedEntry(change.id, "delete", tomb.rev if tomb else (change.base_rev or ""))
    if current.rev != change.base_rev:
        return _conflict(
            change.id, "the note changed on the server since this device synced it", current.rev
        )
    work.remove(change.id)
    return AppliedEntry(change.id, "delete", current.rev)


def _size_problem(
    prepared: PreparedChange, current: ManifestNote | None, limits: CommitLimits
) -> RejectedEntry | None:
    # Limits block growth only: an update no larger than the current file is always allowed.
    shrinking = current is not None and prepared.size <= current.size
    note_id = prepared.change.id
    body_limit = limits.quotas.max_body_bytes
    if prepared.sealed_padded:
        # The body is not visible: the padded size a note of the largest allowed body and
        # frontmatter can take (twice: JSON escaping inside the seal) is the cap.
        cap = bucket_size(2 * (body_limit + limits.frontmatter_allowance))
        if prepared.sealed_padded > cap and not shrinking:
            return RejectedEntry(
                note_id,
                "too_large",
                f"the sealed note is {prepared.sealed_padded} bytes, over the {cap} a note of "
                f"the server's {body_limit}-byte body limit can take: split it",
            )
        return None
    if prepared.body_bytes > body_limit and not shrinking:
        return RejectedEntry(
            note_id,
            "too_large",
            f"the body is {prepared.body_bytes} bytes, over the server's {body_limit}: split it "
            "into several linked notes",
        )
    plan = limits.plan_limits
    if (
        plan is not None
        and plan.max_body_bytes is not None
        and prepared.body_bytes > plan.max_body_bytes
        and not shrinking
    ):
        return RejectedEntry(
            note_id,
            "plan_limit",
            f"the body is {prepared.body_bytes} bytes, over the free plan's "
            f"{plan.max_body_bytes}: shorten it or upgrade the plan",
        )
    return None


def _count_problem(work: _Working, note_id: str, limits: CommitLimits) -> RejectedEntry | None:
    live = len(work.notes)
    if live >= limits.quotas.max_notes:
        return RejectedEntry(
            note_id,
            "quota_exceeded",
            f"this scope holds {live} notes, the server's limit is {limits.quotas.max_notes}: "
            "remove some before adding more",
        )
    plan = limits.plan_limits
    if plan is not None and plan.max_notes is not None and live >= plan.max_notes:
        return RejectedEntry(
            note_id,
            "plan_limit",
            f"this scope holds {live} notes, the free plan allows {plan.max_notes}: remove some "
            "or upgrade the plan",
        )
    return None


def _plan_put(
    work: _Working, prepared: PreparedChange, limits: CommitLimits, objects: dict[str, bytes]
) -> AppliedEntry | RejectedEntry:
    change = prepared.change
    current = work.notes.get(change.id)
    if current is not None and current.rev == prepared.rev:
        return AppliedEntry(change.id, "put", prepared.rev)  # already there: a safe retry
    if change.base_rev is None and current is not None:
        return _conflict(change.id, "a note with this id already exists on the server", current.rev)
    if change.base_rev is not None and current is None:
        return _conflict(change.id, "the note was deleted on the server", None)
    if current is not None and current.rev != change.base_rev:
        return _conflict(
            change.id, "the note changed on the server since this device synced it", current.rev
        )
    if current is None:
        twin = work.case_twin(change.id)
        if twin is not None:
            return RejectedEntry(
                change.id,
                "case_collision",
                f"the note {twin!r} differs from this id only by letter case; rename one",
            )
    problem = _size_problem(prepared, current, limits)
    if problem is None and current is None:
        problem = _count_problem(work, change.id, limits)
    if problem is not None:
        return problem
    work.store(change.id, prepared)
    objects[object_key(work.prefix, change.id, prepared.rev)] = prepared.data
    return AppliedEntry(change.id, "put", prepared.rev)


def plan_commit(
    manifest: Manifest,
    prepared: list[PreparedChange],
    limits: CommitLimits,
    *,
    now: int,
    prefix: str,
    commit_id: str | None = None,
    new_generation: str | None = None,
) -> CommitPlan:
    """Apply ``prepared`` to ``manifest``: deletes first (they free room), then puts.

    ``commit_id`` names the version this commit writes (appended to the history);
    ``new_generation`` is the storage generation when the manifest has none yet."""
    work = _Working(manifest, now, prefix)
    outcomes: dict[int, AppliedEntry | RejectedEntry] = {}
    objects: dict[str, bytes] = {}
    for index, item in enumerate(prepared):
        if item.rejection is not None:
            outcomes[index] = item.rejection
        elif item.change.op == "delete":
            outcomes[index] = _plan_delete(work, item.change)
    for index, item in enumerate(prepared):
        if index not in outcomes:
            outcomes[index] = _plan_put(work, item, limits, objects)
    ordered = [outcomes[index] for index in range(len(prepared))]
    applied = tuple(item for item in ordered if isinstance(item, AppliedEntry))
    rejected = tuple(item for item in ordered if isinstance(item, RejectedEntry))
    if not work.changed:
        return CommitPlan(manifest, False, applied, rejected)
    tombstones, gc_version = expire_tombstones(
        work.tombstones, manifest.gc_version, now=now, days=limits.quotas.tombstone_days
    )
    new_manifest = Manifest(
        version=work.version,
        updated_at=now,
        gc_version=gc_version,
        notes=work.notes,
        tombstones=tombstones,
        **_lineage(manifest, commit_id, new_generation),
    )
    return CommitPlan(new_manifest, True, applied, rejected, objects)


def _lineage(
    manifest: Manifest, commit_id: str | None, new_generation: str | None
) -> dict[str, Any]:
    """The generation and commit history of the manifest a commit writes."""
    if commit_id is None:
        return {"generation": manifest.generation, "history": ()}
    if manifest.generation is None:  # a new storage, or one written by an older server
        return {"generation": new_generation, "history": (commit_id,)}
    history = (*manifest.history, commit_id)[-HISTORY_LENGTH:]
    return {"generation": manifest.generation, "history": history}


def history_differs(manifest: Manifest, request: SnapshotRequest) -> bool:
    """True when the storage was reset or restored since the version the client saw: another
    generation, a version below the client's, or another commit at the client's version."""
    if request.since is None:
        return False
    if request.since > manifest.version:
        return True
    if request.generation and manifest.generation and request.generation != manifest.generation:
        return True
    if request.since_commit is None:
        return False
    seen = manifest.commit_at(request.since)
    return seen is not None and seen != request.since_commit


def expire_tombstones(
    tombstones: Mapping[str, ManifestTombstone], gc_version: int, *, now: int, days: int
) -> tuple[dict[str, ManifestTombstone], int]:
    """Drop tombstones older than ``days``; ``gcVersion`` becomes the highest ``v`` dropped."""
    cutoff = now - days * DAY_MS
    kept: dict[str, ManifestTombstone] = {}
    for note_id, tomb in tombstones.items():
        if tomb.deleted_at < cutoff:
            gc_version = max(gc_version, tomb.v)
        else:
            kept[note_id] = tomb
    return kept, gc_version


#: Atomic commits: which rejection reason answers with which error code, first match wins.
_ATOMIC_PRECEDENCE: Final[tuple[tuple[RejectReason, str], ...]] = (
    ("too_large", "too_large"),
    ("plan_limit", "plan_limit"),
    ("quota_exceeded", "quota_exceeded"),
)


def atomic_failure(rejected: Iterable[RejectedEntry]) -> tuple[str, str] | None:
    """The error code and message an atomic commit with these rejections fails with."""
    items = list(rejected)
    if not items:
        return None
    for reason, code in _ATOMIC_PRECEDENCE:
        hit = next((item for item in items if item.reason == reason), None)
        if hit is not None:
            return code, f"nothing was applied: note {hit.id!r}: {hit.message}"
    ids = ", ".join(repr(item.id) for item in items[:10])
    return "conflict", f"nothing was applied: {len(items)} change(s) failed ({ids}); sync and retry"


# --------------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class Listing:
    """What a snapshot lists."""

    version: int
    unchanged: bool
    full: bool
    notes: tuple[NoteEntry, ...] = ()
    tombstones: tuple[TombstoneEntry, ...] = ()


def _visible(note: ManifestNote, protocol: int) -> bool:
    return protocol >= 2 or not note.typed


def plan_listing(manifest: Manifest, since: int | None, protocol: int) -> Listing:
    """Unchanged, a delta (entries with ``v > since``) or the full listing."""
    if since is not None and since == manifest.version:
        return Listing(manifest.version, unchanged=True, full=False)
    full = since is None or since < manifest.gc_version or since > manifest.version
    floor = -1 if full or since is None else since
    notes = tuple(
        NoteEntry(note_id, note.rev, note.hash, note.size, note.typed, note.changed_at)
        for note_id, note in sorted(manifest.notes.items())
        if note.v > floor and _visible(note, protocol)
    )
    tombstones = tuple(
        TombstoneEntry(note_id, tomb.rev, tomb.deleted_at)
        for note_id, tomb in sorted(manifest.tombstones.items())
        if tomb.v > floor
    )
    return Listing(manifest.version, unchanged=False, full=full, notes=notes, tombstones=tombstones)


@dataclass(frozen=True)
class ObjectRef:
    """A body to send: its revision, object key and stored size."""

    rev: str
    key: str
    size: int


def plan_objects(
    manifest: Manifest,
    listing: Listing,
    *,
    have: frozenset[str],
    want: Iterable[str],
    prefix: str,
    protocol: int,
    budget: int,
) -> tuple[list[ObjectRef], list[str]]:
    """Bodies to read (``want`` first, then listed notes whose hash is not in ``have``) within
    ``budget`` bytes, and the revisions left for a follow-up request. At least one body is
    always sent, so a pull makes progress even when one note is larger than the budget."""
    by_rev: dict[str, tuple[str, ManifestNote]] = {
        note.rev: (note_id, note)
        for note_id, note in manifest.notes.items()
        if _visible(note, protocol)
    }
    candidates: dict[str, ObjectRef] = {}
    for rev in want:
        if rev in by_rev:
            note_id, note = by_rev[rev]
            candidates[rev] = ObjectRef(rev, object_key(prefix, note_id, rev), note.size)
    for entry in listing.notes:
        if entry.hash not in have and entry.rev not in candidates:
            candidates[entry.rev] = ObjectRef(
                entry.rev, object_key(prefix, entry.id, entry.rev), entry.size
            )
    chosen: list[ObjectRef] = []
    pending: list[str] = []
    used = 0
    for ref in candidates.values():
        if pending or (chosen and used + ref.size > budget):
            pending.append(ref.rev)
        else:
            chosen.append(ref)
            used += ref.size
    return chosen, pending


def fit_objects(fetched: list[tuple[str, str]], budget: int) -> tuple[dict[str, str], list[str]]:
    """Keep fetched bodies (rev, text) while their JSON-encoded size fits ``budget``."""
    objects: dict[str, str] = {}
    pending: list[str] = []
    used = 0
    for rev, text in fetched:
        cost = len(json.dumps(text, ensure_ascii=False).encode("utf-8")) + len(rev) + 4
        if pending or (objects and used + cost > budget):
            pending.append(rev)
        else:
            objects[rev] = text
            used += cost
    return objects, pending
