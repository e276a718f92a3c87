"""A served daemon watching its notes folders with the OS's file notifications: what another
process does to a note file (the CLI writes one, an editor rewrites one in place or saves it
through a temp file and a rename, one is deleted) reaches an open page as ``notes_changed``,
and ``oharness serve`` says how the folders are watched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from daemon_support import events_until
from sync_support import OHARNESS, free_port, run_cli

EDITOR = """
import os, sys
path, how = sys.argv[1], sys.argv[2]
if how == "in-place":
    with open(path, "r+", encoding="utf-8") as handle:
        text = handle.read().replace("At noon.", "At one.")
        handle.seek(0)
        handle.write(text)
        handle.truncate()
elif how == "rename":
    with open(path, encoding="utf-8") as handle:
        text = handle.read().replace("At one.", "At two.")
    with open(path + ".tmp~", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(path + ".tmp~", path)
else:
    os.unlink(path)
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Path, str, Path]]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    run_cli(home, project, "project", "init")
    env = {**os.environ, "OHARNESS_HOME": str(home)}
    env.pop("OHARNESS_TOKEN", None)
    output = tmp_path / "serve.out"
    with output.open("w") as sink:
        daemon = subprocess.Popen(
            [str(OHARNESS), "serve", "--port", str(free_port())],
            cwd=project,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "notes folders:" not in output.read_text():
            assert daemon.poll() is None and time.monotonic() < deadline, output.read_text()
            time.sleep(0.1)
        url = json.loads((home / "daemon.json").read_text())["url"]
        yield home, project, url, output
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)


def test_changes_by_other_processes_reach_the_page(
    served: tuple[Path, Path, str, Path],
) -> None:
    home, project, url, output = served
    assert "watched with file notifications" in output.read_text()
    token = (home / "daemon-token").read_text().strip()
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx2.Client(base_url=url, headers=headers, timeout=30) as client,
        client.stream("GET", "/events") as stream,
    ):
        lines = stream.iter_lines()
        saved = json.loads(
            run_cli(
                home, project, "memory", "remember", "-s", "Deploys on Tuesdays", "-b",
                "At noon.", "--scope", "project", "--json",
            )
        )  # fmt: skip
        seen = events_until(lines, '"notes_changed"')
        assert seen[-1]["data"] == {"scope": "project", "source": "files"}
        note = project / "MEMORY" / f"{saved['id']}.md"
        for how in ("in-place", "rename", "delete"):
            subprocess.run([sys.executable, "-c", EDITOR, str(note), how], check=True)
            seen = events_until(lines, '"notes_changed"')
            assert seen[-1]["data"]["scope"] == "project", how
    assert not note.exists()
