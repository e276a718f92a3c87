"""What one round of a sync pass works with: the scope's fixed parts and the round's state.

:class:`ScopeParts` is what does not change during a pass (the store, the merge ancestor, the
client, the clock); :class:`SyncRound` is everything one round learns and decides, filled in
stage by stage (:mod:`~oharness.sync.fetch`, :mod:`~oharness.sync.apply`,
:mod:`~oharness.sync.commit`), so no stage threads a dozen values through its calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from oharness.errors import ConflictError, StorageError, SyncError
from oharness.notes.backups import BackupStore
from oharness.notes.format import file_revision
from oharness.notes.store import NoteStore, StoredNote
from oharness.sync.ancestor import AncestorStore, BaseState
from oharness.sync.client import SyncClient
from oharness.sync.conflicts import ConflictBook
from oharness.sync.plan import Action
from oharness.sync.protocol import Change, Quotas, SnapshotResponse, SyncScope
from oharness.sync.result import PassResult
from oharness.types import Clock

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ScopeParts:
    """The fixed parts of one scope's sync: local notes, ancestor, server, backups, clock."""

    store: NoteStore
    base: AncestorStore
    client: SyncClient
    scope: SyncScope
    scope_key: str
    backups: BackupStore
    clock: Clock
    protocol: int
    conflicts: ConflictBook
    progress: Progress | None = None
    cancelled: Callable[[], bool] | None = None

    def check_cancelled(self) -> None:
        """Sync switched off mid-pass: stop before the next request (the base stays valid)."""
        if self.cancelled is not None and self.cancelled():
            raise SyncError("sync was switched off; the pass stopped", code="cancelled")

    def backup(self, data: bytes, note_id: str, reason: str, content_hash: str) -> None:
        """Back up a version this pass replaces, removes or sets aside."""
        self.backups.write(
            data,
            note_id=note_id,
            reason=reason,
            scope_dir=self.store.directory.absolute(),
            scope_key=self.scope_key,
            content_hash=content_hash,
        )


@dataclass(eq=False)
class LocalNote:
    """A syncable local note; its bytes are read only when a step needs them."""

    stored: StoredNote

    @property
    def hash(self) -> str:
        return self.stored.note.content_hash

    @cached_property
    def data(self) -> bytes:
        """The file's bytes, exactly the version the pass planned with (else a conflict)."""
        try:
            data = self.stored.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {self.stored.path}: {exc}") from exc
        if file_revision(data) != self.stored.revision:
            raise ConflictError(
                f"{self.stored.id} changed on disk during the sync pass; the next pass takes it",
                id=self.stored.id,
            )
        return data


@dataclass
class SyncRound:
    """One round of a pass, as the stages fill it in."""

    state: BaseState
    result: PassResult
    #: The notes folder is another one than the base recorded (deleted and cloned again, say).
    folder_replaced: bool = False
    #: Syncable local notes, and the ids of files that cannot sync now.
    local: dict[str, LocalNote] = field(default_factory=dict)
    blocked: set[str] = field(default_factory=set)
    snapshot: SnapshotResponse | None = None
    #: Bodies by revision: the snapshot's and the ones fetched after it.
    bodies: dict[str, str] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    #: False when some remote change was not handled: the position must not move past it.
    complete: bool = True
    uploads: list[tuple[Change, bytes | None]] = field(default_factory=list)

    @property
    def listed(self) -> SnapshotResponse:
        """The snapshot of this round (taken by the fetch stage)."""
        assert self.snapshot is not None, "the fetch stage runs first"
        return self.snapshot

    @property
    def quotas(self) -> Quotas:
        return self.listed.quotas
