"""``oharness demo`` in a browser: the printed link signs Chromium in and lands on the Memory
page, where the sample project's waiting conflict, tidy-up pair and backups are shown, and a note
the other device writes meanwhile appears without a reload."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

_DEMO_HELPERS = Path(__file__).resolve().parent.parent / "integration" / "demo"
if str(_DEMO_HELPERS) not in sys.path:
    sys.path.insert(0, str(_DEMO_HELPERS))

from demo_support import Demo, RealHome, free_port  # noqa: E402


def test_the_printed_link_opens_the_page_with_the_demo_waiting(
    browser: Browser, tmp_path: Path, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    real_home = RealHome.make(tmp_path / "user-home")
    (tmp_path / "tmp").mkdir()
    demo = Demo(tmp_path / "tmp", real_home, "--port", str(free_port()), "--no-open")
    try:
        url, port = demo.page()
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(20_000)
        try:
            page = context.new_page()
            page.goto(url)
            page.wait_for_url(re.compile(r"/memory(/notes)?$"))
            expect(page.get_by_role("navigation", name="Sections")).to_be_visible()
            expect(page.get_by_text("Deploys go out on Tuesdays at noon").first).to_be_visible()
            base = f"http://127.0.0.1:{port}/memory"
            page.goto(f"{base}/conflicts")
            conflict = page.get_by_role("heading", name="Deploys go out on Tuesdays at noon")
            expect(conflict).to_be_visible()
            expect(page.get_by_text("14:00 UTC, after the stand-up").first).to_be_visible()
            screenshot(page, "demo-conflicts")
            page.goto(f"{base}/tidy")
            expect(page.get_by_text("Run the pytest suite before every push").first).to_be_visible()
            page.goto(f"{base}/backups")
            expect(
                page.get_by_text("The checkout page is frozen until the spring sale ends").first
            ).to_be_visible()
            # The other device writes a note while the demo runs; this device's next sync
            # pulls it and the open page shows it without a reload.
            page.goto(f"{base}/notes")
            demo.wait_for(r"the other device added a note", timeout=60)
            later = page.get_by_text("Checkout sends receipts through the mailer queue")
            expect(later.first).to_be_visible(timeout=150_000)
        finally:
            context.close()
        assert demo.stop() == 0
    finally:
        demo.kill()
    assert demo.temp_homes() == []
    real_home.assert_untouched()


def test_without_its_sync_server_the_page_shows_the_sync_error(
    browser: Browser, tmp_path: Path
) -> None:
    real_home = RealHome.make(tmp_path / "user-home")
    (tmp_path / "tmp").mkdir()
    demo = Demo(
        tmp_path / "tmp", real_home, "--port", str(free_port()), "--no-open", "--no-sync-server"
    )
    try:
        url, port = demo.page()
        context = browser.new_context()
        context.set_default_timeout(20_000)
        try:
            page = context.new_page()
            page.goto(url)
            page.wait_for_url(re.compile(r"/memory(/notes)?$"))
            page.goto(f"http://127.0.0.1:{port}/memory/sync")
            expect(page.get_by_role("alert").filter(has_text="not signed in").first).to_be_visible()
            page.goto(f"http://127.0.0.1:{port}/memory/notes")  # local memory is all there
            mine = page.get_by_text("Prefers short answers with the code first")
            expect(mine.first).to_be_visible()
        finally:
            context.close()
        assert demo.stop() == 0
    finally:
        demo.kill()
    real_home.assert_untouched()
