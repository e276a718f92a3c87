"""The folder watch with the OS's file notifications: an idle folder is not walked again, and
every kind of change to a note file (written, rewritten in place, renamed over, deleted, the
folder removed and made again) is still seen at the next look. Real files, real notifications."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from watch_support import Seconds, Walks

from oharness.daemon.background.folder_watch import FolderWatch, Signature, folder_signature
from oharness.daemon.background.notices import NOTIFICATIONS, FolderNotices, remote_file_system

WAIT = 10.0  # seconds at most for the OS to report a change (it takes about 0.1 s)


class Watcher:
    """A folder watcher of the kind the page and background sync are, recording what it saw."""

    interval = 1.0

    def __init__(self, *folders: Path) -> None:
        self.wanted = list(folders)
        self.seen: list[dict[Path, Signature]] = []

    def folders(self) -> list[Path]:
        return self.wanted

    def observe(self, signatures: Mapping[Path, Signature]) -> None:
        self.seen.append(dict(signatures))


class Noticed:
    """Set when the OS reported a change in a folder (the test waits on it, never sleeps)."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self, folder: Path) -> None:
        self.event.set()

    def wait(self) -> None:
        assert self.event.wait(WAIT), "no file notification arrived"
        self.event.clear()


Setup = tuple[FolderWatch, Watcher, Walks, Noticed, Seconds]


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a-note.md").write_text("first", "utf-8")
    walks, noticed, seconds = Walks(), Noticed(), Seconds()
    notices = FolderNotices(monotonic=seconds, on_notice=noticed)
    watch = FolderWatch(signature=walks, monotonic=seconds, notices=notices)
    watcher = Watcher(folder)
    watch.add(watcher)
    try:
        yield watch, watcher, walks, noticed, seconds
    finally:
        watch.stop()


def _tick(watch: FolderWatch, seconds: Seconds) -> dict[Path, Signature]:
    seconds.now += 1.0
    return watch.tick()


def test_an_idle_folder_is_walked_once_then_only_at_its_rescan(setup: Setup) -> None:
    watch, watcher, walks, _, seconds = setup
    folder = watcher.wanted[0]
    first = watch.tick()
    assert walks.counts[folder] == 1
    assert watch.notices is not None and watch.notices.modes() == {folder: NOTIFICATIONS}
    for _ in range(30):
        assert _tick(watch, seconds) == first  # the same signature handed on, not walked
    assert walks.counts[folder] == 1
    seconds.now += 60.0  # the rescan (an event the OS might have dropped)
    watch.tick()
    assert walks.counts[folder] == 2


@pytest.mark.parametrize("change", ["add", "in_place", "rename_over", "delete", "touch"])
def test_every_kind_of_change_is_walked_at_the_next_look(setup: Setup, change: str) -> None:
    watch, watcher, walks, noticed, seconds = setup
    folder = watcher.wanted[0]
    before = watch.tick()[folder]
    note = folder / "a-note.md"
    if change == "add":
        (folder / "b-note.md").write_text("second", "utf-8")
    elif change == "in_place":  # an editor writing into the same file: the folder's mtime stays
        with note.open("a", encoding="utf-8") as handle:
            handle.write(" and more")
    elif change == "rename_over":  # an editor saving through a temp file
        (folder / ".a-note.md.swp").write_text("rewritten", "utf-8")
        os.replace(folder / ".a-note.md.swp", note)
    elif change == "delete":
        note.unlink()
    else:  # same size, only the mtime moves
        os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))
    noticed.wait()
    after = _tick(watch, seconds)[folder]
    assert walks.counts[folder] == 2
    assert after == folder_signature(folder) and after != before
    _tick(watch, seconds)
    assert walks.counts[folder] == 2  # and not again while nothing changes


def test_reading_notes_is_no_change(setup: Setup) -> None:
    watch, watcher, walks, noticed, seconds = setup
    folder = watcher.wanted[0]
    watch.tick()
    for _ in range(3):
        (folder / "a-note.md").read_text("utf-8")
        os.listdir(folder)
    (folder / "b-note.md").write_text("a real change, after the reads", "utf-8")
    noticed.wait()
    _tick(watch, seconds)
    _tick(watch, seconds)
    assert walks.counts[folder] == 2


def test_a_folder_removed_and_made_again_is_watched_afresh(setup: Setup) -> None:
    watch, watcher, walks, noticed, seconds = setup
    folder = watcher.wanted[0]
    watch.tick()
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    assert _tick(watch, seconds)[folder] == ()
    folder.mkdir()
    (folder / "c-note.md").write_text("again", "utf-8")
    assert [name for name, _, _ in _tick(watch, seconds)[folder]] == ["c-note.md"]
    walked = walks.counts[folder]
    noticed.event.clear()  # the removal's own notices
    (folder / "d-note.md").write_text("and one more", "utf-8")
    noticed.wait()
    assert len(_tick(watch, seconds)[folder]) == 2
    assert walks.counts[folder] == walked + 1


def test_a_folder_that_does_not_exist_yet_is_polled_until_it_does(tmp_path: Path) -> None:
    folder = tmp_path / "later"
    walks, seconds, noticed = Walks(), Seconds(), Noticed()
    watch = FolderWatch(
        signature=walks, monotonic=seconds, notices=FolderNotices(on_notice=noticed)
    )
    watch.add(Watcher(folder))
    try:
        assert watch.tick() == {folder: ()}
        assert watch.notices is not None
        assert watch.notices.modes()[folder].startswith("polling (the folder does not exist")
        folder.mkdir()
        (folder / "a-note.md").write_text("first", "utf-8")
        assert len(_tick(watch, seconds)[folder]) == 1
        assert watch.notices.modes()[folder] == NOTIFICATIONS
        walked = walks.counts[folder]
        _tick(watch, seconds)
        assert walks.counts[folder] == walked
    finally:
        watch.stop()


@pytest.mark.parametrize(
    "make",
    [
        lambda: FolderNotices(remote=lambda folder: "nfs4"),
        lambda: FolderNotices(watcher=lambda folder: (_ for _ in ()).throw(OSError("limit"))),
    ],
    ids=["network-file-system", "watch-refused"],
)
def test_where_notifications_cannot_be_trusted_the_folder_is_walked_every_look(
    tmp_path: Path, make: Callable[[], FolderNotices]
) -> None:
    walks, seconds = Walks(), Seconds()
    watch = FolderWatch(signature=walks, monotonic=seconds, notices=make())
    watch.add(Watcher(tmp_path))
    try:
        for _ in range(3):
            _tick(watch, seconds)
        assert walks.counts[tmp_path] == 3
        assert watch.notices is not None
        assert watch.notices.modes()[tmp_path].startswith("polling (")
        assert "polling (" in watch.describe()
    finally:
        watch.stop()


def test_the_file_system_type_is_read_from_the_mount_table(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 0:21 / / rw,relatime - ext4 /dev/sda1 rw\n"
        "40 22 0:40 / /srv/share rw,relatime - nfs4 server:/export rw\n"
        "41 22 0:41 / /home/ann/sshfs\\040mount rw - fuse.sshfs ann@host: rw\n",
        "utf-8",
    )
    assert remote_file_system(Path("/srv/share/notes"), table) == "nfs4"
    assert remote_file_system(Path("/srv/shared"), table) is None
    assert remote_file_system(Path("/home/ann/sshfs mount/x"), table) == "fuse.sshfs"
    assert remote_file_system(Path("/home/ann"), table) is None
    assert remote_file_system(Path("/x"), tmp_path / "no-such-table") is None
