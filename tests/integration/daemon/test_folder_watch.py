"""The daemon's one folder watch: each tick walks every hosted folder once, however many watchers
(background sync, the page's note watcher) want it, and each still announces what it did
before — sync a write to upload, the page ``notes_changed``; a write that lands while a pass
runs is uploaded by the next pass."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sync_server_support import token_for
from watch_support import Seconds, Walks

from oharness.daemon import DaemonOptions, create_app
from oharness.daemon.background.folder_watch import FolderWatch
from oharness.daemon.background.note_watch import NOTES_CHANGED, NoteWatcher
from oharness.daemon.background.sync import DaemonSync
from oharness.daemon.events import Subscription
from oharness.daemon.state import DaemonState
from oharness.memory.workspace import open_workspace, wall_clock_ms
from oharness.project.paths import HomeLayout
from oharness.sync.coordinator import WRITE_DEBOUNCE_MS
from oharness.sync.result import PassResult
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import PassReport, SyncTarget


@pytest.fixture
def state(tmp_path: Path) -> Iterator[DaemonState]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    SyncSettingsFile(HomeLayout(home)).login("http://127.0.0.1:9", token_for("ann"))
    options = DaemonOptions(home=home, start=project, background_sync=False, watch_seconds=0)
    app = create_app(options)  # never served: no thread of its own runs
    daemon_state: DaemonState = app.state.daemon
    try:
        yield daemon_state
    finally:
        asyncio.run(daemon_state.registry.close())


@pytest.fixture
def listening(state: DaemonState) -> Iterator[Subscription]:
    """A subscriber on the bus (its loop open, never run: events wait in its queue)."""
    loop = asyncio.new_event_loop()

    async def subscribe() -> Subscription:
        return state.bus.subscribe()

    try:
        yield loop.run_until_complete(subscribe())
    finally:
        loop.close()


def test_one_tick_walks_each_folder_once_for_both_watchers(
    state: DaemonState, listening: Subscription
) -> None:
    hosted = state.registry.default
    sync = DaemonSync(hosted, state.bus, clock=wall_clock_ms, token=None)  # its loop not started
    sync.add(hosted)
    page = NoteWatcher(state, 0.2)
    walks, seconds = Walks(), Seconds()
    watch = FolderWatch(signature=walks, monotonic=seconds)
    watch.add(sync)
    watch.add(page)
    folders = {
        store.directory
        for store in (hosted.workspace.service.store(s) for s in ("project", "user"))
    }

    walked = watch.tick()  # both due: sync signs in and schedules, the page takes its baseline
    assert set(walked) == folders
    assert walks.counts == Counter({folder: 1 for folder in folders})
    assert {target.scope for target in sync.coordinator.targets()} == {"project", "user"}

    writer = open_workspace(hosted.root, state.options.home, register=False)  # another process
    try:
        writer.service.remember("Deploys go out on Tuesdays", "At noon.\n", scope="project")
    finally:
        writer.close()
    for tick in range(1, 6):  # the page every 0.2 s, sync once a second: still one walk a tick
        seconds.now += 0.2
        watch.tick()
        assert walks.counts == Counter({folder: tick + 1 for folder in folders})

    announced = [event for event in listening.events if event.type == NOTES_CHANGED]
    assert [(event.data["scope"], event.workspace) for event in announced] == [
        ("project", hosted.project_id)
    ]
    due = sync.coordinator.due(wall_clock_ms() + WRITE_DEBOUNCE_MS + 1)
    assert [target.scope for target in due if target.scope == "project"] == ["project"]


def test_a_watcher_that_fails_leaves_the_other_its_look(
    state: DaemonState, listening: Subscription
) -> None:
    class Broken:
        interval = 1.0

        def folders(self) -> list[Path]:
            raise RuntimeError("a bad look")

        def observe(self, signatures: object) -> None:
            raise AssertionError("never called after a failed look")

    page, seconds = NoteWatcher(state, 1.0), Seconds()
    watch = FolderWatch(monotonic=seconds)
    watch.add(Broken())
    watch.add(page)
    assert watch.tick()  # the page's folders were walked all the same
    project = state.registry.default.workspace.service.store("project").directory
    (project / "hand-written-1ab.md").write_text(
        '---\n{"id":"hand-written-1ab","summary":"By hand"}\n---\nText.\n', "utf-8"
    )
    seconds.now += 1.0
    watch.tick()
    assert [event.type for event in listening.events] == [NOTES_CHANGED]


class WrittenDuringPass:
    """A pass that pulls one note, while another process writes one after the pass read the
    folder (both land before its report)."""

    def __init__(self, real: Any, directory: Path, *, other_writes: bool) -> None:
        self.settings = real.settings
        self.cancelled: Callable[[], bool] | None = None
        self._directory, self._other_writes = directory, other_writes

    def run(self, target: SyncTarget, *, progress: object = None) -> PassReport:
        note = '---\n{{"id":"{0}","summary":"{0}"}}\n---\nText.\n'
        (self._directory / "pulled-note-1ab.md").write_text(note.format("pulled-note-1ab"))
        if self._other_writes:
            (self._directory / "written-now-2cd.md").write_text(note.format("written-now-2cd"))
        return PassReport(target, result=PassResult(pulled=["pulled-note-1ab"], version=2))


@pytest.mark.parametrize("other_writes", [True, False])
def test_a_write_landing_during_a_pass_is_synced_by_the_next_one(
    state: DaemonState, other_writes: bool
) -> None:
    hosted = state.registry.default
    sync = DaemonSync(hosted, state.bus, clock=wall_clock_ms, token=None)  # its loop not started
    sync.add(hosted)
    sync.watch_once()  # signed in: the folders scheduled, their listings taken
    project = next(t for t in sync.coordinator.targets() if t.scope == "project")
    sync.coordinator.service = WrittenDuringPass(
        sync.service, project.store.directory, other_writes=other_writes
    )
    sync.sync_now(project)
    due = sync.coordinator.due(wall_clock_ms() + WRITE_DEBOUNCE_MS + 1)
    assert (project in due) is other_writes  # the pass's own pull is no write of this machine
