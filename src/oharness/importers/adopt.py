"""Taking a loose Markdown file of a notes folder in as a note (``oharness memory adopt``).

The file must be one :func:`~oharness.notes.loose.find_loose_files` lists, so nothing outside
the notes folders (and nothing hidden) is ever touched:

- *not a note yet* (no frontmatter, or frontmatter another program wrote, YAML included): read
  as ``oharness memory import markdown`` reads a file — summary from the frontmatter's
  ``summary``/``title``/… or the first heading or line, tags and type when given, the file's
  time — checked as ``remember`` checks a note (a credential refuses it), and written as a note.
  Its id is the file name when that is a free, valid id (``deploy-steps.md`` stays where it is
  and gains frontmatter), else one made from the summary. The original bytes are backed up
  first (reason ``adopt``); frontmatter keys the note format has no place for stay only there.
- *a note renamed, re-cased, re-suffixed or moved into a subfolder by hand*: put back under its
  own name, ``<id>.md``, byte for byte (nothing is replaced, so no backup is needed).

Broken JSON frontmatter is not guessed at: the reason is given and the person fixes it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oharness.errors import ConflictError, NotFoundError, ValidationError
from oharness.importers.readers import markdown_draft
from oharness.importers.source import Skip, TextFile
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.notes.format import Note, file_revision, serialise_note_bytes
from oharness.notes.ids import (
    check_type,
    clean_body,
    clean_summary,
    clean_tags,
    generate_id,
    is_valid_id,
    random_hex,
)
from oharness.notes.loose import MAX_READ_BYTES, LooseFile, find_loose_files
from oharness.notes.secrets import check_no_secrets
from oharness.notes.store import NoteStore
from oharness.types import Clock, HexSource, Scope

_ID_ATTEMPTS = 32


@dataclass(frozen=True)
class Adoption:
    """What adopting one file did."""

    id: str
    scope: Scope
    path: str
    source: str
    #: The backup of the original (a file that was not a note yet); ``None`` for a note put
    #: back under its own name, whose bytes are unchanged.
    backup_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "path": self.path,
            "source": self.source,
            "backupId": self.backup_id,
        }


def locate(workspace: Workspace, file: Path, scope: Scope | None = None) -> tuple[Scope, str]:
    """The scope and the folder-relative name of ``file``: a path (from the current folder)
    inside a notes folder, or a name relative to one (``archive/x.md``)."""
    service = workspace.service
    scopes = [scope] if scope is not None else service.available_scopes()
    if file.exists():
        real = os.path.realpath(file)
        for candidate in scopes:
            folder = os.path.realpath(service.store(candidate).directory)
            if real.startswith(folder + os.sep):
                return candidate, Path(os.path.relpath(real, folder)).as_posix()
        raise ValidationError(
            f"{file} is not in a notes folder ({_folders(workspace, scopes)}); to bring in "
            "Markdown from elsewhere use 'oharness memory import markdown PATH'",
            field="file",
        )
    found = [c for c in scopes if (service.store(c).directory / file).exists()]
    if len(found) > 1:
        raise ValidationError(
            f"{file} is in both notes folders; say which with --scope project or --scope user",
            field="scope",
        )
    if not found:
        raise NotFoundError(
            f"no file {file} here or in {_folders(workspace, scopes)}; 'oharness memory list' "
            "names the files that are not notes yet",
            file=str(file),
        )
    return found[0], file.as_posix()


def _folders(workspace: Workspace, scopes: list[Scope]) -> str:
    return " or ".join(str(workspace.service.store(scope).directory) for scope in scopes)


def adopt_file(
    workspace: Workspace,
    scope: Scope,
    relative: str,
    *,
    clock: Clock = wall_clock_ms,
    hex_source: HexSource = random_hex,
) -> Adoption:
    """Take the loose file ``relative`` of ``scope``'s notes folder in as a note."""
    service = workspace.service
    store = service.store(scope)
    loose = _listed(store, relative)
    data = _read(loose)
    revision = file_revision(data)
    if loose.note_id is not None:
        if loose.duplicate:
            raise ConflictError(f"{loose.relative}: {loose.fix}", id=loose.note_id)
        stored = store.adopt_bytes(loose.note_id, data, loose.path, source_revision=revision)
        return Adoption(stored.id, scope, str(stored.path), loose.relative, None)
    max_bytes = workspace.settings.memory.max_note_bytes
    note = _note_from(loose, data, max_bytes, clock)
    with store.locked():
        note_id = _free_id(store, loose, note, hex_source)
        record = service.backups().write(
            data,
            note_id=note_id,
            reason="adopt",
            scope_dir=Path(os.path.abspath(store.directory)),
            scope_key=service.scope_key(scope),
            content_hash="sha256:" + hashlib.sha256(data).hexdigest(),
        )
        final = note.with_changes(id=note_id)
        stored = store.adopt_bytes(
            note_id, serialise_note_bytes(final), loose.path, source_revision=revision
        )
    return Adoption(stored.id, scope, str(stored.path), loose.relative, record.backup_id)


def _listed(store: NoteStore, relative: str) -> LooseFile:
    wanted = relative.replace(os.sep, "/")
    for loose in find_loose_files(store):
        if loose.relative == wanted:
            return loose
    if store.get_one(Path(wanted).stem) is not None and "/" not in wanted:
        raise ValidationError(f"{relative} is a note already; nothing to adopt", field="file")
    raise NotFoundError(
        f"{relative} is not a Markdown file of the {store.scope} notes folder that is not a note "
        "yet; 'oharness memory list' names those",
        file=relative,
    )


def _read(loose: LooseFile) -> bytes:
    try:
        with loose.path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise ValidationError(f"cannot read {loose.path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_READ_BYTES:
        raise ValidationError(
            f"{loose.relative} is over {MAX_READ_BYTES:,} bytes; split it into several files "
            "and adopt each",
            field="file",
        )
    return data


def _note_from(loose: LooseFile, data: bytes, max_bytes: int, clock: Clock) -> Note:
    """The note a file becomes, checked as ``remember`` checks one (its id chosen later)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{loose.relative} is not UTF-8 text (byte {exc.start}); save it as UTF-8 first",
            field="file",
        ) from exc
    mtime = os.stat(loose.path).st_mtime_ns // 1_000_000
    found = TextFile(loose.path, loose.relative, text.replace("\r\n", "\n"), mtime)
    draft = markdown_draft(found)
    if isinstance(draft, Skip):
        raise ValidationError(
            f"{loose.relative} cannot be adopted: {draft.reason}; fix the file by hand",
            field="file",
        )
    summary, body = clean_summary(draft.summary), clean_body(draft.body, max_bytes)
    note_type, tags = check_type(draft.type), clean_tags(list(draft.tags))
    check_no_secrets({"summary": summary, "tags": "\n".join(tags), "body": body})
    updated = draft.updated_at or clock()
    created = min(draft.created_at or updated, updated)
    stem = loose.path.name.rsplit(".", 1)[0]
    wanted = draft.id or (stem if is_valid_id(stem) else "draft")
    return Note(wanted, summary, body, tags, note_type, created, updated)


def _free_id(store: NoteStore, loose: LooseFile, note: Note, hex_source: HexSource) -> str:
    """The draft's id (from the frontmatter or the file name) when free, else a new one."""
    digest = note.content_hash_without_id
    for stored in store.notes():
        if stored.digest_without_id == digest:
            raise ConflictError(
                f"{loose.relative} holds the same text as the note {stored.id!r}; delete the "
                "file if it is not needed",
                id=stored.id,
            )
    candidates = [note.id] if note.id != "draft" else []
    candidates += [generate_id(note.summary, hex_source) for _ in range(_ID_ATTEMPTS)]
    for candidate in candidates:
        target = store.directory / f"{candidate}.md"
        taken = store.get_folded(candidate) is not None or (
            target.exists() and not os.path.samefile(target, loose.path)
        )
        if not taken:
            return candidate
    raise ConflictError("could not find a free id for this summary; reword its first line")
