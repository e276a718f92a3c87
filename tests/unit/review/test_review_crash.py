"""A merge interrupted at any file write loses nothing (spec 02.5, 05.2), and odd input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from oharness.fsio import set_fault_hook
from oharness.memory.workspace import Workspace
from oharness.notes.format import Note, parse_note_bytes
from oharness.review import open_review, plan_merge
from oharness.review.dismissals import DismissalStore

if TYPE_CHECKING:
    from conftest import FakeClock


class Crash(Exception):
    pass


def _seed(ws: Workspace) -> dict[str, bytes]:
    s = ws.service
    s.remember("Pricing cards use fills, not borders", "Fills, naïvely — 価格.", tags="design")
    b = s.remember("Pricing cards: fill instead of borders", "No borders 🎨.", tags="design")
    s.remember("Card index", f"See [[{b.id}]].")
    store = s.store("project")
    return {stored.id: stored.path.read_bytes() for stored in store.notes()}


def _crash_at(number: int) -> Callable[[str, Path], None]:
    seen = {"count": 0}

    def hook(stage: str, target: Path) -> None:
        seen["count"] += 1
        if seen["count"] == number:
            raise Crash(f"{stage} {target.name}")

    return hook


@pytest.mark.parametrize("crash_point", range(1, 24))
def test_a_crash_at_any_write_keeps_every_original(
    open_ws: Callable[..., Workspace], clock: FakeClock, crash_point: int
) -> None:
    ws = open_ws()
    originals = _seed(ws)
    review = open_review(ws, clock=clock)
    a, b = sorted(originals, key=lambda i: ws.service.store("project").get(i).note.created_at)[:2]  # type: ignore[union-attr]
    plan = review.plan([a, b])
    draft = review.draft(plan)
    previous = set_fault_hook(_crash_at(crash_point))
    try:
        crashed = False
        try:
            review.apply(plan, draft)
        except Crash:
            crashed = True
    finally:
        set_fault_hook(previous)
    fresh = open_ws()
    store = fresh.service.store("project")
    store.refresh(full=True)
    on_disk = {stored.id: stored.path.read_bytes() for stored in store.notes()}
    backed_up = {
        fresh.service.backups().read_bytes(record)
        for record in fresh.service.backups().recent(None)
    }
    for note_id, data in originals.items():
        assert on_disk.get(note_id) == data or data in backed_up, (crash_point, note_id)
    if not crashed:
        assert set(on_disk) == set(originals) - {b}
    else:  # whatever state it stopped in, merging again finishes the job
        review = open_review(fresh, clock=clock)
        if b in on_disk:
            plan = review.plan([a, b])
            review.apply(plan, review.draft(plan))
        assert b not in {s.id for s in fresh.service.store("project").notes()}
    for stored in store.notes():
        parse_note_bytes(stored.path.read_bytes())


def test_a_half_written_dismissals_file_shows_findings_again(
    workspace: Workspace, clock: FakeClock, home: Path
) -> None:
    workspace.service.remember("Links nowhere", "See [[nothing-here]].")
    review = open_review(workspace, clock=clock)
    [finding] = review.review()
    review.dismiss(finding.id)
    path = home / "memory-review" / "dismissals.json"
    path.write_text(path.read_text()[:20])
    assert [f.id for f in review.review()] == [finding.id]
    review.dismiss(finding.id)  # and dismissing again repairs the file
    assert json.loads(path.read_text())["dismissed"][finding.id]["hashes"] == list(finding.hashes)


def test_two_dismissal_stores_keep_both_entries(workspace: Workspace, clock: FakeClock) -> None:
    s = workspace.service
    s.remember("Links nowhere", "See [[nothing-here]].")
    s.remember("Links elsewhere", "See [[nothing-there]].")
    review = open_review(workspace, clock=clock)
    first, second = review.review()
    directory = workspace.home.home / "memory-review"
    DismissalStore(directory, clock=clock).dismiss(first, "project:x")
    DismissalStore(directory, clock=clock).dismiss(second, "project:x")
    assert review.review() == []


def test_the_plan_is_a_pure_function_of_the_notes() -> None:
    notes = [
        Note("newer-1", "Newer", "Body [[older-1]].\n", created_at=20),
        Note("older-1", "Older", "Body.\n", created_at=10),
        Note("other-1", "Other", "Links [[newer-1]] twice [[newer-1]].\n", created_at=5),
    ]
    plan = plan_merge(notes, ["newer-1", "older-1"], "project", "project:p")
    again = plan_merge(list(reversed(notes)), ["older-1", "newer-1"], "project", "project:p")
    assert plan == again
    assert plan.keep == "older-1" and plan.delete == ("newer-1",) and plan.relink == ("other-1",)
    assert set(plan.hashes) == {"older-1", "newer-1", "other-1"}
