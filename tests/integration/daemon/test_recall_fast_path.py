"""The recall endpoint in front of the framework (spec 10, 03.2), through a live daemon: every
auth check still first (token, Host, Origin, cookie and CSRF), and its usage counts collected
off the request path, every recall counted, what is still collected written at stop."""

from __future__ import annotations

import json
from pathlib import Path

from daemon_support import live_daemon

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace

MESSAGE = "why does the billing service retry webhooks?"


def _project(tmp_path: Path) -> tuple[Path, Path, str]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    service = open_workspace(project, home, register=True).service
    note = service.remember(
        "The billing service retries webhooks with exponential backoff",
        "Five tries, doubling from one second.",
        tags="billing, webhooks",
    ).id
    return project, home, note


def test_every_auth_check_comes_before_the_recall(tmp_path: Path) -> None:
    project, home, _ = _project(tmp_path)
    options = DaemonOptions(home=home, start=project, background_sync=False)
    body = {"message": MESSAGE}
    with live_daemon(options) as daemon, daemon.client() as http:
        wrong = http.post("/workspace/recall", json=body, headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 401 and wrong.json()["code"] == "token_required"
        rebound = http.post("/workspace/recall", json=body, headers={"Host": "evil.example"})
        assert rebound.status_code == 403 and rebound.json()["code"] == "host_not_allowed"
        foreign = http.post(
            "/workspace/recall", json=body, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403 and foreign.json()["code"] == "origin_not_allowed"
        auth = daemon.state.auth
        cookie = {"Cookie": f"oharness_session={auth.session}", "Authorization": ""}
        no_csrf = http.post("/workspace/recall", json=body, headers=cookie)
        assert no_csrf.status_code == 401
        with_csrf = http.post(
            "/workspace/recall", json=body, headers={**cookie, "X-CSRF-Token": auth.csrf_token}
        )
        assert with_csrf.status_code == 200 and with_csrf.json()["attached"]
        other = http.get("/workspaces")  # every other route still takes the framework's way
        assert other.status_code == 200 and other.json()


def test_counts_collected_in_a_window_are_written_when_the_daemon_stops(tmp_path: Path) -> None:
    project, home, note = _project(tmp_path)
    options = DaemonOptions(home=home, start=project, background_sync=False, usage_window=3600)
    usage_dir = home / "memory-usage"
    with live_daemon(options) as daemon, daemon.client() as http:
        for _ in range(3):
            found = http.post("/workspace/recall", json={"message": MESSAGE}).json()
            assert [a["id"] for a in found["attached"]] == [note]
        assert not list(usage_dir.glob("*.json"))  # still collected, not written
    (usage_file,) = usage_dir.glob("*.json")
    assert json.loads(usage_file.read_text())["notes"][note]["count"] == 3
