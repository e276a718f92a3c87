"""The note store (spec 01.1, 01.6 maxNotes, 01.7): loading, the cache, writes, paths, the lock."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from oharness.errors import (
    ConflictError,
    LimitError,
    NoteFormatError,
    NotFoundError,
    PathSafetyError,
    StorageError,
    ValidationError,
)
from oharness.fsio import temp_path_for
from oharness.notes.format import Note, parse_note_bytes, serialise_note_bytes
from oharness.notes.store import NoteStore

HELPERS = Path(__file__).resolve().parents[2] / "integration" / "helpers"
BASE_NS = 1_700_000_000 * 1_000_000_000  # a fixed moment, long past
HOUR_NS = 3600 * 1_000_000_000


class FakeMonotonic:
    """An injected monotonic clock the test advances by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_note(note_id: str, body: str = "Body.\n", **fields: object) -> Note:
    summary = str(fields.pop("summary", f"Summary of {note_id}"))
    return Note(id=note_id, summary=summary, body=body, **fields)  # type: ignore[arg-type]


def write_note_file(directory: Path, note: Note, *, name: str | None = None) -> Path:
    """Write a note file as another program would (not through the store)."""
    path = directory / (name or f"{note.id}.md")
    path.write_bytes(serialise_note_bytes(note))
    return path


def set_mtime(path: Path, ns: int) -> None:
    os.utime(path, ns=(ns, ns), follow_symlinks=False)


def settle(directory: Path) -> None:
    """Date the folder's own mtime an hour back, as if nothing was added or removed lately."""
    set_mtime(directory, BASE_NS - HOUR_NS)


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Overwrite a file's content keeping its inode (no rename: the folder does not change)."""
    with path.open("r+b") as handle:
        handle.write(data)
        handle.truncate()


StoreFactory = Callable[..., NoteStore]


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "MEMORY"
    directory.mkdir()
    return directory


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "locks" / "project.lock"


@pytest.fixture
def clock() -> FakeMonotonic:
    return FakeMonotonic()


@pytest.fixture
def make_store(notes_dir: Path, lock_path: Path, clock: FakeMonotonic) -> StoreFactory:
    def factory(**options: object) -> NoteStore:
        options.setdefault("lock_timeout", 0.2)
        options.setdefault("sweep_interval", 2.0)
        return NoteStore(
            notes_dir,
            scope="project",
            lock_path=lock_path,
            monotonic=clock,
            **options,  # type: ignore[arg-type]
        )

    return factory


def ids(store: NoteStore) -> set[str]:
    return {stored.id for stored in store.notes()}


def problem_reasons(store: NoteStore) -> dict[str, str]:
    return {problem.path.name: problem.reason for problem in store.problems()}


# ---- loading ---------------------------------------------------------------------------------


class TestLoading:
    def test_loads_every_note_exactly_as_written(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        first = make_note(
            "deploys-tuesday-3fa",
            body="We deploy on Tuesdays.\n",
            tags=("ops",),
            type="project",
            created_at=1_789_000_000_000,
            updated_at=1_789_000_000_500,
            extra={"origin": "cli"},
        )
        second = make_note("pricing-borderless-a91", summary="Pricing cards use fills")
        write_note_file(notes_dir, first)
        write_note_file(notes_dir, second)

        store = make_store()

        assert ids(store) == {"deploys-tuesday-3fa", "pricing-borderless-a91"}
        stored = store.get("deploys-tuesday-3fa")
        assert stored is not None
        assert stored.note == first
        assert stored.scope == "project"
        assert stored.path == notes_dir / "deploys-tuesday-3fa.md"
        assert store.read_bytes("deploys-tuesday-3fa") == serialise_note_bytes(first)
        assert store.problems() == []

    def test_links_are_derived_from_the_body(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        body = "See [[layout-a91]], [[missing-9ff]] and again [[layout-a91]]. Also [[../x]].\n"
        write_note_file(notes_dir, make_note("pricing-3fa", body=body))
        write_note_file(notes_dir, make_note("layout-a91"))

        store = make_store()

        pricing = store.get("pricing-3fa")
        layout = store.get("layout-a91")
        assert pricing is not None and layout is not None
        assert pricing.links == ("layout-a91", "missing-9ff", "../x")  # any text may be a summary
        assert layout.links == ()

    def test_missing_directory_is_an_empty_store(self, tmp_path: Path, lock_path: Path) -> None:
        store = NoteStore(tmp_path / "nowhere", scope="user", lock_path=lock_path)

        assert store.notes() == []
        assert store.problems() == []
        assert store.file_count() == 0

    def test_file_name_must_equal_the_id(self, notes_dir: Path, make_store: StoreFactory) -> None:
        path = write_note_file(notes_dir, make_note("right-1ab"), name="wrong-name.md")
        write_note_file(notes_dir, make_note("fine-2cd"))

        store = make_store()

        assert ids(store) == {"fine-2cd"}
        assert store.get("right-1ab") is None
        [problem] = store.problems()
        assert problem.path == path
        assert problem.reason == "name_mismatch"
        assert "right-1ab.md" in problem.message

    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            (b"---\n{id: broken-1ab}\n---\nbody\n", "invalid_json"),
            (b"Just some markdown, no frontmatter.\n", "no_frontmatter"),
            (b'---\n{"id":"../escape","summary":"s"}\n---\nbody\n', "invalid_id"),
            (b'---\n{"id":"broken-1ab","summary":"caf\xe9"}\n---\nbody\n', "not_utf8"),
        ],
        ids=["bad-json", "no-frontmatter", "invalid-id", "not-utf8"],
    )
    def test_malformed_files_are_skipped_and_reported(
        self, notes_dir: Path, make_store: StoreFactory, content: bytes, reason: str
    ) -> None:
        bad = notes_dir / "broken-1ab.md"
        bad.write_bytes(content)
        write_note_file(notes_dir, make_note("fine-2cd"))

        store = make_store()

        assert ids(store) == {"fine-2cd"}
        assert problem_reasons(store) == {"broken-1ab.md": reason}

    def test_malformed_files_are_never_touched(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        broken = {
            "bad-json-1ab.md": b"---\n{oops\n---\nbody\n",
            "no-front-2cd.md": b"plain text\n",
            "bad-id-3ef.md": b'---\n{"id":"a.b","summary":"s"}\n---\n',
            "latin1-4ab.md": b'---\n{"id":"latin1-4ab","summary":"\xe9"}\n---\n',
            "misnamed-5cd.md": serialise_note_bytes(make_note("other-6ef")),
        }
        for offset, (name, data) in enumerate(broken.items()):
            (notes_dir / name).write_bytes(data)
            set_mtime(notes_dir / name, BASE_NS + offset)
        write_note_file(notes_dir, make_note("kept-7ab"))
        store = make_store()
        before = {name: (notes_dir / name).stat().st_mtime_ns for name in broken}

        store.refresh(full=True)
        store.save(make_note("new-8cd"), create=True)
        store.save(make_note("kept-7ab", body="Changed.\n"), create=False)
        store.delete("new-8cd")
        for name in ("bad-json-1ab", "misnamed-5cd"):
            with pytest.raises(ConflictError):
                store.save(make_note(name), create=True)
            with pytest.raises(NotFoundError):
                store.save(make_note(name), create=False)
            with pytest.raises(NotFoundError):
                store.delete(name)
        store.refresh(full=True)

        for name, data in broken.items():
            assert (notes_dir / name).read_bytes() == data
            assert (notes_dir / name).stat().st_mtime_ns == before[name]
        assert set(problem_reasons(store)) == set(broken)

    def test_dot_files_and_temp_files_are_never_loaded(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        note = make_note("hidden-1ab")
        write_note_file(notes_dir, note, name=".hidden-1ab.md")
        interrupted = temp_path_for(notes_dir / "hidden-1ab.md")
        interrupted.write_bytes(serialise_note_bytes(note))
        (notes_dir / "readme.txt").write_text("not a note\n")
        (notes_dir / "folder-2cd.md").mkdir()
        write_note_file(notes_dir, make_note("visible-3ef"))

        store = make_store()

        assert ids(store) == {"visible-3ef"}
        assert store.get("hidden-1ab") is None
        assert store.stray_temp_files() == [interrupted]
        assert store.problems() == []
        assert store.file_count() == 1


# ---- maxNotes --------------------------------------------------------------------------------


class TestMaxNotes:
    @pytest.fixture
    def five_files(self, notes_dir: Path) -> list[str]:
        names = [f"note-{n}" for n in range(5)]  # note-0 is the least recently modified
        for n, name in enumerate(names):
            path = write_note_file(notes_dir, make_note(name))
            set_mtime(path, BASE_NS + n * 1_000_000_000)
        return names

    def test_only_the_most_recently_modified_are_loaded(
        self, notes_dir: Path, make_store: StoreFactory, five_files: list[str]
    ) -> None:
        store = make_store(max_notes=3)

        assert ids(store) == {"note-2", "note-3", "note-4"}
        assert set(store.unloaded()) == {notes_dir / "note-0.md", notes_dir / "note-1.md"}
        assert store.file_count() == 5

    def test_new_notes_are_refused_at_the_limit(
        self, notes_dir: Path, make_store: StoreFactory, five_files: list[str]
    ) -> None:
        store = make_store(max_notes=3)

        with pytest.raises(LimitError) as info:
            store.save(make_note("one-more-1ab"), create=True)

        assert info.value.details["limit"] == 3
        assert not (notes_dir / "one-more-1ab.md").exists()
        assert store.file_count() == 5

    def test_updates_and_deletes_still_work_at_the_limit(
        self, notes_dir: Path, make_store: StoreFactory, five_files: list[str]
    ) -> None:
        store = make_store(max_notes=3)

        updated = store.save(make_note("note-2", body="Updated.\n"), create=False)
        store.delete("note-4")

        assert updated.note.body == "Updated.\n"
        assert parse_note_bytes((notes_dir / "note-2.md").read_bytes()).body == "Updated.\n"
        assert not (notes_dir / "note-4.md").exists()
        # The freed place goes to the most recent of the files left out.
        assert ids(store) == {"note-1", "note-2", "note-3"}
        assert store.unloaded() == [notes_dir / "note-0.md"]
        assert store.file_count() == 4
        with pytest.raises(LimitError):
            store.save(make_note("one-more-1ab"), create=True)

    def test_creating_the_id_of_an_unloaded_file_is_a_conflict(
        self, notes_dir: Path, make_store: StoreFactory, five_files: list[str]
    ) -> None:
        store = make_store(max_notes=3)
        original = (notes_dir / "note-0.md").read_bytes()

        with pytest.raises(ConflictError):
            store.save(make_note("note-0", body="Clobbered.\n"), create=True)

        assert (notes_dir / "note-0.md").read_bytes() == original


# ---- the cache and edits by other programs ----------------------------------------------------


class TestExternalChanges:
    @pytest.fixture
    def loaded(self, notes_dir: Path, make_store: StoreFactory) -> tuple[NoteStore, Path]:
        path = write_note_file(notes_dir, make_note("edited-1ab", body="Original.\n"))
        write_note_file(notes_dir, make_note("bystander-2cd"))
        for name in os.listdir(notes_dir):
            set_mtime(notes_dir / name, BASE_NS)
        settle(notes_dir)
        store = make_store()
        assert ids(store) == {"edited-1ab", "bystander-2cd"}
        return store, path

    @staticmethod
    def body_of(store: NoteStore, note_id: str) -> str | None:
        stored = store.get(note_id)
        return None if stored is None else stored.note.body

    def test_in_place_rewrite_is_seen_after_the_sweep_interval(
        self, loaded: tuple[NoteStore, Path], clock: FakeMonotonic
    ) -> None:
        store, path = loaded
        inode = path.stat().st_ino

        rewrite_in_place(path, serialise_note_bytes(make_note("edited-1ab", body="Edited!\n")))
        assert path.stat().st_ino == inode
        clock.advance(1.0)
        assert self.body_of(store, "edited-1ab") == "Original.\n"  # the cheap check only
        clock.advance(1.0)

        assert self.body_of(store, "edited-1ab") == "Edited!\n"

    def test_in_place_rewrite_is_seen_at_once_on_a_full_refresh(
        self, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, path = loaded

        rewrite_in_place(path, serialise_note_bytes(make_note("edited-1ab", body="Edited!\n")))

        assert store.refresh(full=True) is True
        assert self.body_of(store, "edited-1ab") == "Edited!\n"

    def test_an_in_place_rewrite_that_breaks_the_file_unloads_it(
        self, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, path = loaded

        rewrite_in_place(path, b"---\n{half a frontmatter")
        store.refresh(full=True)

        assert store.get("edited-1ab") is None
        assert problem_reasons(store) == {"edited-1ab.md": "unclosed_frontmatter"}

    def test_external_create_is_seen_at_the_next_refresh(
        self, notes_dir: Path, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, _ = loaded

        write_note_file(notes_dir, make_note("newcomer-3ef", body="Hello.\n"))

        assert self.body_of(store, "newcomer-3ef") == "Hello.\n"

    def test_external_delete_is_seen_at_the_next_refresh(
        self, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, path = loaded

        path.unlink()

        assert ids(store) == {"bystander-2cd"}

    def test_editor_save_by_rename_is_seen_at_the_next_refresh(
        self, notes_dir: Path, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, path = loaded
        scratch = notes_dir / "edited-1ab.md~"
        scratch.write_bytes(serialise_note_bytes(make_note("edited-1ab", body="Saved.\n")))

        os.replace(scratch, path)

        assert self.body_of(store, "edited-1ab") == "Saved.\n"

    def test_files_moved_in_and_out_are_seen_at_the_next_refresh(
        self, tmp_path: Path, notes_dir: Path, loaded: tuple[NoteStore, Path]
    ) -> None:
        store, path = loaded
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        arriving = write_note_file(elsewhere, make_note("arriving-4ab"))

        os.rename(arriving, notes_dir / "arriving-4ab.md")
        os.rename(path, elsewhere / "edited-1ab.md")

        assert ids(store) == {"bystander-2cd", "arriving-4ab"}

    def test_generation_increases_on_change_and_only_then(
        self, notes_dir: Path, loaded: tuple[NoteStore, Path], clock: FakeMonotonic
    ) -> None:
        store, path = loaded
        start = store.generation

        assert store.refresh(full=True) is False
        clock.advance(10.0)
        store.notes()
        assert store.generation == start

        rewrite_in_place(path, serialise_note_bytes(make_note("edited-1ab", body="Edited!\n")))
        assert store.refresh(full=True) is True
        after_edit = store.generation
        assert after_edit > start
        assert store.refresh(full=True) is False
        assert store.generation == after_edit

        store.save(make_note("saved-5cd"), create=True)
        after_save = store.generation
        assert after_save > after_edit
        store.refresh(full=True)
        assert store.generation == after_save

        (notes_dir / "bystander-2cd.md").unlink()
        store.notes()
        assert store.generation > after_save

    def test_a_malformed_file_does_not_count_as_a_change_on_every_refresh(
        self, notes_dir: Path, loaded: tuple[NoteStore, Path], clock: FakeMonotonic
    ) -> None:
        store, _ = loaded
        (notes_dir / "broken-6ef.md").write_bytes(b"---\n{oops\n---\n")
        store.refresh(full=True)
        start = store.generation

        changed = [store.refresh(full=True) for _ in range(3)]
        clock.advance(10.0)
        store.notes()

        assert changed == [False, False, False]
        assert store.generation == start
        assert problem_reasons(store) == {"broken-6ef.md": "invalid_json"}

    def test_unchanged_files_are_not_parsed_again(self, loaded: tuple[NoteStore, Path]) -> None:
        store, path = loaded
        bystander = store.get("bystander-2cd")
        edited = store.get("edited-1ab")

        rewrite_in_place(path, serialise_note_bytes(make_note("edited-1ab", body="Edited!\n")))
        store.refresh(full=True)

        assert store.get("bystander-2cd") is bystander
        assert store.get("edited-1ab") is not edited


# ---- letter case -----------------------------------------------------------------------------


def _case_sensitive(directory: Path) -> bool:
    probe = directory / "CaseProbe"
    probe.write_bytes(b"")
    try:
        return not (directory / "caseprobe").exists()
    finally:
        probe.unlink()


class TestLetterCase:
    def test_ids_differing_only_by_case_load_one_and_report_the_other(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        if not _case_sensitive(notes_dir):
            pytest.skip("this file system cannot hold both names")
        older = write_note_file(notes_dir, make_note("Foo-1ab", body="Older.\n"))
        newer = write_note_file(notes_dir, make_note("foo-1ab", body="Newer.\n"))
        set_mtime(older, BASE_NS)
        set_mtime(newer, BASE_NS + 1_000_000_000)

        store = make_store()

        assert ids(store) == {"Foo-1ab"}
        folded = store.get_folded("FOO-1AB")
        assert folded is not None and folded.id == "Foo-1ab"
        assert problem_reasons(store) == {"foo-1ab.md": "case_collision"}
        assert newer.read_bytes() == serialise_note_bytes(make_note("foo-1ab", body="Newer.\n"))
        with pytest.raises(ConflictError):
            store.save(make_note("foo-1ab", body="Overwrite?\n"), create=False)
        assert parse_note_bytes(newer.read_bytes()).body == "Newer.\n"

    def test_a_new_id_differing_only_by_case_is_refused(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        write_note_file(notes_dir, make_note("foo-1ab"))
        store = make_store()

        with pytest.raises(ConflictError) as info:
            store.save(make_note("Foo-1AB"), create=True)

        assert info.value.details["existing"] == "foo-1ab"
        assert os.listdir(notes_dir) == ["foo-1ab.md"]


# ---- save and delete rules -------------------------------------------------------------------


class TestWrites:
    def test_save_writes_the_serialised_note_and_returns_it(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()
        note = make_note("fresh-1ab", body="Links to [[other-2cd]].\n", tags=("a", "b"))

        stored = store.save(note, create=True)

        assert (notes_dir / "fresh-1ab.md").read_bytes() == serialise_note_bytes(note)
        assert stored.note == note
        assert stored.links == ("other-2cd",)
        assert store.get("fresh-1ab") == stored
        assert os.listdir(notes_dir) == ["fresh-1ab.md"]

    def test_save_creates_a_missing_directory(self, tmp_path: Path, lock_path: Path) -> None:
        directory = tmp_path / "home" / "memory" / "user"
        store = NoteStore(directory, scope="user", lock_path=lock_path, lock_timeout=0.2)

        store.save(make_note("first-1ab"), create=True)

        assert os.listdir(directory) == ["first-1ab.md"]
        assert ids(store) == {"first-1ab"}

    def test_create_of_an_existing_id_is_a_conflict(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        path = write_note_file(notes_dir, make_note("taken-1ab", body="Mine.\n"))
        store = make_store()

        with pytest.raises(ConflictError):
            store.save(make_note("taken-1ab", body="Yours.\n"), create=True)

        assert parse_note_bytes(path.read_bytes()).body == "Mine.\n"

    def test_create_of_an_id_written_meanwhile_by_another_program_is_a_conflict(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()
        store.notes()
        path = write_note_file(notes_dir, make_note("raced-1ab", body="Theirs.\n"))

        with pytest.raises(ConflictError):
            store.save(make_note("raced-1ab", body="Ours.\n"), create=True)

        assert parse_note_bytes(path.read_bytes()).body == "Theirs.\n"

    def test_update_of_a_missing_id_is_not_found(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()

        with pytest.raises(NotFoundError):
            store.save(make_note("absent-1ab"), create=False)

        assert os.listdir(notes_dir) == []

    def test_delete_removes_the_file(self, notes_dir: Path, make_store: StoreFactory) -> None:
        write_note_file(notes_dir, make_note("doomed-1ab"))
        store = make_store()

        store.delete("doomed-1ab")

        assert os.listdir(notes_dir) == []
        assert store.get("doomed-1ab") is None
        with pytest.raises(NotFoundError):
            store.delete("doomed-1ab")

    def test_save_bytes_refuses_bytes_with_another_id(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()
        data = serialise_note_bytes(make_note("inner-1ab"))

        with pytest.raises(ConflictError):
            store.save_bytes("outer-2cd", data, create=True)

        assert os.listdir(notes_dir) == []

    def test_save_bytes_refuses_bytes_that_are_not_a_note(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()

        with pytest.raises(NoteFormatError):
            store.save_bytes("junk-1ab", b"no frontmatter here\n", create=True)

        assert os.listdir(notes_dir) == []

    def test_save_bytes_keeps_the_exact_bytes(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store()
        data = b'---\r\n{\r\n  "summary": "Pretty",\r\n  "id": "pretty-1ab"\r\n}\r\n---\r\nBody\r\n'

        stored = store.save_bytes("pretty-1ab", data, create=True)

        assert (notes_dir / "pretty-1ab.md").read_bytes() == data
        assert stored.note.summary == "Pretty"
        assert stored.note.body == "Body\n"


# ---- path safety -----------------------------------------------------------------------------


class TestPathSafety:
    @pytest.mark.parametrize(
        "bad_id",
        ["../x", "..", ".", "/etc/passwd", "a\x00b", "a.b", "a/b", "a\\b", "", ".hidden", "-x"],
    )
    def test_unsafe_ids_are_refused(
        self, tmp_path: Path, notes_dir: Path, make_store: StoreFactory, bad_id: str
    ) -> None:
        store = make_store()

        with pytest.raises(ValidationError):
            store.path_for(bad_id)
        with pytest.raises(ValidationError):
            store.delete(bad_id)
        with pytest.raises((ValidationError, NoteFormatError)):
            store.save(make_note(bad_id), create=True)

        assert sorted(os.listdir(tmp_path)) == ["MEMORY"]
        assert os.listdir(notes_dir) == []

    def test_a_symlink_pointing_outside_is_not_loaded_nor_written(
        self, tmp_path: Path, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        target = write_note_file(outside, make_note("escape-1ab", body="Outside.\n"))
        original = target.read_bytes()
        link = notes_dir / "escape-1ab.md"
        link.symlink_to(target)
        write_note_file(notes_dir, make_note("fine-2cd"))

        store = make_store()

        assert ids(store) == {"fine-2cd"}
        assert problem_reasons(store) == {"escape-1ab.md": "symlink_outside"}
        for create in (True, False):
            with pytest.raises(PathSafetyError):
                store.save(make_note("escape-1ab", body="Hijacked.\n"), create=create)
        with pytest.raises(PathSafetyError):
            store.delete("escape-1ab")
        assert target.read_bytes() == original
        assert link.is_symlink()

    def test_a_relative_symlink_climbing_out_is_not_loaded(
        self, tmp_path: Path, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        outside = tmp_path / "outside"
        outside.mkdir()
        write_note_file(outside, make_note("climb-1ab"))
        (notes_dir / "climb-1ab.md").symlink_to(Path("..") / "outside" / "climb-1ab.md")

        store = make_store()

        assert ids(store) == set()
        assert problem_reasons(store) == {"climb-1ab.md": "symlink_outside"}
        with pytest.raises(PathSafetyError):
            store.path_for("climb-1ab")

    def test_a_symlink_inside_the_folder_is_loaded(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        archive = notes_dir / "archive"
        archive.mkdir()
        write_note_file(archive, make_note("inside-1ab", body="Archived.\n"))
        (notes_dir / "inside-1ab.md").symlink_to(Path("archive") / "inside-1ab.md")

        store = make_store()

        stored = store.get("inside-1ab")
        assert stored is not None and stored.note.body == "Archived.\n"
        assert store.problems() == []
        assert store.path_for("inside-1ab") == notes_dir / "inside-1ab.md"


# ---- the lock --------------------------------------------------------------------------------


def _start_helper(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPERS / script), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=10)


class TestLock:
    def test_locked_is_reentrant_in_one_thread(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store(lock_timeout=0.2)

        with store.locked(), store.locked():
            store.save(make_note("nested-1ab"), create=True)
            store.delete("nested-1ab")
        store.save(make_note("after-2cd"), create=True)

        assert os.listdir(notes_dir) == ["after-2cd.md"]

    def test_another_thread_waits_for_the_lock(
        self, notes_dir: Path, make_store: StoreFactory
    ) -> None:
        store = make_store(lock_timeout=0.2)
        outcome: list[BaseException | None] = []

        def save_from_thread() -> None:
            try:
                store.save(make_note("threaded-1ab"), create=True)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        with store.locked():
            worker = threading.Thread(target=save_from_thread)
            worker.start()
            worker.join(timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], StorageError)
        assert os.listdir(notes_dir) == []

        store.save(make_note("threaded-1ab"), create=True)
        assert os.listdir(notes_dir) == ["threaded-1ab.md"]

    def test_the_lock_holds_across_processes(
        self, notes_dir: Path, lock_path: Path, make_store: StoreFactory
    ) -> None:
        holder = _start_helper("hold_lock.py", notes_dir, lock_path)
        try:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline().strip() == "held"
            store = make_store(lock_timeout=0.2)

            with pytest.raises(StorageError) as info:
                store.save(make_note("blocked-1ab"), create=True)
            assert info.value.details["path"] == str(lock_path)
            assert os.listdir(notes_dir) == []

            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "released"
            holder.wait(timeout=10)
            store.save(make_note("blocked-1ab"), create=True)
        finally:
            _stop(holder)

        assert holder.returncode == 0
        assert os.listdir(notes_dir) == ["blocked-1ab.md"]

    def test_concurrent_writers_lose_nothing(self, notes_dir: Path, lock_path: Path) -> None:
        prefixes = ["alpha", "bravo", "charlie", "delta"]
        count = 10
        writers = [
            _start_helper("write_notes.py", notes_dir, lock_path, prefix, count)
            for prefix in prefixes
        ]
        try:
            for writer in writers:
                assert writer.stdout is not None
                assert writer.stdout.readline().strip() == "ready"
            for writer in writers:
                assert writer.stdin is not None
                writer.stdin.write("go\n")
                writer.stdin.flush()
            outputs = [writer.communicate(timeout=60)[0].split() for writer in writers]
        finally:
            for writer in writers:
                _stop(writer)

        assert [writer.returncode for writer in writers] == [0, 0, 0, 0]
        assert sorted(output[0] for output in outputs) == ["conflict"] * 3 + ["created"]
        assert all(output[-1] == "done" for output in outputs)
        expected = {f"{prefix}-{n}.md" for prefix in prefixes for n in range(count)}
        assert set(os.listdir(notes_dir)) == expected | {"shared-1ab.md"}
        for name in expected:
            note = parse_note_bytes((notes_dir / name).read_bytes())
            prefix, n = name.removesuffix(".md").split("-")
            assert note.body == f"final {prefix} {n}\n"
        winner = prefixes[[output[0] for output in outputs].index("created")]
        shared = parse_note_bytes((notes_dir / "shared-1ab.md").read_bytes())
        assert shared.body == f"by {winner}\n"
        fresh = NoteStore(notes_dir, scope="project", lock_path=lock_path)
        assert len(fresh.notes()) == len(expected) + 1
        assert fresh.problems() == [] and fresh.stray_temp_files() == []
