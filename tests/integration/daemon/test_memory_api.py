"""Showing and managing memory through the SDK against a live daemon on loopback: notes listed
with each filter, searched, shown with their links; backups listed and restored; a conflict
made by a real sync listed and resolved; bad input refused with nothing changed; cookie
callers without the CSRF token refused on every route that changes something."""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx2
import pytest
from daemon_support import LiveDaemon, live_daemon, project_daemon
from starlette.routing import Route
from sync_server_support import LiveServer, make_settings, token_for

from oharness.daemon import DaemonOptions
from oharness.memory.memory_service import MemoryService
from oharness.memory.workspace import open_workspace
from oharness.sdk import AsyncDaemonClient, DaemonClient, DaemonError
from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync import actions
from oharness.sync.settings_file import SyncSettingsFile

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[LiveDaemon]:
    with project_daemon(tmp_path) as running:
        yield running


def _service(daemon: LiveDaemon) -> MemoryService:
    service: MemoryService = daemon.state.registry.default.workspace.service
    return service


def _files(service: MemoryService) -> dict[str, bytes]:
    """Every file of both notes folders and the backups: what "nothing changed" compares."""
    folders = [service.store(scope).directory for scope in service.available_scopes()]
    folders.append(service.backups().directory)
    return {
        str(path): path.read_bytes()
        for folder in folders
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file()
    }


def _seed(service: MemoryService) -> dict[str, str]:
    target = service.remember("Staging database host", "db-staging.internal", type="reference")
    deploy = service.remember(
        "Deploys go out on Tuesdays",
        f"Blue-green, see [[{target.id}]] for the database.",
        type="project",
        tags="deploy release",
    )
    person = service.remember("I prefer short answers", "Keep replies brief.", type="user")
    return {"target": target.id, "deploy": deploy.id, "person": person.id}


def _listen(daemon: LiveDaemon, wanted: Callable[[dict[str, Any]], bool]) -> Future[Any]:
    """The first SDK event ``wanted`` accepts, heard on a thread subscribed before this returns."""
    heard: Future[Any] = Future()

    def listen() -> None:
        with DaemonClient(daemon.url, daemon.token) as listener:
            for event in listener.events():
                if wanted(event):
                    heard.set_result(event)
                    return

    subscribers = daemon.state.bus.subscribers
    threading.Thread(target=listen, daemon=True).start()
    deadline = time.monotonic() + 30
    while daemon.state.bus.subscribers == subscribers and time.monotonic() < deadline:
        time.sleep(0.02)
    return heard


def _refused(call: object, status: int, code: str) -> DaemonError:
    assert callable(call)
    with pytest.raises(DaemonError) as caught:
        call()
    assert (caught.value.status, caught.value.code) == (status, code), caught.value
    assert caught.value.reason  # one line naming the reason and the fix
    return caught.value


def test_notes_are_listed_with_each_filter_searched_and_shown_with_links(
    daemon: LiveDaemon,
) -> None:
    ids = _seed(_service(daemon))
    with DaemonClient(daemon.url, daemon.token) as client:
        offered = client.capabilities()["capabilities"]
        assert {"workspace_memory_notes", "workspace_memory_backups"} <= set(offered)
        every = client.list_notes()
        assert every["total"] == 3 and every["nextOffset"] is None
        assert {note["id"] for note in every["notes"]} == set(ids.values())
        assert [n["id"] for n in client.list_notes(scope="user")["notes"]] == [ids["person"]]
        assert {n["id"] for n in client.list_notes(scope="project")["notes"]} == {
            ids["deploy"],
            ids["target"],
        }
        assert [n["id"] for n in client.list_notes(type="reference")["notes"]] == [ids["target"]]
        assert [n["id"] for n in client.list_notes(tag="Deploy")["notes"]] == [ids["deploy"]]
        assert client.list_notes(type="feedback")["notes"] == []
        paged = client.list_notes(limit=2)
        assert len(paged["notes"]) == 2 and paged["nextOffset"] == 2
        assert len(client.list_notes(offset=2, limit=2)["notes"]) == 1

        found = client.search_notes("deploys tuesdays")
        assert found["results"][0]["id"] == ids["deploy"] and found["results"][0]["snippet"]
        assert client.search_notes("deploys tuesdays", scope="user")["results"] == []
        assert all(
            hit["id"] == ids["target"]
            for hit in client.search_notes("database", type="reference")["results"]
        )

        shown = client.get_note(ids["deploy"])
        assert shown["tags"] == ["deploy", "release"] and "Blue-green" in shown["body"]
        assert [(link["id"], link["missing"]) for link in shown["links"]] == [
            (ids["target"], False)
        ]
        target = client.get_note(ids["target"], scope="project")
        assert [link["id"] for link in target["incoming"]] == [ids["deploy"]]
        assert client.get_note(ids["person"])["scope"] == "user"

    async def through_async_client() -> None:
        async with AsyncDaemonClient(daemon.url, daemon.token) as client:
            assert (await client.list_notes(tag="release"))["notes"][0]["id"] == ids["deploy"]
            assert (await client.get_note(ids["target"]))["incoming"][0]["id"] == ids["deploy"]
            hits = (await client.search_notes("short answers"))["results"]
            assert hits[0]["id"] == ids["person"]

    asyncio.run(through_async_client())


def test_bad_input_is_refused_with_a_clear_error_and_nothing_changes(daemon: LiveDaemon) -> None:
    service = _service(daemon)
    ids = _seed(service)
    service.forget(ids["target"])
    before = _files(service)
    with DaemonClient(daemon.url, daemon.token) as client:
        _refused(lambda: client.list_notes(scope="global"), 400, "invalid_scope")
        _refused(lambda: client.list_notes(type="memo"), 400, "invalid_type")
        _refused(lambda: client.list_notes(tag="x" * 101), 400, "invalid_tag")
        _refused(lambda: client.list_notes(limit=0), 400, "invalid_limit")
        _refused(lambda: client.list_notes(offset=-1), 400, "invalid_offset")
        _refused(lambda: client.search_notes("   "), 400, "invalid_query")
        _refused(lambda: client.search_notes("x" * 1001), 400, "invalid_query")
        missing = _refused(lambda: client.get_note("no-such-note"), 404, "note_not_found")
        assert "no-such-note" in missing.reason and "GET /workspace/memory/notes" in missing.reason
        _refused(lambda: client.get_note("bad id!"), 400, "invalid_id")
        _refused(lambda: client.get_note(ids["deploy"], scope="user"), 404, "note_not_found")
        _refused(lambda: client.list_backups(limit=501), 400, "invalid_limit")
        _refused(lambda: client.restore_backup("no-such-backup"), 404, "backup_not_found")
        _refused(lambda: client.restore_backup(".hidden"), 404, "backup_not_found")
        _refused(lambda: client.list_conflicts(), 409, "sync_unavailable")  # sync is off here
    with daemon.client() as http:
        (backup,) = [b["backupId"] for b in http.get("/workspace/memory/backups").json()["backups"]]
        for body in ({"confirmed": "yes"}, [1], "true"):
            refused = http.post(f"/workspace/memory/backups/{backup}/restore", json=body)
            assert refused.status_code == 400 and refused.json()["code"] == "invalid_restore"
        unknown = http.get("/workspaces/nope/memory/notes")
        assert unknown.status_code == 404 and unknown.json()["code"] == "workspace_not_found"
    assert _files(service) == before


def test_a_backup_is_listed_and_restored_and_a_newer_version_needs_a_yes(
    daemon: LiveDaemon,
) -> None:
    service = _service(daemon)
    ids = _seed(service)
    forgotten = service.forget(ids["target"])
    path = Path(service.store("project").directory) / f"{ids['target']}.md"
    heard = _listen(daemon, lambda event: event["data"].get("source") == "api")
    with DaemonClient(daemon.url, daemon.token) as client:
        (listed,) = client.list_backups()["backups"]
        assert listed["backupId"] == forgotten.backup_id and listed["reason"] == "forget"
        assert listed["summary"] == "Staging database host" and listed["current"] == "absent"
        assert listed["restoreScope"] == "project" and listed["restorable"] is True
        restored = client.restore_backup(forgotten.backup_id)
        assert restored["changed"] is True and restored["replacedBackupId"] is None
        event = heard.result(timeout=30)  # subscribers hear it, named in the SDK's scheme
        assert (event["type"], event["wireType"]) == ("workspace.memory.changed", "memory_changed")
        assert event["data"] == {"scope": "project", "source": "api"}
        assert client.get_note(ids["target"])["body"] == "db-staging.internal\n"
        assert client.restore_backup(forgotten.backup_id)["changed"] is False

        service.remember("Staging database host", "db-staging-2.internal", id=ids["target"])
        newer = path.read_bytes()
        before = _files(service)
        refusal = _refused(
            lambda: client.restore_backup(forgotten.backup_id), 409, "replaces_newer"
        )
        assert '"confirmed": true' in refusal.reason
        assert _files(service) == before
        confirmed = client.restore_backup(forgotten.backup_id, confirmed=True)
        assert confirmed["changed"] is True and confirmed["replacedBackupId"]
        assert client.get_note(ids["target"])["body"] == "db-staging.internal\n"
        replaced = service.backups().get(confirmed["replacedBackupId"])
        assert service.backups().read_bytes(replaced) == newer  # backed up before replacing
        reasons = [b["reason"] for b in client.list_backups()["backups"]]
        assert reasons[0] == "restore-replace"

    async def through_async_client() -> None:
        async with AsyncDaemonClient(daemon.url, daemon.token) as client:
            listed = (await client.list_backups(limit=1))["backups"]
            assert [b["reason"] for b in listed] == ["restore-replace"]
            again = await client.restore_backup(forgotten.backup_id)
            assert again["changed"] is False  # the note already has this content
            with pytest.raises(DaemonError) as caught:
                await client.list_conflicts()
            assert caught.value.code == "sync_unavailable"

    asyncio.run(through_async_client())


def _routes(routes: list[Any]) -> Iterator[Route]:
    """Every route of the app, those of included routers too (each already has its prefix)."""
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's include_router
        if included is not None:
            yield from _routes(included.routes)
        elif isinstance(route, Route):
            yield route


@contextlib.contextmanager
def _signed_in(daemon: LiveDaemon) -> Iterator[httpx2.Client]:
    """A client holding the page's cookie (signed in through the one-time link)."""
    with httpx2.Client(base_url=daemon.url, timeout=30) as client:
        assert client.get(f"/auth?code={daemon.state.auth.page_code}").status_code == 200
        yield client


def test_cookie_callers_without_the_csrf_token_are_refused_on_every_unsafe_route(
    daemon: LiveDaemon,
) -> None:
    service = _service(daemon)
    ids = _seed(service)
    backup = service.forget(ids["target"]).backup_id
    project_id = daemon.state.registry.default.project_id
    values = {"project_id": project_id, "backup_id": backup, "note_id": ids["deploy"]}
    unsafe = [
        (method, route.path)
        for route in _routes(daemon.app.routes)
        for method in sorted(route.methods or ())
        if method in UNSAFE
    ]
    paths = {path for _, path in unsafe}
    assert "/workspace/memory/backups/{backup_id}/restore" in paths
    assert "/sync/conflicts/{note_id}/resolve" in paths and "/memory/notes/save" in paths
    daemon.state.auth.backoff.free = 10**9  # wrong CSRF tokens by the dozen: never backed off
    before = _files(service)
    with _signed_in(daemon) as browser:
        for method, template in unsafe:
            path = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "x"), template)
            for headers in ({}, {"X-CSRF-Token": "not-the-token"}):
                refused = browser.request(method, path, json={"confirmed": True}, headers=headers)
                assert refused.status_code == 401, (method, path, refused.text)
                assert refused.json()["code"] == "token_required"
                assert "X-CSRF-Token" in refused.json()["error"]
        assert _files(service) == before
        csrf = {"X-CSRF-Token": browser.get("/auth/csrf").json()["csrfToken"]}
        restore = f"/workspace/memory/backups/{backup}/restore"
        allowed = browser.post(restore, json={}, headers=csrf)
        assert allowed.status_code == 200 and allowed.json()["changed"] is True


# ---- a conflict made through a real sync ------------------------------------------------------


@pytest.fixture
def server() -> Iterator[LiveServer]:
    running = LiveServer(create_app(MemoryObjectStore(), make_settings())).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def synced(tmp_path: Path, server: LiveServer) -> Iterator[LiveDaemon]:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    SyncSettingsFile(open_workspace(project, home, register=True).home).login(
        server.url, token_for("alice", plan="paid")
    )
    with live_daemon(DaemonOptions(home=home, start=project)) as running:
        yield running


def test_a_conflict_from_a_real_sync_is_listed_and_resolved_through_the_sdk(
    tmp_path: Path, synced: LiveDaemon, server: LiveServer
) -> None:
    here = synced.state.registry.default.workspace
    note_id = here.service.remember("Shared note", "line one\n").id
    with DaemonClient(synced.url, synced.token) as client:
        client.sync_now()
        assert here.project is not None
        elsewhere = tmp_path / "elsewhere"  # another machine: the same project id
        (elsewhere / ".oharness").mkdir(parents=True)
        identity = here.project.root / ".oharness" / "project.json"
        (elsewhere / ".oharness" / "project.json").write_bytes(identity.read_bytes())
        other = open_workspace(elsewhere, tmp_path / "other-home", register=True)
        actions.login(other.home, server.url, token_for("alice", plan="paid"))
        service, targets = actions.workspace_sync(other, clock=lambda: 2_000_000_000_000)
        actions.sync_now(service, targets)
        other.service.remember("Shared note", "line one from elsewhere\n", id=note_id)
        assert not actions.sync_now(service, targets).failed
        here.service.remember("Shared note", "line one from here\n", id=note_id)
        client.sync_now()

        with synced.client() as http:  # a default route takes no workspace from the query
            status = http.get("/sync/status", params={"project_id": "not-hosted"})
            assert status.status_code == 200 and status.json()["enabled"] is True
        (conflict,) = client.list_conflicts()["conflicts"]
        assert (conflict["id"], conflict["scope"]) == (note_id, "project")
        assert client.get_note(note_id)["conflict"] == "waiting"
        assert client.list_notes()["notes"][0]["conflict"] == "waiting"
        before = _files(here.service)
        _refused(lambda: client.resolve_conflict(note_id, keep="mine"), 400, "invalid_resolution")
        _refused(
            lambda: client.resolve_conflict(note_id, keep="local", text="x"),
            400,
            "invalid_resolution",
        )
        assert _files(here.service) == before
        assert len(client.list_conflicts()["conflicts"]) == 1

        resolved = client.resolve_conflict(note_id, keep="cloud")
        assert resolved["id"] == note_id and resolved["keep"] == "cloud"
        assert len(resolved["backups"]) == 1  # this machine's side, kept as a backup
        assert client.list_conflicts()["conflicts"] == []
        assert "from elsewhere" in client.get_note(note_id)["body"]
        assert "conflict" not in client.get_note(note_id)


def test_the_page_and_the_api_keep_the_same_notes_for_each_filter(daemon: LiveDaemon) -> None:
    service = _service(daemon)
    ids = _seed(service)
    service.remember("Café opening hours", "Nine to five.", type="reference", tags="Café")
    summaries = {stored.id: stored.note.summary for stored in service.all_notes()}
    filters: list[dict[str, Any]] = [
        {"scope": "user"},
        {"type": "reference"},
        {"tag": "deploy"},
        {"tag": "CAFÉ"},  # stored "café": compared without regard to case
        {"scope": "project", "type": "project", "tag": "release"},
    ]
    with DaemonClient(daemon.url, daemon.token) as client, _signed_in(daemon) as browser:
        for chosen in filters:
            kept = {note["id"] for note in client.list_notes(**chosen)["notes"]}
            assert kept, chosen
            page = browser.get("/memory/notes/list", params=chosen)
            assert page.status_code == 200, page.text
            shown = {note_id for note_id, summary in summaries.items() if summary in page.text}
            assert shown == kept, chosen
        assert [note["id"] for note in client.list_notes(tag="release")["notes"]] == [ids["deploy"]]
