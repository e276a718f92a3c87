"""Backups of notes before they are replaced or removed (spec 02.5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oharness.errors import NotFoundError, ValidationError
from oharness.fsio import temp_path_for
from oharness.notes.backups import BACKUP_REASONS, BackupRecord, BackupStore
from oharness.notes.format import Note, serialise_note_bytes

T0 = 1_789_000_000_000  # ms
DAY_MS = 86_400_000


class FakeClock:
    """Milliseconds since the epoch, moved by the test."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def note_bytes(note_id: str, body: str = "Body.\n") -> bytes:
    return serialise_note_bytes(Note(id=note_id, summary=f"About {note_id}", body=body))


def note_hash(note_id: str, body: str = "Body.\n") -> str:
    return Note(id=note_id, summary=f"About {note_id}", body=body).content_hash


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def backup_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "memory-backups"


@pytest.fixture
def backups(backup_dir: Path, clock: FakeClock) -> BackupStore:
    return BackupStore(backup_dir, clock=clock)


def backup(
    store: BackupStore,
    note_id: str,
    *,
    reason: str = "forget",
    body: str = "Body.\n",
    scope_dir: Path = Path("/projects/shop/MEMORY"),
) -> BackupRecord:
    return store.write(
        note_bytes(note_id, body),
        note_id=note_id,
        reason=reason,
        scope_dir=scope_dir,
        scope_key="project:p-0123",
        content_hash=note_hash(note_id, body),
    )


class TestWrite:
    def test_writes_the_exact_bytes_and_a_self_describing_sidecar(
        self, tmp_path: Path, backup_dir: Path, backups: BackupStore
    ) -> None:
        data = note_bytes("pricing-3fa", "Exact bytes, even odd ones: caf\u00e9 \u2014 \u6f22\n")
        scope_dir = tmp_path / "shop" / "MEMORY"

        record = backups.write(
            data,
            note_id="pricing-3fa",
            reason="pull-update",
            scope_dir=scope_dir,
            scope_key="project:p-0123",
            content_hash="sha256:abc",
        )

        assert record.path.parent == backup_dir
        assert record.path.read_bytes() == data
        sidecar = json.loads(record.path.with_suffix(".json").read_text(encoding="utf-8"))
        assert sidecar["id"] == "pricing-3fa"
        assert sidecar["reason"] == "pull-update"
        assert sidecar["scopeDir"] == str(scope_dir)
        assert sidecar["scopeKey"] == "project:p-0123"
        assert sidecar["hash"] == "sha256:abc"
        assert sidecar["at"] == T0
        assert sorted(os.listdir(backup_dir)) == [
            f"{record.backup_id}.json",
            f"{record.backup_id}.md",
        ]

    def test_a_written_backup_reads_back_as_the_same_record(self, backups: BackupStore) -> None:
        record = backup(backups, "pricing-3fa", reason="merge")

        assert backups.get(record.backup_id) == record
        assert backups.recent() == [record]
        assert backups.read_bytes(record) == note_bytes("pricing-3fa")
        assert record.to_dict()["reason"] == "merge"
        json.dumps(record.to_dict())

    @pytest.mark.parametrize("reason", BACKUP_REASONS)
    def test_every_listed_reason_is_accepted(self, backups: BackupStore, reason: str) -> None:
        record = backup(backups, "any-1ab", reason=reason)

        assert backups.get(record.backup_id).reason == reason

    @pytest.mark.parametrize("reason", ["unknown", "because", "", "Forget"])
    def test_unknown_reason_is_refused_and_nothing_written(
        self, backup_dir: Path, backups: BackupStore, reason: str
    ) -> None:
        with pytest.raises(ValidationError):
            backup(backups, "any-1ab", reason=reason)

        assert not backup_dir.exists() or os.listdir(backup_dir) == []

    def test_same_millisecond_backups_get_distinct_ids(self, backups: BackupStore) -> None:
        records = [backup(backups, "busy-1ab", body=f"Version {n}.\n") for n in range(3)]

        assert len({record.backup_id for record in records}) == 3
        for n, record in enumerate(records):
            again = backups.get(record.backup_id)
            assert backups.read_bytes(again) == note_bytes("busy-1ab", f"Version {n}.\n")
            assert again.reason == "forget"
            assert again.note_id == "busy-1ab"
        assert len(backups.recent()) == 3


class TestRecent:
    def test_newest_first_and_fifty_by_default(
        self, backups: BackupStore, clock: FakeClock
    ) -> None:
        written = []
        for n in range(55):
            clock.now = T0 + n * 1000
            written.append(backup(backups, f"note-{n}"))

        listed = backups.recent()

        assert [record.backup_id for record in listed] == [
            record.backup_id for record in reversed(written[-50:])
        ]
        assert len(backups.recent(limit=None)) == 55
        assert [record.note_id for record in backups.recent(limit=2)] == ["note-54", "note-53"]

    def test_same_millisecond_backups_list_newest_first_past_nine(
        self, backups: BackupStore
    ) -> None:
        written = [backup(backups, "busy-1ab", body=f"Version {n}.\n") for n in range(12)]

        listed = backups.recent()

        assert [record.backup_id for record in listed] == [
            record.backup_id for record in reversed(written)
        ]
        assert listed[0].backup_id.endswith("-forget-12")
        assert backups.read_bytes(listed[0]) == note_bytes("busy-1ab", "Version 11.\n")
        assert backups.read_bytes(listed[-1]) == note_bytes("busy-1ab", "Version 0.\n")

    def test_a_later_millisecond_comes_first_whatever_the_counter(
        self, backups: BackupStore, clock: FakeClock
    ) -> None:
        older = [backup(backups, "busy-1ab") for _ in range(10)]
        clock.now = T0 + 1
        newer = backup(backups, "busy-1ab")

        listed = backups.recent(limit=2)

        assert [record.backup_id for record in listed] == [newer.backup_id, older[-1].backup_id]

    def test_empty_or_missing_folder_lists_nothing(self, backups: BackupStore) -> None:
        assert backups.recent() == []

    def test_temp_and_hidden_files_are_not_backups(
        self, backup_dir: Path, backups: BackupStore
    ) -> None:
        record = backup(backups, "real-1ab")
        temp_path_for(backup_dir / "1789000000001-other-2cd-forget.md").write_bytes(
            note_bytes("other-2cd")
        )
        (backup_dir / ".hidden.md").write_bytes(note_bytes("hidden-3ef"))
        (backup_dir / "notes.txt").write_text("not a backup\n")

        assert backups.recent() == [record]


class TestGet:
    @pytest.mark.parametrize(
        "backup_id", ["../secret", "sub/../../secret", "<absolute>", "..", "", "sub"]
    )
    def test_ids_that_could_leave_the_folder_are_refused(
        self, backup_dir: Path, backups: BackupStore, backup_id: str
    ) -> None:
        backup(backups, "real-1ab")
        (backup_dir / "sub").mkdir()
        secret = backup_dir.parent / "secret.md"
        secret.write_bytes(note_bytes("secret-1ab"))
        if backup_id == "<absolute>":
            backup_id = str(secret.with_suffix(""))

        with pytest.raises(NotFoundError):
            backups.get(backup_id)

    def test_unknown_id_is_not_found(self, backups: BackupStore) -> None:
        backup(backups, "real-1ab")

        with pytest.raises(NotFoundError):
            backups.get("1789000000000-other-2cd-forget")


class TestBareAndDamagedBackups:
    def test_a_legacy_backup_without_sidecar_is_listed_as_unknown(
        self, backup_dir: Path, backups: BackupStore
    ) -> None:
        backup_dir.mkdir(parents=True)
        legacy = backup_dir / "old-note.md"
        data = note_bytes("legacy-1ab", "Before reasons existed.\n")
        legacy.write_bytes(data)
        when_ms = T0 - 5 * DAY_MS
        os.utime(legacy, ns=(when_ms * 1_000_000, when_ms * 1_000_000))

        [record] = backups.recent()

        assert record.backup_id == "old-note"
        assert record.reason == "unknown"
        assert record.note_id == "legacy-1ab"
        assert record.created_at == when_ms
        assert record.content_hash == note_hash("legacy-1ab", "Before reasons existed.\n")
        assert record.scope_dir is None
        assert backups.get("old-note") == record
        assert backups.read_bytes(record) == data

    @pytest.mark.parametrize(
        "name", ["pricing notes (old).md", "_draft.md", "notes.md.md", "\u00dcbersicht.md"]
    )
    def test_every_listed_legacy_backup_can_be_fetched_by_its_id(
        self, backup_dir: Path, backups: BackupStore, name: str
    ) -> None:
        backup_dir.mkdir(parents=True)
        data = note_bytes("legacy-1ab")
        (backup_dir / name).write_bytes(data)

        [listed] = backups.recent()
        fetched = backups.get(listed.backup_id)

        assert fetched == listed
        assert backups.read_bytes(fetched) == data

    def test_an_unparseable_legacy_backup_is_still_listed(
        self, backup_dir: Path, backups: BackupStore
    ) -> None:
        backup_dir.mkdir(parents=True)
        (backup_dir / "scribbles.md").write_bytes(b"\xff\xfe not a note\n")

        [record] = backups.recent()

        assert record.backup_id == "scribbles"
        assert record.reason == "unknown"
        assert record.note_id is None

    def test_a_bare_backup_named_by_us_keeps_its_reason_and_time(
        self, backup_dir: Path, backups: BackupStore
    ) -> None:
        backup_dir.mkdir(parents=True)
        (backup_dir / "1789000000123-pricing-borderless-3fa-forget.md").write_bytes(
            note_bytes("pricing-borderless-3fa")
        )

        [record] = backups.recent()

        assert record.reason == "forget"
        assert record.note_id == "pricing-borderless-3fa"
        assert record.created_at == 1_789_000_000_123
        assert record.content_hash == note_hash("pricing-borderless-3fa")

    def test_a_crash_before_the_sidecar_leaves_a_listed_backup(
        self, backups: BackupStore, clock: FakeClock
    ) -> None:
        record = backup(backups, "deploys-tuesday-3fa", reason="pull-delete")
        record.path.with_suffix(".json").unlink()

        [again] = backups.recent()

        assert again.backup_id == record.backup_id
        assert again.reason == "pull-delete"
        assert again.note_id == "deploys-tuesday-3fa"
        assert again.created_at == clock.now
        assert backups.read_bytes(again) == note_bytes("deploys-tuesday-3fa")

    @pytest.mark.parametrize(
        "sidecar", [b"{not json", b"", b"[1, 2]", b'"text"', b"\xff\xfe"], ids=repr
    )
    def test_a_corrupt_sidecar_is_tolerated(
        self, backups: BackupStore, clock: FakeClock, sidecar: bytes
    ) -> None:
        record = backup(backups, "damaged-1ab", reason="task-update")
        record.path.with_suffix(".json").write_bytes(sidecar)
        later = backup(backups, "healthy-2cd")

        listed = backups.recent()

        assert [item.backup_id for item in listed] == sorted(
            [record.backup_id, later.backup_id], reverse=True
        )
        damaged = backups.get(record.backup_id)
        assert damaged.note_id == "damaged-1ab"
        assert damaged.reason == "task-update"
        assert damaged.created_at == clock.now


class TestPrune:
    def test_keeps_the_newest_500_and_everything_younger_than_90_days(
        self, backup_dir: Path, backups: BackupStore, clock: FakeClock
    ) -> None:
        for n in range(30):
            clock.now = T0 + n
            backup(backups, f"old-{n}")
        # Bare backups (what a crash between the two writes leaves) are quicker to lay out
        # than 480 full writes, and count like any other backup.
        recent_start = T0 + 100 * DAY_MS
        for n in range(480):
            name = f"{recent_start + n}-recent-{n}-forget.md"
            (backup_dir / name).write_bytes(note_bytes(f"recent-{n}"))
        for n in range(480, 490):
            clock.now = recent_start + n
            backup(backups, f"recent-{n}")

        # 520 backups: the newest 500 stay even though ten of them are older than 90 days.
        kept = {record.note_id for record in backups.recent(limit=None)}
        assert len(kept) == 500
        assert {f"old-{n}" for n in range(20, 30)} <= kept
        assert not kept & {f"old-{n}" for n in range(20)}
        sidecars = {name for name in os.listdir(backup_dir) if name.endswith(".json")}
        assert len(sidecars) == 20  # the pruned backups took their sidecars with them

        for n in range(490, 510):
            clock.now = recent_start + n
            backup(backups, f"recent-{n}")

        # Backups younger than 90 days are kept even beyond the newest 500.
        kept = {record.note_id for record in backups.recent(limit=None)}
        assert kept == {f"recent-{n}" for n in range(510)}
        assert len(os.listdir(backup_dir)) == 510 + 30

    def test_prune_removes_nothing_at_or_below_500(
        self, backups: BackupStore, clock: FakeClock
    ) -> None:
        for n in range(3):
            clock.now = T0 + n
            backup(backups, f"ancient-{n}")
        clock.now = T0 + 1000 * DAY_MS

        assert backups.prune() == 0
        assert len(backups.recent(limit=None)) == 3
