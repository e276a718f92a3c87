"""Finding and registering projects (spec 01.4, 01.8) and memory.dir (01.3)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from repos import git

from oharness.errors import ConfigError, ProjectError
from oharness.notes.ids import random_hex
from oharness.project.config import load_settings
from oharness.project.identity import (
    find_project,
    git_root_commit,
    register_project,
    resolve_memory_dir,
)


def test_git_project_id_is_the_root_commit(project_dir: Path, home: Path) -> None:
    git(project_dir, "init", "-q")
    git(project_dir, "commit", "-q", "--allow-empty", "-m", "first")
    root = git(project_dir, "rev-list", "--max-parents=0", "HEAD")
    git(project_dir, "commit", "-q", "--allow-empty", "-m", "second")
    identity = register_project(project_dir, home, clock=lambda: 5, hex_source=random_hex)
    assert identity.id == f"git-{root}"
    assert identity.created_at == 5
    for name in ("MEMORY", "ARTIFACTS", ".oharness"):
        assert (project_dir / name).is_dir()
    # Written once: a later registration does not recompute it.
    (project_dir / ".oharness" / "project.json").write_text('{"id": "git-kept", "createdAt": 1}')
    assert register_project(project_dir, home, clock=lambda: 9, hex_source=random_hex).id == (
        "git-kept"
    )


def test_git_repository_without_commits_gets_a_random_id(project_dir: Path, home: Path) -> None:
    git(project_dir, "init", "-q")
    assert git_root_commit(project_dir) is None
    identity = register_project(project_dir, home, clock=lambda: 1, hex_source=lambda n: "a" * n)
    assert identity.id == "p-" + "a" * 32


def test_plain_folder_gets_p_random_id(project_dir: Path, home: Path) -> None:
    identity = register_project(project_dir, home, clock=lambda: 1, hex_source=random_hex)
    assert identity.id.startswith("p-") and len(identity.id) == 34
    data = json.loads((project_dir / ".oharness" / "project.json").read_text())
    assert data == {"id": identity.id, "createdAt": 1}


def test_concurrent_registrations_agree_on_one_id(project_dir: Path, home: Path) -> None:
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def register() -> None:
        barrier.wait()
        ids.append(register_project(project_dir, home, clock=lambda: 1, hex_source=random_hex).id)

    threads = [threading.Thread(target=register) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 1


def test_project_is_found_from_any_subdirectory(project_dir: Path, home: Path) -> None:
    register_project(project_dir, home, clock=lambda: 1, hex_source=random_hex)
    deep = project_dir / "src" / "pkg"
    deep.mkdir(parents=True)
    location = find_project(deep, home)
    assert location is not None and location.root == project_dir.resolve()
    assert location.registered


def test_unregistered_git_top_level_then_current_directory(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    git(repo, "init", "-q")
    location = find_project(repo / "a" / "b", home)
    assert location is not None and location.root == repo.resolve() and not location.registered
    plain = tmp_path / "plain" / "x"
    plain.mkdir(parents=True)
    location = find_project(plain, home)
    assert location is not None and location.root == plain.resolve()


def test_home_is_never_a_project(tmp_path: Path) -> None:
    home = tmp_path / "user" / ".oharness"
    (home / "memory").mkdir(parents=True)
    (home / "project.json").write_text("{}")
    assert find_project(home / "memory", home) is None
    # A folder containing the home as its '.oharness' is not a project because of it.
    (home / "project.json").unlink()
    (home / "project.json").write_text('{"id": "p-x"}')
    location = find_project(tmp_path / "user", home)
    assert location is not None and not location.registered
    with pytest.raises(ProjectError, match="never a project"):
        register_project(home, home, clock=lambda: 1, hex_source=random_hex)


def test_memory_dir_rules(project_dir: Path) -> None:
    assert resolve_memory_dir(project_dir, None, "c") == project_dir / "MEMORY"
    assert resolve_memory_dir(project_dir, "docs/memory", "c") == project_dir / "docs/memory"
    for bad in ["/abs/path", "../outside", "docs/../../x", "."]:
        with pytest.raises(ProjectError, match=r"memory\.dir"):
            resolve_memory_dir(project_dir, bad, "c")


def test_config_files_are_read_and_broken_ones_named(tmp_path: Path, project_dir: Path) -> None:
    user = tmp_path / "config.json"
    user.write_text('{"memory": {"maxNotes": 7}}')
    (project_dir / ".oharness").mkdir()
    (project_dir / ".oharness" / "config.json").write_text('{"memory": {"indexChars": 9}}')
    settings = load_settings(user, project_dir)
    assert settings.memory.max_notes == 7 and settings.memory.index_chars == 9
    user.write_text("{broken")
    with pytest.raises(ConfigError, match=r"config\.json: not valid JSON"):
        load_settings(user, project_dir)
