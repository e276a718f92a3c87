"""Private folders: 0600 files and 0700 folders whatever the umask; elsewhere the umask's modes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from oharness.fsio import atomic_write, is_private, keep_private, make_directory, private_mode
from oharness.project.paths import secure_home


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture(params=[0o022, 0o002, 0o000], ids=["022", "002", "000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def test_writes_in_a_private_folder_are_private(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "home"
    assert keep_private(home) == 0 and _mode(home) == 0o700
    make_directory(home / "cache" / "recall")
    atomic_write(home / "cache" / "recall" / "index.bin", b"x")
    assert _mode(home / "cache") == 0o700 and _mode(home / "cache" / "recall") == 0o700
    assert _mode(home / "cache" / "recall" / "index.bin") == 0o600
    # A folder made by someone else's plain mkdir is tightened by the first write into it.
    (home / "usage").mkdir(mode=0o777)
    os.chmod(home / "usage", 0o777)
    atomic_write(home / "usage" / "u.json", b"{}")
    assert _mode(home / "usage") == 0o700
    # Replacing a file left readable makes it private.
    os.chmod(home / "usage" / "u.json", 0o644)
    atomic_write(home / "usage" / "u.json", b"{}")
    assert _mode(home / "usage" / "u.json") == 0o600
    assert private_mode(home / "a.lock") == 0o600 and is_private(home / "nested" / "x")


def test_writes_elsewhere_keep_the_umask_and_existing_modes(tmp_path: Path, umask: int) -> None:
    keep_private(tmp_path / "home")
    project = tmp_path / "project" / "MEMORY"
    make_directory(project)
    atomic_write(project / "note.md", b"x")
    assert _mode(project) == 0o777 & ~umask
    assert _mode(project / "note.md") == 0o666 & ~(umask | 0o002)  # never o+w, even at 000
    os.chmod(project / "note.md", 0o640)
    atomic_write(project / "note.md", b"y")
    assert _mode(project / "note.md") == 0o640
    assert not is_private(project) and private_mode(project / "x") == 0o666
    assert not is_private(tmp_path / "home-other")  # a sibling whose name starts the same


def test_an_existing_home_is_tightened_once_and_links_are_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "memory" / "user").mkdir(parents=True)
    (home / "memory" / "user" / "n.md").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / "linked").symlink_to(outside)
    for path in (home, home / "memory", home / "memory" / "user", outside):
        path.chmod(0o755)
    (home / "memory" / "user" / "n.md").chmod(0o644)
    notice = secure_home(home)
    assert notice is not None and notice.startswith("4 entries in ")
    assert [_mode(path) for path in (home, home / "memory", home / "memory" / "user")] == [
        0o700
    ] * 3
    assert _mode(home / "memory" / "user" / "n.md") == 0o600
    assert _mode(outside) == 0o755
    assert secure_home(home) is None  # once per process; nothing is looser any more anyway


def test_a_private_home_folder_is_walked_only_when_thorough(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keep_private(home)
    (home / "copied.md").write_text("x")
    (home / "copied.md").chmod(0o644)  # put there by hand, inside a folder only its owner enters
    assert keep_private(home) == 0 and _mode(home / "copied.md") == 0o644
    assert secure_home(home, thorough=True) == f"1 entry in {home} could be read by other " + (
        "users of this machine; they are now yours alone (files 0600, folders 0700)"
    )
    assert _mode(home / "copied.md") == 0o600
