"""The demo's temporary home: created locked, removed whole; stale ones found and removed only
when their demo is gone; the port taken or free; the sample notes' links."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from oharness.demo.content import DELETED, NOTES, body_text
from oharness.demo.home import DemoHome, remove_stale
from oharness.demo.run import bind_port
from oharness.notes.links import extract_links

HOLD = """
import sys, time, filelock
lock = filelock.FileLock(sys.argv[1])
lock.acquire(timeout=0)
print("held", flush=True)
time.sleep(60)
"""


def test_a_home_is_created_with_both_devices_and_removed_whole(tmp_path: Path) -> None:
    home = DemoHome.create(tmp_path)
    assert home.root.parent == tmp_path.resolve() and home.root.name.startswith("oharness-demo-")
    for device in (home.this_device, home.other_device):
        assert device.home.is_dir() and device.project.is_dir()
    status = json.loads((home.root / "demo.json").read_text())
    assert status["state"] == "starting" and status["root"] == str(home.root)
    assert remove_stale(tmp_path) == []  # its own lock is held: never removed
    home.remove()
    assert list(tmp_path.iterdir()) == []


def test_only_folders_of_demos_that_are_gone_are_removed(tmp_path: Path) -> None:
    dead = DemoHome.create(tmp_path)
    dead._lock.release()  # as after kill -9: the folder stays, nobody holds the lock
    running = tmp_path / "oharness-demo-running"
    running.mkdir()
    (running / "demo.json").write_text("{}")
    (running / "demo.lock").write_text("")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(running / "demo.lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        unmarked = tmp_path / "oharness-demo-unmarked"  # still starting, or not ours
        unmarked.mkdir()
        (unmarked / "demo.lock").write_text("")
        other = tmp_path / "something-else"
        other.mkdir()
        (other / "demo.json").write_text("{}")
        assert remove_stale(tmp_path) == [dead.root]
        assert not dead.root.exists()
        assert running.is_dir() and unmarked.is_dir() and other.is_dir()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert remove_stale(tmp_path) == [running]  # its demo is gone now


def test_a_taken_port_is_replaced_by_a_free_one_and_said() -> None:
    said: list[str] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        sock = bind_port(port, said.append)
        try:
            chosen = sock.getsockname()[1]
            assert chosen != port
            assert said == [f"port {port} is taken; using the free port {chosen} instead"]
        finally:
            sock.close()
    sock = bind_port(port, said.append)  # free again: used as asked, nothing said
    try:
        assert sock.getsockname()[1] == port and len(said) == 1
    finally:
        sock.close()


def test_sample_links_point_at_notes_made_before_and_one_dangles() -> None:
    ids: dict[str, str] = {}
    for note in (*NOTES, DELETED):
        text = body_text(note, ids)
        assert "{" not in text.replace("{ owner", "")
        for target in extract_links(text):
            assert target in ids.values() or target == "staging-runbook"
        ids[note.key] = f"{note.key}-001"
    linked = [note for note in NOTES if "{" in note.body]
    assert len(linked) >= 5
    with pytest.raises(KeyError):
        body_text(linked[0], {})
