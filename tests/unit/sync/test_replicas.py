"""Which sync state a notes folder starts from (spec 07.1, amended): an earlier release's state
of the folder, a moved folder's state, a fresh one, or the other folder that holds the project."""

from __future__ import annotations

import json
import os
from pathlib import Path

from repos import git

from oharness.project.paths import folder_state_key, scope_key_digest
from oharness.sync.replicas import (
    claim,
    folder_id,
    is_git_clone,
    take_over,
)

PROJECT = "p-0123456789abcdef0123456789abcdef"
KEY = f"project:{PROJECT}"


def _project(root: Path, project_id: str = PROJECT) -> Path:
    (root / ".oharness").mkdir(parents=True)
    (root / ".oharness" / "project.json").write_text(json.dumps({"id": project_id}))
    (root / "MEMORY").mkdir()
    return root / "MEMORY"


def _state(sync_dir: Path, key: str, directory: Path, **extra: object) -> Path:
    folder = sync_dir / scope_key_digest(key)
    folder.mkdir(parents=True)
    data = {"format": 1, "scopeKey": KEY, "directory": str(directory), **extra}
    (folder / "state.json").write_text(json.dumps(data))
    return folder


def test_the_state_key_names_the_folder_for_projects_only(tmp_path: Path) -> None:
    notes = _project(tmp_path / "repo")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "repo")
    assert folder_state_key(KEY, notes) == folder_state_key(KEY, link / "MEMORY")
    assert folder_state_key(KEY, notes) == f"{KEY}@{os.path.realpath(notes)}"
    assert folder_state_key("user", notes) == "user"


def test_an_earlier_releases_state_of_this_folder_is_taken_over(tmp_path: Path) -> None:
    notes, sync_dir = _project(tmp_path / "repo"), tmp_path / "sync"
    legacy = _state(sync_dir, KEY, notes)
    found = claim(sync_dir, KEY, notes, PROJECT)
    assert found.adopt is not None and found.adopt.folder == legacy
    own = sync_dir / scope_key_digest(folder_state_key(KEY, notes))
    own.mkdir()
    (own / "status.json").write_text("{}")  # written before any pass: replaced
    assert take_over(found.adopt, own)
    assert (own / "state.json").exists() and not legacy.exists()


def test_a_moved_folder_takes_its_state_and_a_new_one_does_not(tmp_path: Path) -> None:
    sync_dir = tmp_path / "sync"
    notes = _project(tmp_path / "moved")
    gone = tmp_path / "old" / "MEMORY"
    _state(sync_dir, f"{KEY}@{gone}", gone, folderId=folder_id(notes))
    found = claim(sync_dir, KEY, notes, PROJECT)
    assert found.adopt is not None and found.adopt.directory == str(gone)
    other = _project(tmp_path / "cloned-anew")
    assert claim(sync_dir, KEY, other, PROJECT).adopt is None


def test_another_live_folder_of_the_project_is_named(tmp_path: Path) -> None:
    sync_dir = tmp_path / "sync"
    original = _project(tmp_path / "original")
    _state(sync_dir, f"{KEY}@{original}", original)
    copy = _project(tmp_path / "copy")
    found = claim(sync_dir, KEY, copy, PROJECT)
    assert found.adopt is None and found.other == original
    # Its marker names another project now (reset-id): no longer a folder of this one.
    (tmp_path / "original" / ".oharness" / "project.json").write_text('{"id": "p-other"}')
    assert claim(sync_dir, KEY, copy, PROJECT).other is None


def test_a_clone_is_a_git_repository_whose_id_is_its_own_root_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "root")
    root = git(repo, "rev-parse", "HEAD")
    assert is_git_clone(repo, f"git-{root}")
    assert not is_git_clone(repo, "git-" + "0" * 40)  # another repository's marker
    assert not is_git_clone(repo, PROJECT)  # a random id: a copy made by hand
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not is_git_clone(plain, f"git-{root}")  # the marker without the repository
    assert not is_git_clone(None, f"git-{root}")


def test_a_folder_made_anew_where_one_was_is_another_folder_even_with_its_inode(
    tmp_path: Path,
) -> None:
    """A move keeps the folder's identity; a clone deleted and made again at the same path
    does not, even when the file system hands the new notes folder the old one's inode
    number (kept here by leaving the notes folder itself in place): the new clone's marker
    is written anew."""
    root = tmp_path / "shop"
    (root / ".oharness").mkdir(parents=True)
    (root / "MEMORY").mkdir()
    marker = root / ".oharness" / "project.json"
    marker.write_text('{"id": "p-1"}', encoding="utf-8")
    before = folder_id(root / "MEMORY")
    moved = tmp_path / "moved"
    root.rename(moved)
    assert folder_id(moved / "MEMORY") == before
    replacement = moved / ".oharness" / "project.json.new"
    replacement.write_text('{"id": "p-1"}', encoding="utf-8")
    os.replace(replacement, moved / ".oharness" / "project.json")
    assert folder_id(moved / "MEMORY") != before
    assert folder_id(tmp_path / "nothing-here") is None
