"""Two clones of one repository on one machine are two replicas of one project: each keeps its
own sync state and they converge with a second machine through a real ``oharness sync-server
serve``; a folder copied by hand stays paused; an upgrade takes over the state an earlier
release kept per project; a moved clone is followed and a clone made again where one was
deleted never deletes notes on the server."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repos import git
from sync_support import sync_server_process

OHARNESS = Path(sys.executable).with_name("oharness")
SECRET = "clone-sync-secret-0123456789abcdef0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    storage = tmp_path_factory.mktemp("storage")
    with sync_server_process(
        storage, SECRET, log=storage.parent / "server.log", rate_per_minute=600
    ) as origin:
        yield origin


class Folder:
    """One project folder on one machine (an ``OHARNESS_HOME``), driven through the CLI."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        environment = {k: v for k, v in os.environ.items() if k != "OHARNESS_TOKEN"}
        environment.update({"OHARNESS_HOME": str(self.home), **env})
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def ok(self, *args: str, **env: str) -> str:
        result = self.run(*args, **env)
        assert result.returncode == 0, (result.stdout, result.stderr)
        return result.stdout

    def sync(self) -> dict[str, Any]:
        """``sync now --json``: the project scope's pass."""
        data = json.loads(self.ok("sync", "now", "--json"))
        return {scope["scope"]: scope for scope in data["scopes"]}["project"]  # type: ignore[no-any-return]

    def remember(self, summary: str, body: str, note_id: str | None = None) -> str:
        extra = ("--id", note_id) if note_id else ()
        out = self.ok("memory", "remember", "-s", summary, "-b", body, *extra, "--json")
        saved = json.loads(out)
        return str(saved["id"])

    def notes(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((self.root / "MEMORY").glob("*.md"))}


def _login(server: str, *homes: Path) -> None:
    probe = Folder(homes[0], homes[0])
    token = probe.ok(
        "sync-server", "token", "--user", "alice", "--plan", "paid", OHARNESS_SYNC_JWT_SECRET=SECRET
    ).strip()
    for home in homes:
        Folder(home, home).ok("login", "--origin", server, "--token", token)


@pytest.fixture
def world(tmp_path: Path, server: str) -> dict[str, Folder]:
    """A repository with one commit; two clones on machine a, one on machine b, registered."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / "README.md").write_text("hello\n")
    git(upstream, "add", "README.md")
    git(upstream, "commit", "-q", "-m", "root")
    homes = {"a": tmp_path / "home-a", "b": tmp_path / "home-b"}
    for home in homes.values():
        home.mkdir()
    _login(server, *homes.values())
    found = {}
    for name, machine in (("one", "a"), ("two", "a"), ("far", "b")):
        git(tmp_path, "clone", "-q", str(upstream), name)
        found[name] = Folder(tmp_path / name, homes[machine])
        found[name].ok("project", "init")
    return found


def _project_id(folder: Folder) -> str:
    data = json.loads((folder.root / ".oharness" / "project.json").read_text())
    return str(data["id"])


def _state_folders(home: Path) -> list[Path]:
    """The sync state folders of project notes in ``home``."""
    return sorted(
        path.parent
        for path in (home / "memory-sync").glob("*/state.json")
        if json.loads(path.read_text())["scopeKey"].startswith("project:")
    )


def test_two_clones_on_one_machine_and_another_machine_converge(world: dict[str, Folder]) -> None:
    one, two, far = world["one"], world["two"], world["far"]
    assert _project_id(one) == _project_id(two) == _project_id(far)
    assert _project_id(one).startswith("git-")
    first = one.remember("Deploys happen on Tuesdays", "At noon.")
    assert one.sync()["pushed"] == [first]
    pulled = two.sync()
    assert pulled["paused"] is None and pulled["pulled"] == [first]
    two.remember("Deploys happen on Tuesdays", "At noon, after the standup.", note_id=first)
    assert two.sync()["pushed"] == [first]
    second = far.remember("The staging database is Postgres 16", "Upgraded in March.")
    far_pass = far.sync()
    assert far_pass["pulled"] == [first] and far_pass["pushed"] == [second]
    assert sorted(one.sync()["pulled"]) == sorted([first, second])
    assert two.sync()["pulled"] == [second]
    assert one.notes() == two.notes() == far.notes()
    assert b"after the standup" in one.notes()[f"{first}.md"]
    for folder in (one, two, far):
        status = json.loads(folder.ok("sync", "status", "--json"))["scopes"]
        project = {scope["scope"]: scope for scope in status}["project"]
        assert project["paused"] is None and project["conflicts"] == []
    assert len(_state_folders(one.home)) == 2  # one state per clone


def test_a_folder_copied_by_hand_is_still_paused(world: dict[str, Folder], tmp_path: Path) -> None:
    one = world["one"]
    plain = Folder(tmp_path / "plain", one.home)
    plain.root.mkdir()
    plain.ok("project", "init")
    assert _project_id(plain).startswith("p-")
    plain.remember("A plain folder's note", "Kept here.")
    assert plain.sync()["paused"] is None
    copy = Folder(tmp_path / "plain-copy", one.home)
    shutil.copytree(plain.root, copy.root)
    result = copy.run("sync", "now")
    assert "is a copy of" in result.stdout and "reset-id" in result.stdout
    # A git repository carrying the marker of another repository is a copy too.
    one.remember("Clone one's note", "x")
    one.sync()
    other = tmp_path / "other-repo"
    other.mkdir()
    git(other, "init", "-q")
    git(other, "commit", "-q", "--allow-empty", "-m", "another root")
    shutil.copytree(one.root / ".oharness", other / ".oharness")
    shutil.copytree(one.root / "MEMORY", other / "MEMORY")
    assert "is a copy of" in Folder(other, one.home).run("sync", "now").stdout


def test_an_upgrade_takes_over_the_first_folders_state(world: dict[str, Folder]) -> None:
    one, far = world["one"], world["far"]
    kept = one.remember("Kept on one", "line")
    moving = one.remember("Edited far away", "line")
    one.sync(), far.sync()
    # What an earlier release left: one state per project, keyed by the scope alone.
    (state,) = _state_folders(one.home)
    scope_key = f"project:{_project_id(one)}"
    legacy = state.with_name(hashlib.sha256(scope_key.encode()).hexdigest())
    data = json.loads((state / "state.json").read_text())
    data.pop("folderId")
    (state / "state.json").write_text(json.dumps(data))
    state.rename(legacy)
    one.remember("Kept on one", "line, edited on one", note_id=kept)
    far.remember("Edited far away", "line, edited far away", note_id=moving)
    far.sync()
    upgraded = one.sync()
    assert upgraded["pushed"] == [kept] and upgraded["pulled"] == [moving]
    assert upgraded["conflicts"] == [] and upgraded["reset"] is False
    assert not legacy.exists() and _state_folders(one.home) == [state]
    assert not list((one.home / "memory-backups").glob("**/*conflict*"))


def test_a_moved_clone_is_followed_and_a_new_clone_deletes_nothing(
    world: dict[str, Folder], tmp_path: Path
) -> None:
    one, far = world["one"], world["far"]
    ids = [one.remember(f"Note {index}", f"body {index}") for index in range(3)]
    one.sync(), far.sync()
    moved = Folder(tmp_path / "one-moved", one.home)
    one.root.rename(moved.root)
    edited = moved.remember("Note 0", "body 0, edited after the move", note_id=ids[0])
    followed = moved.sync()
    assert followed["paused"] is None and followed["pushed"] == [edited]
    assert len(_state_folders(one.home)) == 1
    # Deleted and replaced by a new clone: it never held the notes (they were not committed),
    # so they come back instead of being deleted on the server.
    git(tmp_path, "clone", "-q", str(tmp_path / "upstream"), "fresh")
    shutil.rmtree(moved.root)
    (tmp_path / "fresh").rename(moved.root)
    moved.ok("project", "init")
    again = moved.sync()
    assert sorted(again["pulled"]) == sorted(ids) and again["pushed"] == []
    far.sync()
    assert sorted(far.notes()) == sorted(f"{note_id}.md" for note_id in ids)


def test_a_clone_made_again_with_its_marker_committed_deletes_nothing(
    world: dict[str, Folder], tmp_path: Path
) -> None:
    """The project's marker is committed, its notes are not: a clone deleted and cloned again
    has the marker and no notes folder at all. Its first pass (a sync, or any command the
    daemon follows) brings the notes back; it never uploads their deletion."""
    one, far = world["one"], world["far"]
    upstream = tmp_path / "upstream"
    shutil.copytree(one.root / ".oharness", upstream / ".oharness")
    git(upstream, "add", ".oharness")
    git(upstream, "commit", "-q", "-m", "the project's marker")
    ids = [far.remember(f"Kept note {index}", f"body {index}") for index in range(2)]
    far.sync()
    git(tmp_path, "clone", "-q", str(upstream), "again")
    again = Folder(tmp_path / "again", one.home)
    assert again.sync()["pulled"] and (again.root / "MEMORY").is_dir()
    shutil.rmtree(again.root)
    git(tmp_path, "clone", "-q", str(upstream), "again")
    assert not (again.root / "MEMORY").exists() and (again.root / ".oharness").is_dir()
    back = again.sync()
    assert back["pushed"] == [] and set(ids) <= set(back["pulled"])
    far.sync()
    assert {f"{note_id}.md" for note_id in ids} <= set(far.notes())


def test_worktrees_of_a_bare_clone_beside_a_clone_sync_as_one_more_replica(
    world: dict[str, Folder], tmp_path: Path
) -> None:
    """A bare clone with a worktree on a machine that already has a clone of the project: the
    bare repository holds the worktrees' notes and syncs as one more replica, never paused as
    "a copy" (it is a clone of the same repository)."""
    one = world["one"]
    kept = one.remember("Deploys happen on Tuesdays", "Noon.")
    one.sync()
    bare = tmp_path / "shop.git"
    git(tmp_path, "clone", "-q", "--bare", str(tmp_path / "upstream"), str(bare))
    git(bare, "worktree", "add", "-q", str(tmp_path / "shop-wt"), "-b", "feature")
    worktree = Folder(tmp_path / "shop-wt", one.home)
    first = worktree.sync()
    assert first["paused"] is None and first["pulled"] == [kept]
    assert (bare / "MEMORY" / f"{kept}.md").is_file()
