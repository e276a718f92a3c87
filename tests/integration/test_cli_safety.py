"""The CLI through its entry point: backups, credentials, control characters, errors, ids.

Every refusal is one line on stderr with a non-zero exit and no traceback, and leaves the
notes folder and the home exactly as they were (compared by hashing every file).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

OHARNESS = Path(sys.executable).with_name("oharness")
GITHUB_TOKEN = "ghp_" + "jYlCb1nZMJsuPzOkXQ9CKXlucKbn00ycIf1F"
AWS_KEY = "AKIA" + "Z7X2Q4N8PLM3RTV5"


def tree_hash(*directories: Path) -> str:
    """One digest over every file's path and bytes under ``directories``."""
    digest = hashlib.sha256()
    for directory in directories:
        if not directory.exists():
            digest.update(b"absent")
            continue
        for path in sorted(directory.rglob("*")):
            if path.is_file() and "cache" not in path.relative_to(directory).parts:
                digest.update(str(path.relative_to(directory)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


class Cli:
    def __init__(self, home: Path, cwd: Path) -> None:
        self.home = home
        self.cwd = cwd

    def run(
        self, *args: str, input: str = "", cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "OHARNESS_HOME": str(self.home), **env}
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=cwd or self.cwd,
            input=input,
            capture_output=True,
            text=True,
            env=environment,
            timeout=60,
        )

    def ok(self, *args: str, **kwargs: Any) -> str:
        result = self.run(*args, **kwargs)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def json(self, *args: str, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.ok(*args, "--json", **kwargs))
        return data

    def refused(self, *args: str, code: int = 1, **kwargs: Any) -> str:
        """Run a command that must be refused, changing nothing; returns its one line."""
        notes = self.cwd / "MEMORY"
        before = tree_hash(notes, self.home)
        result = self.run(*args, **kwargs)
        assert result.returncode == code, (result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("oharness: error: ")
        assert tree_hash(notes, self.home) == before
        as_json = self.run(*args, "--json", **kwargs)
        assert as_json.returncode == code
        error = json.loads(as_json.stdout)["error"]
        assert set(error) == {"code", "message"} and error["message"]
        assert len(as_json.stderr.strip().splitlines()) == 1
        assert tree_hash(notes, self.home) == before
        return lines[0]


@pytest.fixture
def cli(home: Path, project_dir: Path) -> Cli:
    tool = Cli(home, project_dir)
    tool.ok("project", "init")
    return tool


def _note(cli: Cli, summary: str = "Deploys happen on Tuesdays", *extra: str) -> str:
    return str(cli.json("memory", "remember", "-s", summary, "-b", "Release train.", *extra)["id"])


def test_remember_with_id_backs_up_the_replaced_version(cli: Cli, project_dir: Path) -> None:
    note_id = _note(cli)
    before = (project_dir / "MEMORY" / f"{note_id}.md").read_bytes()
    cli.ok("memory", "remember", "-s", "Deploys happen on Wednesdays", "-b", "x", "--id", note_id)
    (record,) = cli.json("memory", "backups")["backups"]
    assert record["reason"] == "remember-update" and record["id"] == note_id
    assert Path(record["path"]).read_bytes() == before
    listed = cli.ok("memory", "backups").splitlines()
    assert listed[0].split() == ["BACKUP", "WHEN", "REASON", "NOTE"]
    assert listed[1].rindex("remember-update") == listed[0].index("REASON")


def test_a_hand_written_credential_is_named_by_doctor_and_hidden_from_models(
    cli: Cli, project_dir: Path
) -> None:
    note_id = _note(cli, "Deploy token lives here")
    path = project_dir / "MEMORY" / f"{note_id}.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"\nexport GITHUB_TOKEN={GITHUB_TOKEN}\n", encoding="utf-8")
    result = cli.run("memory", "doctor", "--json")
    assert result.returncode == 3 and GITHUB_TOKEN not in result.stdout
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["kind"] == "credential"]
    assert "GitHub token in body line 3" in finding["message"] and finding["problem"] is True
    shown = cli.run("memory", "doctor")
    assert shown.returncode == 3 and "GitHub token" in shown.stdout
    assert GITHUB_TOKEN not in shown.stdout
    recalled = cli.json("memory", "recall", "where does the deploy token live?")
    assert recalled["attached"] and GITHUB_TOKEN not in str(recalled["block"])
    assert "[credential removed]" in str(recalled["block"])


def test_credentials_in_tags_are_refused(cli: Cli) -> None:
    line = cli.refused("memory", "remember", "-s", "Keys", "-b", "x", "--tags", f"aws {AWS_KEY}")
    assert "AWS access key in tags line 2" in line and AWS_KEY not in line


@pytest.mark.parametrize(
    ("option", "value"),
    [("-s", "Ring \x07 the bell"), ("-b", "a NUL \x00?"), ("--tags", "a\x1bb")],
)
def test_control_characters_are_refused(cli: Cli, option: str, value: str) -> None:
    arguments = {"-s": "Plain", "-b": "plain", option: value}
    flat = [item for pair in arguments.items() for item in pair]
    if "\x00" in value:  # argv cannot carry a NUL: send the body on stdin
        flat = ["-s", "Plain"]
        line = cli.refused("memory", "remember", *flat, input=value)
    else:
        line = cli.refused("memory", "remember", *flat)
    assert "control character" in line and "U+00" in line


def test_listing_escapes_control_characters_written_by_hand(cli: Cli, project_dir: Path) -> None:
    # A file name with an escape sequence is reported by doctor, printed escaped.
    (project_dir / "MEMORY" / "bad\x1b[2J.md").write_text("junk", encoding="utf-8")
    result = cli.run("memory", "doctor")
    assert "\x1b" not in result.stdout and "\\x1b[2J" in result.stdout


def test_scope_prefixed_ids_work_wherever_an_id_is_taken(cli: Cli) -> None:
    user_id = _note(cli, "Prefers terse answers", "--scope", "user")
    listed = cli.ok("memory", "list")
    assert f"(user:{user_id})" in listed
    assert cli.json("memory", "show", f"user:{user_id}")["scope"] == "user"
    updated = cli.json(
        "memory",
        "remember",
        "-s",
        "Prefers very terse answers",
        "-b",
        "y",
        "--id",
        f"user:{user_id}",
    )
    assert updated["changed"] is True and updated["scope"] == "user"
    line = cli.refused("memory", "show", f"project:{user_id}")
    assert "no note" in line and "oharness memory list" in line
    line = cli.refused("memory", "show", f"user:{user_id}", "--scope", "project")
    assert "names the user scope" in line
    cli.ok("memory", "forget", f"user:{user_id}", "--yes")
    assert cli.json("memory", "list")["total"] == 0


def test_lookup_errors_speak_to_the_person(cli: Cli, project_dir: Path) -> None:
    line = cli.refused("memory", "show", "nope-123")
    assert "'oharness memory list'" in line and "'memory' (no arguments)" not in line
    (project_dir / "MEMORY" / "broken-1ab.md").write_text("---\n{oops\n---\n", encoding="utf-8")
    line = cli.refused("memory", "show", "broken-1ab")
    assert "exists" in line and "cannot be read" in line and "oharness memory doctor" in line
    assert "exists" in cli.refused("memory", "forget", "broken-1ab", "--yes")


def test_a_file_as_home_degrades_naming_the_cause(cli: Cli, tmp_path: Path) -> None:
    note_id = _note(cli)
    blocked = tmp_path / "home-is-a-file"
    blocked.write_text("x")
    result = cli.run("memory", "list", OHARNESS_HOME=str(blocked))
    assert result.returncode == 0, result.stderr
    assert note_id in result.stdout
    assert f"{blocked} is a file, not a folder" in result.stderr and "config.json" not in (
        result.stderr
    )
    line = cli.refused(
        "memory", "remember", "--scope", "user", "-s", "x", "-b", "y", OHARNESS_HOME=str(blocked)
    )
    assert f"{blocked} is a file, not a folder" in line


def test_user_scope_commands_work_with_no_project_and_create_nothing(
    home: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "somewhere"
    plain.mkdir()
    cli = Cli(home, plain)
    saved = cli.json("memory", "remember", "--scope", "user", "-s", "Likes tea", "-b", "Green.")
    assert saved["scope"] == "user"
    cli.ok("memory", "list")
    cli.ok("memory", "show", f"user:{saved['id']}")
    assert list(plain.iterdir()) == []
    line = cli.refused("memory", "remember", "-s", "Project fact", "-b", "x")
    assert "oharness project init" in line
    assert list(plain.iterdir()) == []


def test_a_git_repository_registers_itself_on_its_first_project_note(
    home: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cli = Cli(home, repo)
    # A note refused registers nothing: the repository stays as it was.
    assert "credential" in cli.refused("memory", "remember", "-s", "DB", "-b", "db pass: hunter2x")
    assert "summary is empty" in cli.refused("memory", "remember", "-s", " ", "-b", "x")
    assert sorted(path.name for path in repo.iterdir()) == [".git"]
    cli.ok("memory", "remember", "-s", "Project fact", "-b", "x")
    assert (repo / ".oharness" / "project.json").is_file() and (repo / "MEMORY").is_dir()


def test_usage_errors_and_bad_projects_are_one_line(cli: Cli, tmp_path: Path) -> None:
    line = cli.refused("memory", "remember", code=2)
    assert "--summary" in line and "oharness memory remember --help" in line
    assert "No such command" in cli.refused("memory", "nonsense", code=2)
    line = cli.refused("memory", "list", "--project", str(tmp_path / "nope"))
    assert "no such folder" in line
    bare = cli.run()
    assert bare.returncode == 0 and "memory" in bare.stdout


def test_doctor_exit_codes(cli: Cli, project_dir: Path) -> None:
    _note(cli)
    healthy = cli.run("memory", "doctor")
    assert healthy.returncode == 0 and "1 note in" in healthy.stdout
    (project_dir / "MEMORY" / "bad.md").write_text("junk", encoding="utf-8")
    assert cli.run("memory", "doctor").returncode == 3


def test_edit_keeps_text_only_in_the_home_and_removes_it_when_saved(
    cli: Cli, tmp_path: Path, home: Path
) -> None:
    note_id = _note(cli, "Edit me")
    system_temp = set(Path(tempfile.gettempdir()).glob(f"{note_id}*"))
    adder = tmp_path / "adder.py"
    adder.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text() + 'token {GITHUB_TOKEN}\\n')\n"
    )
    notes_before = tree_hash(cli.cwd / "MEMORY")
    result = cli.run("memory", "edit", note_id, EDITOR=f"{sys.executable} {adder}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "credential" in line and GITHUB_TOKEN not in line
    assert tree_hash(cli.cwd / "MEMORY") == notes_before
    kept = home / "edits" / f"project-{note_id}.md"
    assert str(kept) in line and kept.stat().st_mode & 0o777 == 0o600
    assert set(Path(tempfile.gettempdir()).glob(f"{note_id}*")) == system_temp
    fixer = tmp_path / "fixer.py"
    fixer.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text().replace('token {GITHUB_TOKEN}', 'token in the vault'))\n"
    )
    result = cli.run("memory", "edit", note_id, EDITOR=f"{sys.executable} {fixer}")
    assert result.returncode == 0 and "continuing your unsaved edit" in result.stderr
    assert not kept.exists()
    assert "token in the vault" in str(cli.json("memory", "show", note_id)["body"])


def test_bytes_that_are_not_utf8_are_refused_naming_the_byte(cli: Cli) -> None:
    line = cli.refused("memory", "remember", "-s", "bad \udcff byte", "-b", "x")
    assert "not UTF-8 (0xFF)" in line
    assert "invalid note id" in cli.refused("memory", "show", "\udcff")


def test_a_user_note_written_inside_a_git_repository_registers_nothing(
    home: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cli = Cli(home, repo)
    cli.ok("memory", "remember", "--type", "user", "-s", "Likes tea", "-b", "Green.")
    cli.ok("memory", "remember", "--scope", "user", "-s", "Likes coffee", "-b", "Black.")
    assert sorted(path.name for path in repo.iterdir()) == [".git"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("-s", "Approve invoice \u202e0001"), ("-s", "zero\u200bwidth"), ("--tags", "ops\u2066")],
)
def test_invisible_characters_are_refused_in_summaries_and_tags(
    cli: Cli, option: str, value: str
) -> None:
    arguments = {"-s": "Plain", "-b": "plain", option: value}
    line = cli.refused("memory", "remember", *[item for pair in arguments.items() for item in pair])
    assert "invisible character (U+" in line and "remove it" in line


def test_a_body_keeps_invisible_characters_and_shows_them_escaped(
    cli: Cli, project_dir: Path
) -> None:
    body = "access = 'user\u202e \u2066// admin\u2069 \u2066'\nzero\u200bwidth\n"
    note_id = _note(cli, "Trojan Source sample", "--type", "reference")
    cli.ok("memory", "remember", "-s", "Trojan Source sample", "-b", body, "--id", note_id)
    stored = (project_dir / "MEMORY" / f"{note_id}.md").read_text("utf-8")
    assert body in stored  # kept as written
    shown = cli.ok("memory", "show", note_id)
    assert "\u202e" not in shown and "\u200b" not in shown
    assert "user\\u202e \\u2066// admin\\u2069" in shown and "zero\\u200bwidth" in shown
    recalled = cli.json("memory", "recall", "the Trojan Source sample access check")
    assert recalled["attached"] and "\u202e" not in str(recalled["block"])
    assert "\\u202e" in str(recalled["block"])  # what a model reads


def test_doctor_names_an_invisible_character_written_into_a_summary_or_tag_by_hand(
    cli: Cli, project_dir: Path
) -> None:
    note_id = _note(cli, "Deploy notes")
    path = project_dir / "MEMORY" / f"{note_id}.md"
    text = path.read_text(encoding="utf-8").replace("Deploy notes", "Deploy \u202enotes", 1)
    path.write_text(text, encoding="utf-8")
    assert cli.run("memory", "doctor").returncode == 3
    result = cli.run("memory", "doctor", "--json")
    (finding,) = [
        f for f in json.loads(result.stdout)["findings"] if f["kind"] == "invisible_character"
    ]
    assert "summary holds an invisible character (U+202E" in finding["message"]
    assert finding["problem"] is True and "\u202e" not in result.stdout
    # The note still loads, shown escaped.
    assert "Deploy \\u202enotes" in cli.run("memory", "list").stdout


@pytest.mark.parametrize(
    ("body", "secret"),
    [
        ("The AWS secret for CI is 9dF3kLm2Qx7Rt/Vb8Nw+Yp4Zs1Hc6Ju0Ge5Ai3Ko", "9dF3kLm2Qx7Rt"),
        ("Bob's password is correcthorsebatterystaple42", "batterystaple42"),
        ("token &#103;&#104;&#112;&#95;R8kT2mQ9vLp4Zt7RwY3nB6cDxF1hJ5sA0gUe", "R8kT2mQ9vLp4Zt7"),
    ],
    ids=["bare AWS secret", "prose password", "HTML entities"],
)
def test_remember_refuses_the_credentials_of_the_attack_report(
    cli: Cli, project_dir: Path, body: str, secret: str
) -> None:
    line = cli.refused("memory", "remember", "-s", "CI notes", "-b", body)
    assert "credential" in line and secret not in line
    assert not list((project_dir / "MEMORY").glob("*.md"))


def test_a_project_registered_under_umask_000_is_not_writable_by_every_user(
    home: Path, tmp_path: Path
) -> None:
    # Before, its folders came out 0777 and its notes 0666: refused as a project folder by
    # the next command, and open to any user's writes meanwhile.
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    environment = {**os.environ, "OHARNESS_HOME": str(home)}
    subprocess.run(
        [str(OHARNESS), "memory", "remember", "-s", "Project fact", "-b", "x"],
        cwd=repo,
        env=environment,
        check=True,
        capture_output=True,
        preexec_fn=lambda: os.umask(0),
    )
    made = [repo / ".oharness", repo / "MEMORY", repo / "ARTIFACTS"]
    made += [*(repo / ".oharness").iterdir(), *(repo / "MEMORY").iterdir()]
    assert [path for path in made if path.stat().st_mode & 0o002] == []
    listed = Cli(home, repo).ok("memory", "list")
    assert "Project fact" in listed
