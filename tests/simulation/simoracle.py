"""The invariants of the multi-device simulation (spec 13.2), checked against what happened.

The oracle is told every acknowledged user action (an edit is acknowledged once its file is on
disk) and reads the devices' disks and the server's manifest history; it never asks the code
under test what it believes. Content is compared by the content hash without the id, so a
note kept as a copy under a new id ("keep both") still counts as the same text.

- (a) once conflicts are resolved, every device holds the same notes (id -> content hash) as
  the server;
- (b) no acknowledged edit is lost: it is in some device's notes, a backup or a conflict
  record -- unless a later user edit on a device that held it replaced it on purpose;
- (c) a deleted note stays deleted unless some device edited or re-created it after the
  delete, or edited it without having seen the version that was deleted (a byte-identical
  twin written on another device counts as such), or the operator
  reset or restored the storage after the deleting device's last pass before the delete;
- (d) the base never claims what the server does not have: its version is at most the
  server's, and every (id, rev, hash) in it was committed to the server's manifest.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simworld import Device, World

from oharness.errors import NoteFormatError
from oharness.fsio import is_temp_name
from oharness.notes.format import parse_note_bytes


@dataclass(frozen=True)
class Edit:
    """An acknowledged user write: note ``id`` on ``device`` now holds ``content``."""

    step: int
    device: str
    id: str
    content: str
    what: str


@dataclass(frozen=True)
class Deletion:
    """A user delete, with every content the deleting device had seen for that id."""

    step: int
    device: str
    id: str
    knew: frozenset[str]
    #: The step of the deleting device's last completed pass before the delete (-1: none).
    synced_at: int = -1


def _content_of(data: bytes) -> tuple[str, str, str] | None:
    try:
        note = parse_note_bytes(data)
    except NoteFormatError:
        return None
    return note.id, note.content_hash, note.content_hash_without_id


@dataclass
class DeviceDisk:
    """A cached reading of one device's notes, backups and conflict records."""

    device: Device
    notes: dict[str, tuple[str, str]] = field(default_factory=dict)
    backups: set[str] = field(default_factory=set)
    conflicts: dict[str, set[str]] = field(default_factory=dict)
    knew: dict[str, set[str]] = field(default_factory=dict)
    torn: list[str] = field(default_factory=list)
    #: Contents the person holds outside a readable file (an editor's buffer).
    held_elsewhere: set[str] = field(default_factory=set)
    _stamps: dict[str, tuple[tuple[int, int, int], tuple[str, str, str] | None]] = field(
        default_factory=dict
    )
    _backup_names: set[str] = field(default_factory=set)

    def read(self) -> None:
        self._read_notes()
        self._read_backups()
        self._read_conflicts()
        for note_id, (_, content) in self.notes.items():
            self.knew.setdefault(note_id, set()).add(content)

    def _read_notes(self) -> None:
        notes: dict[str, tuple[str, str]] = {}
        stamps = {}
        self.torn = []
        for entry in _scan(self.device.notes_dir):
            if not entry.name.endswith(".md"):
                continue
            st = entry.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._stamps.get(entry.name)
            parsed = cached[1] if cached and cached[0] == stamp else None
            if parsed is None:
                parsed = _content_of(Path(entry.path).read_bytes())
            stamps[entry.name] = (stamp, parsed)
            if parsed is None:
                if entry.name in self.device.broken:  # the person's own half-saved edit
                    parsed = _content_of(self.device.broken[entry.name][0])
                    if parsed is not None:
                        self.held_elsewhere.add(parsed[2])
                    continue
                self.torn.append(entry.name)
                continue
            notes[parsed[0]] = (parsed[1], parsed[2])
        self._stamps = stamps
        self.notes = notes

    def _read_backups(self) -> None:
        for entry in _scan(self.device.backups_dir):
            if not entry.name.endswith(".md") or entry.name in self._backup_names:
                continue
            self._backup_names.add(entry.name)
            parsed = _content_of(Path(entry.path).read_bytes())
            if parsed is not None:
                self.backups.add(parsed[2])

    def _read_conflicts(self) -> None:
        conflicts: dict[str, set[str]] = {}
        for entry in _scan(self.device.base.conflicts):
            if not entry.name.endswith(".json"):
                continue
            record = json.loads(Path(entry.path).read_text(encoding="utf-8"))
            texts = [record.get(key) for key in ("base", "local", "cloud")]
            contents = set()
            for text in texts:
                if isinstance(text, str):
                    parsed = _content_of(text.encode("utf-8"))
                    if parsed is not None:
                        contents.add(parsed[2])
            conflicts[record["id"]] = contents
        self.conflicts = conflicts


def _scan(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as scan:
            return [
                entry
                for entry in scan
                if not is_temp_name(entry.name) and not entry.name.startswith(".")
            ]
    except FileNotFoundError:
        return []


class Oracle:
    """Records acknowledged actions and checks the invariants."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.disks = [DeviceDisk(device) for device in world.devices]
        self.edits: list[Edit] = []
        self.retired: set[int] = set()
        self.deletions: dict[str, list[Deletion]] = {}
        self.ids: set[str] = set()
        #: Steps at which the operator reset or restored the storage.
        self.resets: list[int] = []
        #: Per device, the step of its last completed sync pass.
        self.last_pass: dict[str, int] = {}

    def observe(self) -> None:
        for disk in self.disks:
            disk.read()

    def disk(self, device: Device) -> DeviceDisk:
        return self.disks[device.index]

    def record_edit(
        self, step: int, device: Device, note_id: str, before: str | None, what: str
    ) -> None:
        """Note that ``note_id`` on ``device`` was written by the user (file already on disk)."""
        disk = self.disk(device)
        disk.read()
        _, content = disk.notes[note_id]
        if before is not None and before != content:
            # The user saw ``before`` and replaced it: that version may go.
            for index, edit in enumerate(self.edits):
                if edit.content == before:
                    self.retired.add(index)
        self.edits.append(Edit(step, device.name, note_id, content, what))
        self.ids.add(note_id)

    def record_deletion(self, step: int, device: Device, note_id: str) -> None:
        """Call before the delete: remembers what the device had seen of the note."""
        disk = self.disk(device)
        disk.read()
        knew = frozenset(disk.knew.get(note_id, set()))
        synced_at = self.last_pass.get(device.name, -1)
        self.deletions.setdefault(note_id, []).append(
            Deletion(step, device.name, note_id, knew, synced_at)
        )

    # ---- invariants ----------------------------------------------------------------------

    def found(self) -> set[str]:
        """Every content held by a note file, a backup or a conflict record on any device."""
        held: set[str] = set()
        for disk in self.disks:
            held.update(content for _, content in disk.notes.values())
            held.update(disk.backups)
            held.update(disk.held_elsewhere)
            for contents in disk.conflicts.values():
                held.update(contents)
        return held

    def lost_edits(self) -> list[str]:
        held = self.found()
        return [
            f"(b) acknowledged edit lost: step {edit.step} {edit.device} {edit.what} of "
            f"{edit.id} ({edit.content[:19]}) is in no note, backup or conflict record"
            for index, edit in enumerate(self.edits)
            if index not in self.retired and edit.content not in held
        ]

    def base_claims(self) -> list[str]:
        server = self.world.server
        problems = []
        for device in self.world.devices:
            state = _read_state(device.base.state_path)
            if state is None:
                continue
            version = state.get("version")
            if isinstance(version, int) and version > server.version:
                problems.append(
                    f"(d) {device.name} base claims version {version}, the server is at "
                    f"{server.version}"
                )
            for note_id, entry in (state.get("notes") or {}).items():
                committed = server.revisions.get((note_id, entry["rev"]))
                if committed is None:
                    problems.append(
                        f"(d) {device.name} base holds {note_id}@{entry['rev'][:8]}, never a "
                        "revision in the server's manifest"
                    )
                elif committed != entry["hash"]:
                    problems.append(
                        f"(d) {device.name} base says {note_id}@{entry['rev'][:8]} has "
                        f"{entry['hash'][:19]}, the server committed {committed[:19]}"
                    )
        return problems

    def torn_files(self) -> list[str]:
        return [
            f"{disk.device.name}: note file {name} cannot be parsed"
            for disk in self.disks
            for name in disk.torn
        ]

    def check_step(self) -> list[str]:
        """The invariants that hold at every step: (b), (d), no torn note file."""
        return self.torn_files() + self.lost_edits() + self.base_claims()

    def check_final(self) -> list[str]:
        """At quiescence: (a) and (c) as well."""
        problems = self.check_step()
        server_notes = self.world.server.manifest_notes()
        for disk in self.disks:
            if disk.conflicts:
                problems.append(
                    f"(a) {disk.device.name} still has conflicts {sorted(disk.conflicts)}"
                )
            local = {note_id: full for note_id, (full, _) in disk.notes.items()}
            if local != server_notes:
                diff = sorted(
                    note_id
                    for note_id in set(local) | set(server_notes)
                    if local.get(note_id) != server_notes.get(note_id)
                )
                problems.append(
                    f"(a) {disk.device.name} differs from the server on {diff}: "
                    + ", ".join(
                        f"{note_id} here {_short(local.get(note_id))} "
                        f"server {_short(server_notes.get(note_id))}"
                        for note_id in diff
                    )
                )
        problems.extend(self._deleted_stay_deleted(server_notes))
        return problems

    def _deleted_stay_deleted(self, final: dict[str, str]) -> list[str]:
        problems = []
        for note_id, deletions in sorted(self.deletions.items()):
            if note_id not in final:
                continue
            last = deletions[-1]
            if any(step > last.synced_at for step in self.resets):
                # The storage forgot the delete, or the delete was made against a history the
                # storage had already lost; devices that still hold the note put it back (a
                # reset deletes nothing anywhere, docs/sync-protocol.md).
                continue
            justified = [
                edit
                for edit in self.edits
                if edit.id == note_id
                and (
                    edit.step > last.step
                    or edit.content not in last.knew
                    # a byte-identical twin made on another device is a creation of its own
                    or (edit.what == "twin" and edit.device != last.device)
                )
            ]
            if not justified:
                problems.append(
                    f"(c) {note_id} was deleted by {last.device} at step {last.step} and came "
                    "back although nobody edited it after that or without having seen it"
                )
        return problems


def _short(value: str | None) -> str:
    return "absent" if value is None else value[7:15]


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None
