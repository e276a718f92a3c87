"""The review list (spec 05.1): every kind of finding, stable ids, dismissals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from oharness.memory.usage import UsageLog
from oharness.memory.workspace import Workspace
from oharness.review import open_review
from oharness.review.findings import finding_id

DAY = 86_400_000

if TYPE_CHECKING:
    from conftest import FakeClock


def _kinds(workspace: Workspace, clock: FakeClock, **kw: object) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in open_review(workspace, clock=clock).review(**kw):  # type: ignore[arg-type]
        found.setdefault(finding.kind, []).append(finding.to_dict())
    return found


def test_a_reworded_duplicate_is_one_same_topic_finding_with_merge(
    workspace: Workspace, clock: FakeClock
) -> None:
    s = workspace.service
    a = s.remember("Pricing cards use fills, not borders", "Design review said so.", tags="design")
    b = s.remember("Pricing cards: fill instead of borders", "From the redesign.", tags="design")
    s.remember("Deploys happen on Tuesdays", "Release train at noon.", tags="release")
    groups = _kinds(workspace, clock)["same-topic"]
    assert len(groups) == 1
    assert sorted(groups[0]["notes"]) == sorted([a.id, b.id])
    assert groups[0]["actions"] == ["merge", "dismiss"]
    assert groups[0]["id"].startswith("same-topic-")


def test_the_tag_an_importer_gives_every_note_makes_no_topic(
    workspace: Workspace, clock: FakeClock
) -> None:
    # Short notes imported together all carry "claude-code": three unrelated ones read as one.
    s = workspace.service
    s.remember("BOM file", "Starts with a byte order mark.", tags="bom, claude-code")
    s.remember("Windows line endings", "CRLF in the exports.", tags="crlf, claude-code")
    s.remember("In subfolder", "Kept under notes/.", tags="subnote, claude-code")
    assert "same-topic" not in _kinds(workspace, clock)


def test_notes_of_different_scopes_are_never_one_topic(
    workspace: Workspace, clock: FakeClock
) -> None:
    s = workspace.service
    s.remember("Pricing cards use fills, not borders", "One.", tags="design", scope="project")
    s.remember("Pricing cards use fills, not borders", "Two.", tags="design", scope="user")
    assert "same-topic" not in _kinds(workspace, clock)


def test_broken_link_missing_file_too_long(
    workspace: Workspace, clock: FakeClock, project_dir: Path
) -> None:
    (project_dir / "src").mkdir()
    (project_dir / "src" / "here.py").write_text("x")
    s = workspace.service
    linked = s.remember("Target note", "Exists.")
    body = (
        f"See [[{linked.id}]] and [[never-written]].\n"
        "Code in `src/here.py` and `src/gone.py`, docs in [the guide](docs/guide.md#intro).\n"
        "Not paths: `and/or`, `origin/main`, `https://x.test/a.md`, `/etc/hosts`, "
        "`path/to/file.py`.\n```\nexample `src/example-only.py`\n```\n"
    )
    note = s.remember("A note with problems", body)
    long = s.remember("A very long note", "word " * 1700)
    found = _kinds(workspace, clock)
    assert [(f["notes"], f["target"]) for f in found["broken-link"]] == [
        ([note.id], "never-written")
    ]
    assert sorted(f["path"] for f in found["missing-file"]) == ["docs/guide.md", "src/gone.py"]
    assert [f["notes"] for f in found["too-long"]] == [[long.id]]
    assert found["too-long"][0]["chars"] > 8000
    assert all(f["actions"] == ["open", "dismiss"] for f in found["broken-link"])


def test_user_notes_have_no_missing_file_findings(workspace: Workspace, clock: FakeClock) -> None:
    workspace.service.remember("A user note", "Uses `src/gone.py`.", scope="user")
    assert "missing-file" not in _kinds(workspace, clock)


def test_a_link_into_the_other_scope_is_not_broken(workspace: Workspace, clock: FakeClock) -> None:
    s = workspace.service
    mine = s.remember("About me", "I like tea.", scope="user")
    s.remember("Project note", f"See [[{mine.id}]].")
    assert "broken-link" not in _kinds(workspace, clock)


def test_unused_counts_recalls_and_changes(workspace: Workspace, clock: FakeClock) -> None:
    s = workspace.service
    old = s.remember("Old and forgotten", "Never recalled.")
    recalled = s.remember("Old but recalled", "Recalled recently.")
    clock.advance(95 * DAY)
    fresh = s.remember("Fresh note", "Just written.")
    UsageLog(workspace.home.usage_dir, clock=clock).record(s.scope_key("project"), [recalled.id])
    unused = [f["notes"][0] for f in _kinds(workspace, clock)["unused"]]
    assert unused == [old.id]
    assert fresh.id not in unused


def test_unused_days_comes_from_config(workspace: Workspace, clock: FakeClock, home: Path) -> None:
    (home / "config.json").write_text(json.dumps({"memory": {"consolidate": {"unusedDays": 10}}}))
    from oharness.memory.workspace import open_workspace

    workspace.service.remember("Ten days old", "Body.")
    clock.advance(11 * DAY)
    ws = open_workspace(workspace.project.root, home, register=True, clock=clock)  # type: ignore[union-attr]
    assert "unused" in _kinds(ws, clock)
    assert "unused" not in _kinds(workspace, clock)  # 90 days by default


def test_finding_ids_are_stable_across_edits_and_runs(
    workspace: Workspace, clock: FakeClock
) -> None:
    s = workspace.service
    note = s.remember("Links nowhere", "See [[nothing-here]].")
    first = open_review(workspace, clock=clock).review()
    s.remember("Links nowhere", "See [[nothing-here]], edited.", id=note.id)
    second = open_review(workspace, clock=clock).review()
    assert [f.id for f in first] == [f.id for f in second]
    assert first[0].hashes != second[0].hashes
    key = s.scope_key("project")
    assert first[0].id == finding_id(key, "broken-link", (note.id, "nothing-here"))


def test_dismissal_hides_until_a_note_changes(
    workspace: Workspace, clock: FakeClock, home: Path
) -> None:
    s = workspace.service
    note = s.remember("Links nowhere", "See [[nothing-here]].")
    review = open_review(workspace, clock=clock)
    [finding] = review.review()
    review.dismiss(finding.id)
    assert review.review() == []
    assert [f.id for f in review.review(dismissed=True)] == [finding.id]
    stored = json.loads((home / "memory-review" / "dismissals.json").read_text())
    assert finding.id in stored["dismissed"]
    assert not any(p.name == "memory-review" for p in workspace.project.memory_dir.iterdir())  # type: ignore[union-attr]
    s.remember("Links nowhere", "See [[nothing-here]] — still.", id=note.id)
    assert [f.id for f in review.review()] == [finding.id]


def test_dismissing_an_unknown_finding_is_refused(workspace: Workspace, clock: FakeClock) -> None:
    import pytest

    from oharness.errors import NotFoundError

    with pytest.raises(NotFoundError, match="no finding"):
        open_review(workspace, clock=clock).dismiss("broken-link-000000000000")


def test_a_chain_of_lookalikes_stays_within_six(workspace: Workspace, clock: FakeClock) -> None:
    s = workspace.service
    for n in range(9):
        s.remember(f"Retry policy for the billing webhook, variant {n}", "Body.", tags="billing")
    groups = _kinds(workspace, clock)["same-topic"]
    assert all(2 <= len(g["notes"]) <= 6 for g in groups)


def test_a_link_by_stem_or_summary_is_not_broken(workspace: Workspace, clock: FakeClock) -> None:
    s = workspace.service
    target = s.remember("Deploys happen on Tuesday", "Always.")
    s.remember(
        "Release", f"See [[{target.id.rsplit('-', 1)[0]}]] and [[Deploys happen on Tuesday]]."
    )
    assert "broken-link" not in _kinds(workspace, clock)
