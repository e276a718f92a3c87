"""Credentials of the attack report through the daemon's HTTP API: refused, never echoed,
and redacted from what recall returns when a hand-written note holds one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_support import LiveDaemon, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace

AWS_SECRET = "9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko"
FORMS = {
    "bare AWS secret": (f"The AWS secret for CI is {AWS_SECRET}", AWS_SECRET),
    "prose password": (
        "log in to the staging admin as root with hunter2hunter2!",
        "hunter2hunter2",
    ),
    "base64 GitHub token": (
        "token (base64): Z2hwX1I4a1QybVE5dkxwNFp0N1J3WTNuQjZjRHhGMWhKNXNBMGdVZQ==",
        "Z2hwX1I4a1QybVE5dkxwNFp0N1J3WTNuQjZjRHhGMWhKNXNBMGdVZQ",
    ),
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    root = tmp_path_factory.mktemp("credentials")
    project = root / "project"
    project.mkdir()
    options = DaemonOptions(home=root / "home", start=project, background_sync=False)
    with live_daemon(options) as running:
        yield running


@pytest.mark.parametrize("form", list(FORMS))
def test_remember_refuses_a_credential_naming_the_reason(daemon: LiveDaemon, form: str) -> None:
    content, secret = FORMS[form]
    memory = daemon.options.start / "MEMORY"
    before = sorted(memory.glob("*.md")) if memory.is_dir() else []
    with daemon.client() as http:
        posted = http.post("/workspace/memory/remember", json={"content": content})
        if posted.status_code == 202:
            done = wait_terminal(http, "remember", posted.json()["taskId"])
            shown = str(done)
            assert done["status"] == "failed", done
        else:
            shown = posted.text
            assert posted.status_code in (400, 422), posted.text
    assert "credential" in shown and secret not in shown
    after = sorted(memory.glob("*.md")) if memory.is_dir() else []
    assert after == before


def test_recall_redacts_what_a_hand_written_note_holds(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    service = open_workspace(project, home, register=True).service
    note = service.remember("CI deploy credentials", "They live in the team vault.")
    path = Path(note.path)
    path.write_text(path.read_text("utf-8") + f"The AWS secret for CI is {AWS_SECRET}\n", "utf-8")
    options = DaemonOptions(home=home, start=project, background_sync=False)
    with live_daemon(options) as daemon, daemon.client() as http:
        recalled = http.post(
            "/workspace/recall", json={"message": "where do the CI deploy credentials live?"}
        )
    assert recalled.status_code == 200, recalled.text
    assert AWS_SECRET not in recalled.text and "credential removed" in recalled.text
