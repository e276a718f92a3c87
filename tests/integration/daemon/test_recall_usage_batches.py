"""The recall endpoint's usage counts (spec 03.2) through a live daemon: collected off the
request path, every recall counted, and what is still collected written when the daemon stops."""

from __future__ import annotations

import json
from pathlib import Path

from daemon_support import live_daemon

from oharness.daemon import DaemonOptions
from oharness.tools.workspace import open_workspace

MESSAGE = "why does the billing service retry webhooks?"


def test_counts_collected_in_a_window_are_written_when_the_daemon_stops(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    service = open_workspace(project, home, register=True).service
    note = service.remember(
        "The billing service retries webhooks with exponential backoff",
        "Five tries, doubling from one second.",
        tags="billing, webhooks",
    ).id
    options = DaemonOptions(home=home, start=project, background_sync=False, usage_window=3600)
    usage_dir = home / "memory-usage"
    with live_daemon(options) as daemon, daemon.client() as http:
        for _ in range(3):
            found = http.post("/workspace/recall", json={"message": MESSAGE}).json()
            assert [a["id"] for a in found["attached"]] == [note]
        assert not list(usage_dir.glob("*.json"))  # still collected, not written
    (usage_file,) = usage_dir.glob("*.json")
    assert json.loads(usage_file.read_text())["notes"][note]["count"] == 3
