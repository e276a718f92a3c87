"""Browser tests of the Memory page: Debian's Chromium driven by Playwright, a live daemon.

- The browser is ``/usr/bin/chromium`` (``scripts/test.sh`` installs Debian's package when it
  is missing; ``playwright install`` is never used), one per test module (see :func:`browser`).
- :func:`page_daemon` starts a real daemon (uvicorn on loopback, a temporary home, a sample
  project with notes in both scopes) once per test module, and signs a browser in through the
  real one-time ``/auth`` link; every test's page reuses that browser's cookie.
- :func:`screenshot` saves PNGs at 360 and 1280 px wide under ``tests/browser/artifacts/``
  (git-ignored), the test artefacts a person looks at.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent
_DAEMON_HELPERS = _HERE.parent / "integration" / "daemon"
if str(_DAEMON_HELPERS) not in sys.path:
    sys.path.insert(0, str(_DAEMON_HELPERS))

from daemon_support import live_daemon  # noqa: E402
from page_support import PageDaemon, seed_project, sign_in  # noqa: E402
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from oharness.daemon import DaemonOptions  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = _HERE / "artifacts"
WIDTHS = (360, 1280)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.service)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_FLAGS}


@pytest.fixture(scope="module")
def browser(browser_type_launch_args: dict[str, Any]) -> Iterator[Browser]:
    """Chromium for one test module.

    Not pytest-playwright's session-wide browser: Playwright's sync API keeps an asyncio loop
    running in the main thread while it is started, so every later test in the session calling
    ``asyncio.run`` would fail. Stopped after each module, it leaves no loop behind.
    """
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(**browser_type_launch_args)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def page_daemon(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[PageDaemon]:
    root = tmp_path_factory.mktemp("page")
    home, project = root / "home", root / "project"
    project.mkdir()
    ids = seed_project(home, project)
    options = DaemonOptions(home=home, start=project, background_sync=False, watch_seconds=0.2)
    with live_daemon(options) as daemon:
        storage = sign_in(browser, daemon)
        yield PageDaemon(daemon, home, project, ids, storage)


@pytest.fixture
def ui(browser: Browser, page_daemon: PageDaemon) -> Iterator[Page]:
    """A page signed in to the module's daemon (1280 px wide; tests resize it)."""
    context = browser.new_context(
        base_url=page_daemon.url,
        storage_state=page_daemon.storage_state,  # type: ignore[arg-type]
        viewport={"width": 1280, "height": 900},
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[Page, str], list[Path]]:
    """Save the page at 360 and 1280 px wide; returns the files."""

    def take(page: Page, name: str) -> list[Path]:
        ARTIFACTS.mkdir(exist_ok=True)
        saved = []
        size = page.viewport_size or {"width": 1280, "height": 900}
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            path = ARTIFACTS / f"{name}-{width}.png"
            page.screenshot(path=str(path), full_page=True)
            saved.append(path)
        page.set_viewport_size(size)
        return saved

    return take
