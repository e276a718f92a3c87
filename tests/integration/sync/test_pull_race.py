"""An editor's save landing at any instant of a pull is kept (spec 07.3; issue: no edit lost to a
race). A test hook runs at every step of the pull's apply -- each atomic write of the pass
(backups, copies, the base, the note itself) before and after its replace, and inside the
note's checked replace between the swap and the check -- and saves the note there as an
editor would (rename-save or in-place write, adding a line to the file as it is then). After
the pass the editor's line is in the file or a backup, and once both machines synced again it
is in the note on both, with no conflict: merged, never overwritten unseen."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from syncharness import Clock, Machine, Server

from oharness import fsio

EDITOR_LINE = "a line the editor saved during the pull"


def _machines(tmp: Path) -> tuple[Machine, Machine]:
    clock = Clock()
    server = Server(clock)
    a = Machine("a", tmp / "a" / "repo", tmp / "a" / "home", server, clock)
    b = Machine("b", tmp / "b" / "repo", tmp / "b" / "home", server, clock)
    return a, b


def _edit_line(machine: Machine, note_id: str, old: str, new: str) -> None:
    path = machine.notes_dir() / f"{note_id}.md"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


class Editor:
    """A person's editor holding ``path``: on save it writes the file as it is now (or its
    buffer, when the file is gone at that instant) plus one line."""

    def __init__(self, path: Path, mode: str) -> None:
        self.path, self.mode = path, mode
        self.buffer = path.read_bytes()
        self.saved = False

    def save(self) -> None:
        try:
            current = self.path.read_bytes()
        except FileNotFoundError:
            current = self.buffer
        data = current.rstrip(b"\n") + f"\n{EDITOR_LINE}\n".encode()
        if self.mode == "rename":
            temp = self.path.with_name(self.path.name + ".editor-swap")
            temp.write_bytes(data)
            os.replace(temp, self.path)
        else:
            with open(self.path, "wb") as handle:
                handle.write(data)
        self.saved = True


@contextmanager
def _hook(action: Callable[[str, Path], None]) -> Iterator[None]:
    previous = fsio.set_fault_hook(action)
    try:
        yield
    finally:
        fsio.set_fault_hook(previous)


def _scenario(tmp: Path, case: str) -> tuple[Machine, Machine, str]:
    """a and b synced one note; a changed it (case) and synced; b's next pass pulls that."""
    a, b = _machines(tmp)
    note_id = a.ws.service.remember("Release steps", "line one\nline two\nline three\nline four").id
    a.sync(), b.sync()
    if case == "download":
        _edit_line(a, note_id, "line one", "line one, edited on a")
    elif case == "merge":
        _edit_line(a, note_id, "line one", "line one, edited on a")
        _edit_line(b, note_id, "line three", "line three, edited on b")
    else:
        a.ws.service.forget(note_id)
    a.sync()
    return a, b, note_id


def _hook_calls(tmp: Path, case: str) -> int:
    """How many hook points b's pulling pass has."""
    _, b, _ = _scenario(tmp, case)
    calls = 0

    def count(stage: str, target: Path) -> None:
        nonlocal calls
        calls += 1

    with _hook(count):
        b.sync()
    return calls


def _race(tmp: Path, case: str, mode: str, at: int) -> None:
    a, b, note_id = _scenario(tmp, case)
    path = b.notes_dir() / f"{note_id}.md"
    editor = Editor(path, mode)
    calls = 0

    def save_at(stage: str, target: Path) -> None:
        nonlocal calls
        calls += 1
        if calls == at:
            editor.save()

    with _hook(save_at):
        b.sync()
    assert editor.saved
    backups = b.home / "memory-backups"
    kept = [p.read_text() for p in backups.rglob("*.md")] + (
        [path.read_text()] if path.exists() else []
    )
    assert any(EDITOR_LINE in text for text in kept), f"{case}/{mode} at {at}: edit lost"
    b.sync(), a.sync(), b.sync()
    for machine in (a, b):
        final = machine.files()
        assert EDITOR_LINE in final.get(note_id, ""), f"{case}/{mode} at {at}: {final}"
        assert not list((machine.home / "memory-sync").glob("*/conflicts/*.json"))
    assert a.files() == b.files()
    if case != "delete":
        assert "edited on a" in b.files()[note_id]


@pytest.mark.parametrize("case", ["download", "merge", "delete"])
@pytest.mark.parametrize("mode", ["rename", "in-place"])
def test_an_editor_save_at_any_step_of_a_pull_is_kept(tmp_path: Path, case: str, mode: str) -> None:
    steps = _hook_calls(tmp_path / "count", case)
    assert steps >= 4
    for at in range(1, steps + 1):
        _race(tmp_path / f"at-{at}", case, mode, at)


@pytest.mark.parametrize("case", ["download", "delete"])
def test_without_an_atomic_swap_the_file_is_checked_aside(tmp_path: Path, case: str) -> None:
    previous = fsio.set_exchange_supported(False)
    try:
        steps = _hook_calls(tmp_path / "count", case)
        for at in range(1, steps + 1):
            _race(tmp_path / f"at-{at}", case, "rename", at)
    finally:
        fsio.set_exchange_supported(previous)
