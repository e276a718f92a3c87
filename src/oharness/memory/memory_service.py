"""The memory service: remember, read, list, forget, restore and edit over both scopes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from oharness.errors import (
    ConflictError,
    NoteFormatError,
    NotFoundError,
    UnavailableError,
    ValidationError,
)
from oharness.memory.attach import RecallOutcome, recall_for_message
from oharness.memory.conflict_marks import waiting_conflicts
from oharness.memory.fields import UNSET as UNSET
from oharness.memory.fields import Fields, check_secrets, checked_fields
from oharness.memory.fields import Unset as Unset
from oharness.memory.note_filter import EVERY_NOTE, NoteFilter
from oharness.memory.results import (
    ForgetResult,
    LinkView,
    Listing,
    ListingItem,
    NoteView,
    RememberResult,
    RestoreResult,
)
from oharness.memory.scope_recall import MemoryRecall, SearchHit
from oharness.notes.backups import BackupRecord, BackupStore
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.ids import (
    check_id,
    check_type,
    clean_body,
    clean_summary,
    clean_tags,
    generate_id,
    random_hex,
)
from oharness.notes.links import LinkIndex, extract_links
from oharness.notes.store import NoteStore, StoredNote
from oharness.types import SCOPES, Clock, HexSource, Scope, default_scope_for

_ID_ATTEMPTS = 32


@dataclass(frozen=True)
class Hints:
    """How refusals tell the reader what to do: the model by default, a person in the CLI."""

    list_notes: str = "list notes with 'memory' (no arguments) to see the ids"
    unreadable: str = "tell the person; 'oharness memory doctor' shows what is wrong"


MODEL_HINTS: Final = Hints()
PERSON_HINTS: Final = Hints(
    list_notes="'oharness memory list' shows the ids",
    unreadable="run 'oharness memory doctor' to see what is wrong, then fix or remove the file",
)


@dataclass(frozen=True)
class ScopeHandle:
    """One scope's store and its stable key (``project:<id>`` or ``user``)."""

    store: NoteStore
    key: str
    #: Where this scope's open sync conflicts are recorded (None: no sync state here).
    conflicts: Path | None = None


class MemoryService:
    """The three tools and their companions, over the project and user scopes."""

    def __init__(
        self,
        scopes: Mapping[Scope, ScopeHandle],
        *,
        backups: BackupStore | None,
        clock: Clock,
        max_note_bytes: int = 131072,
        hex_source: HexSource = random_hex,
        unavailable: Mapping[Scope, str] | None = None,
        backups_unavailable: str | None = None,
        recall: MemoryRecall | None = None,
        hints: Hints = MODEL_HINTS,
    ) -> None:
        self.hints = hints
        self._scopes = dict(scopes)
        self._backups = backups
        self._clock = clock
        self._max_note_bytes = max_note_bytes
        self._hex = hex_source
        self._unavailable = dict(unavailable or {})
        self._backups_unavailable = backups_unavailable
        self.recall = recall

    # ---- scopes --------------------------------------------------------------------------

    @property
    def max_note_bytes(self) -> int:
        """The largest body a write takes (``memory.maxNoteBytes``)."""
        return self._max_note_bytes

    def available_scopes(self) -> list[Scope]:
        """The scopes this service can read and write, project first."""
        return [scope for scope in SCOPES if scope in self._scopes]

    def store(self, scope: Scope) -> NoteStore:
        """The store of a scope, or a clear :class:`UnavailableError`."""
        return self._handle(scope).store

    def scope_key(self, scope: Scope) -> str:
        """The stable scope key (``project:<id>`` or ``user``)."""
        return self._handle(scope).key

    def _handle(self, scope: Scope) -> ScopeHandle:
        handle = self._scopes.get(scope)
        if handle is None:
            reason = self._unavailable.get(scope, f"the {scope} scope is not available here")
            raise UnavailableError(reason, scope=scope, reason=f"no_{scope}")
        return handle

    def waiting_conflicts(self) -> frozenset[tuple[Scope, str]]:
        """``(scope, id)`` of the notes with a sync conflict waiting."""
        folders = {s: h.conflicts for s, h in self._scopes.items() if h.conflicts is not None}
        return waiting_conflicts(folders)

    def all_notes(self) -> list[StoredNote]:
        """Every loaded note of both scopes, project first."""
        return [stored for scope in self.available_scopes() for stored in self.store(scope).notes()]

    def find(self, note_id: str, scope: Scope | None = None) -> StoredNote:
        """Locate a note by id or ``SCOPE:ID`` (project first); ambiguous ids need a scope."""
        note_id, scope = split_scoped_id(note_id, scope)
        if scope is not None:
            stored = self.store(scope).get(note_id)
            if stored is None:
                raise NotFoundError(self._missing_message(note_id, scope), id=note_id)
            return stored
        found = [
            stored
            for candidate in self.available_scopes()
            if (stored := self.store(candidate).get(note_id)) is not None
        ]
        if not found:
            raise NotFoundError(self._missing_message(note_id, None), id=note_id)
        if len(found) > 1:
            raise ConflictError(
                f"note {note_id!r} exists in both the project and the user scope; say which: "
                f"project:{note_id} or user:{note_id}",
                id=note_id,
            )
        return found[0]

    def _missing_message(self, note_id: str, scope: Scope | None) -> str:
        where = f"the {scope} scope" if scope else "either scope"
        hint = self.hints.list_notes
        for candidate in [scope] if scope else self.available_scopes():
            store = self.store(candidate)
            for problem in store.problems():
                if problem.path.name == f"{note_id}.md":
                    raise NoteFormatError(
                        f"note {note_id!r} exists ({problem.path}) but cannot be read: "
                        f"{problem.message}; {self.hints.unreadable}",
                        id=note_id,
                        path=str(problem.path),
                    )
        for candidate in self.available_scopes():
            near = self.store(candidate).get_folded(note_id)
            if near is not None and near.id != note_id:
                hint = f"did you mean {near.id!r}? ids are case-sensitive"
        return f"no note {note_id!r} in {where}; {hint}"

    def link_index(self) -> LinkIndex:
        """What ``[[links]]`` can name in both scopes (ids, stems, summaries: notes/links.py)."""
        return LinkIndex((s.scope, s.id, s.note.summary) for s in self.all_notes())

    def dangling_links(self, body: str) -> tuple[str, ...]:
        """The ``[[…]]`` targets of a body that name no note in either scope."""
        if not extract_links(body):
            return ()  # no index of every note's names for a body without links
        return tuple(link.target for link in self.link_index().targets(body) if link.id is None)

    # ---- remember ------------------------------------------------------------------------

    def remember(
        self,
        summary: str | None,
        body: str | None,
        *,
        type: str | Unset | None = UNSET,
        tags: str | Iterable[str] | Unset | None = UNSET,
        scope: Scope | None = None,
        id: str | None = None,
        backup_reason: str = "remember-update",
        expected_hash: str | None = None,
    ) -> RememberResult:
        """Create a note, or update note ``id`` keeping the fields left out (spec 02.1).

        An update backs up the version it replaces first (``backup_reason``; a daemon task
        passes ``task-update``); with no backups available it is refused, changing nothing.
        ``expected_hash``: the content hash of the version the change was made to (an editor
        opened it); a file that holds another now - edited by hand meanwhile - is refused,
        changing nothing (:class:`ConflictError`), checked on the file under the lock. An update
        may leave ``summary`` or ``body`` out (``None``): the note's own are kept.
        """
        if summary is None or body is None:
            if id is None:
                missing = "summary" if summary is None else "body"
                raise ValidationError(
                    f"a new note needs a summary and a body ({missing} is missing); give id to "
                    "update a note",
                    field=missing,
                )
            kept = self.find(*split_scoped_id(id, scope)).note
            summary = kept.summary if summary is None else summary
            body = kept.body if body is None else body
        clean = checked_fields(summary, body, type, tags, self._max_note_bytes)
        if id is not None:
            note_id, scope = split_scoped_id(id, scope)
            return self._update(note_id, clean, scope, backup_reason, expected_hash)
        return self._create(clean, scope)

    def _create(self, fields: Fields, scope: Scope | None) -> RememberResult:
        note_type = None if fields.type is UNSET else fields.type
        tags: tuple[str, ...] = () if fields.tags is UNSET else fields.tags
        target: Scope = scope or default_scope_for(note_type)
        store = self.store(target)
        check_secrets(fields.summary, tags, fields.body)
        now = self._clock()
        draft = Note("draft", fields.summary, fields.body, tags, note_type, now, now)
        with store.locked():  # brings the store in step with the folder once
            twin = store.with_digest(draft.content_hash_without_id)
            if twin is not None:
                return self._remember_result(twin, created=False, changed=False)
            note = draft.with_changes(id=self._new_id(store, fields.summary))
            stored = store.save(note, create=True)
        return self._remember_result(stored, created=True, changed=True)

    def _new_id(self, store: NoteStore, summary: str) -> str:
        for _ in range(_ID_ATTEMPTS):
            candidate = generate_id(summary, self._hex)
            taken = store.get_one_folded(candidate) is not None
            if not taken and not store.path_for(candidate).exists():
                return candidate
        raise ConflictError(
            "could not find a free id for this summary; reword the summary slightly",
            field="summary",
        )

    def _update(
        self,
        note_id: str,
        fields: Fields,
        scope: Scope | None,
        backup_reason: str | None,
        expected_hash: str | None = None,
    ) -> RememberResult:
        if scope is not None and self.store(scope).get(note_id) is None:
            elsewhere = self.find(note_id, None)  # NotFoundError when it is nowhere
            raise ValidationError(
                f"note {note_id!r} lives in the {elsewhere.scope} scope; an update never "
                "moves a note to the other scope (leave out scope, or remember a new note "
                f"in the {scope} scope and forget this one)",
                field="scope",
            )
        current = self.find(note_id, scope)
        store = self.store(current.scope)
        with store.locked():
            latest = store.latest(note_id)  # as the file is now, not as last loaded
            if latest is None:
                raise NotFoundError(self._missing_message(note_id, current.scope), id=note_id)
            old = latest.note
            if expected_hash is not None and old.content_hash != expected_hash:
                raise ConflictError(
                    f"note {note_id!r} changed since it was opened (edited by hand or "
                    "elsewhere meanwhile): open it again and make the change to that version",
                    id=note_id,
                    reason="changed",
                )
            new = old.with_changes(
                summary=fields.summary,
                body=fields.body,
                type=old.type if fields.type is UNSET else fields.type,
                tags=old.tags if fields.tags is UNSET else fields.tags,
                extra=old.extra if fields.extra is UNSET else fields.extra,
            )
            check_secrets(new.summary, new.tags, new.body)
            if new == old:
                return self._remember_result(latest, created=False, changed=False)
            new = new.with_changes(updated_at=max(self._clock(), old.updated_at + 1))
            record = self.backup(latest, backup_reason) if backup_reason is not None else None
            with self._unless_unchanged(record, store, latest):
                stored = store.save(new, create=False)
        return self._remember_result(stored, created=False, changed=True)

    @contextlib.contextmanager
    def _unless_unchanged(
        self, record: BackupRecord | None, store: NoteStore, before: StoredNote
    ) -> Iterator[None]:
        """Keep the backup ``record`` of ``before`` only if the change it was taken for
        happened: when the write fails and the file still holds ``before`` (a read-only
        folder, a full disk), the backup goes, and the error is raised."""
        try:
            yield
        except BaseException:
            if record is not None:
                now = store.latest(before.id)
                if now is not None and now.note.content_hash == before.note.content_hash:
                    self.backups().discard(record)
            raise

    def _remember_result(
        self, stored: StoredNote, *, created: bool, changed: bool
    ) -> RememberResult:
        related: tuple[dict[str, Any], ...] | None = None
        duplicate: dict[str, Any] | None = None
        if self.recall is not None:
            related = tuple(
                {key: value for key, value in hit.to_dict().items() if key != "snippet"}
                for hit in self.recall.related(stored)
            )
            twin = self.recall.likely_duplicate(stored)
            if twin is not None:
                duplicate = {"id": twin.id, "scope": twin.scope, "summary": twin.note.summary}
        return RememberResult(
            id=stored.id,
            scope=stored.scope,
            path=str(stored.path),
            created=created,
            changed=changed,
            dangling_links=self.dangling_links(stored.note.body),
            related=related,
            likely_duplicate=duplicate,
        )

    def search(
        self, query: str, limit: int = 10, filters: NoteFilter = EVERY_NOTE
    ) -> list[SearchHit]:
        """``memory(query)``: ranked matches across both scopes with snippets, no threshold;
        ``filters`` keeps the best ``limit`` of the notes it keeps."""
        if self.recall is None:
            raise UnavailableError("search needs the recall index, which is not available here")
        if not query.strip():
            raise ValidationError("query is empty: give words to search for", field="query")
        if limit < 1:
            raise ValidationError("limit must be >= 1", field="limit")
        waiting = self.waiting_conflicts()
        if filters.narrows:  # every match ranked, then the first ``limit`` the filter keeps
            hits = [
                hit
                for hit in self.recall.search(query, max(limit, len(self.all_notes())))
                if (stored := self.store(hit.scope).get(hit.id)) is not None
                and filters.keeps(stored)
            ][:limit]
        else:
            hits = self.recall.search(query, limit)
        return [
            replace(hit, conflict=True) if (hit.scope, hit.id) in waiting else hit for hit in hits
        ]

    def recall_preview(self, message: str, exclude: Iterable[str] = ()) -> RecallOutcome:
        """Exactly what would be attached to ``message`` (nothing recorded; errors raised)."""
        if self.recall is None:
            raise UnavailableError("recall is not available here")
        return recall_for_message(self.recall, message, tuple(exclude), record=False, strict=True)

    # ---- memory --------------------------------------------------------------------------

    def read(self, note_id: str, scope: Scope | None = None) -> NoteView:
        """The full note with its outgoing and incoming links."""
        stored = self.find(note_id, scope)
        note = stored.note
        index = self.link_index()
        outgoing = []
        for target in stored.links:
            resolved = index.resolve(target)
            found = (
                self.store(resolved.scope).get(resolved.id)
                if resolved.scope and resolved.id
                else None
            )
            outgoing.append(
                LinkView(
                    resolved.id or target,
                    resolved.scope,
                    found.note.summary if found else None,
                    target=target,
                    ambiguous=resolved.ambiguous,
                )
            )
        me = (stored.scope, note.id)
        incoming = [
            LinkView(other.id, other.scope, other.note.summary)
            for other in self.all_notes()
            if (other.scope, other.id) != me
            and any((link.scope, link.id) == me for link in map(index.resolve, other.links))
        ]
        return NoteView(
            id=note.id,
            scope=stored.scope,
            summary=note.summary,
            type=note.type,
            tags=note.tags,
            created_at=note.created_at,
            updated_at=note.updated_at,
            body=note.body,
            path=str(stored.path),
            hash=note.content_hash,
            links=tuple(outgoing),
            incoming=tuple(incoming),
            extra=dict(note.extra),
            conflict=(stored.scope, note.id) in self.waiting_conflicts(),
        )

    def listing(
        self, offset: int = 0, limit: int = 50, filters: NoteFilter = EVERY_NOTE
    ) -> Listing:
        """The notes of both scopes ``filters`` keeps, most recently updated first, one page."""
        if offset < 0 or limit < 1:
            raise ValidationError("offset must be >= 0 and limit >= 1", field="limit")
        kept = [stored for stored in self.all_notes() if filters.keeps(stored)]
        ordered = sorted(
            kept, key=lambda stored: (-stored.note.updated_at, stored.scope, stored.id)
        )
        page = ordered[offset : offset + limit]
        waiting = self.waiting_conflicts()
        items = tuple(
            ListingItem(
                s.id,
                s.scope,
                s.note.type,
                s.note.summary,
                s.note.updated_at,
                conflict=(s.scope, s.id) in waiting,
            )
            for s in page
        )
        end = offset + len(page)
        return Listing(items, len(ordered), offset, end if end < len(ordered) else None)

    # ---- forget, backups, restore, edit --------------------------------------------------

    def backups(self) -> BackupStore:
        """The backup store, or a clear :class:`UnavailableError`."""
        if self._backups is None:
            raise UnavailableError(
                self._backups_unavailable or "backups are not available here", feature="backups"
            )
        return self._backups

    def recent_backups(self, limit: int = 50) -> list[BackupRecord]:
        """The most recent backups, newest first."""
        return self.backups().recent(limit)

    def backup(self, stored: StoredNote, reason: str) -> BackupRecord:
        """Back up a note's current file before something replaces or removes it."""
        store = self.store(stored.scope)
        return self.backups().write(
            store.read_bytes(stored.id),
            note_id=stored.id,
            reason=reason,
            scope_dir=Path(os.path.abspath(store.directory)),
            scope_key=self.scope_key(stored.scope),
            content_hash=stored.note.content_hash,
        )

    def forget(
        self, note_id: str, scope: Scope | None = None, *, reason: str = "forget"
    ) -> ForgetResult:
        """Delete a note, writing a backup (``reason``: ``forget``, the page's ``page-delete``)
        first."""
        stored = self.find(note_id, scope)
        note_id = stored.id
        self.backups()
        store = self.store(stored.scope)
        with store.locked():
            latest = store.latest(note_id)
            if latest is None:
                raise NotFoundError(self._missing_message(note_id, stored.scope), id=note_id)
            record = self.backup(latest, reason)
            with self._unless_unchanged(record, store, latest):
                store.delete(note_id)
        return ForgetResult(note_id, stored.scope, record.backup_id)

    def restore(self, backup_id: str, scope: Scope | None = None) -> RestoreResult:
        """Put a backup back in its original folder, backing up a different current version."""
        record = self.backups().get(backup_id)
        data = self.backups().read_bytes(record)
        try:
            note = parse_note_bytes(data)
        except NoteFormatError as exc:
            raise NoteFormatError(
                f"backup {backup_id} cannot be read as a note ({exc.message}); its file is "
                f"{record.path}",
                backupId=backup_id,
            ) from exc
        target = self._restore_scope(record, note, scope)
        store = self.store(target)
        with store.locked():
            current = store.latest(note.id)
            if current is not None and current.note.content_hash == note.content_hash:
                return RestoreResult(note.id, target, str(current.path), backup_id, None, False)
            replaced = self.backup(current, "restore-replace") if current is not None else None
            stored = store.save_bytes(note.id, data, create=current is None)
        return RestoreResult(
            note.id,
            target,
            str(stored.path),
            backup_id,
            replaced.backup_id if replaced else None,
            True,
        )

    def _restore_scope(self, record: BackupRecord, note: Note, scope: Scope | None) -> Scope:
        if record.scope_dir is not None:
            origin = os.path.realpath(record.scope_dir)
            for candidate in self.available_scopes():
                if os.path.realpath(self.store(candidate).directory) == origin:
                    if scope is not None and scope != candidate:
                        raise ValidationError(
                            f"backup {record.backup_id} comes from the {candidate} scope; "
                            "restore puts it back where it came from (leave out scope)",
                            field="scope",
                        )
                    return candidate
            if scope is None:
                raise ValidationError(
                    f"backup {record.backup_id} was taken from {record.scope_dir}, which is "
                    "neither this project's notes folder nor the user's; run restore in that "
                    "project, or pass a scope to restore it here",
                    field="scope",
                )
        return scope or default_scope_for(note.type)

    def apply_edit(self, note_id: str, scope: Scope, text: str) -> RememberResult:
        """Replace a note with a person's edited file text (same id; the rules of remember)."""
        try:
            edited = parse_note_bytes(text.encode("utf-8"))
        except NoteFormatError as exc:
            raise ValidationError(f"the edited note cannot be read: {exc.message}") from exc
        if edited.id != note_id:
            raise ValidationError(
                f"the edited note's id changed from {note_id!r} to {edited.id!r}; ids cannot be "
                "renamed by editing: remember a new note and forget this one instead",
                field="id",
            )
        fields = Fields(
            summary=clean_summary(edited.summary),
            body=clean_body(edited.body, self._max_note_bytes),
            type=check_type(edited.type),
            tags=clean_tags(edited.tags),
            extra=dict(edited.extra),
        )
        # The person chose this version in an editor: no backup (spec 02.5).
        return self._update(note_id, fields, scope, None)


def split_scoped_id(value: object, scope: Scope | None = None) -> tuple[str, Scope | None]:
    """``user:ID`` / ``project:ID`` (as listings print them) or a bare id, with its scope.

    A prefix that disagrees with an explicit ``scope`` is refused rather than guessed.
    """
    if isinstance(value, str) and ":" in value:
        prefix, _, rest = value.partition(":")
        if prefix in SCOPES:
            named: Scope = "user" if prefix == "user" else "project"
            if scope is not None and scope != named:
                raise ValidationError(
                    f"{value!r} names the {named} scope but scope {scope!r} was given; "
                    "give one of them",
                    field="scope",
                )
            return check_id(rest), named
    return check_id(value), scope


def note_file_text(stored: StoredNote) -> str:
    """The text a person edits for a note (what we would write for it)."""
    return serialise_note_bytes(stored.note).decode("utf-8")
