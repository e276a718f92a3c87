"""A page between its render and its event stream: a note written by another process after the
render is announced when the page connects, even if the watcher saw it while nobody listened;
a note the render already shows is not announced again."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import LiveDaemon, events_until, project_daemon

from oharness.daemon import DaemonOptions
from oharness.daemon.events import Event
from oharness.memory.workspace import open_workspace


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    # The watcher's own ticks are an hour apart: the test makes each look itself.
    with project_daemon(tmp_path, watch_seconds=3600) as running:
        yield running


@pytest.fixture
def signed_in(daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=daemon.url, timeout=30) as client:
        assert client.get(f"/auth?code={daemon.state.auth.page_code}").status_code == 200
        yield client


def _events_link(page: str) -> str:
    found = re.search(r'sse-connect="([^"]+)"', page)
    assert found is not None
    return html.unescape(found.group(1))


def _write_elsewhere(daemon: LiveDaemon, summary: str) -> None:
    other = open_workspace(daemon.options.start, daemon.options.home, register=False)
    try:
        other.service.remember(summary, "Written by another process.\n", scope="project")
    finally:
        other.close()


def _until_marker(daemon: LiveDaemon, lines: Iterator[str]) -> list[str]:
    """The types of the events before a marker published now."""
    daemon.state.bus.publish(Event("marker", {}))
    return [event["type"] for event in events_until(lines, '"type":"marker"')][:-1]


def test_a_note_written_after_the_render_is_announced_at_the_connection(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    link = _events_link(signed_in.get("/memory/notes").text)
    assert "since=" in link
    _write_elsewhere(daemon, "Between the render and the stream")
    watcher = daemon.state.note_watcher
    assert watcher is not None and watcher.look_once() == []  # nobody listens yet: silent
    with signed_in.stream("GET", link) as stream:
        lines = stream.iter_lines()
        seen = events_until(lines, '"type":"notes_changed"')
        assert seen[-1]["data"] == {"scope": "project", "source": "files"}
        assert _until_marker(daemon, lines) == []  # once


def test_a_note_the_render_shows_is_not_announced_again(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    _write_elsewhere(daemon, "Before the render")  # the watcher has not looked since
    page = signed_in.get("/memory/notes").text
    assert "Before the render" in page
    with signed_in.stream("GET", _events_link(page)) as stream:
        lines = stream.iter_lines()
        watcher = daemon.state.note_watcher
        assert watcher is not None and watcher.look_once() == []  # taken in by the render
        assert _until_marker(daemon, lines) == []


def test_a_stream_without_since_hears_only_what_comes(
    daemon: LiveDaemon, signed_in: httpx2.Client
) -> None:
    _write_elsewhere(daemon, "Long before")
    watcher = daemon.state.note_watcher
    assert watcher is not None
    watcher.look_once()
    with signed_in.stream("GET", "/events") as stream:
        lines = stream.iter_lines()
        assert _until_marker(daemon, lines) == []
        _write_elsewhere(daemon, "While listening")
        assert [event.type for event in watcher.look_once()] == ["notes_changed"]
        assert _until_marker(daemon, lines) == ["notes_changed"]


def test_a_tick_after_a_render_never_hands_on_an_older_walk(tmp_path: Path) -> None:
    """The render walks the folders itself; a tick right after (the OS's notice of the same
    write still on its way) must not announce the folder as changed back and forth."""
    import asyncio
    import threading

    from oharness.daemon import create_app
    from oharness.daemon.background.folder_watch import FolderWatch
    from oharness.daemon.background.note_watch import NoteWatcher
    from oharness.daemon.background.notices import FolderNotices

    project = tmp_path / "project"
    project.mkdir()
    app = create_app(
        DaemonOptions(home=tmp_path / "home", start=project, background_sync=False)
    )  # never served: the test ticks
    state = app.state.daemon
    noticed = threading.Event()
    clock = [100.0]

    def seconds() -> float:
        return clock[0]

    def tick() -> dict[Path, object]:
        clock[0] += 1.0
        return dict(watch.tick())

    state.folders = watch = FolderWatch(
        monotonic=seconds, notices=FolderNotices(on_notice=lambda _: noticed.set())
    )
    page = NoteWatcher(state, 1.0)
    watch.add(page)
    loop = asyncio.new_event_loop()
    try:
        watch.tick()
        hosted = state.registry.default
        other = open_workspace(hosted.root, state.options.home, register=False)
        try:
            other.service.remember("Just before the render", "Text.\n", scope="project")
            version = page.look_now()  # the render's own look (nobody listens: silent)

            async def subscribe() -> object:
                return page.subscribe(hosted.project_id, version)

            subscription = loop.run_until_complete(subscribe())
            assert tick() and list(subscription.events) == []  # type: ignore[attr-defined]
            assert noticed.wait(10)
            tick()
            assert list(subscription.events) == []  # type: ignore[attr-defined]
            noticed.clear()
            other.service.remember("After the connection", "Text.\n", scope="project")
            assert noticed.wait(10)
            tick()
            assert [e.type for e in subscription.events] == ["notes_changed"]  # type: ignore[attr-defined]
        finally:
            other.close()
    finally:
        watch.stop()
        loop.close()
        asyncio.run(state.registry.close())


def test_renders_and_the_watch_thread_look_at_the_same_time(tmp_path: Path) -> None:
    """Page renders looking while the folder watch ticks as fast as it can: neither waits
    for the other forever."""
    import asyncio
    import threading

    from oharness.daemon import create_app
    from oharness.daemon.background.note_watch import NoteWatcher

    project = tmp_path / "project"
    project.mkdir()
    app = create_app(DaemonOptions(home=tmp_path / "home", start=project, background_sync=False))
    state = app.state.daemon
    page = NoteWatcher(state, 0.001)
    state.folders.add(page)
    state.folders.start()
    try:
        renders = threading.Thread(target=lambda: [page.look_now() for _ in range(300)])
        renders.start()
        renders.join(timeout=60)
        assert not renders.is_alive(), "a render and a tick wait for each other"
    finally:
        state.folders.stop()
        asyncio.run(state.registry.close())
