"""The local side of a pass: which note files can sync now, and why the others cannot.

A file is *unsyncable* (spec 07.1) when it cannot be parsed, is not loaded because of
``memory.maxNotes``, is a typed note while the server speaks only protocol 1, or holds
something that looks like a credential (never uploaded; the check runs on notes changed since
the base, the only ones a pass could upload). Unsyncable files are never read as deletions,
and each is reported with a reason and what to do.

A synced note whose file is gone is a deletion only when its text is gone too: a note renamed,
re-cased or moved into a subfolder by hand (:mod:`oharness.notes.loose`: its frontmatter still
names its id), or whose id was re-cased in its frontmatter, is held back with the file named
and the fix, and nothing about it is sent until the file is put back or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from oharness.notes.loose import LooseFile, find_loose_files, from_problem
from oharness.notes.secrets import find_secrets
from oharness.notes.store import NOTE_SUFFIX, LoadProblem, NoteStore, StoredNote
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
    #: Other ids this file holds back (the id in the frontmatter of a renamed note).
    holds: tuple[str, ...] = ()

    def ids(self) -> set[str]:
        """Every id this problem keeps out of the pass."""
        return {note_id for note_id in (self.id, *self.holds) if note_id is not None}

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
            f"the file name ends in {name[-len(NOTE_SUFFIX) :]!r}, not {NOTE_SUFFIX!r}: put it "
            f"back with: oharness memory adopt {name} (or rename it to "
            f"{name[: -len(NOTE_SUFFIX)] + NOTE_SUFFIX}) to keep syncing it",
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
        problems.append(_load_problem(load, store))
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
    kept = kept_by_hand(store, base, syncable, problems)
    for problem in kept:
        for note_id in problem.ids():
            syncable.pop(note_id, None)  # a re-cased id: neither side syncs
    problems += kept
    return syncable, sorted(problems, key=lambda problem: problem.file)


def _load_problem(load: LoadProblem, store: NoteStore) -> NoteProblem:
    name = load.path.name
    loose = from_problem(load, store.scope)
    if loose is not None and loose.note_id is not None:
        return _held(loose)
    if loose is not None:  # not a note yet: the same reason and fix as 'memory list'
        ids = (load.note_id,) if load.note_id is not None else ()
        return NoteProblem(name, _id_of(name), load.reason, loose.message, ids)
    return NoteProblem(
        name,
        _id_of(name),
        load.reason,
        f"{load.message}; fix the file (see 'oharness memory doctor') and it syncs again",
        (load.note_id,) if load.note_id is not None else (),
    )


def _held(loose: LooseFile) -> NoteProblem:
    """A note whose text is in a file the store does not load: never read as deleted (the
    id its file name suggests, at the top level, is held back too)."""
    stem = None if "/" in loose.relative else _id_of(loose.relative)
    if loose.duplicate:  # the note itself syncs from its own file
        return NoteProblem(loose.relative, stem, loose.code, loose.message)
    also = (stem,) if stem is not None and stem != loose.note_id else ()
    message = (
        f"{loose.why}; not synced, and not deleted elsewhere while its text is here: "
        f"{loose.fix} (to delete the note on every machine, delete {loose.relative} instead)"
    )
    return NoteProblem(loose.relative, loose.note_id, loose.code, message, also)


def kept_by_hand(
    store: NoteStore,
    base: Mapping[str, BaseNote],
    syncable: Mapping[str, StoredNote],
    problems: list[NoteProblem],
) -> list[NoteProblem]:
    """Synced notes gone from their files whose text is still in the folder: in a file
    moved, renamed or re-suffixed by hand, or under an id re-cased in the frontmatter.

    The folder is walked only when some synced note is missing (a deletion to send)."""
    held = {note_id for problem in problems for note_id in problem.ids()}
    missing = {note_id for note_id in base if note_id not in syncable and note_id not in held}
    if not missing:
        return []
    found: list[NoteProblem] = []
    for note_id in sorted(missing):
        recased = store.get_folded(note_id)
        if recased is not None and recased.id != note_id:
            found.append(_recased(note_id, recased))
            missing.discard(note_id)
    if missing:
        found += [_held(loose) for loose in find_loose_files(store) if loose.note_id in missing]
    return found


def _recased(note_id: str, recased: StoredNote) -> NoteProblem:
    return NoteProblem(
        recased.path.name,
        recased.id,
        "recased",
        f"holds note {note_id!r} with its id re-cased to {recased.id!r}; sync cannot change "
        "the letter case of an id (macOS and Windows would hold both as one file), so neither "
        f"is synced and {note_id!r} is not deleted elsewhere: set its id back to {note_id!r} "
        f"and name the file {note_id}{NOTE_SUFFIX}",
        (note_id,),
    )
