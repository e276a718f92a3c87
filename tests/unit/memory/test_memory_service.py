"""The memory tools as a library API (spec 02.1, 02.4, 02.5)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from oharness.errors import (
    ConflictError,
    LimitError,
    NotFoundError,
    SecretError,
    StorageError,
    UnavailableError,
    ValidationError,
)
from oharness.memory.workspace import Workspace
from oharness.notes import snapshot
from oharness.notes.format import Note, parse_note, serialise_note_bytes
from oharness.notes.snapshot import REWRITE_AFTER


def _file(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def test_remember_creates_a_project_note_with_generated_id(workspace: Workspace) -> None:
    result = workspace.service.remember(
        "Deploys happen on Tuesdays", "Release train leaves at noon.", tags="Release, deploy"
    )
    assert result.created and result.changed
    assert re.fullmatch(r"deploys-happen-on-tuesdays-[0-9a-f]{3}", result.id)
    assert result.scope == "project"
    note = parse_note(_file(result.path))
    assert note.tags == ("release", "deploy")
    assert note.type is None
    assert note.body == "Release train leaves at noon.\n"
    assert note.created_at == note.updated_at
    assert result.to_dict()["danglingLinks"] == []
    assert result.to_dict()["related"] == [] and result.to_dict()["likelyDuplicate"] is None


def test_type_decides_the_default_scope(workspace: Workspace, home: Path) -> None:
    user = workspace.service.remember("Prefers terse answers", "Code first.", type="user")
    assert user.scope == "user"
    assert Path(user.path).parent == home / "memory" / "user"
    for kind in ("feedback", "project", "reference"):
        assert workspace.service.remember(f"A {kind} note", "body", type=kind).scope == "project"
    explicit = workspace.service.remember("Holds everywhere", "body", type="feedback", scope="user")
    assert explicit.scope == "user"


def test_exact_duplicate_returns_the_existing_note(workspace: Workspace) -> None:
    first = workspace.service.remember("Same", "Same body", tags=["a"])
    again = workspace.service.remember("Same", "Same body\n", tags="a")
    assert not again.created and again.id == first.id
    assert len(list(Path(first.path).parent.glob("*.md"))) == 1
    other_scope = workspace.service.remember("Same", "Same body", tags=["a"], scope="user")
    assert other_scope.created


def test_exact_duplicate_in_a_new_process_sees_hand_edits(
    open_ws: Callable[..., Workspace], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files here were all just written: let the notes' snapshot hold them all the same.
    monkeypatch.setattr(snapshot, "RACY_WINDOW_NS", -(10**12))
    first = open_ws().service
    kept = first.remember("Kept", "Kept body")
    edited = first.remember("Edited", "Before the edit")
    for number in range(REWRITE_AFTER):
        filler = Note(f"filler-{number}", f"Filler {number}", f"Filler body {number}")
        (Path(kept.path).parent / f"{filler.id}.md").write_bytes(serialise_note_bytes(filler))
    open_ws().service.listing()  # a process that reads every note writes the snapshot
    path = Path(edited.path)
    path.write_text(_file(edited.path).replace("Before the edit", "After the edit"), "utf-8")

    later = open_ws().service  # a new process: the files and the snapshot
    again = later.remember("Kept", "Kept body\n")
    assert not again.created and again.id == kept.id
    by_hand = later.remember("Edited", "After the edit")
    assert not by_hand.created and by_hand.id == edited.id
    old = later.remember("Edited", "Before the edit")
    assert old.created and old.id != edited.id


def test_update_keeps_omitted_fields(workspace: Workspace, clock: Callable[[], int]) -> None:
    service = workspace.service
    first = service.remember("Original", "Body", type="project", tags="a b")
    before = parse_note(_file(first.path))
    updated = service.remember("Changed summary", "Body", id=first.id)
    assert updated.changed and not updated.created and updated.id == first.id
    after = parse_note(_file(first.path))
    assert after.summary == "Changed summary"
    assert after.type == "project" and after.tags == ("a", "b")
    assert after.created_at == before.created_at and after.updated_at > before.updated_at
    service.remember("Changed summary", "Body", id=first.id, tags=[], type=None)
    cleared = parse_note(_file(first.path))
    assert cleared.tags == () and cleared.type is None
    unchanged = service.remember("Changed summary", "Body", id=first.id)
    assert not unchanged.changed
    assert parse_note(_file(first.path)).updated_at == cleared.updated_at


def test_update_never_moves_a_note_and_unknown_ids_are_refused(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Project thing", "body")
    with pytest.raises(ValidationError, match="never moves a note"):
        service.remember("Project thing", "body", id=note.id, scope="user")
    with pytest.raises(NotFoundError, match="no note 'missing-123'"):
        service.remember("x", "y", id="missing-123")
    with pytest.raises(ValidationError, match="invalid note id"):
        service.remember("x", "y", id="../escape")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"summary": "", "body": "b"}, ValidationError, "summary is empty"),
        ({"summary": "two\nlines", "body": "b"}, ValidationError, "line break"),
        ({"summary": "x" * 201, "body": "b"}, ValidationError, "at most 200"),
        ({"summary": "s", "body": "  "}, ValidationError, "body is empty"),
        ({"summary": "s", "body": "x" * 131073}, LimitError, "maxNoteBytes"),
        ({"summary": "s", "body": "b", "type": "todo"}, ValidationError, "unknown note type"),
        (
            {"summary": "s", "body": "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"},
            SecretError,
            "GitHub",
        ),
    ],
)
def test_refusals_write_nothing(
    workspace: Workspace, project_dir: Path, kwargs: dict[str, str], error: type, match: str
) -> None:
    with pytest.raises(error, match=match) as caught:
        workspace.service.remember(**kwargs)  # type: ignore[arg-type]
    assert list((project_dir / "MEMORY").iterdir()) == []
    assert "a1B2c3D4" not in str(caught.value)


def test_max_notes_refuses_new_notes_but_not_updates(
    open_ws: Callable[..., Workspace], project_dir: Path
) -> None:
    (project_dir / ".oharness").mkdir()
    (project_dir / ".oharness" / "config.json").write_text('{"memory": {"maxNotes": 2}}')
    service = open_ws().service
    first = service.remember("One", "1")
    service.remember("Two", "2")
    with pytest.raises(LimitError, match="maxNotes"):
        service.remember("Three", "3")
    assert service.remember("One, updated", "1", id=first.id).changed
    service.forget(first.id)
    assert service.remember("Three", "3").created


def test_case_insensitive_collision_is_refused(workspace: Workspace, project_dir: Path) -> None:
    service = workspace.service
    note = service.remember("Thing", "body")
    upper = note.id.upper()
    text = Path(note.path).read_text().replace(note.id, upper)
    with pytest.raises(ConflictError, match="only by letter"):
        service.store("project").save_bytes(upper, text.encode(), create=True)


def test_links_dangling_outgoing_and_incoming(workspace: Workspace) -> None:
    service = workspace.service
    target = service.remember("Pricing layout", "Grid of three cards.")
    user_note = service.remember("User style", f"Likes [[{target.id}]]", type="user")
    source = service.remember(
        "Pricing borders", f"See [[{target.id}]] and [[not-written-yet]] and [[{user_note.id}]]."
    )
    assert source.dangling_links == ("not-written-yet",)
    view = service.read(source.id)
    links = {link.id: link for link in view.links}
    assert links[target.id].scope == "project" and links[target.id].summary == "Pricing layout"
    assert links[user_note.id].scope == "user"
    assert links["not-written-yet"].to_dict()["summary"] == "missing"
    incoming = service.read(target.id).incoming
    assert {(link.id, link.scope) for link in incoming} == {
        (source.id, "project"),
        (user_note.id, "user"),
    }


def test_links_resolve_in_the_project_scope_first(workspace: Workspace) -> None:
    service = workspace.service
    user_copy = service.remember("Shared name", "user version", type="user")
    project_store = service.store("project")
    text = Path(user_copy.path).read_bytes().replace(b"user version", b"project version")
    project_store.save_bytes(user_copy.id, text, create=True)
    linker = service.remember("Linker", f"see [[{user_copy.id}]]")
    (link,) = service.read(linker.id).links
    assert link.scope == "project"
    with pytest.raises(ConflictError, match="both the project and the user scope"):
        service.read(user_copy.id)
    assert service.read(user_copy.id, "user").body == "user version\n"


def test_listing_is_newest_first_and_paged(workspace: Workspace) -> None:
    service = workspace.service
    ids = [service.remember(f"Note {index}", f"body {index}").id for index in range(5)]
    service.remember("User note", "u", type="user")
    page = service.listing(0, 4)
    assert page.total == 6 and page.next_offset == 4
    assert page.items[0].scope == "user"
    assert [item.id for item in page.items[1:]] == ids[::-1][:3]
    assert page.items[0].line().startswith("- [user] User note (user:")
    rest = service.listing(4, 4)
    assert [item.id for item in rest.items] == ids[:2][::-1] and rest.next_offset is None


def test_forget_backs_up_first_and_restore_brings_it_back(workspace: Workspace, home: Path) -> None:
    service = workspace.service
    note = service.remember("To forget", "precious body")
    original = Path(note.path).read_bytes()
    result = service.forget(note.id)
    assert not Path(note.path).exists()
    (record,) = service.backups().recent()
    assert record.backup_id == result.backup_id and record.reason == "forget"
    assert record.path.read_bytes() == original
    assert record.scope_key is not None and record.scope_key.startswith("project:")
    restored = service.restore(result.backup_id)
    assert restored.changed and restored.replaced_backup_id is None
    assert Path(note.path).read_bytes() == original


def test_restore_backs_up_a_different_current_version(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Versioned", "version one")
    backup = service.backup(service.find(note.id), "task-update")
    service.remember("Versioned", "version two", id=note.id)
    newer = Path(note.path).read_bytes()
    result = service.restore(backup.backup_id)
    assert result.replaced_backup_id is not None
    assert service.backups().get(result.replaced_backup_id).path.read_bytes() == newer
    assert service.read(note.id).body == "version one\n"
    again = service.restore(backup.backup_id)
    assert not again.changed


def test_bare_legacy_backup_is_restorable(workspace: Workspace, home: Path) -> None:
    backups = home / "memory-backups"
    backups.mkdir()
    (backups / "old-export.md").write_text(
        '---\n{"id":"legacy-1ab","summary":"Legacy","tags":[]}\n---\nfrom before\n'
    )
    (record,) = workspace.service.backups().recent()
    assert record.reason == "unknown" and record.note_id == "legacy-1ab"
    result = workspace.service.restore(record.backup_id)
    assert result.scope == "project"
    assert workspace.service.read("legacy-1ab").body == "from before\n"


def test_forget_missing_and_ambiguous(workspace: Workspace) -> None:
    with pytest.raises(NotFoundError):
        workspace.service.forget("nope-000")


def test_edit_applies_remember_rules(workspace: Workspace) -> None:
    service = workspace.service
    note = service.remember("Editable", "body", tags="a")
    text = Path(note.path).read_text()
    edited = text.replace('"summary":"Editable"', '"summary":"Edited","extraKey":1')
    result = service.apply_edit(note.id, "project", edited.replace('"a"', '"A, b"'))
    assert result.changed
    stored = service.read(note.id)
    assert stored.summary == "Edited" and stored.tags == ("a", "b")
    assert stored.extra == {"extraKey": 1}
    with pytest.raises(ValidationError, match="cannot be renamed"):
        service.apply_edit(note.id, "project", text.replace(note.id, "other-id"))
    with pytest.raises(ValidationError, match="cannot be read"):
        service.apply_edit(note.id, "project", "not a note")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_home_degrades_to_project_notes_only(
    open_ws: Callable[..., Workspace], home: Path
) -> None:
    home.chmod(0o500)
    try:
        workspace = open_ws()
        _assert_degraded(workspace)
    finally:
        home.chmod(0o700)


def test_unusable_home_degrades_to_project_notes_only(
    open_ws: Callable[..., Workspace], home: Path
) -> None:
    # A file where the user notes folder should be: cannot be created even as root.
    (home / "memory").write_text("not a folder")
    _assert_degraded(open_ws())


def _assert_degraded(workspace: Workspace) -> None:
    assert workspace.service.available_scopes() == ["project"]
    assert sum("user notes, backups" in warning for warning in workspace.warnings) == 1
    note = workspace.service.remember("Still works", "project notes work")
    assert note.scope == "project"
    with pytest.raises(UnavailableError, match="OHARNESS_HOME"):
        workspace.service.remember("User", "x", type="user")
    with pytest.raises(UnavailableError, match="backups need a writable"):
        workspace.service.forget(note.id)
    assert Path(note.path).exists()


def test_unregistered_directory_reads_user_scope_only(
    open_ws: Callable[..., Workspace], project_dir: Path
) -> None:
    workspace = open_ws(register=False)
    assert workspace.service.available_scopes() == ["user"]
    assert not (project_dir / ".oharness").exists()
    assert any("showing user notes only" in warning for warning in workspace.warnings)
    with pytest.raises(UnavailableError, match=r"no registered project at .*oharness project init"):
        workspace.service.remember("Project", "x")


def test_an_id_in_both_scopes_is_updated_in_the_scope_named(workspace: Workspace) -> None:
    service = workspace.service
    user_copy = service.remember("Shared name", "user version", type="user")
    text = Path(user_copy.path).read_bytes().replace(b"user version", b"project version")
    service.store("project").save_bytes(user_copy.id, text, create=True)
    updated = service.remember("Shared name", "user version, edited", id=user_copy.id, scope="user")
    assert updated.scope == "user" and updated.changed
    assert service.read(user_copy.id, "project").body == "project version\n"
    with pytest.raises(ConflictError, match="both the project and the user scope"):
        service.remember("Shared name", "ambiguous", id=user_copy.id)


def test_links_by_stem_and_by_summary_resolve_both_ways(workspace: Workspace) -> None:
    """The three link forms of notes/links.py, through the service the CLI and tools use."""
    service = workspace.service
    target = service.remember("Payments go through the adapter", "All of them.")
    stem = target.id.rsplit("-", 1)[0]
    by_stem = service.remember("Checkout", f"See [[{stem}]].")
    by_summary = service.remember("Refunds", "See [[Payments go through the adapter]].")
    assert by_stem.dangling_links == () and by_summary.dangling_links == ()
    (link,) = service.read(by_stem.id).links
    assert (link.id, link.target, link.scope) == (target.id, stem, "project")
    (link,) = service.read(by_summary.id).links
    assert link.id == target.id and link.summary == "Payments go through the adapter"
    incoming = {item.id for item in service.read(target.id).incoming}
    assert incoming == {by_stem.id, by_summary.id}


def test_a_write_that_fails_leaves_no_backup_of_a_change_never_made(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only or full notes folder: remember and forget fail, the note is unchanged, and
    the backup list shows no change; a write that failed after changing the file keeps it."""
    from oharness.notes.store import NoteStore

    service = workspace.service
    note = service.remember("Deploys on Tuesdays", "Noon.")
    before = service.recent_backups()

    def refused(*args: object, **kwargs: object) -> None:
        raise StorageError("could not write: Operation not permitted")

    with monkeypatch.context() as patched:
        patched.setattr(NoteStore, "save", refused)
        patched.setattr(NoteStore, "delete", refused)
        with pytest.raises(StorageError):
            service.remember("Deploys on Wednesdays", "Noon.", id=note.id)
        with pytest.raises(StorageError):
            service.forget(note.id)
    assert service.recent_backups() == before
    assert service.find(note.id).note.summary == "Deploys on Tuesdays"

    real_save = NoteStore.save

    def saved_then_failed(self: NoteStore, *args: object, **kwargs: object) -> None:
        real_save(self, *args, **kwargs)  # type: ignore[arg-type]
        raise StorageError("the folder could not be synced to disk")

    monkeypatch.setattr(NoteStore, "save", saved_then_failed)
    with pytest.raises(StorageError):
        service.remember("Deploys on Thursdays", "Noon.", id=note.id)
    kept = service.recent_backups()
    assert len(kept) == len(before) + 1 and kept[0].reason == "remember-update"
