"""A daemon signed in to a real sync server on loopback, and a second device (imported by bare
name): the browser tests of Cloud sync and Conflicts.

- The sync server is the real app (:mod:`oharness.server`) over file storage, served by uvicorn
  on a free loopback port; both devices hold a development token for the same account.
- Device A is the daemon the browser looks at (background sync on, its own home and project).
- Device B is a second home with a copy of the project's identity, driven through the library
  (:class:`SyncService` passes), so its edits reach the server the way another machine's would.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SERVER_HELPERS = Path(__file__).resolve().parent.parent / "integration" / "server"
if str(_SERVER_HELPERS) not in sys.path:
    sys.path.insert(0, str(_SERVER_HELPERS))

import httpx2  # noqa: E402
from daemon_support import LiveDaemon, live_daemon  # noqa: E402
from playwright.sync_api import Browser  # noqa: E402
from sync_server_support import live_server, make_settings, token_for  # noqa: E402

from oharness.daemon import DaemonOptions  # noqa: E402
from oharness.memory.workspace import Workspace, open_workspace, wall_clock_ms  # noqa: E402
from oharness.project.paths import HomeLayout  # noqa: E402
from oharness.storage.file import FileObjectStore  # noqa: E402
from oharness.sync.result import PassResult  # noqa: E402
from oharness.sync.settings_file import SyncSettingsFile  # noqa: E402
from oharness.sync.sync_service import SyncService, sync_targets  # noqa: E402


def wait_until(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something truthy (a loaded machine gets the margin)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@dataclass
class CloudWorld:
    daemon: LiveDaemon
    home: Path
    project: Path
    other_home: Path
    other_project: Path
    origin: str
    storage_state: dict[str, Any]

    @property
    def url(self) -> str:
        return self.daemon.url

    def rest(self) -> httpx2.Client:
        """The daemon's REST API with its bearer token."""
        return self.daemon.client()

    @contextlib.contextmanager
    def device(self, which: str = "a") -> Iterator[Workspace]:
        """A workspace on device A's folders (beside the daemon) or device B's."""
        home, project = (
            (self.home, self.project) if which == "a" else (self.other_home, self.other_project)
        )
        workspace = open_workspace(project, home, register=False)
        try:
            yield workspace
        finally:
            workspace.close()

    def sync_other(self) -> list[PassResult]:
        """One pass of device B over both its scopes; fails the test on a refused pass."""
        results = []
        with self.device("b") as workspace:
            service = SyncService(
                workspace.home,
                backups=workspace.service.backups(),
                clock=wall_clock_ms,
            )
            for target in sync_targets(workspace):
                report = service.run(target)
                assert report.result is not None, (report.paused, report.error)
                results.append(report.result)
        return results

    def sync_daemon(self) -> dict[str, Any]:
        """``POST /sync/now`` on the daemon (what its scheduler would do a little later)."""
        with self.rest() as http:
            response = http.post("/sync/now")
            assert response.status_code == 200, response.text
            data: dict[str, Any] = response.json()
            return data

    def conflicts(self) -> list[dict[str, Any]]:
        with self.rest() as http:
            found: list[dict[str, Any]] = http.get("/sync/conflicts").json()["conflicts"]
            return found

    def files(self, which: str = "a") -> dict[str, str]:
        folder = (self.project if which == "a" else self.other_project) / "MEMORY"
        return {path.stem: path.read_text("utf-8") for path in sorted(folder.glob("*.md"))}


@contextlib.contextmanager
def cloud_world(root: Path, browser: Browser) -> Iterator[CloudWorld]:
    """Both devices signed in to one live sync server; the browser signed in to device A."""
    home, project = root / "home-a", root / "project-a"
    other_home, other_project = root / "home-b", root / "project-b"
    project.mkdir()
    other_project.mkdir()
    open_workspace(project, home, register=True).close()
    (other_project / ".oharness").mkdir()
    shutil.copy(project / ".oharness" / "project.json", other_project / ".oharness")
    open_workspace(other_project, other_home, register=True).close()
    store = FileObjectStore(root / "storage")
    with live_server(store, make_settings()) as server:
        token = token_for("ann", plan="paid", expires_in=24 * 3600)
        for each in (home, other_home):
            SyncSettingsFile(HomeLayout(each)).login(server.url, token)
        options = DaemonOptions(home=home, start=project, watch_seconds=0.2)
        with live_daemon(options) as daemon:
            context = browser.new_context(base_url=daemon.url)
            try:
                page = context.new_page()
                link = daemon.state.auth.page_url(daemon.url)
                assert link is not None
                page.goto(link)
                page.wait_for_url("**/memory/**")
                storage = dict(context.storage_state())
            finally:
                context.close()
            yield CloudWorld(daemon, home, project, other_home, other_project, server.url, storage)
