"""The browser tests' sample project and the handle on a live daemon (imported by bare name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon_support import LiveDaemon
from playwright.sync_api import Browser

from oharness.memory.workspace import open_workspace

SAMPLE_NOTES: tuple[dict[str, Any], ...] = (
    {
        "summary": "Release checklist",
        "body": "Tag, build, sign, upload. The checklist lives in RELEASING.md.\n",
        "type": "reference",
        "tags": "release",
        "scope": "project",
    },
    {
        "summary": "Deploys go through the staging cluster first",
        "body": "Every deploy lands on staging for an hour before production.\n"
        "See [[{checklist}]] and [[missing-runbook]].\n",
        "type": "project",
        "tags": "deploy,ops",
        "scope": "project",
    },
    {
        "summary": "Prefers short commit messages in the imperative",
        "body": "The user wants commit subjects under 60 characters, imperative mood.\n",
        "type": "feedback",
        "tags": "style,git",
        "scope": "user",
    },
    {
        "summary": "Lonely note about the coffee machine",
        "body": "The office coffee machine needs descaling every Friday.\n",
        "type": "reference",
        "tags": "office",
        "scope": "project",
    },
)


def seed_project(home: Path, project: Path) -> dict[str, str]:
    """The sample notes (both scopes); returns summary → ``scope:id``."""
    workspace = open_workspace(project, home, register=True)
    ids: dict[str, str] = {}
    checklist = ""
    try:
        for note in SAMPLE_NOTES:
            result = workspace.service.remember(
                note["summary"],
                note["body"].replace("{checklist}", checklist),
                type=note["type"],
                tags=note["tags"],
                scope=note["scope"],
            )
            checklist = checklist or result.id
            ids[note["summary"]] = f"{result.scope}:{result.id}"
    finally:
        workspace.close()
    return ids


@dataclass
class PageDaemon:
    """A live daemon, the sample notes' ids and a signed-in browser's storage state."""

    daemon: LiveDaemon
    home: Path
    project: Path
    ids: dict[str, str]
    storage_state: dict[str, Any]

    @property
    def url(self) -> str:
        return self.daemon.url


def sign_in(browser: Browser, daemon: LiveDaemon) -> dict[str, Any]:
    """Sign a browser in through the daemon's one-time link; its storage state (the cookie)."""
    context = browser.new_context(base_url=daemon.url)
    try:
        page = context.new_page()
        link = daemon.state.auth.page_url(daemon.url)
        assert link is not None
        page.goto(link)  # the cookie, then on to the page
        page.wait_for_url("**/memory/notes")
        return dict(context.storage_state())
    finally:
        context.close()
