"""The sync client of an end-to-end encrypted account: the engine's requests sealed on the way
out, the server's answers opened on the way in (issue 31).

The sync engine (:class:`~oharness.sync.scope_sync.ScopeSync`) works as for any account, on
note ids, note files and their revisions as this device knows them. :class:`SealedClient`
stands between it and the server:

- a scope is sent under its opaque id (:meth:`NoteCipher.opaque_scope`), a note under its
  opaque id, a note file sealed (:mod:`oharness.sync.protocol.sealed`);
- the server's revisions are those of the sealed bytes; each is recorded beside the plain
  revision, content hash and type of the file it seals (:class:`SealMap`), so the engine is
  answered in its own terms and its base revisions are sent back in the server's;
- a listing is opened before the engine sees it: every note's body is read (``have`` is never
  sent: the server could not match it), and a note the answer left in ``pending`` whose
  revision this device never saw is asked for at once (``want``), so no entry reaches the
  engine without its plain id and revision. A tombstone of a note this device never saw is left
  out (it has no base for it; a first sync deletes nothing anyway).

A note that does not open (damaged, moved from another note or scope, sealed with another key)
stops the pass with that note named: nothing is decided from garbage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import msgspec

from oharness.errors import OHarnessError, SyncError
from oharness.fsio import atomic_write
from oharness.notes.format import file_revision, parse_note_bytes
from oharness.sync.client import SyncClient
from oharness.sync.e2e import NoteCipher
from oharness.sync.protocol import (
    AppliedEntry,
    Change,
    CommitRequest,
    CommitResponse,
    NoteEntry,
    RejectedEntry,
    SnapshotRequest,
    SnapshotResponse,
    SyncScope,
    TombstoneEntry,
)
from oharness.sync.protocol.sealed import sealed_bytes, sealed_text

#: Rounds of ``want`` a pull may take for bodies the server left pending.
_MAX_WANT_ROUNDS: Final = 64


@dataclass(frozen=True)
class PlainFile:
    """What a sealed revision holds, as this device's engine knows it."""

    id: str
    rev: str
    hash: str
    size: int
    typed: bool


class SealMap:
    """The sealed revisions this device sealed or opened, and the opaque ids it knows (kept in
    one JSON file per scope beside its sync state; derived data, rebuilt by a pull)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.files: dict[str, PlainFile] = {}
        self.ids: dict[str, str] = {}
        self._by_plain_rev: dict[str, str] = {}
        #: Whether the scope's marker (its name, sealed) is known to be on the server.
        self.marked = False
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_bytes())
            self.ids = {str(k): str(v) for k, v in data["ids"].items()}
            self.files = {str(k): PlainFile(*v) for k, v in data["files"].items()}
            self.marked = data.get("marked") is True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.ids, self.files = {}, {}
        self._by_plain_rev = {plain.rev: sealed for sealed, plain in self.files.items()}

    def record(self, sealed_rev: str, opaque_id: str, plain: PlainFile) -> None:
        self.files[sealed_rev] = plain
        self.ids[opaque_id] = plain.id
        self._by_plain_rev[plain.rev] = sealed_rev

    def sealed_rev(self, plain_rev: str) -> str | None:
        """The server's revision of the file this device knows as ``plain_rev``."""
        return self._by_plain_rev.get(plain_rev)

    def save(self) -> None:
        if self.path is None:
            return
        data = {
            "marked": self.marked,
            "ids": self.ids,
            "files": {k: [v.id, v.rev, v.hash, v.size, v.typed] for k, v in self.files.items()},
        }
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps(data, separators=(",", ":")).encode(), mode=0o600)


def plain_file(text: str) -> PlainFile:
    """The engine's view of a note file's text."""
    data = text.encode("utf-8")
    note = parse_note_bytes(data)
    return PlainFile(
        note.id, file_revision(data), note.content_hash, len(data), note.type is not None
    )


def scope_key_of(scope: SyncScope) -> str:
    """The name a scope is sealed under (the same on every device of the account)."""
    return "user" if scope.kind == "user" else f"project:{scope.project_id}"


def same_key(stored: dict[str, Any], held: dict[str, Any]) -> bool:
    """Whether the account's stored key envelope seals the key of ``held`` (the envelope as
    this device saw it with its key): a new passphrase seals the same key anew, but the
    copy under the recovery key stays until the key itself is made anew."""
    return stored.get("byRecovery") == held.get("byRecovery")


class SealedClient(SyncClient):
    """A :class:`SyncClient` that seals what it sends and opens what it receives."""

    sealed = True

    def __init__(
        self,
        origin: str,
        token: str,
        cipher: NoteCipher,
        *,
        maps_dir: Path | None = None,
        http: httpx2.Client | None = None,
        on_request: object = None,
        migrating: bool = False,
        envelope: dict[str, Any] | None = None,
        put_back: Callable[[SealedClient, dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__(origin, token, http=http, on_request=on_request)  # type: ignore[arg-type]
        self.cipher = cipher
        self._maps_dir = maps_dir
        self._maps: dict[str, SealMap] = {}
        #: Set while turning encryption on: the envelope is stored only once notes are copied.
        self._migrating = migrating
        #: The account's key envelope as this device last saw it, and what puts it back on
        #: the server when a reset lost it (:func:`oharness.sync.encryption.put_back`).
        self._envelope = envelope
        self._put_back = put_back
        #: Whether this client has seen the account still encrypted (checked once, before its
        #: first upload: encryption turned off on another machine while the account's sealed
        #: copy was empty shows in no snapshot, and sealed uploads would reach no one).
        self._still_encrypted = migrating
        #: The body limit the server cannot check on sealed notes (its own and the free
        #: plan's), learned from its answers; ``None`` until one came.
        self._body_limit: tuple[int, str] | None = None

    def _map(self, key: str) -> SealMap:
        found = self._maps.get(key)
        if found is None:
            path = None
            if self._maps_dir is not None:
                name = self.cipher.opaque_scope(key)  # no readable project id in a file name
                path = self._maps_dir / f"{name}.sealed.json"
            found = self._maps[key] = SealMap(path)
        return found

    def _sealed_scope(self, scope: SyncScope) -> SyncScope:
        return SyncScope("project", self.cipher.opaque_scope(scope_key_of(scope)))

    # ---- commit ----------------------------------------------------------------------------

    def commit(self, request: CommitRequest) -> CommitResponse:
        if not self._still_encrypted:
            self._check_still_encrypted()
        key = scope_key_of(request.scope)
        seal_map = self._map(key)
        plain_ids: dict[str, str] = {}
        sent: dict[str, tuple[str, PlainFile]] = {}  # opaque id -> (sealed rev, plain file)
        changes = []
        refused: list[RejectedEntry] = []
        for change in request.changes:
            too_large = self._over_limit(change)
            if too_large is not None:
                refused.append(too_large)
                continue
            opaque = self.cipher.opaque_id(key, change.id)
            plain_ids[opaque] = change.id
            base = None if change.base_rev is None else seal_map.sealed_rev(change.base_rev)
            if change.base_rev is not None and base is None:
                base = change.base_rev  # not known here: the server answers a conflict
            content = None
            if change.content is not None:
                plain = plain_file(change.content)
                content = sealed_text(self.cipher.seal(key, change.id, change.content))
                sealed_rev = file_revision(content.encode("ascii"))
                seal_map.record(sealed_rev, opaque, plain)
                sent[opaque] = (sealed_rev, plain)
            changes.append(Change(change.op, opaque, base, content))
        marker_id, marker = self.cipher.scope_marker(key)
        if not seal_map.marked and not request.atomic:
            # The scope's name, sealed, so turning encryption off finds every scope's name;
            # the same bytes every time, so a marker already there is a no-op.
            changes.append(Change("put", marker_id, None, sealed_text(marker)))
        sealed_request = msgspec.structs.replace(
            request, scope=self._sealed_scope(request.scope), changes=tuple(changes)
        )
        answer = super().commit(sealed_request)
        if self._body_limit is None:
            self._learn_limits(answer.quotas.max_body_bytes, answer.plan)
        if any(entry.id == marker_id for entry in answer.applied):
            seal_map.marked = True
        seal_map.save()
        return msgspec.structs.replace(
            answer,
            applied=tuple(
                self._plain_applied(a, plain_ids, seal_map)
                for a in answer.applied
                if a.id != marker_id
            ),
            rejected=tuple(refused)
            + tuple(
                self._plain_rejected(r, plain_ids, seal_map)
                for r in answer.rejected
                if r.id != marker_id
            ),
        )

    def _learn_limits(self, server_limit: int, plan: str) -> None:
        limit, reason = server_limit, "too_large"
        free = self.identity().plan_limits if plan == "free" else None
        if free is not None and free.max_body_bytes is not None and free.max_body_bytes < limit:
            limit, reason = free.max_body_bytes, "plan_limit"
        self._body_limit = (limit, reason)

    def _over_limit(self, change: Change) -> RejectedEntry | None:
        """The refusal the server would give a plain note whose body is over its limit (it
        cannot see a sealed note's body)."""
        if change.content is None or self._body_limit is None:
            return None
        limit, reason = self._body_limit
        size = len(parse_note_bytes(change.content.encode("utf-8")).body.encode("utf-8"))
        if size <= limit:
            return None
        whose = "the free plan's" if reason == "plan_limit" else "the server's"
        return RejectedEntry(
            change.id,
            reason,  # type: ignore[arg-type]
            f"the body is {size} bytes, over {whose} {limit}: split it into several linked notes",
        )

    @staticmethod
    def _plain_applied(
        entry: AppliedEntry, plain_ids: dict[str, str], seal_map: SealMap
    ) -> AppliedEntry:
        known = seal_map.files.get(entry.rev)
        return AppliedEntry(
            plain_ids.get(entry.id, entry.id), entry.op, known.rev if known else entry.rev
        )

    @staticmethod
    def _plain_rejected(
        entry: RejectedEntry, plain_ids: dict[str, str], seal_map: SealMap
    ) -> RejectedEntry:
        current = entry.current_rev
        known = seal_map.files.get(current) if current is not None else None
        return msgspec.structs.replace(
            entry,
            id=plain_ids.get(entry.id, entry.id),
            current_rev=known.rev if known else current,
        )

    # ---- snapshot --------------------------------------------------------------------------

    def snapshot(self, request: SnapshotRequest) -> SnapshotResponse:
        key = scope_key_of(request.scope)
        seal_map = self._map(key)
        want = tuple(seal_map.sealed_rev(rev) or rev for rev in request.want)
        sealed_request = msgspec.structs.replace(
            request, scope=self._sealed_scope(request.scope), have=frozenset(), want=want
        )
        answer = super().snapshot(sealed_request)
        if self._body_limit is None:
            self._learn_limits(answer.quotas.max_body_bytes, answer.plan)
        empty = answer.full and not answer.notes and not answer.tombstones
        if (answer.reset or empty) and not self._migrating:
            self._check_still_encrypted()
        if answer.reset:
            return answer
        marker_id = self.cipher.scope_marker_id(sealed_request.scope.project_id or "")
        marker_revs = {e.rev for e in answer.notes if e.id == marker_id}
        answer = msgspec.structs.replace(
            answer,
            notes=tuple(e for e in answer.notes if e.id != marker_id),
            tombstones=tuple(e for e in answer.tombstones if e.id != marker_id),
            objects={r: t for r, t in answer.objects.items() if r not in marker_revs},
            pending=tuple(r for r in answer.pending if r not in marker_revs),
        )
        objects = dict(answer.objects)
        unknown = [
            e.rev for e in answer.notes if e.rev not in objects and e.rev not in seal_map.files
        ]
        objects.update(self._fetch(sealed_request, answer.version, unknown))
        pending = [rev for rev in answer.pending if rev not in objects]
        opaque_of = {entry.rev: entry.id for entry in answer.notes}
        opened = {
            rev: self._open(key, opaque_of.get(rev), rev, text, seal_map)
            for rev, text in objects.items()
        }
        seal_map.save()
        notes = []
        for entry in answer.notes:
            plain = seal_map.files.get(entry.rev)
            if plain is None:  # cannot happen: every unknown revision was fetched above
                raise SyncError(f"note {entry.id} could not be read", code="invalid_response")
            notes.append(
                NoteEntry(
                    plain.id, plain.rev, plain.hash, plain.size, plain.typed, entry.changed_at
                )
            )
        tombstones = []
        for tomb in answer.tombstones:
            plain_id = seal_map.ids.get(tomb.id)
            if plain_id is None:
                continue
            known = seal_map.files.get(tomb.rev)
            tombstones.append(
                TombstoneEntry(plain_id, known.rev if known else tomb.rev, tomb.deleted_at)
            )
        return msgspec.structs.replace(
            answer,
            notes=tuple(notes),
            tombstones=tuple(tombstones),
            objects={seal_map.files[rev].rev: text for rev, text in opened.items()},
            pending=tuple(
                seal_map.files[rev].rev if rev in seal_map.files else rev for rev in pending
            ),
        )

    def _check_still_encrypted(self) -> None:
        """A sealed scope found empty or reset: if the account is no longer encrypted (turned
        off on another machine), stop rather than upload sealed notes into it again; if its
        key envelope is gone with the rest of the storage (a reset, or a restore from before
        it was stored), put this device's copy back first, so a device without the key is
        still refused rather than invited to upload in clear."""
        stored = self.keys()
        if stored.envelope is not None:
            if self._envelope is not None and not same_key(stored.envelope, self._envelope):
                raise SyncError(
                    "the end-to-end key on this machine does not open this account's notes (the "
                    "account's key was made anew on another machine, or the key file came from "
                    "elsewhere): nothing was uploaded and the key here is forgotten; 'oharness "
                    "sync unlock' enters the account's passphrase",
                    code="stale_key",
                )
            self._still_encrypted = True
            return
        if stored.version > 0:
            raise SyncError(
                "end-to-end encryption was turned off for this account on another machine: "
                "run 'oharness sync encrypt --off' here too (it forgets the key; notes stay)",
                code="encryption_off",
            )
        if self._envelope is None or self._put_back is None:
            raise SyncError(
                "the server lost the account's key envelope (its storage was reset) and this "
                "device has no copy: run 'oharness sync encrypt' here to store it again",
                code="encryption_off",
            )
        try:
            self._put_back(self, self._envelope)
        except SyncError as exc:
            if exc.code != "conflict":
                raise
            self._check_still_encrypted()  # another device put one back first

    def _fetch(self, request: SnapshotRequest, version: int, revs: list[str]) -> dict[str, str]:
        """The bodies of ``revs`` (left pending by the answer at ``version``), at once."""
        found: dict[str, str] = {}
        for _ in range(_MAX_WANT_ROUNDS):
            if not revs:
                return found
            more = super().snapshot(
                msgspec.structs.replace(request, since=version, want=tuple(revs))
            )
            if not more.unchanged:
                raise SyncError(
                    "the notes changed on the server during the pull; the next pass retries",
                    code="unavailable",
                )
            found.update(more.objects)
            revs = [rev for rev in revs if rev not in found]
        raise SyncError(
            "the server kept sealed notes back; the next pass retries", code="unavailable"
        )

    def _open(self, key: str, opaque: str | None, rev: str, text: str, seal_map: SealMap) -> str:
        if opaque is None and rev in seal_map.files:  # asked for by revision (``want``)
            plain_id = seal_map.files[rev].id
            opaque = self.cipher.opaque_id(key, plain_id)
        raw = sealed_bytes(text)
        if opaque is None or raw is None:
            raise SyncError(
                f"the server sent a note that is not sealed ({rev})", code="invalid_response"
            )
        try:
            note_id, plain_text = self.cipher.open(key, opaque, raw)
            plain = plain_file(plain_text)
        except OHarnessError as exc:
            raise SyncError(exc.message, code="invalid_response") from exc
        if plain.id != note_id:
            raise SyncError(f"note {opaque} holds a file of another note", code="invalid_response")
        seal_map.record(rev, opaque, plain)
        return plain_text
