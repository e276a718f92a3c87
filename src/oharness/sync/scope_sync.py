"""One sync pass over one scope (spec 07.1–07.4): snapshot, plan, apply, commit, advance.

Order matters for crash safety, and every step is written so that a crash anywhere leaves a
state from which the next pass neither loses an edit nor re-applies a stale one:

1. under the scope's cross-process lock (a process that cannot take it skips the pass);
2. fetch (:mod:`~oharness.sync.fetch`): local notes are read fresh (unparseable and unloaded
   files are unsyncable, never deletions); a snapshot (delta since the version last seen, or
   a full listing with ``have`` hashes); the plan, and the bodies it needs;
3. apply (:mod:`~oharness.sync.apply`): downloads, local deletions and merges are written to
   disk first (each replaced or removed local file backed up), and only then recorded in the
   base;
4. commit (:mod:`~oharness.sync.commit`): uploads go in commits of at most
   ``maxChangesPerCommit``; each applied change is recorded in the base only after the server
   accepted it; the manifest version last seen moves forward only when every remote change
   was handled.

What one round learns lives in one :class:`~oharness.sync.sync_round.SyncRound`.
"""

from __future__ import annotations

from collections.abc import Callable

import filelock

from oharness.fsio import PRIVATE_FILE_MODE, make_directory
from oharness.notes.backups import BackupStore
from oharness.notes.store import NoteStore
from oharness.sync.ancestor import AncestorStore
from oharness.sync.apply import apply
from oharness.sync.client import SyncClient
from oharness.sync.commit import CommitOutcome, commit
from oharness.sync.conflicts import ConflictBook
from oharness.sync.fetch import fetch
from oharness.sync.protocol import SyncScope
from oharness.sync.replicas import folder_id
from oharness.sync.result import PassResult
from oharness.sync.sync_round import Progress, ScopeParts, SyncRound
from oharness.types import Clock

__all__ = ["PassResult", "ScopeSync"]

#: Rounds of a pass while the server refuses changes as compare-and-swap races.
_CAS_ROUNDS = 3


class ScopeSync:
    """Sync of one notes directory with one scope on the server."""

    def __init__(
        self,
        *,
        store: NoteStore,
        base: AncestorStore,
        client: SyncClient,
        scope: SyncScope,
        scope_key: str,
        backups: BackupStore,
        clock: Clock,
        protocol: int = 2,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> None:
        self.parts = ScopeParts(
            store=store,
            base=base,
            client=client,
            scope=scope,
            scope_key=scope_key,
            backups=backups,
            clock=clock,
            protocol=protocol,
            conflicts=ConflictBook(base.conflicts),
            progress=progress,
            cancelled=cancelled,
        )

    def run(self) -> PassResult:
        """One pass; returns what it did. Request-level failures raise :class:`SyncError`.

        A change the server refused as a compare-and-swap race (another machine committed the
        note meanwhile) is planned again at once against the newer listing -- merged, pulled
        or recorded as a conflict -- a few times; still racing after that, it is reported."""
        base = self.parts.base
        make_directory(base.folder)
        lock = filelock.FileLock(base.lock_path, timeout=0, mode=PRIVATE_FILE_MODE)
        try:
            lock.acquire()
        except filelock.Timeout:
            return PassResult(skipped="another process is syncing this scope")
        try:
            result = PassResult()
            for _ in range(_CAS_ROUNDS):
                outcome = self.round(result)
                if not outcome.refused and not outcome.behind:
                    break
            else:
                result.errors.extend(
                    {
                        "id": note_id,
                        "code": "conflict",
                        "message": f"{note_id} kept changing on the server during this pass; "
                        "the next pass takes it up again",
                    }
                    for note_id in outcome.refused
                )
            return result
        finally:
            lock.release()

    def round(self, result: PassResult) -> CommitOutcome:
        """One round of a pass: fetch, apply, commit.

        The outcome names the ids the server refused as CAS races, and whether the base is
        behind its own commits (another machine committed in between, so the position could
        not move past them: one more round catches up, else a restore of the storage back to
        the old position would hide that those commits were lost)."""
        result.errors, result.rejected = [], []
        state = self.parts.base.load()
        state.directory = str(self.parts.store.directory)
        current = folder_id(self.parts.store.directory)
        replaced = None not in (state.folder_id, current) and state.folder_id != current
        if current is None and state.notes and not self.parts.store.directory.exists():
            # No notes folder at all (a clone made again where the marker is committed and
            # the notes are not): it never held the notes, so nothing here was deleted.
            replaced = True
        state.folder_id = current or state.folder_id
        rnd = SyncRound(state, result, folder_replaced=replaced)
        fetch(self.parts, rnd)
        apply(self.parts, rnd)
        return commit(self.parts, rnd)
