"""The sync panel's state from the 07.7 status: both scopes as one switch (spec 07.6, 11)."""

from __future__ import annotations

from typing import Any

from oharness.sync.panel import sync_panel
from oharness.sync.sync_service import combined_status

NOW = 1_800_000_000_000


def _scope(scope: str, **fields: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "scope": scope,
        "key": "user" if scope == "user" else "project:p1",
        "enabled": True,
        "paused": None,
        "lastSyncedAt": None,
        "lastError": None,
        "lastPull": {"added": 0, "modified": 0, "removed": 0},
        "conflicts": [],
        "unsyncable": [],
        "noteErrors": [],
        "retryAfter": None,
        "plan": None,
        "planLimits": None,
    }
    status.update(fields)
    return status


def _panel(project: dict[str, Any], user: dict[str, Any], *, on: bool = True, signed_in=True):
    return sync_panel(combined_status([project, user], on), signed_in=signed_in, now=NOW)


def test_on_only_when_on_for_both_and_the_older_time() -> None:
    panel = _panel(
        _scope("project", lastSyncedAt=NOW - 5000), _scope("user", lastSyncedAt=NOW - 1000)
    )
    assert panel.enabled and panel.last_synced_at == NOW - 5000
    assert panel.sync_now_refusal is None
    half = _panel(_scope("project", enabled=False), _scope("user"))
    assert not half.enabled and half.sync_now_refusal == "off"
    never = _panel(_scope("project", lastSyncedAt=NOW), _scope("user"))
    assert never.last_synced_at is None  # one scope never synced: no time claims both did


def test_errors_name_their_scope_once() -> None:
    panel = _panel(
        _scope(
            "project",
            lastError={"code": "network", "message": "project notes: the server is unreachable"},
        ),
        _scope("user", lastError={"code": "not_logged_in", "message": "not signed in: run x"}),
    )
    project, user = panel.scopes
    assert project.scope == "project" and project.error is not None
    assert project.error.message == "the server is unreachable"
    assert user.error is not None and user.error.code == "not_logged_in"


def test_a_429_reads_as_too_frequent_and_blocks_sync_now_until_its_deadline() -> None:
    paused = "sync was too frequent; it will be retried after the server's wait"
    panel = _panel(
        _scope("project", retryAfter=NOW + 30_000, paused=paused),
        _scope("user", lastError={"code": "rate_limited", "message": "your user notes: x"}),
    )
    assert panel.rate_limited and panel.retry_at == NOW + 30_000
    assert panel.sync_now_refusal == "rate_limited"
    assert panel.scopes[0].paused is None  # the 429 line says it, not a raw pause reason
    over = _panel(_scope("project", retryAfter=NOW - 1), _scope("user"))
    assert not over.rate_limited and over.sync_now_refusal is None


def test_pauses_pull_counts_plan_limits_and_notes_that_did_not_sync() -> None:
    panel = _panel(
        _scope(
            "project",
            paused="project notes are bound to another account (ann) than the one signed in",
            lastPull={"added": 2, "modified": 1, "removed": 3},
            plan="free",
            planLimits={"maxNotes": 200, "maxBodyBytes": 8192},
            noteErrors=[
                {"id": "big", "file": None, "code": "too_large", "message": "project notes: big"},
                {"id": None, "file": "bad.md", "code": "unreadable", "message": "cannot parse"},
            ],
            conflicts=["n1"],
        ),
        _scope("user", paused="cloud sync is switched off ('oharness sync on')"),
    )
    project, user = panel.scopes
    assert project.paused is not None and "another account" in project.paused
    assert (project.last_pull.added, project.last_pull.modified, project.last_pull.removed) == (
        2,
        1,
        3,
    )
    assert project.free_plan and project.max_notes == 200 and project.max_body_bytes == 8192
    assert [(i.id, i.file, i.code, i.message) for i in project.note_errors] == [
        ("big", None, "too_large", "big"),
        (None, "bad.md", "unreadable", "cannot parse"),
    ]
    assert user.paused is None  # the switch says so
    assert panel.conflict_count == 1


def test_signed_out_refuses_sync_now() -> None:
    panel = _panel(_scope("project"), _scope("user"), signed_in=False)
    assert panel.sync_now_refusal == "signed_out"
    off = _panel(_scope("project"), _scope("user"), on=False, signed_in=False)
    assert off.sync_now_refusal == "off"


def test_junk_in_a_status_file_does_not_break_the_panel() -> None:
    panel = sync_panel(
        {"enabled": True, "scopes": [{"scope": "user", "lastPull": 3, "noteErrors": "x"}, 5]},
        signed_in=True,
        now=NOW,
    )
    assert len(panel.scopes) == 1 and not panel.scopes[0].last_pull.any
