"""Markdown that is not a note yet, through the installed CLI on a real project folder:
``memory list`` and ``memory doctor`` name it with the reason, ``memory adopt`` makes it a note
(the original backed up first), and nothing is dropped silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

OHARNESS = Path(sys.executable).with_name("oharness")
PLAIN = "# Deploy steps\n\nRun `make deploy` from main.\n"
OBSIDIAN = "---\ntitle: Release checklist\ntags: [release, ops]\n---\nTag, build, announce.\n"
BROKEN = '---\n{"id": "half-saved-1", "summ\n'


class Cli:
    def __init__(self, home: Path, cwd: Path) -> None:
        self.home, self.cwd = home, cwd

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "OHARNESS_HOME": str(self.home)}
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.cwd,
            input="",
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    def json(self, *args: str) -> dict[str, Any]:
        result = self.run(*args, "--json")
        assert result.returncode == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data


@pytest.fixture
def cli(home: Path, project_dir: Path) -> Cli:
    cli = Cli(home, project_dir)
    assert cli.run("project", "init").returncode == 0
    memory = project_dir / "MEMORY"
    (memory / "deploy-steps.md").write_text(PLAIN, encoding="utf-8")
    (memory / "Release Checklist.md").write_text(OBSIDIAN, encoding="utf-8")
    (memory / "half-saved-1.md").write_text(BROKEN, encoding="utf-8")
    (memory / "topics").mkdir()
    (memory / "topics" / "ci.md").write_text("CI runs on every push.\n", encoding="utf-8")
    (memory / ".obsidian").mkdir()
    (memory / ".obsidian" / "workspace.md").write_text("hidden\n", encoding="utf-8")
    return cli


def test_list_and_doctor_show_every_file_that_is_not_a_note_yet(cli: Cli) -> None:
    listed = cli.json("memory", "list")
    assert listed["notes"] == []
    loose = {item["file"]: item for item in listed["notNotes"]}
    assert set(loose) == {
        "deploy-steps.md",
        "Release Checklist.md",
        "half-saved-1.md",
        "topics/ci.md",
    }
    assert all(item["kind"] == "not a note yet" for item in loose.values())
    assert "does not start with a '---' line" in loose["deploy-steps.md"]["reason"]
    assert "oharness memory adopt deploy-steps.md" in loose["deploy-steps.md"]["fix"]
    assert loose["half-saved-1.md"]["adoptable"] is False
    assert "fix it by hand" in loose["half-saved-1.md"]["fix"]
    text = cli.run("memory", "list")
    assert text.returncode == 0
    assert "not a note yet" in text.stdout and "topics/ci.md" in text.stdout
    doctor = cli.run("memory", "doctor", "--json")
    assert doctor.returncode != 0
    found = {Path(f["path"]).name: f for f in json.loads(doctor.stdout)["findings"]}
    assert {"deploy-steps.md", "Release Checklist.md", "half-saved-1.md", "ci.md"} <= set(found)
    assert "oharness memory adopt topics/ci.md" in found["ci.md"]["message"]


def test_a_file_holding_a_credential_is_not_offered_to_adopt_as_it_is(
    cli: Cli, project_dir: Path
) -> None:
    (project_dir / "MEMORY" / "creds.md").write_text("Das Passwort lautet Sommer2024!xy\n")
    loose = {item["file"]: item for item in cli.json("memory", "list")["notNotes"]}
    fix = loose["creds.md"]["fix"]
    assert fix.startswith("it holds a password in text") and "remove it" in fix
    assert "Sommer2024" not in fix


def test_adopt_makes_a_note_and_backs_the_original_up(cli: Cli, project_dir: Path) -> None:
    memory = project_dir / "MEMORY"
    adopted = cli.json("memory", "adopt", "MEMORY/deploy-steps.md")
    assert adopted["id"] == "deploy-steps" and adopted["backupId"]
    shown = cli.json("memory", "show", "deploy-steps")
    assert shown["summary"] == "Deploy steps" and shown["body"] == PLAIN
    backups = cli.json("memory", "backups")["backups"]
    record = next(b for b in backups if b["backupId"] == adopted["backupId"])
    assert record["reason"] == "adopt" and Path(record["path"]).read_text() == PLAIN
    # Obsidian's YAML: title and tags kept; the name has a space, so a new id.
    obsidian = cli.json("memory", "adopt", "Release Checklist.md")
    note = cli.json("memory", "show", obsidian["id"])
    assert note["summary"] == "Release checklist" and note["tags"] == ["release", "ops"]
    assert not (memory / "Release Checklist.md").exists()
    nested = cli.json("memory", "adopt", "topics/ci.md")
    assert nested["path"] == str(memory / "ci.md") and not (memory / "topics" / "ci.md").exists()
    listed = cli.json("memory", "list")
    assert {item["id"] for item in listed["notes"]} == {"deploy-steps", obsidian["id"], "ci"}
    assert [item["file"] for item in listed["notNotes"]] == ["half-saved-1.md"]


def test_adopt_refuses_what_it_cannot_take_and_changes_nothing(
    cli: Cli, project_dir: Path, tmp_path: Path
) -> None:
    memory = project_dir / "MEMORY"
    refused = cli.run("memory", "adopt", "half-saved-1.md")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "never closed" in refused.stderr and "fix the file by hand" in refused.stderr
    assert (memory / "half-saved-1.md").read_text() == BROKEN
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Elsewhere\n", encoding="utf-8")
    refused = cli.run("memory", "adopt", str(outside))
    assert refused.returncode != 0 and "not in a notes folder" in refused.stderr
    assert cli.run("memory", "adopt", ".obsidian/workspace.md").returncode != 0
    token = "ghp_" + "Zx9Q2mL7vR4tK8wB3nH6jC1pD5sF0gY2aE7u"
    (memory / "secret.md").write_text(f"# Token\n\n{token}\n", encoding="utf-8")
    refused = cli.run("memory", "adopt", "secret.md")
    assert refused.returncode != 0 and token not in refused.stderr
    assert (memory / "secret.md").read_text().endswith(f"{token}\n")
    assert cli.json("memory", "backups")["backups"] == []
