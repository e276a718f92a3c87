"""The review as a library (spec 05): findings, dismissals, merge plan, draft and apply.

:class:`ReviewService` reads the stores of a :class:`~oharness.memory.memory_service.MemoryService`
and hands values back (findings, plans, drafts, results) for the CLI, the daemon and the page.
The planning is pure (:mod:`.findings`, :mod:`.merge`); this module is the I/O around it.

Applying a merge: the plan is checked against the notes as they are now (a stale plan is
refused with the ids that changed); the draft is validated like any note (summary, tags, size
within ``memory.maxNoteBytes``, no credentials); every note changed or deleted is backed up
(reason ``merge``) before anything is written. With a :class:`BatchCommitter` (cloud sync on
for the scope) the batch is committed to the cloud first and written here only once accepted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from oharness.errors import ConflictError, NotFoundError, UnavailableError
from oharness.notes.backups import BackupRecord
from oharness.notes.format import Note
from oharness.notes.ids import check_type, clean_body, clean_summary, clean_tags
from oharness.notes.secrets import check_no_secrets
from oharness.notes.store import StoredNote
from oharness.review.dismissals import DismissalStore
from oharness.review.drafting import DraftModel, model_draft
from oharness.review.findings import Finding, ScopeNotes, note_findings, same_topic_findings
from oharness.review.merge import (
    MergeDraft,
    MergePlan,
    concat_draft,
    merge_writes,
    plan_merge,
    stale_message,
    stale_notes,
)
from oharness.settings import Settings
from oharness.types import SCOPES, Clock, Scope

if TYPE_CHECKING:
    from oharness.memory.memory_service import MemoryService
    from oharness.memory.usage import UsageLog
    from oharness.memory.workspace import Workspace
    from oharness.recall.index import RecallIndex

Writes = Sequence[tuple[str, bytes | None]]


#: The tags the importers give every note they bring ("claude-code", "codex"): where a note
#: came from, not its topic. Left out of the same-topic similarity, or three unrelated short
#: notes imported together read as one topic.
SOURCE_TAGS: Final = frozenset(("claude-code", "claude-md", "codex"))


class BatchCommitter(Protocol):
    """Commits a batch to the cloud before it is written here (spec 06.4, commitFirst)."""

    def syncs(self, scope: Scope) -> bool:
        """True when ``scope`` syncs (its batches commit first); else they are local edits."""
        ...

    def commit_first(
        self,
        scope: Scope,
        writes: Writes,
        expected: Mapping[str, str],
        write_locally: Callable[[], None],
    ) -> int | None:
        """Sync the scope, check every note of ``expected`` is unchanged and fully synced,
        commit ``writes`` atomically, then call ``write_locally``; returns the new version.
        Raises an :class:`~oharness.errors.OHarnessError` (nothing changed) when refused."""
        ...


@dataclass(frozen=True)
class MergeResult:
    """What a merge did."""

    scope: Scope
    kept: str
    deleted: tuple[str, ...]
    relinked: tuple[str, ...]
    backups: tuple[str, ...]
    committed_version: int | None = None
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "kept": self.kept,
            "deleted": list(self.deleted),
            "relinked": list(self.relinked),
            "backups": list(self.backups),
            "committedVersion": self.committed_version,
            "warnings": list(self.warnings),
        }


class ReviewService:
    """Review and merge over the scopes of one memory service."""

    def __init__(
        self,
        memory: MemoryService,
        settings: Settings,
        *,
        clock: Clock,
        usage: UsageLog | None = None,
        dismissals: DismissalStore | None = None,
        project_root: Path | None = None,
        committer: BatchCommitter | None = None,
    ) -> None:
        self.memory = memory
        self.settings = settings
        self.clock = clock
        self.usage = usage
        self.dismissals = dismissals
        self.project_root = project_root
        self.committer = committer
        self._index: RecallIndex | None = None
        self._terms: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
        self._hashes: dict[str, str] = {}
        self._groups: dict[Scope, tuple[int, list[Finding]]] = {}

    # ---- findings -------------------------------------------------------------------------

    def _summary_terms(self, note: Note) -> frozenset[str]:
        key = (note.summary, note.tags)
        terms = self._terms.get(key)
        if terms is None:
            if self._index is None:
                from oharness.recall.index import RecallIndex

                self._index = RecallIndex.from_settings(self.settings.memory.recall)
            topical = tuple(tag for tag in note.tags if tag not in SOURCE_TAGS)
            terms = self._index.summary_terms(note.with_changes(tags=topical))
            self._terms[key] = terms
        return terms

    def _hash(self, stored: StoredNote) -> str:
        digest = self._hashes.get(stored.revision)
        if digest is None:
            digest = self._hashes[stored.revision] = stored.note.content_hash
        return digest

    def _scope_notes(self, scope: Scope) -> ScopeNotes:
        stored_notes = self.memory.store(scope).notes()
        notes = [stored.note for stored in stored_notes]
        by_id = {stored.id: stored for stored in stored_notes}
        known: set[str] = set()
        for other in self.memory.available_scopes():
            known.update(stored.id for stored in self.memory.store(other).notes())
        key = self.memory.scope_key(scope)
        usage = self.usage.load({scope: key}) if self.usage is not None else {}
        root = self.project_root
        exists = None
        if scope == "project" and root is not None:
            exists = lambda path: os.path.exists(root / path)  # noqa: E731
        return ScopeNotes(
            scope=scope,
            scope_key=key,
            notes=notes,
            terms=[self._summary_terms(note) for note in notes],
            known_ids=known,
            last_recalled={note_id: entry.last_used for (_, note_id), entry in usage.items()},
            now=self.clock(),
            unused_days=self.settings.memory.consolidate.unused_days,
            path_exists=exists,
            hash_lookup=lambda note: self._hash(by_id[note.id]),
            link_index=self.memory.link_index(),
        )

    def _scope_findings(self, scope: Scope) -> list[Finding]:
        data = self._scope_notes(scope)
        generation = self.memory.store(scope).generation
        cached = self._groups.get(scope)
        if cached is None or cached[0] != generation:
            cached = self._groups[scope] = (generation, same_topic_findings(data))
        return cached[1] + note_findings(data)

    def _scopes(self, scope: Scope | None) -> list[Scope]:
        if scope is not None:
            self.memory.store(scope)  # the clear "not available" reason
            return [scope]
        return self.memory.available_scopes()

    def review(self, scope: Scope | None = None, *, dismissed: bool = False) -> list[Finding]:
        """The findings of one scope (or every available one); ``dismissed`` includes those."""
        found: list[Finding] = []
        for each in self._scopes(scope):
            found.extend(self._scope_findings(each))
        if dismissed or self.dismissals is None:
            return found
        return self.dismissals.visible(found)

    def finding(self, finding_id: str) -> Finding:
        """One current finding by id (dismissed ones included)."""
        for finding in self.review(dismissed=True):
            if finding.id == finding_id:
                return finding
        raise NotFoundError(
            f"no finding {finding_id!r} now: it may be fixed already; 'oharness memory review' "
            "lists the current ones",
            id=finding_id,
        )

    def dismiss(self, finding_id: str) -> Finding:
        """Hide a finding until one of its notes changes (kept on this machine only)."""
        if self.dismissals is None:
            raise UnavailableError(
                "dismissals need a writable OHARNESS_HOME; nothing was dismissed"
            )
        finding = self.finding(finding_id)
        self.dismissals.dismiss(finding, self.memory.scope_key(finding.scope))
        return finding

    # ---- merge ----------------------------------------------------------------------------

    def _notes(self, scope: Scope) -> dict[str, Note]:
        store = self.memory.store(scope)
        store.refresh(full=True)
        return {stored.id: stored.note for stored in store.notes()}

    def _scope_of(self, ids: Sequence[str]) -> Scope:
        stores = [self.memory.store(s) for s in SCOPES if s in self.memory.available_scopes()]
        for store in stores:
            if all(store.get(note_id) is not None for note_id in ids):
                return store.scope
        missing = [i for i in ids if all(store.get(i) is None for store in stores)]
        if missing:
            raise NotFoundError(
                f"no note {', '.join(repr(i) for i in missing)}; 'oharness memory list' shows "
                "the ids",
                ids=missing,
            )
        raise NotFoundError(
            f"{', '.join(ids)} are not all notes of one scope; only notes of one scope merge "
            "(pass --scope when the ids exist in both)",
            ids=list(ids),
        )

    def plan(self, ids: Sequence[str], scope: Scope | None = None) -> MergePlan:
        """A merge plan for these notes (the scope is found when not given)."""
        chosen = scope if scope is not None else self._scope_of(ids)
        notes = self._notes(chosen)
        return plan_merge(list(notes.values()), ids, chosen, self.memory.scope_key(chosen))

    def _current(self, plan: MergePlan) -> dict[str, Note]:
        notes = self._notes(plan.scope)
        changed = stale_notes(plan, notes)
        if changed:
            raise ConflictError(stale_message(plan, changed), ids=changed, reason="stale_plan")
        return notes

    def draft(
        self, plan: MergePlan, kind: str = "concat", model: DraftModel | None = None
    ) -> MergeDraft:
        """The concatenated draft, or the model's (``kind="model"``; needs ``model``)."""
        notes = self._current(plan)
        if kind == "concat":
            return concat_draft(plan, notes)
        if kind != "model":
            raise UnavailableError(f"unknown draft {kind!r}: use 'concat' or 'model'")
        if model is None:
            raise UnavailableError(
                "no small model is configured for merge suggestions (models.small or "
                "models.main in config.json); use the concatenated draft (--draft concat)"
            )
        return model_draft(plan, notes, model)

    def checked(self, draft: MergeDraft) -> MergeDraft:
        """The draft cleaned and checked as ``remember`` checks a note (ValidationError)."""
        limit = self.settings.memory.max_note_bytes
        summary, tags = clean_summary(draft.summary), clean_tags(draft.tags)
        body = clean_body(draft.body, limit)
        check_no_secrets({"summary": summary, "tags": "\n".join(tags), "body": body})
        return MergeDraft(summary, body, tags, check_type(draft.type), draft.source, draft.warnings)

    def apply(self, plan: MergePlan, draft: MergeDraft) -> MergeResult:
        """Apply a merge (refused, changing nothing, when the plan is stale or the draft bad)."""
        draft = self.checked(draft)
        self.memory.backups()  # no backups, no merge
        notes = self._current(plan)
        writes = merge_writes(plan, draft, notes, self.clock())
        backups: list[BackupRecord] = []

        def write_locally() -> None:
            backups.extend(self._write(plan, writes))

        version = None
        if self.committer is not None and self.committer.syncs(plan.scope):
            version = self.committer.commit_first(plan.scope, writes, plan.hashes, write_locally)
        else:
            write_locally()
        return MergeResult(
            plan.scope,
            plan.keep,
            plan.delete,
            plan.relink,
            tuple(record.backup_id for record in backups),
            version,
            draft.warnings,
        )

    def _write(self, plan: MergePlan, writes: Writes) -> list[BackupRecord]:
        store = self.memory.store(plan.scope)
        records = []
        with store.batch():
            current = {stored.id: stored for stored in store.notes()}
            changed = stale_notes(plan, {i: s.note for i, s in current.items()})
            if changed:
                raise ConflictError(stale_message(plan, changed), ids=changed, reason="stale_plan")
            for note_id, _ in writes:
                records.append(self.memory.backup(current[note_id], "merge"))
            for note_id, data in writes:
                revision = current[note_id].revision
                if data is None:
                    store.delete(note_id, expect_revision=revision)
                else:
                    store.save_bytes(note_id, data, create=False, expect_revision=revision)
        return records


def review_dir(home: Path) -> Path:
    """``$OHARNESS_HOME/memory-review/``: dismissals and consolidation runs (never synced)."""
    return home / "memory-review"


def open_review(
    workspace: Workspace, *, clock: Clock, committer: BatchCommitter | None = None
) -> ReviewService:
    """The review of a workspace: its stores, usage counts, dismissals and project root."""
    from oharness.memory.usage import UsageLog

    home_ok = workspace.user_available
    project = workspace.project
    return ReviewService(
        workspace.service,
        workspace.settings,
        clock=clock,
        usage=UsageLog(workspace.home.usage_dir, clock=clock) if home_ok else None,
        dismissals=DismissalStore(review_dir(workspace.home.home), clock=clock)
        if home_ok
        else None,
        project_root=project.root if project is not None else None,
        committer=committer,
    )
