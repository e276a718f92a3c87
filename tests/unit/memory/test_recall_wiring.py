"""Recall over the stores: index section, recalled block, search, usage, cache (spec 03)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oharness.memory.attach import recall_for_message
from oharness.memory.prompt import EMPTY, render_index
from oharness.memory.scope_recall import MemoryRecall
from oharness.memory.workspace import Workspace
from oharness.notes.format import parse_note, serialise_note


def _recall(workspace: Workspace) -> MemoryRecall:
    assert workspace.service.recall is not None
    return workspace.service.recall


def _seed(workspace: Workspace) -> dict[str, str]:
    service = workspace.service
    return {
        "deploy": service.remember(
            "Deploys happen on Tuesdays",
            "The release train leaves at noon; hotfixes any day.",
            tags="release deploy",
            type="project",
        ).id,
        "pricing": service.remember(
            "Pricing cards use fills, not borders",
            "Outlines were the loudest thing on a page of numbers.",
            tags="design pricing",
            type="feedback",
        ).id,
        "terse": service.remember(
            "Prefers terse answers with code first", "Lead with the diff.", type="user"
        ).id,
        "cjk": service.remember(
            "部署流程使用蓝绿发布", "每次部署都先切换到绿色环境。", tags="deploy 部署"
        ).id,
        "ja": service.remember(
            "データベースの移行は金曜日に行う", "移行スクリプトはオペレーターが実行する。"
        ).id,
    }


def test_a_message_about_a_topic_attaches_the_note_and_chit_chat_nothing(
    workspace: Workspace,
) -> None:
    ids = _seed(workspace)
    recall = _recall(workspace)
    outcome = recall_for_message(recall, "When is the next deploy? Is the release train on time?")
    assert [note.id for note in outcome.attached][:1] == [ids["deploy"]]
    assert outcome.block.startswith("<recalled-memory>") and outcome.block.endswith(
        "</recalled-memory>"
    )
    assert "The release train leaves at noon" in outcome.block
    for message in ("Hi! How are you today?", "thanks, that works", "Can you help me?"):
        assert recall_for_message(recall, message).attached == ()


def test_chinese_and_japanese_messages_find_their_notes(workspace: Workspace) -> None:
    ids = _seed(workspace)
    recall = _recall(workspace)
    zh = recall_for_message(recall, "蓝绿发布的部署流程是什么?")
    assert ids["cjk"] in [note.id for note in zh.attached]
    ja = [hit.id for hit in workspace.service.search("データベースの移行はいつ?")]
    assert ja[0] == ids["ja"]


def test_excluded_ids_are_not_attached_again(workspace: Workspace) -> None:
    ids = _seed(workspace)
    recall = _recall(workspace)
    message = "When is the next deploy of the release train?"
    assert ids["deploy"] in [n.id for n in recall_for_message(recall, message).attached]
    again = recall_for_message(recall, message, exclude={ids["deploy"]})
    assert ids["deploy"] not in [n.id for n in again.attached]


def test_edits_removals_and_external_changes_show_without_a_rebuild(
    workspace: Workspace, project_dir: Path
) -> None:
    ids = _seed(workspace)
    recall = _recall(workspace)
    index = recall.index()
    message = "Which day do canary rollouts happen?"
    assert recall_for_message(recall, message).attached == ()
    workspace.service.remember(
        "Canary rollouts happen on Mondays", "Ten percent of traffic first.", tags="canary"
    )
    assert recall_for_message(recall, message).attached[0].id.startswith("canary-rollouts")
    # An external program rewrites a note (write + rename, as editors do).
    path = project_dir / "MEMORY" / f"{ids['pricing']}.md"
    note = parse_note(path.read_text())
    temp = path.with_name("edited.tmp")
    temp.write_text(serialise_note(note.with_changes(summary="Pricing cards use canary yellow")))
    os.replace(temp, path)
    hits = {n.id for n in recall_for_message(recall, message).attached}
    assert ids["pricing"] in {hit.id for hit in workspace.service.search("canary yellow")}
    workspace.service.forget(ids["deploy"])
    assert ids["deploy"] not in {hit.id for hit in workspace.service.search("release train")}
    assert recall.index() is index  # updated in place, never rebuilt
    assert hits  # the canary note still attaches


def test_the_cache_lets_a_new_process_skip_tokenising(
    open_ws: object, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oharness.recall.index import RecallIndex

    workspace = open_ws()  # type: ignore[operator]
    for number in range(30):
        workspace.service.remember(f"Fact number {number} about widgets", f"Widget {number}.")
    _recall(open_ws()).index()  # type: ignore[operator]  # a new process: 30 notes to tokenise
    assert list((home / "cache").glob("recall-*.marshal"))
    tokenised: list[int] = []
    original = RecallIndex.add_many

    def counting(self: RecallIndex, notes: object, cache_keys: object = None) -> None:
        items = list(notes)  # type: ignore[call-overload]
        tokenised.append(len(items))
        original(self, items, cache_keys)  # type: ignore[arg-type]

    monkeypatch.setattr(RecallIndex, "add_many", counting)
    fresh = open_ws()  # type: ignore[operator]
    fresh.service.remember("A brand new widget fact", "Only this one is new.")
    hits = fresh.service.search("widget fact number 7")
    assert hits[0].id.startswith("fact-number-7-")
    assert tokenised[0] <= 1  # only the note written after the cache


def test_usage_is_recorded_by_hosts_but_not_by_inspection(workspace: Workspace, home: Path) -> None:
    ids = _seed(workspace)
    recall = _recall(workspace)
    message = "When is the next deploy of the release train?"
    recall_for_message(recall, message, record=False)
    assert not (home / "memory-usage").exists()
    recall_for_message(recall, message)
    recall_for_message(recall, message)
    (usage_file,) = (home / "memory-usage").glob("*.json")
    data = json.loads(usage_file.read_text())
    assert data["scopeKey"].startswith("project:")
    assert data["notes"][ids["deploy"]]["count"] == 2
    notes_dir = Path(workspace.service.store("project").directory)
    assert all("count" not in path.read_text() for path in notes_dir.glob("*.md"))


def test_budget_cuts_long_bodies_at_a_line_and_never_drops_silently(
    open_ws: object, project_dir: Path
) -> None:
    (project_dir / ".oharness").mkdir()
    (project_dir / ".oharness" / "config.json").write_text(
        '{"memory": {"recall": {"budgetChars": 700}}}'
    )
    workspace = open_ws()  # type: ignore[operator]
    lines = "".join(f"Step {n}: run the kubernetes migration job number {n}.\n" for n in range(40))
    long_id = workspace.service.remember("Kubernetes migration runbook", lines, tags="k8s").id
    other = workspace.service.remember(
        "Kubernetes migration needs a freeze", "Announce the freeze a day ahead.", tags="k8s"
    ).id
    outcome = recall_for_message(_recall(workspace), "How do I run the kubernetes migration?")
    shown = {note.id for note in outcome.attached} | {
        text.rsplit("(", 1)[1].rstrip(")") for text in outcome.mentioned
    }
    assert {long_id, other} <= shown
    assert "more characters: memory(id=" in outcome.block
    body_lines = [line for line in outcome.block.splitlines() if line.startswith("Step ")]
    assert all(line.endswith(".") for line in body_lines)  # cut at a line boundary
    assert len(outcome.block) < 700 + 400  # blocks within budget, plus the frame


def test_a_recall_failure_attaches_nothing_and_never_raises(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(workspace)
    recall = _recall(workspace)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(recall, "recall", broken)
    assert recall_for_message(recall, "When is the next deploy?").block == ""
    with pytest.raises(RuntimeError):
        recall_for_message(recall, "When is the next deploy?", strict=True)


def test_remember_reports_related_and_likely_duplicates(workspace: Workspace) -> None:
    ids = _seed(workspace)
    result = workspace.service.remember(
        "Deploys happen on Tuesday", "Trains leave at noon.", tags="release deploy"
    )
    assert result.likely_duplicate is not None
    assert result.likely_duplicate["id"] == ids["deploy"]
    assert result.related and result.related[0]["id"] == ids["deploy"]
    assert set(result.related[0]) == {"id", "scope", "summary", "score"}
    unrelated = workspace.service.remember("Office plants need water", "Fridays.", tags="plants")
    assert unrelated.likely_duplicate is None


def test_index_section(workspace: Workspace) -> None:
    assert render_index([], 4000) == EMPTY
    assert len(EMPTY.splitlines()) == 3  # heading + the two lines
    ids = _seed(workspace)
    notes = workspace.service.all_notes()
    full = render_index(notes, 4000)
    assert full.startswith("# Memory\n")
    assert "Recall matches words, not meaning" in full
    lines = [line for line in full.splitlines() if line.startswith("- ")]
    assert lines[0].endswith(f"({ids['ja']})")  # the most recently updated first
    assert f"- [user] Prefers terse answers with code first (user:{ids['terse']})" in lines
    short = render_index(notes, 120)
    assert "more notes not shown: the `memory` tool lists and searches them all." in short
    shown = [line for line in short.splitlines() if line.startswith("- ")]
    assert sum(len(line) + 1 for line in shown) <= 120 and len(shown) < 5
