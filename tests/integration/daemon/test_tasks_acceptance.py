"""Spec 10a through real HTTP on loopback: every case but dream's happy path (see test_dream)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import CLIENT, FailingSessions, Gate, LiveDaemon, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions
from oharness.daemon.tasks.lane import LaneLimits, Timeouts

UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


class Clock:
    def __init__(self) -> None:
        self.now = 1_789_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def sessions() -> FailingSessions:
    return FailingSessions()


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def daemon(
    home: Path, project: Path, sessions: FailingSessions, gate: Gate, clock: Clock
) -> Iterator[LiveDaemon]:
    options = DaemonOptions(
        home=home, start=project, sessions=sessions, wrap_work=gate.wrap, clock=clock
    )
    with live_daemon(options) as running:
        yield running
    assert sessions.calls == []


@pytest.fixture
def client(daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    with daemon.client() as http:
        yield http


@pytest.fixture(scope="module")
def refusing_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """One daemon for the module's tests whose requests are all refused before anything is
    queued or written (validation, unknown ids): they leave it as they found it. (Not the auth
    tests: wrong tokens count towards the daemon's backoff.)"""
    root = tmp_path_factory.mktemp("refusing")
    (root / "project").mkdir()
    sessions = FailingSessions()
    options = DaemonOptions(
        home=root / "home",
        start=root / "project",
        sessions=sessions,
        wrap_work=Gate().wrap,
        clock=Clock(),
    )
    with live_daemon(options) as running:
        yield running
        assert running.state.registry.default.lane._tasks == {}
    assert sessions.calls == []


@pytest.fixture
def refusing_client(refusing_daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    with refusing_daemon.client() as http:
        yield http


class EventReader:
    """Reads /events on a thread, collecting parsed events."""

    def __init__(self, daemon: LiveDaemon) -> None:
        self.events: list[dict[str, Any]] = []
        self._client = daemon.client()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    def _run(self) -> None:
        kind = None
        try:
            with self._client.stream("GET", "/events") as response:
                for line in response.iter_lines():
                    if line.startswith(": connected"):
                        self._ready.set()
                    elif line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: "):
                        self.events.append({"event": kind, **json.loads(line[6:])})
        except httpx2.HTTPError:
            return

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == kind]

    def close(self) -> None:
        self._client.close()


def notes_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.md")) if folder.is_dir() else []


def remember(client: httpx2.Client, content: str, **body: Any) -> httpx2.Response:
    headers = body.pop("headers", {})
    prefix = body.pop("prefix", "/workspace")
    return client.post(
        f"{prefix}/memory/remember", json={"content": content, **body}, headers=headers
    )


# ---- 1. qualified route ------------------------------------------------------------------------


def test_qualified_route_runs_on_that_workspace_only(
    daemon: LiveDaemon, client: httpx2.Client, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    added = client.post("/workspaces", json={"path": str(other), "create": True})
    assert added.status_code == 201, added.text
    project_id = added.json()["projectId"]
    posted = remember(
        client,
        "The other project deploys on Fridays.",
        prefix=f"/workspaces/{project_id}",
        contextMode="clean",
    )
    assert posted.status_code == 202
    done = wait_terminal(
        client, "remember", posted.json()["taskId"], prefix=f"/workspaces/{project_id}"
    )
    assert done["status"] == "completed", done
    assert len(notes_in(other / "MEMORY")) == 1
    assert notes_in(project / "MEMORY") == []
    # The default workspace's lane does not know the task.
    assert client.get(f"/workspace/memory/remember/{posted.json()['taskId']}").status_code == 404


# ---- 2, 3, 5, 6. happy paths and scopes ----------------------------------------------------------


def test_remember_happy_path(daemon: LiveDaemon, client: httpx2.Client, project: Path) -> None:
    reader = EventReader(daemon)
    try:
        posted = remember(
            client,
            "We deploy with blue-green releases. Rollback takes a minute.",
            contextMode="clean",
            headers={CLIENT: "settings-ui"},
        )
        assert posted.status_code == 202
        snapshot = posted.json()
        assert snapshot["status"] == "queued"
        assert snapshot["contextMode"] == "clean"
        assert re.fullmatch(f"remember-{UUID4}", snapshot["taskId"])
        assert "scope" not in snapshot or snapshot["scope"] is None
        assert snapshot["result"] is None and snapshot["error"] is None
        assert snapshot["createdAt"].endswith("Z")
        done = wait_terminal(
            client, "remember", snapshot["taskId"], headers={CLIENT: "settings-ui"}
        )
        assert done["status"] == "completed"
        assert done["result"]["summary"]
        assert done["result"]["touchedScopes"] == ["project"]
        assert len(done["result"]["filesTouched"]) == 1
        text = (project / "MEMORY").glob("*.md").__next__().read_text()
        assert "We deploy with blue-green releases." in text
        deadline = time.monotonic() + 5
        while not reader.of("memory_changed") and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        changed = reader.of("memory_changed")
        assert len(changed) == 1
        assert changed[0]["originatorClientId"] == "settings-ui"
        assert changed[0]["data"] == {
            "scope": "managed",
            "source": "workspace_memory_remember",
            "taskId": snapshot["taskId"],
            "touchedScopes": ["project"],
        }
        assert "blue-green" not in json.dumps(reader.events)
    finally:
        reader.close()


def test_remember_summary_type_and_scope_rules(client: httpx2.Client, home: Path) -> None:
    posted = remember(client, "I prefer answers in British English. Keep them short.")
    assert posted.status_code == 202
    done = wait_terminal(client, "remember", posted.json()["taskId"])
    assert done["result"]["touchedScopes"] == ["user"]
    (note,) = (home / "memory" / "user").glob("*.md")
    frontmatter = json.loads(note.read_text().split("\n---\n")[0].removeprefix("---\n"))
    assert frontmatter["summary"] == "I prefer answers in British English."
    assert frontmatter["type"] == "user"


@pytest.mark.parametrize("scope", ["user", "project"])
def test_forget_happy_path_with_scope(
    client: httpx2.Client, daemon: LiveDaemon, scope: str, home: Path, project: Path
) -> None:
    reader = EventReader(daemon)
    try:
        posted = remember(
            client,
            "The staging database is reset every Monday night.",
            scope=scope,
            contextMode="clean",
        )
        assert posted.json()["scope"] == scope
        wait_terminal(client, "remember", posted.json()["taskId"])
        folder = home / "memory" / "user" if scope == "user" else project / "MEMORY"
        assert len(notes_in(folder)) == 1
        forgot = client.post(
            "/workspace/memory/forget", json={"query": "staging database reset", "scope": scope}
        )
        assert forgot.status_code == 202
        assert re.fullmatch(f"forget-{UUID4}", forgot.json()["taskId"])
        assert forgot.json()["scope"] == scope
        assert "contextMode" not in forgot.json()
        done = wait_terminal(client, "forget", forgot.json()["taskId"])
        assert done["status"] == "completed", done
        (entry,) = done["result"]["removedEntries"]
        assert entry["scope"] == scope and entry["summary"].startswith("The staging database")
        assert entry["filePath"].endswith(".md")
        assert done["result"]["touchedScopes"] == [scope]
        assert notes_in(folder) == []
        backups = list((home / "memory-backups").rglob("*.json"))
        assert any("task-update" in path.read_text() for path in backups)
        time.sleep(0.2)
        sources = [event["data"]["source"] for event in reader.of("memory_changed")]
        assert sources == ["workspace_memory_remember", "workspace_memory_forget"]
    finally:
        reader.close()


def test_forget_refuses_too_many_matches_and_deletes_nothing(
    client: httpx2.Client, project: Path
) -> None:
    for index in range(7):
        posted = remember(
            client, f"Kafka topic number {index} uses kafka retention policy.", contextMode="clean"
        )
        wait_terminal(client, "remember", posted.json()["taskId"])
    assert len(notes_in(project / "MEMORY")) == 7
    forgot = client.post("/workspace/memory/forget", json={"query": "kafka retention policy"})
    done = wait_terminal(client, "forget", forgot.json()["taskId"])
    assert done["status"] == "failed"
    assert done["error"]["code"] == "forget_failed"
    assert "more than 5" in done["error"]["message"]
    assert len(notes_in(project / "MEMORY")) == 7


def test_workspace_mode_updates_a_likely_duplicate_clean_mode_adds(
    client: httpx2.Client, project: Path
) -> None:
    first = remember(client, "Release notes are written in the CHANGELOG file.")
    wait_terminal(client, "remember", first.json()["taskId"])
    again = remember(client, "Release notes are written in the CHANGELOG file. Keep a date.")
    done = wait_terminal(client, "remember", again.json()["taskId"])
    assert "duplicate" in done["result"]["summary"]
    (note,) = (project / "MEMORY").glob("*.md")
    assert "Keep a date." in note.read_text()
    clean = remember(
        client, "Release notes are written in the CHANGELOG file. Twice.", contextMode="clean"
    )
    wait_terminal(client, "remember", clean.json()["taskId"])
    assert len(notes_in(project / "MEMORY")) == 2


# ---- 7. auth -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/workspace/memory/remember"),
        ("GET", "/workspace/memory/remember/remember-x"),
        ("GET", "/capabilities"),
        ("GET", "/events"),
        ("POST", "/workspace/recall"),
        ("GET", "/no/such/route"),
    ],
)
@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_auth_is_checked_first(
    daemon: LiveDaemon, method: str, path: str, token: str | None
) -> None:
    with daemon.client(token=token) as http:
        response = http.request(method, path, content=b"not json")
    assert response.status_code == 401
    assert response.json()["code"] == "token_required"


# ---- 8. validation matrix ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("remember", {"content": "   \n\t "}, "invalid_content"),
        ("remember", {}, "invalid_content"),
        ("remember", {"content": 5}, "invalid_content"),
        ("remember", {"content": " " + "a" * 65537 + " "}, "invalid_content"),
        ("remember", {"content": "é" * 32768 + "x"}, "invalid_content"),
        ("remember", {"content": "ok", "contextMode": "thread"}, "invalid_context_mode"),
        ("remember", {"content": "ok", "scope": "global"}, "invalid_scope"),
        ("remember", {"content": " ", "contextMode": "thread"}, "invalid_content"),
        (
            "remember",
            {"content": "ok", "contextMode": "x", "scope": "global"},
            "invalid_context_mode",
        ),
        ("forget", {"query": "  "}, "invalid_query"),
        ("forget", {"query": "q" * 65537}, "invalid_query"),
        ("forget", {"query": "ok", "scope": "global"}, "invalid_scope"),
    ],
)
def test_validation_matrix(
    refusing_client: httpx2.Client,
    refusing_daemon: LiveDaemon,
    path: str,
    body: dict[str, Any],
    code: str,
) -> None:
    response = refusing_client.post(f"/workspace/memory/{path}", json=body)
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert refusing_daemon.state.registry.default.lane.pending() == []


def test_exactly_64_kib_after_trimming_is_queued_trimmed(
    client: httpx2.Client, daemon: LiveDaemon, gate: Gate
) -> None:
    gate.open_event.clear()
    content = "Big. " + "a" * (65536 - 5)
    response = client.post("/workspace/memory/remember", json={"content": f"  \n{content}\n  "})
    assert response.status_code == 202
    (task,) = daemon.state.registry.default.lane.pending()
    assert task.payload == content
    gate.open()


@pytest.mark.parametrize("client_id", ["x" * 129, "bad id", b"na\xefve", "a/b", ""])
def test_malformed_client_id(refusing_client: httpx2.Client, client_id: str | bytes) -> None:
    headers: Any = {CLIENT: client_id}
    response = remember(refusing_client, "ok", headers=headers)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_client_id"
    poll = refusing_client.get("/workspace/memory/remember/remember-x", headers=headers)
    assert poll.json()["code"] == "invalid_client_id"


@pytest.mark.parametrize("kind", ["remember", "forget", "dream"])
def test_unknown_task_ids_are_404_with_the_kinds_code(
    refusing_client: httpx2.Client, kind: str
) -> None:
    response = refusing_client.get(
        f"/workspace/memory/{kind}/{kind}-00000000-0000-4000-8000-000000000000"
    )
    assert response.status_code == 404
    assert response.json() == {"error": response.json()["error"], "code": f"{kind}_task_not_found"}


# ---- 9, 10. isolation --------------------------------------------------------------------------


def test_client_isolation(client: httpx2.Client) -> None:
    mine = remember(client, "Owned by client a.", headers={CLIENT: "client-a"}).json()["taskId"]
    anonymous = remember(client, "Owned by nobody.").json()["taskId"]
    path = "/workspace/memory/remember/"
    assert client.get(path + mine, headers={CLIENT: "client-a"}).status_code == 200
    assert client.get(path + mine, headers={CLIENT: "client-b"}).status_code == 404
    assert client.get(path + mine).status_code == 404
    assert client.get(path + mine, headers={"X-Qwen-Client-Id": "client-a"}).status_code == 200
    assert client.get(path + anonymous).status_code == 200
    assert client.get(path + anonymous, headers={CLIENT: "client-a"}).status_code == 404


def test_cross_endpoint_isolation(client: httpx2.Client) -> None:
    task_id = client.post("/workspace/memory/forget", json={"query": "nothing"}).json()["taskId"]
    assert client.get(f"/workspace/memory/forget/{task_id}").status_code == 200
    for kind in ("remember", "dream"):
        response = client.get(f"/workspace/memory/{kind}/{task_id}")
        assert response.status_code == 404
        assert response.json()["code"] == f"{kind}_task_not_found"


# ---- 11, 12. queue limits ----------------------------------------------------------------------


def _post_kind(client: httpx2.Client, kind: str) -> httpx2.Response:
    if kind == "remember":
        return remember(client, "Held task content.", contextMode="clean")
    if kind == "forget":
        return client.post("/workspace/memory/forget", json={"query": "nothing matches"})
    return client.post("/workspace/memory/dream", json={})


@pytest.mark.parametrize("kind", ["remember", "forget", "dream"])
def test_queue_full_at_16_pending(client: httpx2.Client, gate: Gate, kind: str) -> None:
    gate.open_event.clear()
    for _ in range(16):
        assert _post_kind(client, "remember").status_code == 202
    refused = _post_kind(client, kind)
    assert refused.status_code == 429
    assert refused.json()["code"] == "remember_queue_full"
    gate.open()


def test_reserved_capacity_for_remember(client: httpx2.Client, gate: Gate) -> None:
    gate.open_event.clear()
    for index in range(8):
        assert _post_kind(client, "forget" if index % 2 else "dream").status_code == 202
    refused = _post_kind(client, "dream")
    assert refused.status_code == 429 and refused.json()["code"] == "remember_queue_full"
    assert _post_kind(client, "forget").status_code == 429
    assert _post_kind(client, "remember").status_code == 202
    gate.open()


# ---- 13. TTL and the store limit ---------------------------------------------------------------


def test_terminal_tasks_expire_at_the_next_enqueue(client: httpx2.Client, clock: Clock) -> None:
    old = remember(client, "An old task.", contextMode="clean").json()["taskId"]
    wait_terminal(client, "remember", old)
    clock.now += 5 * 60_000 + 1
    assert client.get(f"/workspace/memory/remember/{old}").status_code == 200
    remember(client, "A new task.", contextMode="clean")
    assert client.get(f"/workspace/memory/remember/{old}").status_code == 404


def test_over_the_store_limit_terminal_tasks_go_oldest_first(
    home: Path, project: Path, clock: Clock
) -> None:
    options = DaemonOptions(home=home, start=project, clock=clock, limits=LaneLimits(stored=3))
    with live_daemon(options) as daemon, daemon.client() as http:
        ids = []
        for index in range(3):
            clock.now += 1
            ids.append(
                http.post("/workspace/memory/forget", json={"query": f"nothing {index}"}).json()[
                    "taskId"
                ]
            )
            wait_terminal(http, "forget", ids[-1])
        clock.now += 1
        http.post("/workspace/memory/forget", json={"query": "another"})
        assert http.get(f"/workspace/memory/forget/{ids[0]}").status_code == 404
        assert http.get(f"/workspace/memory/forget/{ids[1]}").status_code == 200


# ---- 14. drain and dispose ---------------------------------------------------------------------


def test_drain_fails_queued_and_running_tasks(
    daemon: LiveDaemon, client: httpx2.Client, gate: Gate, tmp_path: Path
) -> None:
    other = tmp_path / "drained"
    other.mkdir()
    project_id = client.post("/workspaces", json={"path": str(other), "create": True}).json()[
        "projectId"
    ]
    prefix = f"/workspaces/{project_id}"
    reader = EventReader(daemon)
    gate.open_event.clear()
    running = remember(client, "The running one writes.", prefix=prefix).json()["taskId"]
    queued = [
        remember(
            client, f"Queued number {i} never runs.", prefix=prefix, contextMode="clean"
        ).json()["taskId"]
        for i in range(2)
    ]
    deadline = time.monotonic() + 5
    while running not in gate.started and time.monotonic() < deadline:
        time.sleep(0.01)
    hosted = daemon.state.registry.get(project_id)
    hosted.lane.draining = True  # the state a removal puts it in, held for the check
    refused = remember(client, "Too late.", prefix=prefix)
    assert refused.status_code == 503 and refused.json()["code"] == "workspace_draining"
    hosted.lane.draining = False
    removal: dict[str, Any] = {}

    def remove() -> None:
        with daemon.client() as http:
            removal["response"] = http.delete(f"/workspaces/{project_id}")

    thread = threading.Thread(target=remove)
    thread.start()
    deadline = time.monotonic() + 10
    while not hosted.lane.draining and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hosted.lane.draining
    gate.open()  # the running task's work now succeeds: it must still end workspace_removed
    thread.join(10)
    assert removal["response"].status_code == 200
    tasks = {task.task_id: task for task in [*hosted.lane._tasks.values()]}
    assert tasks[running].status == "failed"
    assert tasks[running].error is not None
    assert tasks[running].error["code"] == "workspace_removed"
    for task_id in queued:
        assert tasks[task_id].error is not None
        assert tasks[task_id].error["code"] == "workspace_removed"
    assert queued[0] not in gate.started and queued[1] not in gate.started
    assert len(notes_in(other / "MEMORY")) <= 1  # only the running task ever touched memory
    time.sleep(0.2)
    assert reader.of("memory_changed") == []
    reader.close()
    assert client.get(f"{prefix}/memory/remember/{running}").status_code == 404


# ---- 15. serial lane ---------------------------------------------------------------------------


def test_one_task_at_a_time_in_submission_order(client: httpx2.Client, gate: Gate) -> None:
    gate.open_event.clear()
    submitted = [
        _post_kind(client, kind).json()["taskId"]
        for kind in ("remember", "forget", "dream", "remember", "forget")
    ]
    gate.open()
    for task_id in submitted:
        wait_terminal(client, task_id.split("-")[0], task_id)
    assert gate.started == submitted
    assert gate.ended == submitted
    assert gate.max_active == 1


# ---- 16, 17. no-op results and publish failures -------------------------------------------------


def test_no_op_results_publish_nothing(daemon: LiveDaemon, client: httpx2.Client) -> None:
    reader = EventReader(daemon)
    first = remember(client, "Tabs, not spaces.").json()["taskId"]
    wait_terminal(client, "remember", first)
    same = remember(client, "Tabs, not spaces.", contextMode="clean").json()["taskId"]
    done = wait_terminal(client, "remember", same)
    assert done["status"] == "completed" and done["result"]["touchedScopes"] == []
    nothing = client.post("/workspace/memory/forget", json={"query": "kubernetes"}).json()
    done = wait_terminal(client, "forget", nothing["taskId"])
    assert done["result"]["removedEntries"] == [] and done["result"]["touchedScopes"] == []
    time.sleep(0.2)
    assert len(reader.of("memory_changed")) == 1
    reader.close()


def test_publish_failure_never_fails_the_task(
    daemon: LiveDaemon, client: httpx2.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(event: object) -> None:
        raise RuntimeError("the bus is down")

    monkeypatch.setattr(daemon.state.bus, "publish", broken)
    task_id = remember(client, "Published or not, this is saved.").json()["taskId"]
    done = wait_terminal(client, "remember", task_id)
    assert done["status"] == "completed" and done["error"] is None


# ---- 18, 19. availability ----------------------------------------------------------------------


def test_memory_plugin_off_is_409_and_nothing_queued(
    client: httpx2.Client, daemon: LiveDaemon, home: Path
) -> None:
    (home / "plugins.json").write_text(
        json.dumps({"runtimePlugins": [{"id": "memory", "enabled": False}]})
    )
    for kind in ("remember", "forget", "dream"):
        response = _post_kind(client, kind)
        assert response.status_code == 409
        assert response.json() == {
            "error": response.json()["error"],
            "code": "managed_memory_unavailable",
        }
    # Validation still comes first.
    assert remember(client, " ").json()["code"] == "invalid_content"
    assert daemon.state.registry.default.lane.pending() == []
    assert not daemon.state.registry.default.lane._tasks


def test_failing_availability_probe_is_500_with_the_kinds_code(
    client: httpx2.Client, daemon: LiveDaemon, home: Path
) -> None:
    (home / "plugins.json").write_text("{ broken")
    for kind in ("remember", "forget", "dream"):
        response = _post_kind(client, kind)
        assert response.status_code == 500
        assert response.json()["code"] == f"{kind}_failed"
    assert not daemon.state.registry.default.lane._tasks


# ---- 20. timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["remember", "forget", "dream"])
def test_timeouts(home: Path, project: Path, kind: str) -> None:
    gate = Gate(closed=True)
    options = DaemonOptions(
        home=home, start=project, wrap_work=gate.wrap, timeouts=Timeouts(work=2.0, backstop=2.5)
    )
    with live_daemon(options) as daemon, daemon.client() as http:
        task_id = _post_kind(http, kind).json()["taskId"]
        done = wait_terminal(http, kind, task_id)
        assert done["status"] == "failed"
        assert done["error"]["code"] == f"{kind}_timeout"
        # The lane goes on with the next task after the backstop.
        gate.open()
        next_id = _post_kind(http, "remember").json()["taskId"]
        assert wait_terminal(http, "remember", next_id)["status"] == "completed"
    assert notes_in(project / "MEMORY") != [] or kind != "remember"


# ---- 22. redaction -----------------------------------------------------------------------------

SECRETS = [  # (what the failure says, the part that must never appear)
    ("Bearer q8Zr3kLm9Xv2Pw7Ty4NbQ1sD6fGh", "Pw7Ty4NbQ1sD6fGh"),
    ("AKIAQ7ZL3M8XK2RT5VWN", "M8XK2RT5VWN"),
    ("SECRET_TOKEN=q8Zr3kLm9Xv2Pw7Ty4Nb", "Xv2Pw7Ty4Nb"),
    ("https://bob:Zq8r3kLm9Xv2@db.internal.corp/x", "3kLm9Xv2"),
]


class FailingWork:
    """Task work that fails with ``message`` (each test sets its own)."""

    def __init__(self) -> None:
        self.message = ""

    def wrap(self, work: Any, hosted: Any) -> Any:
        def failing(task: Any) -> Any:
            raise RuntimeError(self.message)

        return failing


@pytest.fixture(scope="module")
def failing_daemon(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LiveDaemon, FailingWork]]:
    """One daemon whose every task fails with the current test's message."""
    root = tmp_path_factory.mktemp("failing")
    (root / "project").mkdir()
    failing = FailingWork()
    options = DaemonOptions(home=root / "home", start=root / "project", wrap_work=failing.wrap)
    with live_daemon(options) as running:
        yield running, failing


@pytest.mark.parametrize(("secret", "core"), SECRETS)
@pytest.mark.parametrize("splitter", ["", "\u200b", "\x00", "\u202e", "\ufeff"])
def test_failure_details_are_redacted(
    failing_daemon: tuple[LiveDaemon, FailingWork],
    secret: str,
    core: str,
    splitter: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    daemon, failing = failing_daemon
    obfuscated = secret[:8] + splitter + secret[8:]
    failing.message = f"upstream said {obfuscated} \U0001f600" + "x" * 2000
    with daemon.client() as http:
        task_id = remember(http, "anything").json()["taskId"]
        done = wait_terminal(http, "remember", task_id)
    assert done["error"]["code"] == "remember_failed"
    details = done["error"]["details"]
    assert core not in details
    assert "[REDACTED]" in details
    assert len(details) <= 1000
    assert not any(ord(char) < 32 for char in details)
    assert task_id in caplog.text  # the lane logged this failure (before it ended the task)
    assert core not in caplog.text


# ---- 23 and sessionless ------------------------------------------------------------------------


def test_no_session_appears_after_each_task_kind(
    client: httpx2.Client, home: Path, sessions: FailingSessions
) -> None:
    for kind in ("remember", "forget", "dream"):
        task_id = _post_kind(client, kind).json()["taskId"]
        wait_terminal(client, kind, task_id)
    assert not (home / "sessions").exists() or list((home / "sessions").rglob("*")) == []
    assert sessions.calls == []


def test_capabilities_do_not_advertise_dream_without_a_merge_path(
    client: httpx2.Client,
) -> None:
    found = client.get("/capabilities").json()["capabilities"]
    assert found["workspace_memory_remember"] == {"since": "v1", "modes": ["workspace", "clean"]}
    assert found["workspace_memory_forget"] == {"since": "v1"}
    assert "workspace_memory_dream" not in found
    task_id = _post_kind(client, "dream").json()["taskId"]
    done = wait_terminal(client, "dream", task_id)
    assert done["error"]["code"] == "dream_failed"
    assert "not available in this daemon" in done["error"]["message"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"content": "\\ud800 lone surrogate"}', "invalid_content"),
        (b"not json at all", "invalid_content"),
        (b"[1, 2]", "invalid_content"),
        (b'{"content": "' + b"a" * (1024 * 1024 + 10) + b'"}', "body_too_large"),
    ],
)
def test_malformed_bodies_are_refused_cleanly(
    refusing_client: httpx2.Client, refusing_daemon: LiveDaemon, body: bytes, code: str
) -> None:
    response = refusing_client.post(
        "/workspace/memory/remember", content=body, headers={"Content-Type": "application/json"}
    )
    status = 413 if code == "body_too_large" else 400
    assert response.status_code == status and response.json()["code"] == code
    assert not refusing_daemon.state.registry.default.lane._tasks


def test_many_clients_at_once_all_get_their_tasks(daemon: LiveDaemon) -> None:
    results: list[int] = []

    def post(index: int) -> None:
        with daemon.client() as http:
            response = remember(
                http,
                f"Parallel note number {index} 日本語 😀.",
                contextMode="clean",
                headers={CLIENT: f"c{index}"},
            )
            results.append(response.status_code)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [202] * 12


def test_registering_workspaces(client: httpx2.Client, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused = client.post("/workspaces", json={"path": str(plain)})
    assert refused.status_code == 400 and refused.json()["code"] == "not_a_project"
    assert not (plain / ".oharness").exists()
    for path in ("/", "relative/path", str(tmp_path / "missing")):
        response = client.post("/workspaces", json={"path": path, "create": True})
        assert response.status_code == 400, path
    assert not Path("/.oharness").exists()
    added = client.post("/workspaces", json={"path": str(plain), "create": True})
    assert added.status_code == 201 and (plain / ".oharness" / "project.json").is_file()
    again = client.post("/workspaces", json={"path": str(plain)})
    assert again.status_code == 200 and again.json()["projectId"] == added.json()["projectId"]
    listed = client.get("/workspaces").json()["workspaces"]
    assert [w["default"] for w in listed] == [True, False]
    default_id = listed[0]["projectId"]
    assert client.delete(f"/workspaces/{default_id}").json()["code"] == "workspace_default"
    assert client.delete(f"/workspaces/{added.json()['projectId']}").status_code == 200
    assert client.get("/workspaces/nope/memory/remember/remember-x").json()["code"] == (
        "workspace_not_found"
    )
