"""The daemon hosts the projects this machine used: gone or unregistered folders lose their
mark, a second folder of a hosted project is left alone, a second look adds nothing, and a
project removed through the API is no longer followed."""

from __future__ import annotations

import shutil
from pathlib import Path

from daemon_support import project_daemon

from oharness.daemon.background.following import ProjectFollower
from oharness.memory.workspace import open_workspace
from oharness.project.paths import HomeLayout
from oharness.project.used import used_projects


def _used(home: Path, name: Path) -> None:
    name.mkdir()
    open_workspace(name, home, register=True).close()


def test_every_project_used_here_is_hosted_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with project_daemon(tmp_path) as daemon:
        for name in ("other", "gone", "unregistered"):
            _used(home, tmp_path / name)
        shutil.rmtree(tmp_path / "gone")
        shutil.rmtree(tmp_path / "unregistered" / ".oharness")
        clone = tmp_path / "clone"  # a second folder of the daemon's own project
        (clone / ".oharness").mkdir(parents=True)
        shutil.copy(tmp_path / "project" / ".oharness" / "project.json", clone / ".oharness")
        open_workspace(clone, home, register=False).close()
        follower = ProjectFollower(daemon.state.registry, home)

        assert follower.follow() == [(tmp_path / "other").resolve()]
        hosted = {hosted.root.resolve() for hosted in daemon.state.registry.all()}
        assert hosted == {(tmp_path / name).resolve() for name in ("project", "other")}
        marked = {used.root.name for used in used_projects(HomeLayout(home))}
        assert marked == {"project", "other", "clone"}
        assert follower.follow() == []
        other = next(h for h in daemon.state.registry.all() if h.root.name == "other")
        with daemon.client() as http:  # removed by hand: no longer followed
            assert http.delete(f"/workspaces/{other.project_id}").status_code == 200
        assert "other" not in {used.root.name for used in used_projects(HomeLayout(home))}
        assert follower.follow() == []
