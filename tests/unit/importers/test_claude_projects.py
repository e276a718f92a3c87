"""Claude Code's folder names, and tracing a folder name back to folders on this machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oharness.importers.claude_projects import (
    ClaudeProject,
    InstructionFile,
    claude_folder_name,
    folders_named,
    locate_project_folders,
    name_matches,
    read_claude_tree,
)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/home/ada/shop", "-home-ada-shop"),
        ("/home/ada/my_shop", "-home-ada-my-shop"),
        ("/home/ada/shop.v2 (old)", "-home-ada-shop-v2--old-"),
        ("/home/ada/shop/.claude/worktrees/feat", "-home-ada-shop--claude-worktrees-feat"),
        ("/home/ada/项目", "-home-ada---"),
        ("/home/ada/café", "-home-ada-caf-"),
        ("/home/ada/😀", "-home-ada---"),  # two UTF-16 code units, two dashes
        ("C:\\Users\\ada\\shop", "C--Users-ada-shop"),
    ],
)
def test_claude_folder_name(path: str, name: str) -> None:
    assert claude_folder_name(path) == name


def test_long_names_match_on_their_first_200_characters() -> None:
    path = "/" + "/".join(["a" * 30] * 9)
    encoded = claude_folder_name(path)
    assert len(encoded) > 200
    assert name_matches(encoded[:200] + "-1x9z3k", path)
    assert not name_matches(encoded[:200] + "-ab/c", path)
    assert not name_matches(encoded[:199] + "Z-1x9z3k", path)
    assert name_matches("-a", "/a") and not name_matches("-a-", "/a")


def test_folders_named_finds_every_folder_with_that_name(tmp_path: Path) -> None:
    (tmp_path / "my_shop" / "api").mkdir(parents=True)
    (tmp_path / "my-shop" / "api").mkdir(parents=True)
    (tmp_path / "my" / "shop" / "api").mkdir(parents=True)
    (tmp_path / "my-shop-api").write_text("a file, not a folder", encoding="utf-8")
    found = folders_named(claude_folder_name(tmp_path / "my-shop" / "api"))
    assert sorted(found) == sorted(
        [
            (tmp_path / "my_shop" / "api").resolve(),
            (tmp_path / "my-shop" / "api").resolve(),
            (tmp_path / "my" / "shop" / "api").resolve(),
        ]
    )
    assert folders_named(claude_folder_name(tmp_path / "absent")) == []
    assert folders_named("relative-name") == []


def test_transcripts_name_the_folder_exactly(tmp_path: Path) -> None:
    (tmp_path / "my_shop").mkdir()
    (tmp_path / "my-shop").mkdir()
    name = claude_folder_name(tmp_path / "my_shop")
    folder = tmp_path / "claude" / name
    folder.mkdir(parents=True)
    lines = [
        "not json",
        json.dumps({"type": "summary"}),
        json.dumps({"type": "user", "cwd": str(tmp_path / "my_shop")}),
        json.dumps({"type": "user", "cwd": str(tmp_path / "elsewhere")}),  # not this name
    ]
    (folder / "s1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    project = ClaudeProject(name, folder, folder / "memory")
    located = locate_project_folders(project)
    assert located.folders == [(tmp_path / "my_shop").resolve()] and located.traced
    (folder / "s1.jsonl").unlink()
    located = locate_project_folders(project)
    assert len(located.folders) == 2 and not located.traced  # by name alone both fit


def test_read_claude_tree_shapes(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    for name in ("-a-one", "-a-two"):
        (claude / "projects" / name / "memory").mkdir(parents=True)
    (claude / "projects" / "-a-no-memory").mkdir()
    (claude / "CLAUDE.md").write_text("# mine\n", encoding="utf-8")
    tree = read_claude_tree(claude)
    assert [p.name for p in tree.projects] == ["-a-one", "-a-two"]
    assert not tree.single
    user_wide = [InstructionFile(claude.resolve() / "CLAUDE.md", "user-wide", True)]
    assert tree.instructions == user_wide
    listing = read_claude_tree(claude / "projects")
    assert [p.name for p in listing.projects] == ["-a-one", "-a-two"] and not listing.single
    assert listing.instructions == user_wide  # ~/.claude/CLAUDE.md beside projects/
    one = read_claude_tree(claude / "projects" / "-a-one")
    assert one.single and one.projects[0].name == "-a-one" and one.instructions == []
    repository = tmp_path / "repo"
    (repository / ".claude").mkdir(parents=True)
    (repository / ".claude" / "CLAUDE.local.md").write_text("# local\n", encoding="utf-8")
    assert read_claude_tree(repository).instructions == [
        InstructionFile((repository / ".claude" / "CLAUDE.local.md").resolve(), "repo")
    ]
    memory = read_claude_tree(claude / "projects" / "-a-two" / "memory")
    assert memory.single and memory.projects[0].name == "-a-two"
    outside = tmp_path / "outside"
    (outside / "memory").mkdir(parents=True)
    os.symlink(outside, claude / "projects" / "-a-link")
    assert "-a-link" not in [p.name for p in read_claude_tree(claude).projects]
