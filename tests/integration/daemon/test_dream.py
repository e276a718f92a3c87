"""Dream through the Dreamer seam (10a case 4): the lane, events and capability rules.

The merge path itself belongs to review; this test implementation merges notes of one scope
whose summaries are equal, concatenating their bodies, so the daemon's side is proven.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx2
from daemon_support import CLIENT, live_daemon, wait_terminal

from oharness.daemon import DaemonOptions
from oharness.daemon.tasks.lane import CancelToken
from oharness.daemon.tasks.memory_tasks import DreamOutcome
from oharness.memory.workspace import Workspace
from oharness.types import Scope


class SameSummaryDreamer:
    def dream(self, workspace: Workspace, cancel: CancelToken) -> DreamOutcome:
        service = workspace.service
        deduped: list[dict[str, Any]] = []
        touched: list[Scope] = []
        for scope in service.available_scopes():
            groups: dict[str, list[Any]] = {}
            for stored in service.store(scope).notes():
                groups.setdefault(stored.note.summary, []).append(stored)
            for notes in groups.values():
                if len(notes) < 2:
                    continue
                cancel.check()
                keep, *rest = sorted(notes, key=lambda s: s.id)
                body = "\n\n".join(s.note.body for s in [keep, *rest])
                service.backup(keep, "merge")
                service.remember(keep.note.summary, body, id=keep.id, scope=scope)
                for other in rest:
                    service.forget(other.id, scope)
                deduped.append({"id": keep.id, "scope": scope, "merged": [s.id for s in rest]})
                if scope not in touched:
                    touched.append(scope)
        return DreamOutcome(f"merged {len(deduped)} groups", tuple(deduped), tuple(touched))


def test_dream_happy_path(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    options = DaemonOptions(
        home=tmp_path / "home", start=project, dreamer=SameSummaryDreamer(), background_sync=False
    )
    with live_daemon(options) as daemon, daemon.client() as http:
        caps = http.get("/capabilities").json()["capabilities"]
        assert caps["workspace_memory_dream"] == {"since": "v1"}
        for body in ("Builds run on CI. First.", "Builds run on CI. Second."):
            posted = http.post(
                "/workspace/memory/remember", json={"content": body, "contextMode": "clean"}
            )
            wait_terminal(http, "remember", posted.json()["taskId"])
        assert len(list((project / "MEMORY").glob("*.md"))) == 2
        events: list[str] = []
        with (
            httpx2.Client(
                base_url=daemon.url, timeout=10, headers={"Authorization": f"Bearer {daemon.token}"}
            ) as listener,
            listener.stream("GET", "/events") as stream,
        ):
            lines = stream.iter_lines()
            assert next(lines).startswith(": connected")
            dream = http.post("/workspace/memory/dream", headers={CLIENT: "ui"})
            assert dream.status_code == 202
            snapshot = dream.json()
            assert re.fullmatch(r"dream-[0-9a-f-]{36}", snapshot["taskId"])
            assert "contextMode" not in snapshot and "scope" not in snapshot
            deadline = time.monotonic() + 10
            for line in lines:
                events.append(line)
                if "workspace_memory_dream" in line or time.monotonic() > deadline:
                    break
        done = wait_terminal(http, "dream", snapshot["taskId"], headers={CLIENT: "ui"})
        assert done["status"] == "completed"
        assert done["result"]["touchedScopes"] == ["project"]
        (entry,) = done["result"]["dedupedEntries"]
        assert entry["scope"] == "project" and len(entry["merged"]) == 1
        assert len(list((project / "MEMORY").glob("*.md"))) == 1
        assert any('"originatorClientId":"ui"' in line for line in events)
        assert http.get(f"/workspace/memory/dream/{snapshot['taskId']}").status_code == 404
