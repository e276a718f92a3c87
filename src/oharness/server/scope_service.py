"""Snapshots and commits over an object store: the I/O around :mod:`oharness.server.planner`.

Every request asks the store about the scope's manifest once, conditionally when this instance
has read it before (:mod:`oharness.server.manifest_cache`): an idle check is one conditional
read, answered from the cached head; a commit of n notes is that read, the account's erase
marker, n object writes and the manifest write.

A commit writes the new revision objects first, then replaces the manifest with compare-and-swap
on its ETag. When another writer won the race, it re-reads the manifest and re-plans (every
change is checked again against the new state) with a short randomised backoff, a bounded number
of times, then gives up with a retryable 503. A failure between the object writes and the
manifest write leaves the old manifest in place: the orphaned objects are harmless and a retry
rewrites the same content-addressed keys.

Everything here is blocking; the app calls it from a worker thread.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from oharness.errors import PreconditionFailed, StorageUnavailable, ValidationError
from oharness.notes.format import file_revision
from oharness.server.config import ServerSettings
from oharness.server.erase import EraseGate, erase_team, erase_user
from oharness.server.logs import log_event
from oharness.server.manifest_cache import CachedHead, HeadCache, ManifestCache
from oharness.server.planner import (
    CommitLimits,
    CommitPlan,
    Listing,
    ObjectRef,
    atomic_failure,
    fit_objects,
    history_differs,
    plan_commit,
    plan_listing,
    plan_objects,
    prepare_changes,
)
from oharness.server.responses import SyncApiError
from oharness.storage.object_store import NOT_MODIFIED, ObjectStore, StoredObject
from oharness.sync.protocol import (
    CommitRequest,
    CommitResponse,
    Manifest,
    ManifestHead,
    Plan,
    SnapshotRequest,
    SnapshotResponse,
    manifest_key,
    manifest_to_bytes,
    parse_manifest,
    peek_manifest_head,
)
from oharness.types import Clock

#: Room left in a snapshot for everything but the bodies (version, flags, quotas, framing).
_RESPONSE_OVERHEAD: Final = 4096
_BACKOFF_BASE: Final = 0.005
_BACKOFF_CAP: Final = 0.25
_T = TypeVar("_T")
_R = TypeVar("_R")


def wall_clock() -> int:
    """Milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class StoredManifest:
    """A manifest and the ETag to replace it with (``None``: not created yet)."""

    manifest: Manifest
    etag: str | None


def _listing_bytes(listing: Listing, protocol: int) -> int:
    """The JSON size of a listing's notes and tombstones, as the answer will carry them."""
    return len(
        json.dumps(
            [note.to_json(protocol) for note in listing.notes]
            + [tomb.to_json() for tomb in listing.tombstones],
            ensure_ascii=False,
        ).encode("utf-8")
    )


class ScopeService:
    """Reads and writes scopes of one object store."""

    def __init__(
        self,
        store: ObjectStore,
        settings: ServerSettings,
        *,
        clock: Clock = wall_clock,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._cache = ManifestCache(settings.manifest_cache_size)
        self._heads = HeadCache(settings.manifest_head_cache_size)
        self.erase_gate = EraseGate(
            store, team_lifetime=settings.team_erase_lifetime, monotonic=monotonic
        )

    # ----------------------------------------------------------------- erasure

    def check_not_erased(self, segment: str) -> None:
        """Refuse an erased account (403 ``account_erased``)."""
        if self.erase_gate.user_erased(segment):
            raise SyncApiError(
                "account_erased",
                "this account was erased: nothing more is accepted for it; local notes are kept",
            )

    def erase_user(self, user_id: str, *, now: int, concurrency: int) -> int:
        """Erase an account (spec 06.7); this instance refuses it at once."""
        return erase_user(
            self.store, user_id, now=now, concurrency=concurrency, gate=self.erase_gate
        )

    def erase_team(self, team_id: str, *, now: int, concurrency: int) -> int:
        """Erase a team (spec 06.7); this instance stops counting its plan at once."""
        return erase_team(
            self.store, team_id, now=now, concurrency=concurrency, gate=self.erase_gate
        )

    # ----------------------------------------------------------------- reading

    def read_manifest(self, prefix: str, *, fresh: bool = False) -> StoredManifest:
        """The scope's manifest (an empty one when the scope was never written); a conditional
        read when this instance holds a parsed copy, unless ``fresh``."""
        key = manifest_key(prefix)
        cached = None if fresh else self._cache.latest(prefix)
        if cached is None:
            found = self.store.get(key)
        else:
            answer = self.store.get_if_changed(key, cached[0])
            if answer is NOT_MODIFIED:
                return StoredManifest(cached[1], cached[0])
            found = answer
        if found is None:
            self._heads.drop(prefix)
            return StoredManifest(Manifest(), None)
        self._heads.put(prefix, found.etag, peek_manifest_head(found.data))
        return StoredManifest(self._parse(prefix, found), found.etag)

    def _read_head(self, prefix: str) -> tuple[CachedHead | None, StoredObject | None]:
        """The manifest's head, and its bytes when they were read: one conditional read when
        this instance saw the scope before (``(None, None)``: no manifest)."""
        key = manifest_key(prefix)
        known = self._heads.get(prefix)
        if known is None:
            found = self.store.get(key)
        else:
            answer = self.store.get_if_changed(key, known.etag)
            if answer is NOT_MODIFIED:
                return known, None
            found = answer
        if found is None:
            self._heads.drop(prefix)
            return None, None
        head = peek_manifest_head(found.data)
        self._heads.put(prefix, found.etag, head)
        return (CachedHead(found.etag, head) if head is not None else None), found

    def _manifest_after_head(
        self, prefix: str, known: CachedHead | None, stored: StoredObject | None
    ) -> Manifest:
        if stored is not None:
            return self._parse(prefix, stored)
        if known is None:
            return Manifest()
        cached = self._cache.get(prefix, known.etag)
        # Unchanged since this instance saw its head, but not parsed here: read it whole.
        return cached if cached is not None else self.read_manifest(prefix, fresh=True).manifest

    def _parse(self, prefix: str, stored: StoredObject) -> Manifest:
        cached = self._cache.get(prefix, stored.etag)
        if cached is not None:
            return cached
        try:
            manifest = parse_manifest(stored.data)
        except ValidationError as exc:
            log_event(logging.ERROR, "manifest_unreadable", key=manifest_key(prefix))
            raise StorageUnavailable(
                f"the scope's manifest cannot be read ({exc.message}); the operator must repair it"
            ) from exc
        self._cache.put(prefix, stored.etag, manifest)
        return manifest

    def snapshot(
        self,
        prefix: str,
        request: SnapshotRequest,
        plan: Plan,
        user_segment: str | None = None,
    ) -> SnapshotResponse:
        """Answer a snapshot request (spec 06.3). With ``user_segment``, the account's erase
        marker is checked unless the answer is ``unchanged`` (see :mod:`.erase`)."""
        quotas = self.settings.quotas
        known, stored = self._read_head(prefix)
        if known is not None and _idle(known.head, request):
            # The idle-machine case: answered from the manifest's head.
            head = known.head
            return SnapshotResponse(
                head.version,
                plan,
                quotas,
                unchanged=True,
                generation=head.generation,
                commit=head.commit,
            )
        if user_segment is not None:
            self.check_not_erased(user_segment)
        manifest = self._manifest_after_head(prefix, known, stored)
        marks: dict[str, Any] = {"generation": manifest.generation, "commit": manifest.commit}
        if history_differs(manifest, request):
            return SnapshotResponse(manifest.version, plan, quotas, reset=True, **marks)
        listing = plan_listing(manifest, request.since, request.protocol)
        if listing.unchanged and not request.want:
            return SnapshotResponse(listing.version, plan, quotas, unchanged=True, **marks)
        listing_bytes = _listing_bytes(listing, request.protocol)
        budget = max(0, quotas.max_response_bytes - listing_bytes - _RESPONSE_OVERHEAD)
        refs, pending = plan_objects(
            manifest,
            listing,
            have=request.have,
            want=request.want,
            prefix=prefix,
            protocol=request.protocol,
            budget=budget,
        )
        objects, unfit = fit_objects(self._read_objects(refs), budget)
        return SnapshotResponse(
            version=listing.version,
            plan=plan,
            quotas=quotas,
            unchanged=listing.unchanged,
            full=listing.full,
            notes=listing.notes,
            tombstones=listing.tombstones,
            objects=objects,
            pending=tuple(unfit + pending),
            **marks,
        )

    def _read_objects(self, refs: list[ObjectRef]) -> list[tuple[str, str]]:
        results = self._map(lambda ref: self.store.get(ref.key), refs)
        fetched: list[tuple[str, str]] = []
        for ref, stored in zip(refs, results, strict=True):
            if stored is None:
                log_event(logging.WARNING, "object_missing", key=ref.key)
                continue
            if file_revision(stored.data) != ref.rev:
                log_event(logging.ERROR, "object_corrupt", key=ref.key)
                continue
            fetched.append((ref.rev, stored.data.decode("utf-8", errors="replace")))
        return fetched

    # ----------------------------------------------------------------- committing

    def commit(
        self, prefix: str, request: CommitRequest, limits: CommitLimits, plan: Plan
    ) -> CommitResponse:
        """Apply a commit (spec 06.4); raises :class:`SyncApiError` for a failed atomic commit and
        :class:`StorageUnavailable` when storage fails or contention does not let up."""
        prepared = prepare_changes(request, self.settings.frontmatter_allowance)
        written: set[str] = set()
        attempts = self.settings.commit_attempts
        for attempt in range(attempts):
            # After a lost race, read the winner's manifest whole.
            current = self.read_manifest(prefix, fresh=attempt > 0)
            manifest = current.manifest
            outcome = plan_commit(
                manifest,
                prepared,
                limits,
                now=self.clock(),
                prefix=prefix,
                commit_id=f"{self._rng.getrandbits(48):012x}",
                new_generation=f"{self._rng.getrandbits(128):032x}",
            )
            if request.atomic:
                _check_atomic(request, manifest, outcome)
            if not outcome.changed:
                return self._response(manifest, outcome, plan, changed=False)
            pending = {key: data for key, data in outcome.objects.items() if key not in written}
            self._write_objects(pending)
            written.update(pending)
            if self._replace_manifest(prefix, current, outcome.manifest):
                log_event(
                    logging.INFO,
                    "commit",
                    version=outcome.manifest.version,
                    applied=len(outcome.applied),
                    rejected=len(outcome.rejected),
                    attempts=attempt + 1,
                )
                return self._response(outcome.manifest, outcome, plan, changed=True)
            self._backoff(attempt)
        log_event(logging.WARNING, "commit_contention", attempts=attempts)
        raise StorageUnavailable(
            f"the scope is being changed by many writers at once ({attempts} attempts lost the "
            "race): retry shortly"
        )

    def _response(
        self, manifest: Manifest, outcome: CommitPlan, plan: Plan, *, changed: bool
    ) -> CommitResponse:
        return CommitResponse(
            version=manifest.version,
            plan=plan,
            quotas=self.settings.quotas,
            applied=outcome.applied,
            rejected=outcome.rejected,
            changed=changed,
            generation=manifest.generation,
            commit=manifest.commit,
        )

    def _replace_manifest(self, prefix: str, current: StoredManifest, manifest: Manifest) -> bool:
        data = manifest_to_bytes(manifest)
        try:
            if current.etag is None:
                etag = self.store.put(manifest_key(prefix), data, if_none_match=True)
            else:
                etag = self.store.put(manifest_key(prefix), data, if_match=current.etag)
        except PreconditionFailed:
            return False
        self._cache.put(prefix, etag, manifest)
        self._heads.put(prefix, etag, peek_manifest_head(data))
        return True

    def _write_objects(self, objects: Mapping[str, bytes]) -> None:
        # Content-addressed and immutable: a plain put is idempotent, a retry rewrites the same.
        self._map(lambda item: self.store.put(item[0], item[1]), list(objects.items()))

    def _backoff(self, attempt: int) -> None:
        ceiling = min(_BACKOFF_CAP, _BACKOFF_BASE * (2**attempt))
        self._sleep(self._rng.uniform(0, ceiling))

    def _map(self, func: Callable[[_T], _R], items: list[_T]) -> list[_R]:
        if len(items) < 4:
            return [func(item) for item in items]
        workers = min(self.settings.io_concurrency, len(items))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            return list(pool.map(func, items))


def _idle(head: ManifestHead, request: SnapshotRequest) -> bool:
    """The request saw exactly the current version of this storage and wants no bodies."""
    return (
        request.since == head.version
        and not request.want
        and (request.since_commit is None or head.commit in (None, request.since_commit))
        and (request.generation is None or head.generation in (None, request.generation))
    )


def _check_atomic(request: CommitRequest, manifest: Manifest, outcome: CommitPlan) -> None:
    if request.base_version != manifest.version:
        if outcome.changed or outcome.rejected:
            raise SyncApiError(
                "manifest_changed",
                f"the scope is at version {manifest.version}, not {request.base_version}: "
                "sync, then retry the batch",
                version=manifest.version,
            )
        return  # every change is already there: the retry of a commit whose answer was lost
    failure = atomic_failure(outcome.rejected)
    if failure is None:
        return
    code, message = failure
    details: dict[str, Any] = {}
    if code == "conflict":
        details["conflicts"] = [
            {
                "id": item.id,
                "reason": item.reason,
                "message": item.message,
                "currentRev": item.current_rev,
            }
            for item in outcome.rejected
        ]
    raise SyncApiError(code, message, **details)
