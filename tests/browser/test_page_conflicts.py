"""Conflicts in a real browser: made by a second device writing the same notes through a real
sync server, appearing without a reload, each resolved one of the four ways, with the files on
both devices checked afterwards (spec 11, 07.3)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axe_support import fits_width, serious_violations, tab_to
from cloud_support import CloudWorld, cloud_world, wait_until
from playwright.sync_api import Browser, Locator, Page, expect

from oharness.notes.format import parse_note_bytes

WAYS = ("local", "cloud", "both", "hand")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[CloudWorld]:
    with cloud_world(tmp_path_factory.mktemp("cloud-conflicts"), browser) as running:
        yield running


@pytest.fixture(scope="module")
def page(browser: Browser, world: CloudWorld) -> Iterator[Page]:
    context = browser.new_context(
        base_url=world.url,
        storage_state=world.storage_state,  # type: ignore[arg-type]
        viewport={"width": 1280, "height": 900},
    )
    context.set_default_timeout(20_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def conflicted(world: CloudWorld, page: Page) -> dict[str, str]:
    """Four notes changed on both devices; the page is open when the conflicts arrive."""
    ids = {}
    with world.device("a") as here:
        for way in WAYS:
            ids[way] = here.service.remember(f"Shared note {way}", "line one\nline two\n").id
    world.sync_daemon()
    world.sync_other()
    with world.rest() as http:
        assert http.post("/sync/off").status_code == 200
    with world.device("a") as here, world.device("b") as laptop:
        for way, note_id in ids.items():
            here.service.remember(f"Shared note {way}", "line one from a\nline two\n", id=note_id)
            laptop.service.remember(f"Shared note {way}", "line one from b\nline two\n", id=note_id)
    world.sync_other()
    page.goto("/memory/conflicts")
    expect(page.locator("#live-state")).to_have_attribute("data-state", "live")
    expect(page.get_by_text("No conflicts wait for you.")).to_be_visible()
    with world.rest() as http:
        assert http.post("/sync/on").status_code == 200
    world.sync_daemon()
    wait_until(lambda: len(world.conflicts()) == len(WAYS), "four conflicts on the daemon")
    for note_id in ids.values():  # no reload: the conflicts event refreshed the list
        expect(page.locator(f"#conflict-project-{note_id}")).to_be_visible()
    return ids


def _article(page: Page, note_id: str) -> Locator:
    return page.locator(f"#conflict-project-{note_id}")


def _body(world: CloudWorld, note_id: str, which: str = "a") -> str:
    return parse_note_bytes(world.files(which)[note_id].encode()).body


def _settle(world: CloudWorld) -> None:
    """The daemon uploads the resolution; the second device pulls it."""
    world.sync_daemon()
    world.sync_other()


def test_the_three_versions_side_by_side(page: Page, conflicted: dict[str, str]) -> None:
    article = _article(page, conflicted["local"])
    fields = article.locator("table.conflict-fields")
    expect(fields).to_contain_text("Shared note local")
    diff = article.locator("table.diff tr.diff-changed")
    expect(diff).to_contain_text("line one from a")
    expect(diff).to_contain_text("line one from b")
    article.get_by_text("The last synced version").click()
    expect(article.locator(".base-version pre")).to_have_text("line one\nline two\n")


def test_keep_this_machines(page: Page, world: CloudWorld, conflicted: dict[str, str]) -> None:
    note_id = conflicted["local"]
    _article(page, note_id).get_by_role("button", name="Keep this machine's").click()
    expect(page.locator("#conflicts-outcome")).to_contain_text("Kept this machine's version")
    expect(_article(page, note_id)).to_have_count(0)
    assert _body(world, note_id) == "line one from a\nline two\n"
    _settle(world)
    assert _body(world, note_id, "b") == "line one from a\nline two\n"
    assert all(item["id"] != note_id for item in world.conflicts())


def test_take_the_clouds(page: Page, world: CloudWorld, conflicted: dict[str, str]) -> None:
    note_id = conflicted["cloud"]
    _article(page, note_id).get_by_role("button", name="Take the cloud's").click()
    expect(page.locator("#conflicts-outcome")).to_contain_text("Took the cloud's version")
    assert _body(world, note_id) == "line one from b\nline two\n"
    _settle(world)
    assert _body(world, note_id, "b") == "line one from b\nline two\n"
    with world.device("a") as here:
        reasons = [r.reason for r in here.service.backups().recent() if r.note_id == note_id]
    assert "conflict-take-cloud" in reasons  # this machine's version was set aside, kept


def test_keep_both(page: Page, world: CloudWorld, conflicted: dict[str, str]) -> None:
    note_id = conflicted["both"]
    _article(page, note_id).get_by_role("button", name="Keep both").click()
    expect(page.locator("#conflicts-outcome")).to_contain_text("Kept both")
    copies = [
        other
        for other, text in world.files().items()
        if other != note_id and "line one from b" in text and "Shared note both" in text
    ]
    assert len(copies) == 1
    assert _body(world, note_id) == "line one from a\nline two\n"
    _settle(world)
    assert _body(world, note_id, "b") == "line one from a\nline two\n"
    assert _body(world, copies[0], "b") == "line one from b\nline two\n"


def test_merge_by_hand(page: Page, world: CloudWorld, conflicted: dict[str, str]) -> None:
    note_id = conflicted["hand"]
    article = _article(page, note_id)
    article.get_by_text("Merge by hand").click()
    body = article.get_by_label("Body")
    expect(body).to_have_value(
        "<<<<<<< this machine\nline one from a\n=======\nline one from b\n>>>>>>> cloud\nline two\n"
    )
    article.get_by_role("button", name="Save the merged note").click()  # markers left
    expect(article.locator(".field-error")).to_contain_text("conflict markers")
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    article.get_by_label("Body").fill(f"line one from both\nkey {key}\n")
    article.get_by_role("button", name="Save the merged note").click()
    expect(article.locator(".field-error")).to_contain_text("looks like a credential")
    expect(article.get_by_label("Body")).to_have_value(f"line one from both\nkey {key}\n")
    assert _body(world, note_id) == "line one from a\nline two\n"  # refused: nothing changed
    article.get_by_label("Body").fill("line one from both\nline two\n")
    article.get_by_role("button", name="Save the merged note").click()
    expect(page.locator("#conflicts-outcome")).to_contain_text("Saved the merged")
    assert _body(world, note_id) == "line one from both\nline two\n"
    _settle(world)
    assert _body(world, note_id, "b") == "line one from both\nline two\n"
    assert all(item["id"] != note_id for item in world.conflicts())
    expect(_article(page, note_id)).to_have_count(0)
    if not world.conflicts():  # the other three resolved by the tests before (module order)
        expect(page.get_by_text("No conflicts wait for you.")).to_be_visible()


def test_keyboard_zh_cn_axe_and_360px(
    browser: Browser, world: CloudWorld, screenshot: Callable[[Page, str], list[Path]]
) -> None:
    with world.device("a") as here, world.device("b") as laptop:
        note_id = here.service.remember("Keyboard note", "one\n").id
        world.sync_daemon()
        world.sync_other()
        with world.rest() as http:
            http.post("/sync/off")
        here.service.remember("Keyboard note", "one here\n", id=note_id)
        laptop.service.remember("Keyboard note", "one there\n", id=note_id)
    world.sync_other()
    with world.rest() as http:
        http.post("/sync/on")
    world.sync_daemon()
    context = browser.new_context(
        base_url=world.url,
        storage_state=world.storage_state,  # type: ignore[arg-type]
        viewport={"width": 1280, "height": 900},
    )
    try:
        page = context.new_page()
        page.goto("/memory/conflicts?lang=zh-CN")
        expect(page.get_by_role("button", name="保留本机的版本")).to_be_visible()
        expect(page.get_by_text("手动合并")).to_be_visible()
        page.goto("/memory/conflicts")
        assert serious_violations(page, "#section-conflicts") == []
        assert fits_width(page, 360)
        screenshot(page, "conflicts")
        page.set_viewport_size({"width": 1280, "height": 900})
        tab_to(page, f"#resolve-local-project-{note_id}")
        page.keyboard.press("Enter")
        expect(page.locator("#conflicts-outcome")).to_contain_text("Kept this machine's")
    finally:
        context.close()
