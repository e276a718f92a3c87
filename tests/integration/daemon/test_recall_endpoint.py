"""The recall endpoint's fast path (spec 10, 03.2) through a live daemon on loopback: answers,
refusals in the daemon's error shape, the qualified route, usage counts and the event."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_support import LiveDaemon, live_daemon

from oharness.daemon import DaemonOptions
from oharness.memory.workspace import open_workspace

MESSAGE = "why does the billing service retry webhooks?"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    service = open_workspace(project, home, register=True).service
    dashboards = service.remember("Dashboards live in Grafana", "Folder ops.").id
    service.remember(
        "The billing service retries webhooks with exponential backoff",
        f"Five tries, doubling from one second; see [[{dashboards}]].",
        tags="billing, webhooks",
    )
    with live_daemon(DaemonOptions(home=home, start=project, background_sync=False)) as running:
        yield running


def _post(daemon: LiveDaemon, path: str, body: Any, **kwargs: Any) -> Any:
    with daemon.client() as http:
        if isinstance(body, bytes):
            return http.post(path, content=body, **kwargs)
        return http.post(path, json=body, **kwargs)


def test_recall_answers_the_block_and_what_it_holds(daemon: LiveDaemon) -> None:
    response = _post(daemon, "/workspace/recall", {"message": MESSAGE})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    found = response.json()
    assert found["block"].startswith("<recalled-memory>")
    assert "exponential backoff" in found["block"]
    (attached,) = found["attached"]
    assert attached["scope"] == "project" and attached["score"] > 0
    (linked,) = found["linked"]
    assert linked["from"] == attached["id"] and linked["summary"] == "Dashboards live in Grafana"
    project_id = daemon.state.registry.default.project_id
    qualified = _post(daemon, f"/workspaces/{project_id}/recall", {"message": MESSAGE})
    assert qualified.status_code == 200 and qualified.json()["block"] == found["block"]
    excluded = _post(
        daemon,
        "/workspace/recall",
        {"message": MESSAGE, "exclude": [f"project:{a['id']}" for a in found["attached"]]},
    )
    assert excluded.json() == {"attached": [], "linked": [], "block": ""}


def test_recall_counts_usage_off_the_request_path_and_publishes_a_count(
    daemon: LiveDaemon,
) -> None:
    with daemon.client() as listener, listener.stream("GET", "/events") as stream:
        lines = stream.iter_lines()
        found = _post(daemon, "/workspace/recall", {"message": MESSAGE}).json()
        for line in lines:
            if line.startswith("data: "):
                event = json.loads(line[len("data: ") :])
                if event["type"] == "recalled":
                    assert event["data"] == {"count": len(found["attached"])}
                    assert MESSAGE not in line  # never the text
                    break
    usage_dir = daemon.options.home / "memory-usage"
    deadline = time.monotonic() + 10
    while not list(usage_dir.glob("*.json")):
        assert time.monotonic() < deadline, "usage was never recorded"
        time.sleep(0.02)
    (usage_file,) = usage_dir.glob("*.json")
    deadline = time.monotonic() + 10
    while True:  # the background writer may still be replacing the file
        recorded = json.loads(usage_file.read_text())["notes"]
        if set(recorded) >= {a["id"] for a in found["attached"]}:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"", "invalid_message"),
        (b"not json", "invalid_message"),
        (b"[1, 2]", "invalid_message"),
        ({"message": 3}, "invalid_message"),
        ({"message": "x" * 65537}, "invalid_message"),
        ({"message": "\ud800"}, "invalid_message"),
        ({"message": "hi", "exclude": "a"}, "invalid_exclude"),
        ({"message": "hi", "exclude": [1]}, "invalid_exclude"),
        ({"message": "hi", "exclude": ["x"] * 1001}, "invalid_exclude"),
    ],
)
def test_recall_refusals_use_the_daemon_error_shape(
    daemon: LiveDaemon, body: Any, code: str
) -> None:
    if isinstance(body, dict) and body.get("message") == "\ud800":
        raw = b'{"message": "\\ud800"}'  # a lone surrogate, as JSON allows it
        response = _post(daemon, "/workspace/recall", raw)
    else:
        response = _post(daemon, "/workspace/recall", body)
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert response.json()["error"]


def test_recall_unknown_workspace_wrong_method_and_memory_off(daemon: LiveDaemon) -> None:
    missing = _post(daemon, "/workspaces/p-nope/recall", {"message": MESSAGE})
    assert missing.status_code == 404 and missing.json()["code"] == "workspace_not_found"
    with daemon.client() as http:
        for name in ("p-nope", "../../x"):  # the event stream of a workspace not hosted
            events = http.get("/events", params={"workspace": name})
            assert events.status_code == 404 and events.json()["code"] == "workspace_not_found"
        wrong = http.get("/workspace/recall")
        assert wrong.status_code == 405 and wrong.json()["code"] == "method_not_allowed"
        assert wrong.headers["allow"] == "POST"
        unauthenticated = http.post(
            "/workspace/recall", json={"message": MESSAGE}, headers={"Authorization": ""}
        )
        assert unauthenticated.status_code == 401
    plugins = daemon.options.home / "plugins.json"
    plugins.write_text(json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]}))
    off = _post(daemon, "/workspace/recall", {"message": MESSAGE})
    assert off.status_code == 409 and off.json()["code"] == "managed_memory_unavailable"
    plugins.write_text("{broken")
    broken = _post(daemon, "/workspace/recall", {"message": MESSAGE})
    assert broken.status_code == 500 and broken.json()["code"] == "recall_failed"
    plugins.unlink()
    assert _post(daemon, "/workspace/recall", {"message": MESSAGE}).json()["attached"]


def test_recall_routes_are_in_the_openapi_document(daemon: LiveDaemon) -> None:
    with daemon.client() as http:
        paths = http.get("/openapi.json").json()["paths"]
    for path in ("/workspace/recall", "/workspaces/{project_id}/recall"):
        body = paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body["required"] == ["message"]
