"""The CLI through its installed entry point (spec 12), on a real project folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

OHARNESS = Path(sys.executable).with_name("oharness")


class Cli:
    def __init__(self, home: Path, cwd: Path) -> None:
        self.home = home
        self.cwd = cwd

    def run(
        self, *args: str, input: str | None = None, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "OHARNESS_HOME": str(self.home), **env}
        environment.pop("EDITOR", None) if "EDITOR" not in env else None
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=cwd or self.cwd,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    def ok(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        result = self.run(*args, **kwargs)
        assert result.returncode == 0, result.stderr
        return result

    def json(self, *args: str, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.ok(*args, "--json", **kwargs).stdout)
        return data

    def fails(self, *args: str, **kwargs: Any) -> str:
        result = self.run(*args, **kwargs)
        assert result.returncode != 0, result.stdout
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        return lines[0]


@pytest.fixture
def bare_cli(home: Path, project_dir: Path) -> Cli:
    """The CLI in a plain folder that is not a registered project."""
    return Cli(home, project_dir)


@pytest.fixture
def cli(bare_cli: Cli) -> Cli:
    """The CLI in a registered project."""
    bare_cli.ok("project", "init")
    return bare_cli


def test_project_init_and_show(bare_cli: Cli, project_dir: Path) -> None:
    cli = bare_cli
    shown = cli.json("project", "show")
    assert shown["registered"] is False and not (project_dir / ".oharness").exists()
    created = cli.json("project", "init")
    assert created["registered"] is True and str(created["id"]).startswith("p-")
    assert (project_dir / "MEMORY").is_dir() and (project_dir / "ARTIFACTS").is_dir()
    sub = project_dir / "deep" / "er"
    sub.mkdir(parents=True)
    assert cli.json("project", "show", cwd=sub)["id"] == created["id"]
    assert "Already registered: project" in cli.ok("project", "init").stdout


def test_remember_show_list_forget_restore_round_trip(cli: Cli, project_dir: Path) -> None:
    saved = cli.json(
        "memory",
        "remember",
        "--summary",
        "Deploys happen on Tuesdays",
        "--body",
        "Release train at noon.",
        "--tags",
        "release, Deploy",
        "--type",
        "project",
    )
    assert saved["created"] is True
    note_id = str(saved["id"])
    assert (project_dir / "MEMORY" / f"{note_id}.md").is_file()
    from_stdin = cli.json(
        "memory",
        "remember",
        "--summary",
        "Prefers terse answers",
        "--type",
        "user",
        input="Lead with code.\n",
    )
    assert from_stdin["scope"] == "user"
    assert (cli.home / "memory" / "user" / f"{from_stdin['id']}.md").is_file()

    shown = cli.json("memory", "show", note_id)
    assert shown["tags"] == ["release", "deploy"] and shown["body"] == "Release train at noon.\n"
    text = cli.ok("memory", "show", note_id).stdout
    assert "Deploys happen on Tuesdays" in text and "Release train at noon." in text

    listing = cli.ok("memory", "list").stdout.splitlines()
    assert listing[0].startswith("- [user] Prefers terse answers (user:")
    assert listing[1] == f"- [project] Deploys happen on Tuesdays ({note_id})"

    refused = cli.fails("memory", "forget", note_id)
    assert "--yes" in refused
    forgotten = cli.json("memory", "forget", note_id, "--yes")
    assert not (project_dir / "MEMORY" / f"{note_id}.md").exists()
    backups = cli.json("memory", "backups")["backups"]
    assert isinstance(backups, list) and backups[0]["reason"] == "forget"
    assert backups[0]["backupId"] == forgotten["backupId"]
    cli.ok("memory", "restore", str(forgotten["backupId"]))
    assert cli.json("memory", "show", note_id)["summary"] == "Deploys happen on Tuesdays"


def test_the_same_note_from_processes_at_once_is_saved_once(cli: Cli, project_dir: Path) -> None:
    """Each process checks for the same content under the notes' lock: one writes, the others
    find its note (spec 02.1)."""
    environment = {**os.environ, "OHARNESS_HOME": str(cli.home)}
    command = [str(OHARNESS), "memory", "remember", "-s", "Deploys on Tuesdays", "-b", "Noon."]
    runs = [
        subprocess.Popen(
            [*command, "--json"],
            cwd=project_dir,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [json.loads(run.communicate(timeout=60)[0]) for run in runs]
    assert sorted(result["created"] for result in results) == [False, False, True]
    assert len({result["id"] for result in results}) == 1
    assert [path.name for path in (project_dir / "MEMORY").glob("*.md")] == [
        f"{results[0]['id']}.md"
    ]


def test_update_with_id_keeps_fields(cli: Cli) -> None:
    saved = cli.json("memory", "remember", "-s", "Original", "-b", "Body", "--tags", "a")
    note_id = str(saved["id"])
    updated = cli.json("memory", "remember", "-s", "Renamed", "-b", "Body", "--id", note_id)
    assert updated["changed"] is True and updated["created"] is False
    assert cli.json("memory", "show", note_id)["tags"] == ["a"]
    cli.ok("memory", "remember", "-s", "Renamed", "-b", "Body", "--id", note_id, "--tags", "")
    assert cli.json("memory", "show", note_id)["tags"] == []


def test_errors_are_one_line_without_traceback(cli: Cli) -> None:
    assert "summary is empty" in cli.fails("memory", "remember", "-s", " ", "-b", "x")
    secret = "AKIA" + "Z7QX3MVB2KJ4PL9T"
    line = cli.fails("memory", "remember", "-s", "creds", "-b", f"key {secret}")
    assert "AWS" in line and secret not in line
    assert "no note 'nope-123'" in cli.fails("memory", "show", "nope-123")
    assert "invalid note id" in cli.fails("memory", "show", "../../etc/passwd")
    assert "no backup" in cli.fails("memory", "restore", "../x")
    assert cli.run("memory", "show", "nope-1", "--debug").returncode == 1
    before = cli.run("--debug", "memory", "show", "nope-1")  # a global option, before too
    assert before.returncode == 1 and "Traceback" in before.stderr


def test_edit_uses_editor_and_validates(cli: Cli, tmp_path: Path) -> None:
    note_id = str(cli.json("memory", "remember", "-s", "Edit me", "-b", "old body")["id"])
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('old body', 'new body'))\n"
    )
    editor = f"{sys.executable} {script}"
    cli.ok("memory", "edit", note_id, EDITOR=editor)
    assert cli.json("memory", "show", note_id)["body"] == "new body\n"
    breaker = tmp_path / "breaker.py"
    breaker.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text('garbage')\n")
    line = cli.fails("memory", "edit", note_id, EDITOR=f"{sys.executable} {breaker}")
    assert "cannot be read" in line and "kept in" in line
    assert cli.json("memory", "show", note_id)["body"] == "new body\n"


def test_remember_with_id_keeps_the_fields_left_out(cli: Cli) -> None:
    note_id = str(cli.json("memory", "remember", "-s", "Deploys", "-b", "At noon.")["id"])
    cli.ok("memory", "remember", "--id", note_id, "--tags", "release")  # stdin empty: body kept
    cli.ok("memory", "remember", "--id", f"project:{note_id}", "-s", "Deploys on Tuesdays")
    shown = cli.json("memory", "show", note_id)
    assert (shown["summary"], shown["body"], shown["tags"]) == (
        "Deploys on Tuesdays",
        "At noon.\n",
        ["release"],
    )
    cli.ok("memory", "remember", "--id", note_id, input="Piped body.\n")
    assert cli.json("memory", "show", note_id)["body"] == "Piped body.\n"
    usage = cli.run("memory", "remember", "-b", "no summary")  # a new note needs one
    assert usage.returncode == 2 and "--summary" in usage.stderr


def test_an_editor_that_cannot_be_read_or_removes_the_text_changes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    note_id = str(cli.json("memory", "remember", "-s", "Edit me", "-b", "old body")["id"])
    line = cli.fails("memory", "edit", note_id, EDITOR='sed -i s/"summary"/"summ/')
    assert "cannot read the editor command" in line and "set $EDITOR" in line
    remover = tmp_path / "remover.py"
    remover.write_text("import os, sys\nos.remove(sys.argv[1])\n")
    removed = cli.run("memory", "edit", note_id, EDITOR=f"{sys.executable} {remover}")
    assert removed.returncode == 1  # it continued from the text the first attempt kept
    assert "the editor removed the text" in removed.stderr.splitlines()[-1]
    assert "nothing was changed" in removed.stderr
    assert cli.json("memory", "show", note_id)["body"] == "old body\n"
    script = tmp_path / "editor.py"  # and the next edit starts afresh
    script.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text().replace('old body', 'new body'))\n"
    )
    cli.ok("memory", "edit", note_id, EDITOR=f"{sys.executable} {script}")
    assert cli.json("memory", "show", note_id)["body"] == "new body\n"


def test_doctor_reports_and_touches_nothing(cli: Cli, project_dir: Path) -> None:
    broken = project_dir / "MEMORY" / "broken.md"
    broken.write_bytes(b"---\n{oops\n---\nbody")
    before = broken.stat()
    result = cli.run("memory", "doctor", "--json")
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert report["healthy"] is False
    findings = report["findings"]
    assert isinstance(findings, list) and findings[0]["kind"] == "invalid_json"
    assert broken.read_bytes() == b"---\n{oops\n---\nbody"
    assert broken.stat().st_mtime_ns == before.st_mtime_ns
    assert "problems found" in cli.run("memory", "doctor").stdout


def test_help_and_version(cli: Cli) -> None:
    assert "remember" in cli.ok("memory", "--help").stdout
    assert "oharness" in cli.ok("--version").stdout
    usage = cli.run("memory", "remember")
    assert usage.returncode == 2 and "--summary" in usage.stderr


def test_search_index_and_recall_inspection(cli: Cli) -> None:
    empty_index = cli.ok("memory", "index").stdout
    assert "No notes yet" in empty_index
    saved = cli.json(
        "memory",
        "remember",
        "-s",
        "Deploys happen on Tuesdays",
        "--tags",
        "release deploy",
        "-b",
        "The release train leaves at noon.",
    )
    note_id = str(saved["id"])
    assert saved["related"] == [] and saved["likelyDuplicate"] is None
    found = cli.json("memory", "search", "release train")
    assert found["results"][0]["id"] == note_id
    assert "The release train leaves at noon." in cli.ok("memory", "search", "release").stdout
    index = cli.ok("memory", "index").stdout
    assert f"- Deploys happen on Tuesdays ({note_id})" in index
    recalled = cli.json("memory", "recall", "when is the next deploy?")
    assert [item["id"] for item in recalled["attached"]] == [note_id]
    assert recalled["block"].startswith("<recalled-memory>")
    excluded = cli.json("memory", "recall", "when is the next deploy?", "--exclude", note_id)
    assert excluded == {"attached": [], "linked": [], "block": ""}
    assert "nothing would be attached" in cli.ok("memory", "recall", "hello there!").stdout
    assert not (cli.home / "memory-usage").exists()


def test_list_and_search_filter_by_scope_type_and_tag(cli: Cli) -> None:
    deploy = cli.json(
        "memory",
        "remember",
        "-s",
        "Deploys go out on Tuesdays",
        "--type",
        "project",
        "--tags",
        "deploy",
        "-b",
        "Release train at noon.",
    )["id"]
    host = cli.json(
        "memory",
        "remember",
        "-s",
        "Deploy host is ci-1",
        "--type",
        "reference",
        "-b",
        "The deploy runner.",
    )["id"]
    person = cli.json(
        "memory", "remember", "-s", "I prefer short answers", "--type", "user", "-b", "Brief."
    )["id"]

    def listed(*filters: str) -> list[str]:
        return [note["id"] for note in cli.json("memory", "list", *filters)["notes"]]

    assert set(listed()) == {deploy, host, person}
    assert listed("--scope", "user") == [person]
    assert listed("--type", "reference") == [host]
    assert listed("--tag", "DEPLOY") == [deploy]
    assert listed("--type", "none") == []
    assert "No notes match these filters." in cli.ok("memory", "list", "--type", "feedback").stdout
    found = cli.json("memory", "search", "deploy", "--type", "reference")["results"]
    assert [hit["id"] for hit in found] == [host]
    assert cli.json("memory", "search", "deploy", "--scope", "user")["results"] == []
    assert "--type" in cli.fails("memory", "list", "--type", "memo")
    assert "at most 100" in cli.fails("memory", "list", "--tag", "x" * 101)


def test_an_id_in_both_scopes_is_named_as_the_cli_takes_it(cli: Cli, project_dir: Path) -> None:
    project = cli.json("memory", "remember", "-s", "Shared id", "-b", "project")
    note_id = str(project["id"])
    copy = (project_dir / "MEMORY" / f"{note_id}.md").read_bytes()
    (cli.home / "memory" / "user" / f"{note_id}.md").write_bytes(copy)  # the same id, by hand
    line = cli.fails("memory", "show", note_id)
    assert f"say which: project:{note_id} or user:{note_id}" in line
    assert cli.json("memory", "show", f"user:{note_id}")["scope"] == "user"


def test_the_same_summary_in_nfd_and_nfc_is_one_note(cli: Cli) -> None:
    nfc, nfd = "Caf\u00e9 r\u00e9sum\u00e9", "Cafe\u0301 re\u0301sume\u0301"
    first = cli.json("memory", "remember", "-s", nfd, "-b", "same body", "-t", "caf\u00e9")
    again = cli.json("memory", "remember", "-s", nfc, "-b", "same body", "-t", "cafe\u0301")
    assert again["id"] == first["id"] and again["created"] is False
    assert cli.json("memory", "show", str(first["id"]))["summary"] == nfc
