"""``oharness memory import|export`` through the entry point, on folders laid out like the real
ones (Claude Code auto memory, Codex memories, plain Markdown) and a folder of hostile files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.integration.bridges.runner import as_json, ok, run

from oharness.importers.claude_projects import claude_folder_name


def _claude_memory(root: Path, project: Path) -> Path:
    folder = root / "projects" / claude_folder_name(project) / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(
        "# Memory\n\n"
        "- [User role](user_role.md) — Ada is a data scientist new to React\n"
        "- [Testing](feedback_testing.md) — integration tests hit a real database\n"
        "- [Gone](missing_file.md) — this one was deleted\n"
        "\nRemember: the staging cluster is shared with the billing team.\n",
        encoding="utf-8",
    )
    (folder / "user_role.md").write_text(
        "---\nname: user_role\ndescription: Ada is a data scientist, new to React\ntype: user\n"
        "---\n\nExplain frontend ideas by analogy with pandas.\n",
        encoding="utf-8",
    )
    (folder / "feedback_testing.md").write_text(
        "---\nname: feedback_testing\ndescription: Integration tests must hit a real database\n"
        "type: feedback\n---\n\nNo mocks: a mocked migration once passed while prod broke.\n"
        "**Why:** the Q3 incident. **How to apply:** use the docker compose database.\n",
        encoding="utf-8",
    )
    (folder / "reference_dash.md").write_text(
        "---\nname: reference_dash\ndescription: Latency dashboard is grafana.internal/d/api\n"
        "type: reference\n---\n\nCheck it when touching request handling.\n",
        encoding="utf-8",
    )
    os.utime(folder / "feedback_testing.md", (1_700_000_000, 1_700_000_000))
    return root


def _init(home: Path, project: Path) -> None:
    ok(home, project, "project", "init")


def test_claude_code_import_maps_types_scopes_and_dates(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    _init(home, project_dir)
    source = _claude_memory(tmp_path / "dot-claude", project_dir)
    report = as_json(home, project_dir, "memory", "import", "claude-code", str(source))
    counts = report["counts"]
    assert counts["imported"] == 4 and counts["refused"] == 0
    reasons = {item["source"]: item.get("reason", "") for item in report["items"]}
    name = claude_folder_name(project_dir)
    assert "missing" in reasons[f"projects/{name}/memory/missing_file.md"]
    user_note = as_json(home, project_dir, "memory", "show", "user_role")
    assert user_note["scope"] == "user" and user_note["type"] == "user"
    assert user_note["summary"] == "Ada is a data scientist, new to React"
    feedback = as_json(home, project_dir, "memory", "show", "feedback_testing")
    assert feedback["scope"] == "project" and feedback["type"] == "feedback"
    assert feedback["updatedAt"] == 1_700_000_000_000
    assert (project_dir / "MEMORY" / "reference_dash.md").is_file()
    # The index's free text is kept as a note of its own.
    found = as_json(home, project_dir, "memory", "search", "staging cluster billing")
    assert found["results"], found

    again = as_json(home, project_dir, "memory", "import", "claude-code", str(source))
    assert again["counts"]["imported"] == 0
    assert again["counts"]["skipped"] >= 4


def test_dry_run_writes_nothing_and_table_is_printed(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    _init(home, project_dir)
    source = _claude_memory(tmp_path / "dot-claude", project_dir)
    before = sorted(p.name for p in (project_dir / "MEMORY").iterdir())
    result = ok(home, project_dir, "memory", "import", "claude-code", str(source), "--dry-run")
    assert "would import" in result.stdout and "dry run" in result.stdout
    assert "outcome" in result.stdout.splitlines()[0]
    assert sorted(p.name for p in (project_dir / "MEMORY").iterdir()) == before


def test_markdown_folder_yaml_json_and_plain(home: Path, project_dir: Path, tmp_path: Path) -> None:
    _init(home, project_dir)
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text(
        "---\ntitle: Deploys happen on Tuesdays\ntags: [release, deploy]\n"
        "date: 2024-03-05\n---\nThe release train leaves at noon.\n",
        encoding="utf-8",
    )
    meta = {"id": "kept-id-1", "summary": "JSON note keeps its id", "type": "reference"}
    (folder / "sub" / "b.md").write_text(
        "---\n" + json.dumps(meta) + "\n---\nBody of b.\n", encoding="utf-8"
    )
    (folder / "c.md").write_text("# Plain heading here\n\nNo frontmatter at all.\n", "utf-8")
    (folder / "key.md").write_text(
        "# AWS keys\n\ntoken: ghp_Zq8Lr2Vt6Wm1Xy4Ns9Kp3Bd7Hf5Jc0Ga2Ue8\n", encoding="utf-8"
    )
    ran = run(home, project_dir, "memory", "import", "markdown", str(folder), "--json")
    assert ran.returncode == 1, ran.stderr  # a note was refused: a script can tell
    report = json.loads(ran.stdout)
    by_source = {item["source"]: item for item in report["items"]}
    assert by_source["a.md"]["outcome"] == "imported"
    assert by_source["sub/b.md"]["id"] == "kept-id-1"
    assert by_source["c.md"]["outcome"] == "imported"
    assert by_source["key.md"]["outcome"] == "refused"
    assert "credential" in by_source["key.md"]["reason"]
    assert "ghp_Zq8Lr2Vt6Wm1Xy4Ns9Kp3Bd7Hf5Jc0Ga2Ue8" not in json.dumps(report)
    a_note = as_json(home, project_dir, "memory", "show", by_source["a.md"]["id"])
    assert a_note["tags"] == ["release", "deploy"]
    assert a_note["createdAt"] == 1_709_596_800_000
    assert as_json(home, project_dir, "memory", "show", "kept-id-1")["type"] == "reference"


def test_existing_id_is_never_overwritten(home: Path, project_dir: Path, tmp_path: Path) -> None:
    _init(home, project_dir)
    folder = tmp_path / "notes"
    folder.mkdir()
    meta = {"id": "taken", "summary": "Imported version"}
    (folder / "x.md").write_text("---\n" + json.dumps(meta) + "\n---\nNew body\n", "utf-8")
    target = project_dir / "MEMORY" / "taken.md"
    original = '---\n{"id": "taken", "summary": "Mine"}\n---\nMy body\n'
    target.write_text(original, encoding="utf-8")
    report = as_json(home, project_dir, "memory", "import", "markdown", str(folder))
    item = report["items"][0]
    assert item["outcome"] == "imported" and item["id"] != "taken"  # under a new id
    assert "'taken' is another note already" in item["reason"]
    assert target.read_text(encoding="utf-8") == original
    imported = (project_dir / "MEMORY" / f"{item['id']}.md").read_text(encoding="utf-8")
    assert "New body" in imported
    again = as_json(home, project_dir, "memory", "import", "markdown", str(folder))
    assert again["items"][0]["outcome"] == "skipped"  # the same content is a note now


def test_codex_memories_split_into_sections(home: Path, project_dir: Path, tmp_path: Path) -> None:
    _init(home, project_dir)
    codex = tmp_path / "dot-codex"
    (codex / "memories" / "rollout_summaries").mkdir(parents=True)
    (codex / "memories" / "MEMORY.md").write_text(
        "## Prefers uv over pip\nUse uv for every Python install.\n\n"
        "## Tests run with pytest -x\nStop at the first failure.\n",
        encoding="utf-8",
    )
    (codex / "memories" / "rollout_summaries" / "r1.md").write_text(
        "Fixed the flaky payment test by pinning the clock.\n", encoding="utf-8"
    )
    report = as_json(home, project_dir, "memory", "import", "codex", str(codex))
    assert report["counts"]["imported"] == 3
    listing = as_json(home, project_dir, "memory", "list")
    summaries = {item["summary"]: item["scope"] for item in listing["notes"]}
    assert summaries["Prefers uv over pip"] == "user"


def test_hostile_folder_is_skipped_with_reasons(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    _init(home, project_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "private.md"
    secret.write_text("# outside\n\nmust not be read\n", encoding="utf-8")
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "binary.md").write_bytes(b"\x00\x01\x02PNG")
    (folder / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "huge.md").write_bytes(b"# big\n" + b"x" * 2_000_000)
    bomb = "---\na: &a [lol, lol]\nb: &b [*a, *a]\nc: [*b, *b]\n---\nbody\n"
    (folder / "bomb.md").write_text(bomb, encoding="utf-8")
    (folder / "unclosed.md").write_text("---\n" + "title: never closed\n" * 3000, "utf-8")
    (folder / "link.md").symlink_to(secret)
    (folder / "dirlink").symlink_to(outside, target_is_directory=True)
    (folder / "pipe.md").unlink(missing_ok=True)
    os.mkfifo(folder / "pipe.md")
    (folder / "image.png").write_bytes(b"\x89PNG")
    (folder / "fine.md").write_text("# A fine note\n\nThis one imports.\n", encoding="utf-8")
    before = secret.stat()
    report = as_json(home, project_dir, "memory", "import", "markdown", str(folder))
    by_source = {item["source"]: item for item in report["items"]}
    assert by_source["fine.md"]["outcome"] == "imported"
    for name, word in [
        ("binary.md", "binary"),
        ("latin1.md", "save it as UTF-8"),  # each with what to do
        ("huge.md", "split it into smaller files"),
        ("bomb.md", "aliases"),
        ("unclosed.md", "frontmatter"),
        ("link.md", "outside"),
        ("dirlink", "symlink"),
        ("pipe.md", "regular"),
        ("image.png", "Markdown"),
    ]:
        assert by_source[name]["outcome"] == "skipped", name
        assert word in by_source[name]["reason"], (name, by_source[name])
    assert report["counts"]["imported"] == 1
    assert secret.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in outside.iterdir()) == ["private.md"]


def test_export_plain_and_claude_code_round_trip(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    _init(home, project_dir)
    ok(
        home,
        project_dir,
        "memory",
        "remember",
        "-s",
        "Deploys on Tuesdays",
        "-b",
        "Release train at noon.",
        "--type",
        "project",
        "--tags",
        "release",
    )
    ok(
        home,
        project_dir,
        "memory",
        "remember",
        "-s",
        "Ada likes terse answers",
        "-b",
        "Keep replies short.",
        "--type",
        "user",
    )
    plain = tmp_path / "plain"
    written = as_json(home, project_dir, "memory", "export", str(plain))
    assert len(written["written"]) == 2
    assert len(list((plain / "project").glob("*.md"))) == 1
    assert len(list((plain / "user").glob("*.md"))) == 1
    again = as_json(home, project_dir, "memory", "export", str(plain))
    assert again["written"] == [] and len(again["existing"]) == 2

    claude = tmp_path / "claude"
    as_json(home, project_dir, "memory", "export", str(claude), "--format", "claude-code")
    index = (claude / "project" / "memory" / "MEMORY.md").read_text(encoding="utf-8")
    assert "Deploys on Tuesdays" in index and "](" in index
    other_home = tmp_path / "home2"
    other_home.mkdir()
    other_project = tmp_path / "project2"
    other_project.mkdir()
    _init(other_home, other_project)
    report = as_json(
        other_home,
        other_project,
        "memory",
        "import",
        "claude-code",
        str(claude / "project" / "memory"),
    )
    assert report["counts"]["imported"] == 1
    listing = as_json(other_home, other_project, "memory", "list")
    assert listing["notes"][0]["summary"] == "Deploys on Tuesdays"
    assert listing["notes"][0]["type"] == "project"


def test_export_into_a_notes_folder_is_refused(home: Path, project_dir: Path) -> None:
    _init(home, project_dir)
    ok(home, project_dir, "memory", "remember", "-s", "Ada likes terse answers", "-b", "Short.")
    before = sorted(p.relative_to(project_dir) for p in project_dir.rglob("*"))
    for target in (project_dir / "MEMORY", project_dir / "MEMORY" / "out"):
        result = run(home, project_dir, "memory", "export", str(target))
        assert result.returncode == 1, result.stdout
        assert "inside the project notes folder" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    user_folder = home / "memory" / "user"
    result = run(home, project_dir, "memory", "export", str(user_folder))
    assert result.returncode == 1 and "inside the user notes folder" in result.stderr
    assert sorted(p.relative_to(project_dir) for p in project_dir.rglob("*")) == before


def test_export_into_another_projects_notes_folder_is_refused(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    # Another clone's MEMORY/ (or another project's): its notes would be doubled and a forget
    # there would leave the exported copy behind.
    other = tmp_path / "other"
    other.mkdir()
    _init(home, project_dir)
    _init(home, other)
    ok(home, project_dir, "memory", "remember", "-s", "Ada likes terse answers", "-b", "Short.")
    ok(home, other, "memory", "remember", "-s", "Deploys on Tuesdays", "-b", "Noon.")
    before = sorted(p.relative_to(other) for p in other.rglob("*"))
    for target in (other / "MEMORY", other / "MEMORY" / "new" / "out"):
        result = run(home, project_dir, "memory", "export", str(target))
        assert result.returncode == 1, result.stdout
        assert f"inside the notes folder of the project at {other}" in result.stderr
    assert sorted(p.relative_to(other) for p in other.rglob("*")) == before
    ok(home, project_dir, "memory", "export", str(other / "exports"))  # elsewhere in it: fine


def test_import_refuses_missing_folder(home: Path, project_dir: Path) -> None:
    result = run(home, project_dir, "memory", "import", "markdown", "/no/such/folder")
    assert result.returncode != 0 and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["claude-code", "codex", "markdown"])
def test_empty_folder_imports_nothing(
    home: Path, project_dir: Path, tmp_path: Path, kind: str
) -> None:
    _init(home, project_dir)
    empty = tmp_path / "empty"
    empty.mkdir()
    report = as_json(home, project_dir, "memory", "import", kind, str(empty))
    assert report["counts"]["imported"] == 0


def test_second_export_updates_changed_notes_and_the_index(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    _init(home, project_dir)
    first = as_json(
        home, project_dir, "memory", "remember", "-s", "Deploys on Tuesdays", "-b", "At noon."
    )
    note_id = first["id"]
    claude = tmp_path / "claude"
    as_json(home, project_dir, "memory", "export", str(claude), "--format", "claude-code")
    folder = claude / "project" / "memory"
    ok(
        home,
        project_dir,
        "memory",
        "remember",
        "--id",
        note_id,
        "-s",
        "Deploys on Wednesdays",
        "-b",
        "At noon.",
    )
    second = as_json(
        home, project_dir, "memory", "remember", "-s", "Tests need the database", "-b", "Real."
    )
    dry = as_json(
        home, project_dir, "memory", "export", str(claude), "--format", "claude-code", "--dry-run"
    )
    assert "Wednesdays" not in (folder / "MEMORY.md").read_text(encoding="utf-8")
    report = as_json(home, project_dir, "memory", "export", str(claude), "--format", "claude-code")
    assert {k: v for k, v in dry.items() if k != "dryRun"} == {
        k: v for k, v in report.items() if k != "dryRun"
    }
    assert report["written"] == [f"project/memory/{second['id']}.md"]
    assert sorted(report["updated"]) == sorted(
        ["project/memory/MEMORY.md", f"project/memory/{note_id}.md"]
    )
    assert report["backups"] == []
    index = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert "Deploys on Wednesdays" in index and "Tests need the database" in index
    assert "Tuesdays" not in index
    assert "Wednesdays" in (folder / f"{note_id}.md").read_text(encoding="utf-8")

    # A file changed by hand at the destination is kept aside before it is replaced.
    (folder / f"{note_id}.md").write_text("edited by hand\n", encoding="utf-8")
    ok(home, project_dir, "memory", "forget", second["id"], "--yes")
    third = as_json(home, project_dir, "memory", "export", str(claude), "--format", "claude-code")
    assert sorted(third["updated"]) == sorted(
        ["project/memory/MEMORY.md", f"project/memory/{note_id}.md"]
    )
    [backup] = third["backups"]
    assert (claude / backup["backup"]).read_text(encoding="utf-8") == "edited by hand\n"
    assert third["stale"] == [f"project/memory/{second['id']}.md"]
    assert "Tests need the database" not in (folder / "MEMORY.md").read_text(encoding="utf-8")
    text = ok(home, project_dir, "memory", "export", str(claude), "--format", "claude-code")
    assert "0 files written, 0 updated" in text.stdout and "left in place" in text.stdout
