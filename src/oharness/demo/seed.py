"""Filling the demo's two devices: sample notes, recall uses, backups, sync and a conflict.

Everything goes through the library's own paths (``remember``, ``forget``, the recall usage
log, sign-in settings and sync passes), exactly as the CLI would do it, so what the page then
shows is what a real home looks like: nothing is written behind the library's back.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from oharness.demo.content import (
    CONFLICT_KEY,
    CONFLICT_LINE,
    DAY_MS,
    DELETED,
    LATER_NOTE,
    NOTES,
    OTHER_DEVICE_LINE,
    PROJECT_FILES,
    THIS_DEVICE_LINE,
    UPDATED_BODY,
    UPDATED_KEY,
    SampleNote,
    body_text,
)
from oharness.demo.home import Device
from oharness.errors import OHarnessError
from oharness.memory.workspace import Workspace, open_workspace, wall_clock_ms
from oharness.project.paths import HomeLayout
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import PassReport, SyncService, sync_targets
from oharness.types import Clock, Scope

NoteKey = tuple[Scope, str]


class SeedClock:
    """Milliseconds that can be set into the past, so the sample notes have a history."""

    def __init__(self, now: Clock = wall_clock_ms) -> None:
        self._now = now
        self._at = now()

    def days_ago(self, days: float) -> None:
        self._at = self._now() - int(days * DAY_MS)

    def __call__(self) -> int:
        self._at += 1
        return min(self._at, self._now())


@dataclass
class Seeded:
    """What the seeding made (for the demo's status line)."""

    ids: dict[str, NoteKey] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)


def _open(device: Device, clock: Clock) -> Workspace:
    return open_workspace(device.project, device.home, register=True, clock=clock)


def write_sample_notes(device: Device, clock: SeedClock) -> Seeded:
    """This device's notes in both scopes, their recall uses, one update and one delete."""
    seeded = Seeded()
    for name, text in PROJECT_FILES.items():
        path = device.project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    workspace = _open(device, clock)
    try:
        service = workspace.service
        for note in NOTES:
            seeded.ids[note.key] = _remember(workspace, note, clock, seeded)
        recall = service.recall
        if recall is not None:
            for note in NOTES:
                for use in range(note.recalls):
                    clock.days_ago(note.age_days * (1 - (use + 1) / (note.recalls + 1)))
                    recall.record_usage([seeded.ids[note.key]])
        clock.days_ago(1)
        scope, note_id = seeded.ids[UPDATED_KEY]
        updated = next(note for note in NOTES if note.key == UPDATED_KEY)
        service.remember(updated.summary, UPDATED_BODY, id=note_id, scope=scope)
        freeze = _remember(workspace, DELETED, clock, seeded)
        clock.days_ago(0.5)
        service.forget(freeze[1], freeze[0])
    finally:
        workspace.close()
    return seeded


def _remember(workspace: Workspace, note: SampleNote, clock: SeedClock, seeded: Seeded) -> NoteKey:
    clock.days_ago(note.age_days)
    links = {key: note_id for key, (_, note_id) in seeded.ids.items()}
    result = workspace.service.remember(
        note.summary, body_text(note, links), type=note.type, tags=note.tags, scope=note.scope
    )
    return result.scope, result.id


def sign_in(device: Device, origin: str, token: str) -> None:
    """What ``oharness login`` records (the token checked by the first pass)."""
    SyncSettingsFile(HomeLayout(device.home)).login(origin, token)


def sync_device(device: Device) -> list[PassReport]:
    """One pass over both scopes, as ``oharness sync now`` runs it."""
    workspace = _open(device, wall_clock_ms)
    try:
        service = SyncService(
            workspace.home, backups=workspace.service.backups(), clock=wall_clock_ms
        )
        return [service.run(target) for target in sync_targets(workspace)]
    finally:
        workspace.close()


def make_conflict(this: Device, other: Device, seeded: Seeded, clock: SeedClock) -> None:
    """Both devices synced; the other edits the deploy note and adds one; this one edits the
    same line its own way; this device's pass then finds the conflict."""
    sync_device(this)
    source = this.project / ".oharness" / "project.json"
    (other.project / ".oharness").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, other.project / ".oharness" / "project.json")
    sync_device(other)
    scope, note_id = seeded.ids[CONFLICT_KEY]
    _edit_line(other, note_id, scope, OTHER_DEVICE_LINE, wall_clock_ms)
    workspace = _open(other, wall_clock_ms)
    try:
        workspace.service.remember(
            "Staging is rebuilt from scratch every night at 02:00 UTC",
            "Anything deployed to staging by hand is gone the next morning; put it in the "
            "seed scripts instead.\n",
            type="project",
            tags=("staging",),
            scope="project",
        )
    finally:
        workspace.close()
    sync_device(other)
    clock.days_ago(0)
    _edit_line(this, note_id, scope, THIS_DEVICE_LINE, clock)
    for report in sync_device(this):
        if report.result is not None:
            seeded.conflicts += report.result.conflicts


def _edit_line(device: Device, note_id: str, scope: Scope, line: str, clock: Clock) -> None:
    workspace = _open(device, clock)
    try:
        view = workspace.service.read(note_id, scope)
        if CONFLICT_LINE not in view.body:
            raise OHarnessError(f"the sample note {note_id} lost its line; start the demo again")
        body = view.body.replace(CONFLICT_LINE, line)
        workspace.service.remember(view.summary, body, id=note_id, scope=scope)
    finally:
        workspace.close()


def write_on_other_device(other: Device) -> str:
    """The other device writes a note and syncs it; returns its summary."""
    workspace = _open(other, wall_clock_ms)
    try:
        workspace.service.remember(
            LATER_NOTE.summary,
            LATER_NOTE.body,
            type=LATER_NOTE.type,
            tags=LATER_NOTE.tags,
            scope=LATER_NOTE.scope,
        )
    finally:
        workspace.close()
    sync_device(other)
    return LATER_NOTE.summary
