"""Merges with cloud sync on commit to the cloud first (spec 05.2, 06.4), through a live
server on loopback, with two machines of one account."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from review_machines import Clock, Machine, loopback_port, server_notes
from sync_server_support import LiveServer, make_settings

from oharness.errors import ConflictError, LimitError
from oharness.server.app import create_app
from oharness.storage.in_memory import MemoryObjectStore
from oharness.sync.batch import CommitFirst
from oharness.sync.protocol import Quotas


@pytest.fixture
def server() -> Iterator[LiveServer]:
    app = create_app(MemoryObjectStore(), make_settings(quotas=Quotas(max_body_bytes=4096)))
    live = LiveServer(app, port=loopback_port()).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def machines(tmp_path: Path, server: LiveServer) -> Iterator[tuple[Machine, Machine]]:
    clock = Clock()
    one, two = Machine(tmp_path / "one", server, clock), Machine(tmp_path / "two", server, clock)
    try:
        yield one, two
    finally:
        one.close()
        two.close()


def _seed(one: Machine, two: Machine) -> tuple[str, str, str]:
    s = one.ws.service
    a = s.remember("Pricing cards use fills, not borders", "Fills.", tags="design").id
    b = s.remember("Pricing cards: fill instead of borders", "No borders.", tags="design").id
    c = s.remember("Deploys happen on Tuesdays", f"Unrelated; see [[{b}]].").id
    one.sync()
    two.sync()
    assert set(two.files()) == {a, b, c}
    return a, b, c


def test_an_involved_note_edited_elsewhere_refuses_the_merge(
    machines: tuple[Machine, Machine], server: LiveServer
) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)
    two.ws.service.remember("Pricing cards: fill instead of borders", "Edited on two.", id=b)
    two.sync()
    cloud_before = server_notes(server)
    two_before = two.files()
    with pytest.raises(ConflictError, match=b):
        review.apply(plan, draft)
    assert server_notes(server) == cloud_before
    assert two.files() == two_before
    one_files = one.files()
    assert set(one_files) == set(two_before)  # nothing merged or deleted on this machine
    assert "Edited on two." in one_files[b]  # only the ordinary sync brought the edit
    assert not [r for r in one.ws.service.backups().recent() if r.reason == "merge"]


def test_an_unrelated_edit_elsewhere_lets_the_merge_through(
    machines: tuple[Machine, Machine], server: LiveServer
) -> None:
    one, two = machines
    a, b, c = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    assert plan.relink == (c,)
    draft = review.draft(plan)
    unrelated = two.ws.service.remember("Standup is at ten", "Daily.").id
    two.sync()
    result = review.apply(plan, draft)
    assert result.committed_version is not None
    assert set(one.files()) == {a, c, unrelated}
    assert set(server_notes(server)) == {a, c, unrelated}
    assert f"[[{a}]]" in one.files()[c]
    # the merge reaches the other machine as ordinary pulls, never as a conflict
    reports = two.sync()
    assert reports["project"].result is not None and reports["project"].result.conflicts == []
    assert two.files() == one.files()
    # and this machine's base took the commit: its next pass changes nothing
    again = one.sync()["project"].result
    assert again is not None and again.pushed == [] and again.pulled == []


def test_a_note_not_yet_synced_is_refused(machines: tuple[Machine, Machine]) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)
    # an edit made on this machine is uploaded by the pass the merge runs first; the plan is
    # then stale (the edit came after the plan), so it is refused with the id named
    one.ws.service.remember("Pricing cards: fill instead of borders", "Edited here.", id=b)
    with pytest.raises(ConflictError, match=b):
        review.apply(plan, draft)
    files = one.files()
    assert {a, b} <= set(files) and "Edited here." in files[b]


def test_the_merged_body_must_fit_the_service_limit(machines: tuple[Machine, Machine]) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    s = one.ws.service
    s.remember("Pricing cards use fills, not borders", "x " * 1500, id=a)
    s.remember("Pricing cards: fill instead of borders", "y " * 1500, id=b)
    one.sync()
    review = one.review()
    plan = review.plan([a, b])
    with pytest.raises(LimitError, match="sync service"):
        review.apply(plan, review.draft(plan))
    assert {a, b} <= set(one.files())


def test_sync_that_cannot_reach_the_server_refuses_the_merge(
    machines: tuple[Machine, Machine], server: LiveServer
) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)
    server.stop()
    from oharness.errors import SyncError

    with pytest.raises(SyncError, match="must be synced before a merge"):
        review.apply(plan, draft)
    assert {a, b} <= set(one.files())


def _edit_elsewhere_during(
    monkeypatch: pytest.MonkeyPatch, step: str, two: Machine, note_id: str | None
) -> None:
    """Let machine two commit an edit right after ``step`` of the first attempt."""
    original = getattr(CommitFirst, step)
    done = {"once": False}

    def wrapped(self: CommitFirst, *args: object, **kwargs: object) -> object:
        result = original(self, *args, **kwargs)
        if not done["once"]:
            done["once"] = True
            service = two.ws.service
            if note_id is None:
                service.remember("Standup is at ten", "Daily.")
            else:
                service.remember("Pricing cards: fill instead of borders", "Raced.", id=note_id)
            two.sync()
        return result

    monkeypatch.setattr(CommitFirst, step, wrapped)


@pytest.mark.parametrize("step", ["_sync_first", "_check"])
def test_an_unrelated_edit_racing_the_commit_is_retried(
    machines: tuple[Machine, Machine],
    server: LiveServer,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)
    _edit_elsewhere_during(monkeypatch, step, two, None)
    result = review.apply(plan, draft)  # after _check: the service answers 412, then a retry
    assert result.committed_version is not None
    assert set(server_notes(server)) == set(one.files()) and b not in one.files()


@pytest.mark.parametrize("step", ["_sync_first", "_check"])
def test_an_involved_edit_racing_the_commit_refuses_it(
    machines: tuple[Machine, Machine],
    server: LiveServer,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)
    _edit_elsewhere_during(monkeypatch, step, two, b)
    with pytest.raises(ConflictError, match=b):
        review.apply(plan, draft)
    cloud = server_notes(server)
    assert {a, b} <= set(cloud) and {a, b} <= set(one.files())
    assert "Raced." in two.files()[b]


def test_a_note_in_conflict_is_not_fully_synced(machines: tuple[Machine, Machine]) -> None:
    one, two = machines
    a, b, _ = _seed(one, two)
    one.ws.service.remember("Pricing cards: fill instead of borders", "Here.", id=b)
    two.ws.service.remember("Pricing cards: fill instead of borders", "There.", id=b)
    two.sync()
    result = one.sync()["project"].result
    assert result is not None and b in result.conflicts
    review = one.review()
    plan = review.plan([a, b])
    with pytest.raises(ConflictError, match="not fully synced"):
        review.apply(plan, review.draft(plan))
    assert {a, b} <= set(one.files())


def test_a_crash_after_the_cloud_accepted_converges_at_the_next_sync(
    machines: tuple[Machine, Machine], server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oharness.review.review_service import ReviewService

    one, two = machines
    a, b, c = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    draft = review.draft(plan)

    def crash(self: ReviewService, *args: object) -> None:
        raise KeyboardInterrupt("killed before writing locally")

    monkeypatch.setattr(ReviewService, "_write", crash)
    with pytest.raises(KeyboardInterrupt):
        review.apply(plan, draft)
    monkeypatch.undo()
    assert set(server_notes(server)) == {a, c} and b in one.files()
    result = one.sync()["project"].result
    assert result is not None and result.conflicts == []
    assert set(one.files()) == {a, c}
    assert "No borders." in one.files()[a]
    assert any(r.note_id == b for r in one.ws.service.backups().recent())  # pull-delete backup


def test_a_note_forgotten_elsewhere_after_a_merge_stays_forgotten(
    machines: tuple[Machine, Machine], server: LiveServer
) -> None:
    # The merge's commit moved this machine's position; it must move as a whole (version,
    # commit id), or the next pass reads a storage reset and uploads the forgotten note again.
    one, two = machines
    a, b, c = _seed(one, two)
    review = one.review()
    plan = review.plan([a, b])
    review.apply(plan, review.draft(plan))
    two.sync()
    two.ws.service.forget(c)
    two.sync()
    report = one.sync()["project"].result
    assert report is not None and not report.reset
    two.sync()
    assert c not in one.files() and c not in two.files() and c not in server_notes(server)
