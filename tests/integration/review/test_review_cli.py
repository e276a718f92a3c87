"""``oharness memory review`` / ``review dismiss`` / ``merge`` through the entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

OHARNESS = Path(sys.executable).with_name("oharness")


def _run(home: Path, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OHARNESS_HOME": str(home), **env}
    return subprocess.run(
        [str(OHARNESS), *args],
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )


def _json(home: Path, cwd: Path, *args: str) -> Any:
    result = _run(home, cwd, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _seed(home: Path, cwd: Path) -> list[str]:
    assert _run(home, cwd, "project", "init").returncode == 0
    ids = []
    for summary, body in [
        ("Pricing cards use fills, not borders", "Fills since May."),
        ("Pricing cards: fill instead of borders", "No borders anywhere."),
        ("Links nowhere", "See [[never-written]] and `src/gone.py`."),
    ]:
        data = _json(home, cwd, "memory", "remember", "-s", summary, "-b", body, "-t", "design")
        ids.append(data["id"])
    return ids


def test_review_lists_dismiss_hides(home: Path, project_dir: Path) -> None:
    a, b, c = _seed(home, project_dir)
    findings = _json(home, project_dir, "memory", "review")["findings"]
    kinds = {f["kind"]: f for f in findings}
    assert sorted(kinds["same-topic"]["notes"]) == sorted([a, b])
    assert kinds["broken-link"]["notes"] == [c]
    assert kinds["missing-file"]["path"] == "src/gone.py"
    text = _run(home, project_dir, "memory", "review").stdout
    assert kinds["broken-link"]["id"] in text and "Broken link" in text
    dismissed = _json(home, project_dir, "memory", "review", "dismiss", kinds["broken-link"]["id"])
    assert dismissed["dismissed"]["id"] == kinds["broken-link"]["id"]
    after = {f["id"] for f in _json(home, project_dir, "memory", "review")["findings"]}
    assert kinds["broken-link"]["id"] not in after and kinds["same-topic"]["id"] in after
    user_only = _json(home, project_dir, "memory", "review", "--scope", "user")["findings"]
    assert user_only == []
    failed = _run(home, project_dir, "memory", "review", "dismiss", "same-topic-000000000000")
    assert failed.returncode == 1 and "no finding" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1


def test_merge_asks_unless_yes_then_merges(home: Path, project_dir: Path) -> None:
    a, b, _ = _seed(home, project_dir)
    refused = _run(home, project_dir, "memory", "merge", a, b)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert "keep " + a in refused.stdout  # the plan and the draft were shown
    assert (project_dir / "MEMORY" / f"{b}.md").exists()
    mixed = _run(home, project_dir, "memory", "merge", f"project:{b}", f"user:{a}", "--yes")
    assert mixed.returncode == 1 and "names the user scope" in mixed.stderr
    data = _json(home, project_dir, "memory", "merge", f"project:{b}", a, "--yes")  # as listed
    assert data["kept"] == a and data["deleted"] == [b] and len(data["backups"]) == 2
    assert data["committedVersion"] is None  # sync off: an ordinary local edit
    assert not (project_dir / "MEMORY" / f"{b}.md").exists()
    merged = (project_dir / "MEMORY" / f"{a}.md").read_text()
    assert "Fills since May." in merged and "No borders anywhere." in merged


def test_merge_names_the_ids_that_are_not_notes(home: Path, project_dir: Path) -> None:
    a, _, _ = _seed(home, project_dir)
    result = _run(home, project_dir, "memory", "merge", a, "nope-1", "nope-2")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no note 'nope-1', 'nope-2'" in result.stderr and "memory list" in result.stderr


def test_a_merge_too_large_to_save_is_refused_before_its_draft_is_shown(
    home: Path, project_dir: Path
) -> None:
    assert _run(home, project_dir, "project", "init").returncode == 0
    body = "word " * 20_000  # 100 KB each; merged, over memory.maxNoteBytes
    ids = [
        _json(home, project_dir, "memory", "remember", "-s", f"Big {n}", "-b", body)["id"]
        for n in (1, 2)
    ]
    result = _run(home, project_dir, "memory", "merge", *ids, "--yes")
    assert result.returncode == 1 and len(result.stdout) < 1_000
    assert "the merged note would be refused" in result.stderr and "--edit" in result.stderr
    assert all((project_dir / "MEMORY" / f"{i}.md").exists() for i in ids)


def test_merge_with_edit_and_a_model_draft_without_a_model(home: Path, project_dir: Path) -> None:
    a, b, _ = _seed(home, project_dir)
    editor = project_dir / "editor.py"
    editor.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('Fills since May.', 'Edited by hand.'))\n"
    )
    result = _run(
        home,
        project_dir,
        "memory",
        "merge",
        a,
        b,
        "--edit",
        "--yes",
        EDITOR=f"{sys.executable} {editor}",
    )
    assert result.returncode == 0, result.stderr
    assert "Edited by hand." in (project_dir / "MEMORY" / f"{a}.md").read_text()
    c = _json(home, project_dir, "memory", "remember", "-s", "Pricing cards fill", "-b", "x")["id"]
    failed = _run(home, project_dir, "memory", "merge", a, c, "--draft", "model", "--yes")
    assert failed.returncode == 1 and "models.small" in failed.stderr
    assert "--draft concat" in failed.stderr
    assert (project_dir / "MEMORY" / f"{c}.md").exists()
