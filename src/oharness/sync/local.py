"""The local side of a pass: which note files can sync now, and why the others cannot.

A file is *unsyncable* (spec 07.1) when it cannot be parsed, is not loaded because of
``memory.maxNotes``, is a typed note while the server speaks only protocol 1, or holds
something that looks like a credential (never uploaded; the check runs on notes changed since
the base, the only ones a pass could upload). Unsyncable files are never read as deletions,
and each is reported with a reason and what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from oharness.notes.secrets import find_secrets
from oharness.notes.store import NOTE_SUFFIX, NoteStore, StoredNote
from oharness.sync.ancestor import AncestorStore, BaseNote

OLD_SERVER_TYPED = (
    "a typed note, and the sync server is older than this client (protocol 1): upgrade the "
    "server to sync it"
)
OLD_SERVER_TYPED_DELETE = (
    "a typed note (or one whose synced copy is gone) deleted here, and the sync server is older "
    "than this client (protocol 1): the deletion is uploaded once the server is upgraded"
)


@dataclass(frozen=True)
class NoteProblem:
    """Why one note file does not sync now."""

    file: str
    id: str | None
    code: str
    message: str

    def to_json(self) -> dict[str, str | None]:
        return {"file": self.file, "id": self.id, "code": self.code, "message": self.message}


def _id_of(name: str) -> str | None:
    return name[: -len(NOTE_SUFFIX)] if name.endswith(NOTE_SUFFIX) else None


def credential_problem(stored: StoredNote) -> NoteProblem | None:
    """A problem when the note holds something that looks like a credential."""
    note = stored.note
    findings = find_secrets(
        {"summary": note.summary, "tags": "\n".join(note.tags), "body": note.body}
    )
    if not findings:
        return None
    where = findings[0].describe() + (
        f", and {len(findings) - 1} more" if len(findings) > 1 else ""
    )
    return NoteProblem(
        stored.path.name,
        stored.id,
        "credential",
        f"not uploaded: it looks like it holds a credential ({where}); remove it from the note "
        "(keep secrets in a password manager or the environment), then sync again",
    )


def _misnamed(store: NoteStore) -> list[NoteProblem]:
    """Note files whose suffix differs from ``.md`` only by case (``x.MD``): a rename the
    store does not load, reported instead of being read as a deletion of ``x``."""
    try:
        names = os.listdir(store.directory)
    except OSError:
        return []
    return [
        NoteProblem(
            name,
            name[: -len(NOTE_SUFFIX)],
            "misnamed",
            f"the file name ends in {name[-len(NOTE_SUFFIX) :]!r}, not {NOTE_SUFFIX!r}: rename "
            f"it to {name[: -len(NOTE_SUFFIX)] + NOTE_SUFFIX} to keep syncing it",
        )
        for name in sorted(names)
        if name.lower().endswith(NOTE_SUFFIX) and not name.endswith(NOTE_SUFFIX)
    ]


def _typed_deletions(
    store: NoteStore, base: Mapping[str, BaseNote], copies: AncestorStore
) -> list[NoteProblem]:
    """Typed notes deleted here since the last sync: a protocol-1 listing never shows them,
    so they wait (held in the base) for a server that speaks protocol 2."""
    problems = []
    for note_id, entry in sorted(base.items()):
        if store.get_folded(note_id) is not None or (store.directory / f"{note_id}.md").exists():
            continue
        copy = copies.read_copy(note_id, entry)
        if copy is None or copy[1].type is not None:  # typed, or cannot tell: wait
            problems.append(
                NoteProblem(
                    f"{note_id}{NOTE_SUFFIX}", note_id, "old_server_delete", OLD_SERVER_TYPED_DELETE
                )
            )
    return problems


def release_visible_deletions(
    blocked: set[str], problems: list[NoteProblem], remote: Mapping[str, object]
) -> tuple[set[str], list[NoteProblem]]:
    """A deletion held for protocol 2 whose note the protocol-1 listing does show (another
    machine re-created it untyped) is planned as any deletion: it is no longer held."""
    visible = {p.id for p in problems if p.code == "old_server_delete" and p.id in remote}
    kept = [p for p in problems if not (p.code == "old_server_delete" and p.id in visible)]
    return blocked - {note_id for note_id in visible if note_id is not None}, kept


def classify_local(
    store: NoteStore,
    base: Mapping[str, BaseNote],
    protocol: int,
    copies: AncestorStore | None = None,
) -> tuple[dict[str, StoredNote], list[NoteProblem]]:
    """The syncable notes by id, and a problem for every file that cannot sync now (with
    ``copies``, under protocol 1, also every typed note deleted here)."""
    syncable: dict[str, StoredNote] = {}
    problems: list[NoteProblem] = []
    if protocol < 2 and copies is not None:
        problems += _typed_deletions(store, base, copies)
    for stored in store.notes():
        if protocol < 2 and stored.note.type is not None:
            problems.append(
                NoteProblem(stored.path.name, stored.id, "old_server", OLD_SERVER_TYPED)
            )
            continue
        entry = base.get(stored.id)
        if entry is None or entry.hash != stored.note.content_hash:
            problem = credential_problem(stored)
            if problem is not None:
                problems.append(problem)
                continue
        syncable[stored.id] = stored
    for load in store.problems():
        name = load.path.name
        problems.append(
            NoteProblem(
                name,
                _id_of(name),
                load.reason,
                f"{load.message}; fix the file (see 'oharness memory doctor') and it syncs again",
            )
        )
    problems += _misnamed(store)
    for path in store.unloaded():
        problems.append(
            NoteProblem(
                path.name,
                _id_of(path.name),
                "max_notes",
                f"not loaded: the folder holds more notes than memory.maxNotes "
                f"({store.max_notes}); forget or merge some notes, or raise the limit",
            )
        )
    return syncable, sorted(problems, key=lambda problem: problem.file)
