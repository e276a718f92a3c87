"""The merge ancestor of one scope (spec 07.1): what this machine last agreed on with the
server — each note's last synced revision and copy, the base of every three-way merge.

Layout, in ``$OHARNESS_HOME/memory-sync/<sha256(state key)>/`` (the state key names one notes
folder: see :mod:`oharness.sync.replicas`)::

    state.json                 format, scope key, notes directory and its file id, manifest
                               version last seen, per note {rev, hash}, ``restoring`` while
                               a storage reset is not yet synced past
    status.json                the last pass's status, the 429 deadline, the verified account
    copies/<id>.<rev>.md       each note's file as it was when last synced
    conflicts/<id>.json        open conflicts (base, local and cloud texts)
    lock                       the cross-process lock of sync passes over this scope

Copies are named by revision and written before ``state.json`` points at them, so a crash
between the two leaves a consistent base; copies no longer referenced are removed after the
state is saved. Every write is atomic.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oharness.errors import NoteFormatError, StorageError
from oharness.fsio import atomic_write, is_temp_name, make_directory, private_mode
from oharness.notes.format import Note, file_revision, parse_note_bytes
from oharness.notes.ids import is_valid_id
from oharness.project.paths import scope_key_digest

STATE_FORMAT = 1
#: Earlier content hashes kept per note (newest first), to tell a restored older version from
#: an edit after a storage restore.
EARLIER_KEPT = 4


@dataclass
class BaseNote:
    rev: str
    hash: str


@dataclass
class PendingNote:
    """A version on its way (written ahead of the act, so a crash or a lost answer is safe).

    ``upload``: sent in a commit whose answer has not been recorded yet; it joins the base when
    the server lists exactly this revision. ``download``: about to be written locally; it joins
    the base when the local file has this content.
    """

    rev: str
    hash: str
    kind: str


@dataclass
class HeldChange:
    """A remote change of a note that could not be synced when it arrived (unreadable, over
    ``maxNotes``, typed under protocol 1): kept until the note can take it (spec 07.2)."""

    rev: str
    hash: str | None
    deleted: bool = False


@dataclass
class BaseState:
    """The mutable base of one scope; saved with :meth:`AncestorStore.save`.

    ``generation`` and ``commit`` identify the storage and the commit at ``version`` (a reset
    or restore is noticed by them); ``protocol`` is the one the last pass spoke (a change means
    a full listing); ``held`` are remote changes that wait for their note.
    """

    scope_key: str
    directory: str | None = None
    #: The notes folder's identity (:func:`oharness.sync.replicas.folder_id`): kept by a
    #: move, new for a fresh clone.
    folder_id: str | None = None
    version: int | None = None
    notes: dict[str, BaseNote] = field(default_factory=dict)
    pending: dict[str, PendingNote] = field(default_factory=dict)
    generation: str | None = None
    commit: str | None = None
    protocol: int | None = None
    held: dict[str, HeldChange] = field(default_factory=dict)
    #: Content hashes each note had in the base before its current one (newest first).
    earlier: dict[str, list[str]] = field(default_factory=dict)
    #: A pass found the storage reset or restored and has not yet moved the base's position
    #: past it: until one does, every pass reconciles its full listing as after a reset.
    restoring: bool = False
    #: Whether ``version`` is a position in the account's end-to-end encrypted copy (None:
    #: not recorded): the copy changes when encryption is turned on or off, and the next
    #: pass lists the other copy in full as after a reset, without calling it one.
    sealed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "scopeKey": self.scope_key,
            "directory": self.directory,
            "folderId": self.folder_id,
            "version": self.version,
            "generation": self.generation,
            "commit": self.commit,
            "protocol": self.protocol,
            "restoring": self.restoring,
            "sealed": self.sealed,
            "held": {
                k: {"rev": v.rev, "hash": v.hash, "deleted": v.deleted}
                for k, v in sorted(self.held.items())
            },
            "notes": {k: {"rev": v.rev, "hash": v.hash} for k, v in sorted(self.notes.items())},
            "earlier": {k: v for k, v in sorted(self.earlier.items()) if v},
            "pending": {
                k: {"rev": v.rev, "hash": v.hash, "kind": v.kind}
                for k, v in sorted(self.pending.items())
            },
        }


def _parse_state(data: Any, scope_key: str) -> BaseState:
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise ValueError("not a sync state file of this format")
    notes: dict[str, BaseNote] = {}
    for note_id, entry in (data.get("notes") or {}).items():
        if (
            isinstance(note_id, str)
            and is_valid_id(note_id)
            and isinstance(entry, dict)
            and isinstance(entry.get("rev"), str)
            and isinstance(entry.get("hash"), str)
        ):
            notes[note_id] = BaseNote(entry["rev"], entry["hash"])
    pending: dict[str, PendingNote] = {}
    for note_id, entry in (data.get("pending") or {}).items():
        if (
            isinstance(note_id, str)
            and is_valid_id(note_id)
            and isinstance(entry, dict)
            and all(isinstance(entry.get(key), str) for key in ("rev", "hash", "kind"))
        ):
            pending[note_id] = PendingNote(entry["rev"], entry["hash"], entry["kind"])
    held: dict[str, HeldChange] = {}
    for note_id, entry in (data.get("held") or {}).items():
        if isinstance(note_id, str) and is_valid_id(note_id) and isinstance(entry, dict):
            content_hash = entry.get("hash")
            if isinstance(entry.get("rev"), str) and isinstance(content_hash, str | None):
                held[note_id] = HeldChange(entry["rev"], content_hash, entry.get("deleted") is True)
    earlier = {
        note_id: [item for item in hashes if isinstance(item, str)][:EARLIER_KEPT]
        for note_id, hashes in (data.get("earlier") or {}).items()
        if isinstance(note_id, str) and note_id in notes and isinstance(hashes, list)
    }
    version = data.get("version")
    return BaseState(
        scope_key=scope_key,
        directory=data.get("directory") if isinstance(data.get("directory"), str) else None,
        folder_id=_optional_text(data, "folderId"),
        version=version if isinstance(version, int) else None,
        notes=notes,
        pending=pending,
        generation=_optional_text(data, "generation"),
        commit=_optional_text(data, "commit"),
        protocol=data.get("protocol") if isinstance(data.get("protocol"), int) else None,
        held=held,
        earlier=earlier,
        restoring=data.get("restoring") is True,
        sealed=data.get("sealed") if isinstance(data.get("sealed"), bool) else None,
    )


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


class AncestorStore:
    """The on-disk merge ancestor (the sync base) of one scope."""

    def __init__(self, sync_dir: Path, scope_key: str, state_key: str | None = None) -> None:
        self.scope_key = scope_key
        self.folder = sync_dir / scope_key_digest(state_key or scope_key)
        self.state_path = self.folder / "state.json"
        self.status_path = self.folder / "status.json"
        self.landed_path = self.folder / "landed.log"
        self.copies = self.folder / "copies"
        self.conflicts = self.folder / "conflicts"
        self.lock_path = self.folder / "lock"
        #: Names in ``copies/``, listed once per round (under the scope's sync lock only this
        #: object writes there); ``None`` until asked, and again after :meth:`load`.
        self._copy_names: set[str] | None = None
        #: Each note's hash as last loaded or saved by this object (for ``earlier``).
        self._saved_hashes: dict[str, str] | None = None

    def load(self) -> BaseState:
        """The saved state; a corrupt file is set aside, never trusted, and the base is
        rebuilt from the synced copies (with no version: the next snapshot lists everything,
        and notes unchanged on both sides stay quiet instead of turning into conflicts)."""
        state = self._load()
        self._saved_hashes = {note_id: entry.hash for note_id, entry in state.notes.items()}
        return state

    def _load(self) -> BaseState:
        self._copy_names = None
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if self.state_path.with_suffix(".corrupt").exists():  # set aside, not yet saved
                return self._rebuilt()
            return BaseState(self.scope_key)
        except (OSError, ValueError):
            self._set_aside()
            return self._rebuilt()
        try:
            return _parse_state(data, self.scope_key)
        except ValueError:
            self._set_aside()
            return self._rebuilt()

    def _rebuilt(self) -> BaseState:
        """A base recovered from ``copies/``: each note with exactly one intact copy."""
        found: dict[str, list[BaseNote]] = {}
        try:
            names = os.listdir(self.copies)
        except OSError:
            names = []
        for name in names:
            note_id, _, rest = name.partition(".")
            rev = rest.removesuffix(".md")
            if is_temp_name(name) or not is_valid_id(note_id) or not rest.endswith(".md"):
                continue
            try:
                data = self.copy_path(note_id, rev).read_bytes()
                note = parse_note_bytes(data)
            except (OSError, NoteFormatError):
                continue
            if file_revision(data) == rev and note.id == note_id:
                found.setdefault(note_id, []).append(BaseNote(rev, note.content_hash))
        notes = {note_id: entries[0] for note_id, entries in found.items() if len(entries) == 1}
        return BaseState(self.scope_key, notes=notes)

    def _set_aside(self) -> None:
        with contextlib.suppress(OSError):
            os.replace(self.state_path, self.state_path.with_suffix(".corrupt"))

    def save(self, state: BaseState) -> None:
        """Write ``state.json`` atomically, then drop copies it no longer references."""
        make_directory(self.folder)
        self._remember_earlier(state)
        atomic_write(
            self.state_path, json.dumps(state.to_json(), ensure_ascii=False).encode("utf-8")
        )
        self._prune_copies(state)

    def _remember_earlier(self, state: BaseState) -> None:
        """Keep the hash a note had before this save changed it (newest first, a few)."""
        previous = self._saved_hashes
        if previous is not None:
            for note_id, entry in state.notes.items():
                old = previous.get(note_id)
                if old is not None and old != entry.hash:
                    kept = [item for item in state.earlier.get(note_id, []) if item != old]
                    state.earlier[note_id] = [old, *kept][:EARLIER_KEPT]
        state.earlier = {k: v for k, v in state.earlier.items() if k in state.notes}
        self._saved_hashes = {note_id: entry.hash for note_id, entry in state.notes.items()}

    def mark_landed(self, note_id: str, rev: str) -> None:
        """Note durably that a pulled file is on disk (before the base records it).

        Without this, a crash between writing a pulled file and saving the base, followed by
        the person deleting that note, would read as "never had it" and download it again.
        """
        make_directory(self.folder)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        journal_fd = os.open(self.landed_path, flags, private_mode(self.landed_path))
        with open(journal_fd, "a", encoding="utf-8") as journal:
            journal.write(f"{note_id} {rev}\n")
            journal.flush()
            os.fsync(journal.fileno())

    def landed(self) -> set[tuple[str, str]]:
        """(id, rev) of pulled files that reached the disk since the base was last saved."""
        try:
            lines = self.landed_path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return set()
        return {(parts[0], parts[1]) for line in lines if len(parts := line.split()) == 2}

    def clear_landed(self) -> None:
        """Forget the journal once the base has recorded what it held."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.landed_path)

    def load_status(self) -> dict[str, Any]:
        """The scope's status record (``{}`` when none or unreadable)."""
        try:
            data = json.loads(self.status_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def save_status(self, status: dict[str, Any]) -> None:
        """Write the status record atomically (separate from the base: no lock needed)."""
        make_directory(self.folder)
        atomic_write(self.status_path, json.dumps(status, ensure_ascii=False).encode("utf-8"))

    def copy_path(self, note_id: str, rev: str) -> Path:
        return self.copies / f"{note_id}.{rev}.md"

    def write_copy(self, note_id: str, rev: str, data: bytes) -> None:
        """Keep the note file as synced at ``rev`` (before the state points at it)."""
        try:
            make_directory(self.copies)
        except OSError as exc:
            raise StorageError(f"cannot create {self.copies}: {exc}") from exc
        path = self.copy_path(note_id, rev)
        if not path.exists():
            atomic_write(path, data)
        if self._copy_names is not None:
            self._copy_names.add(path.name)

    def read_copy(self, note_id: str, entry: BaseNote | PendingNote) -> tuple[bytes, Note] | None:
        """The synced copy of a note, if present and still matching its recorded hash."""
        try:
            data = self.copy_path(note_id, entry.rev).read_bytes()
            note = parse_note_bytes(data)
        except (OSError, NoteFormatError):  # a damaged copy counts as missing, never trusted
            return None
        return (data, note) if note.content_hash == entry.hash else None

    def has_copy(self, note_id: str, entry: BaseNote) -> bool:
        """True when the copy of ``entry`` is in ``copies/`` (one listing per round)."""
        if self._copy_names is None:
            try:
                self._copy_names = set(os.listdir(self.copies))
            except OSError:
                self._copy_names = set()
        return f"{note_id}.{entry.rev}.md" in self._copy_names

    def _prune_copies(self, state: BaseState) -> None:
        keep = {f"{note_id}.{entry.rev}.md" for note_id, entry in state.notes.items()}
        keep |= {f"{note_id}.{entry.rev}.md" for note_id, entry in state.pending.items()}
        try:
            names = os.listdir(self.copies)
        except FileNotFoundError:
            return
        for name in names:
            if name not in keep or is_temp_name(name):
                with contextlib.suppress(OSError):
                    os.unlink(self.copies / name)
                if self._copy_names is not None:
                    self._copy_names.discard(name)
