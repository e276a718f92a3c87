"""``oharness memory import claude-code`` on a ``~/.claude`` holding several projects: only the
current project's memory comes in (by Claude Code's folder name and by git: worktrees, clones),
``--all`` sends each project to its own, titles and CLAUDE.md files are never dropped silently."""

from __future__ import annotations

import subprocess
from pathlib import Path

from repos import git
from tests.integration.bridges.runner import as_json, ok, run

from oharness.importers.claude_projects import claude_folder_name

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def _repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text(f"{folder}\n", encoding="utf-8")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "first")
    return folder


def _memory(claude: Path, project_path: Path | str, topics: dict[str, str]) -> Path:
    """A Claude Code project folder for ``project_path`` with one topic file per entry."""
    folder = claude / "projects" / claude_folder_name(project_path) / "memory"
    folder.mkdir(parents=True)
    index = ["# Memory", ""]
    for stem, description in topics.items():
        (folder / f"{stem}.md").write_text(
            f"---\nname: {stem}\ndescription: {description}\ntype: project\n---\n\n"
            f"{description}.\n",
            encoding="utf-8",
        )
        index.append(f"- [{stem}]({stem}.md) — {description}")
    (folder / "MEMORY.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return folder.parent


def _summaries(home: Path, cwd: Path) -> set[str]:
    return {note["summary"] for note in as_json(home, cwd, "memory", "list")["notes"]}


def _by_source(report: dict[str, object]) -> dict[str, dict[str, str]]:
    items = report["items"]
    assert isinstance(items, list)
    return {item["source"]: item for item in items}


def test_only_the_current_projects_memory_comes_in(home: Path, tmp_path: Path) -> None:
    shop = _repository(tmp_path / "src" / "shop")
    other = _repository(tmp_path / "src" / "billing")
    ok(home, shop, "project", "init")
    ok(home, other, "project", "init")
    claude = tmp_path / "dot-claude"
    mine = _memory(claude, shop, {"deploy_day": "Deploys happen on Tuesdays"})
    theirs = _memory(claude, other, {"deploy_day": "Deploys happen on Fridays"})
    gone = _memory(claude, tmp_path / "old" / "thing", {"old_note": "An old project's rule"})

    report = as_json(home, shop, "memory", "import", "claude-code", str(claude))
    items = _by_source(report)
    assert report["counts"]["imported"] == 1
    assert items[f"projects/{mine.name}/memory/deploy_day.md"]["outcome"] == "imported"
    skipped = items[f"projects/{theirs.name}"]
    assert skipped["outcome"] == "skipped"
    assert str(other) in skipped["reason"] and "--all" in skipped["reason"]
    assert "no folder on this machine" in items[f"projects/{gone.name}"]["reason"]
    assert _summaries(home, shop) == {"Deploys happen on Tuesdays"}
    assert not list((other / "MEMORY").glob("*.md"))

    text = ok(home, shop, "memory", "import", "claude-code", str(claude / "projects")).stdout
    lines = [line for line in text.splitlines() if theirs.name in line]
    assert len(lines) == 1 and "skipped" in lines[0] and str(other) in lines[0]


def test_worktrees_and_clones_of_the_repository_correspond(home: Path, tmp_path: Path) -> None:
    shop = _repository(tmp_path / "shop")
    ok(home, shop, "project", "init")
    worktree = shop / ".claude" / "worktrees" / "feature"
    git(shop, "worktree", "add", "-q", str(worktree))
    elsewhere = tmp_path / "elsewhere"
    git(shop, "worktree", "add", "-q", str(elsewhere))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(shop), str(clone)], check=True, capture_output=True)
    unrelated = _repository(tmp_path / "unrelated")
    claude = tmp_path / "dot-claude"
    _memory(claude, shop, {"main_rule": "Main worktree rule"})
    _memory(claude, worktree, {"feature_rule": "Worktree rule"})
    _memory(claude, elsewhere, {"elsewhere_rule": "Worktree elsewhere rule"})
    _memory(claude, clone, {"clone_rule": "Clone rule"})
    _memory(claude, unrelated, {"unrelated_rule": "Unrelated rule"})

    report = as_json(home, shop, "memory", "import", "claude-code", str(claude))
    assert report["counts"]["imported"] == 4, report
    assert _summaries(home, shop) == {
        "Main worktree rule",
        "Worktree rule",
        "Worktree elsewhere rule",
        "Clone rule",
    }
    assert (
        str(unrelated) in _by_source(report)[f"projects/{claude_folder_name(unrelated)}"]["reason"]
    )


def test_from_a_linked_worktree_the_main_worktrees_memory_corresponds(
    home: Path, tmp_path: Path
) -> None:
    shop = _repository(tmp_path / "shop")
    worktree = shop / ".claude" / "worktrees" / "feature"
    git(shop, "worktree", "add", "-q", str(worktree))
    claude = tmp_path / "dot-claude"
    _memory(claude, shop, {"main_rule": "Main worktree rule"})
    _memory(claude, tmp_path / "nowhere", {"stray": "Stray rule"})
    report = as_json(home, worktree, "memory", "import", "claude-code", str(claude), "--dry-run")
    outcomes = {item["source"]: item["outcome"] for item in report["items"]}
    name = claude_folder_name(shop)
    # Whether the worktree's project can be written before it is registered is the project
    # rule's business; here only the choice of Claude Code projects is looked at.
    assert outcomes[f"projects/{name}/memory/main_rule.md"] != "skipped"
    assert outcomes[f"projects/{claude_folder_name(tmp_path / 'nowhere')}"] == "skipped"


def test_a_dry_run_in_a_repository_not_registered_yet_shows_the_real_run(
    home: Path, tmp_path: Path
) -> None:
    shop = _repository(tmp_path / "shop")  # a git repository registers itself on a write
    claude = tmp_path / "dot-claude"
    _memory(claude, shop, {"deploy_day": "Deploys happen on Tuesdays", "db": "Postgres 16"})
    dry = as_json(home, shop, "memory", "import", "claude-code", str(claude), "--dry-run")
    assert not (shop / ".oharness").exists() and not (shop / "MEMORY").exists()
    real = as_json(home, shop, "memory", "import", "claude-code", str(claude))

    def seen(report: dict[str, object]) -> dict[str, tuple[str, str | None]]:
        return {
            item["source"]: (item["outcome"].replace("would import", "imported"), item.get("id"))
            for item in _by_source(report).values()
        }

    assert seen(dry) == seen(real)
    assert dry["counts"]["would import"] == real["counts"]["imported"] == 2
    assert _summaries(home, shop) == {"Deploys happen on Tuesdays", "Postgres 16"}


def test_all_routes_each_project_to_its_own(home: Path, tmp_path: Path) -> None:
    shop = _repository(tmp_path / "shop")
    billing = _repository(tmp_path / "billing")
    loose = _repository(tmp_path / "loose")
    ok(home, shop, "project", "init")
    ok(home, billing, "project", "init")
    claude = tmp_path / "dot-claude"
    shop_memory = _memory(claude, shop, {"shop_rule": "Deploys happen on Tuesdays"})
    billing_memory = _memory(claude, billing / "api", {"billing_rule": "Deploys happen on Fridays"})
    (billing / "api").mkdir()
    for folder in (shop_memory, billing_memory):  # the same user note in both: imported once
        (folder / "memory" / "role.md").write_text(
            "---\nname: role\ndescription: Ada is a data scientist\ntype: user\n---\n\nPandas.\n",
            encoding="utf-8",
        )
    _memory(claude, loose, {"loose_rule": "Loose rule"})
    _memory(claude, tmp_path / "gone", {"gone_rule": "Gone rule"})

    text = ok(home, shop, "memory", "import", "claude-code", str(claude), "--all", "--dry-run")
    assert "project" in text.stdout.splitlines()[0] and str(billing) in text.stdout
    dry = as_json(home, shop, "memory", "import", "claude-code", str(claude), "--all", "--dry-run")
    report = as_json(home, shop, "memory", "import", "claude-code", str(claude), "--all")
    assert _summaries(home, shop) == {"Deploys happen on Tuesdays", "Ada is a data scientist"}
    assert _summaries(home, billing) == {"Deploys happen on Fridays", "Ada is a data scientist"}
    items = _by_source(report)
    billing_item = items[f"projects/{claude_folder_name(billing / 'api')}/memory/billing_rule.md"]
    assert billing_item["project"] == str(billing) and billing_item["outcome"] == "imported"
    assert "project init" in items[f"projects/{claude_folder_name(loose)}"]["reason"]
    assert "no folder" in items[f"projects/{claude_folder_name(tmp_path / 'gone')}"]["reason"]
    assert not (loose / "MEMORY").exists()
    ids = {item["source"]: item.get("id") for item in report["items"]}
    assert {item["source"]: item.get("id") for item in dry["items"]} == ids
    outcomes = {item["source"]: item["outcome"] for item in report["items"]}
    assert {
        item["source"]: item["outcome"].replace("would import", "imported") for item in dry["items"]
    } == outcomes
    assert sorted(
        outcomes[f"projects/{f.name}/memory/role.md"] for f in (shop_memory, billing_memory)
    ) == [
        "imported",
        "skipped",
    ]


def test_a_single_project_folder_goes_into_the_current_project(
    home: Path, project_dir: Path, tmp_path: Path
) -> None:
    ok(home, project_dir, "project", "init")
    claude = tmp_path / "dot-claude"
    folder = _memory(claude, "/somewhere/else", {"rule": "A rule from elsewhere"})
    for path in (folder, folder / "memory"):
        report = as_json(home, project_dir, "memory", "import", "claude-code", str(path))
        assert report["counts"]["skipped"] + report["counts"]["imported"] >= 1
    assert _summaries(home, project_dir) == {"A rule from elsewhere"}


def test_the_title_is_kept_and_recallable(home: Path, project_dir: Path, tmp_path: Path) -> None:
    ok(home, project_dir, "project", "init")
    folder = tmp_path / "one" / "memory"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text(
        "---\nname: 灰度发布流程\ndescription: How releases roll out\ntype: project\n---\n\n"
        "Ten percent first, then everyone after an hour.\n",
        encoding="utf-8",
    )
    long_description = "Release checklist " + " ".join(f"step{i}" for i in range(60))
    (folder / "checklist.md").write_text(
        f"---\nname: checklist\ndescription: {long_description}\ntype: project\n---\n\nBody.\n",
        encoding="utf-8",
    )
    as_json(home, project_dir, "memory", "import", "claude-code", str(folder))
    note = as_json(home, project_dir, "memory", "show", "deploy")
    assert note["summary"] == "灰度发布流程: How releases roll out"
    assert note["body"] == "Ten percent first, then everyone after an hour.\n"
    found = as_json(home, project_dir, "memory", "search", "灰度发布")
    assert [result["id"] for result in found["results"]][:1] == ["deploy"]
    # The key term only in the title is enough for per-message recall to attach the note.
    recalled = as_json(home, project_dir, "memory", "recall", "我们的灰度发布流程是什么？")
    assert [item["id"] for item in recalled["attached"]] == ["deploy"]
    checklist = as_json(home, project_dir, "memory", "show", "checklist")
    assert "step59" in checklist["body"] and len(checklist["summary"]) <= 200


def test_claude_md_is_skipped_with_a_reason_or_imported_on_request(
    home: Path, tmp_path: Path
) -> None:
    shop = _repository(tmp_path / "shop")
    ok(home, shop, "project", "init")
    claude = tmp_path / "dot-claude"
    (claude / "projects").mkdir(parents=True)
    (claude / "CLAUDE.md").write_text("# Always answer in English\n", encoding="utf-8")
    memory = _memory(claude, shop, {"rule": "Shop rule"}) / "memory"
    (memory / "CLAUDE.md").write_text("# Run make check before pushing\n", encoding="utf-8")
    (shop / "CLAUDE.md").write_text("# Use pnpm, never npm\n", encoding="utf-8")

    report = as_json(home, shop, "memory", "import", "claude-code", str(claude))
    items = _by_source(report)
    assert "--include-claude-md" in items["CLAUDE.md"]["reason"]
    assert items["CLAUDE.md"]["outcome"] == "skipped"
    memory_md = f"projects/{memory.parent.name}/memory/CLAUDE.md"
    assert "--include-claude-md" in items[memory_md]["reason"]
    own = str((shop / "CLAUDE.md").resolve())  # the project's own, named by its path
    assert "--include-claude-md" in items[own]["reason"]
    in_repo = as_json(home, shop, "memory", "import", "claude-code", str(shop))
    assert "--include-claude-md" in _by_source(in_repo)["CLAUDE.md"]["reason"]
    assert own not in _by_source(in_repo)  # found once, at PATH
    beside = as_json(home, shop, "memory", "import", "claude-code", str(claude / "projects"))
    assert _by_source(beside)[str((claude / "CLAUDE.md").resolve())]["outcome"] == "skipped"

    flagged = as_json(
        home, shop, "memory", "import", "claude-code", str(claude), "--include-claude-md"
    )
    items = _by_source(flagged)
    assert items["CLAUDE.md"]["outcome"] == "imported" and items["CLAUDE.md"]["scope"] == "user"
    assert items[memory_md]["outcome"] == "imported" and items[memory_md]["scope"] == "project"
    assert items[own]["outcome"] == "imported" and items[own]["scope"] == "project"
    found = as_json(home, shop, "memory", "search", "make check before pushing")["results"]
    assert found and found[0]["summary"].startswith("Claude Code instructions (CLAUDE.md")
    assert as_json(home, shop, "memory", "show", found[0]["id"])["type"] == "feedback"
    text = run(home, tmp_path, "memory", "import", "markdown", str(shop), "--include-claude-md")
    assert text.returncode != 0 and "claude-code" in text.stderr
    assert "Traceback" not in text.stderr


def test_a_folder_named_alone_that_is_another_projects_is_imported_and_said(
    home: Path, tmp_path: Path
) -> None:
    alpha = _repository(tmp_path / "code" / "alpha")
    beta = _repository(tmp_path / "code" / "beta")
    ok(home, alpha, "project", "init")
    ok(home, beta, "project", "init")
    folder = _memory(tmp_path / "dot-claude", beta, {"shop_db": "The shop database is Postgres"})
    ran = run(home, alpha, "memory", "import", "claude-code", str(folder))
    assert ran.returncode == 0, ran.stderr
    assert f"its name is the folder of {beta.resolve()}, another project" in ran.stderr
    assert _summaries(home, alpha) == {"The shop database is Postgres"}  # as asked
    own = _memory(tmp_path / "dot-claude-2", alpha, {"deploys": "Deploys on Tuesdays"})
    quiet = run(home, alpha, "memory", "import", "claude-code", str(own))
    assert quiet.returncode == 0 and "another project" not in quiet.stderr
