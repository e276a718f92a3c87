"""``oharness doctor``: the daemon, sign-in, integrations, extras and the project, each problem
with its fix, on a fresh home and after setting things up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.bridges.runner import ok, run
from tests.integration.sync.cliworld import free_port


def _doctor(home: Path, cwd: Path, user: Path) -> tuple[int, dict[str, dict[str, object]]]:
    result = run(home, cwd, "doctor", "--json", "--user-home", str(user))
    checks = {check["area"]: check for check in json.loads(result.stdout)["checks"]}
    return result.returncode, checks


def test_a_fresh_machine_is_told_what_to_fix(tmp_path: Path) -> None:
    home, user, project = tmp_path / "home", tmp_path / "user", tmp_path / "project"
    user.mkdir()
    project.mkdir()
    code, checks = _doctor(home, project, user)
    assert code == 3
    assert checks["daemon"]["fix"] and "oharness setup --start" in str(checks["daemon"]["fix"])
    assert checks["sign-in"]["fix"] and "oharness setup --origin" in str(checks["sign-in"]["fix"])
    assert checks["claude-code"]["ok"] and "not set up" in str(checks["claude-code"]["seen"])
    assert "not registered" in str(checks["project"]["seen"])
    text = run(home, project, "doctor", "--user-home", str(user))
    assert text.returncode == 3 and "fix: oharness setup --origin" in text.stdout
    assert not home.exists() or not (home / "daemon.json").exists()  # it only looked


def test_the_home_folder_is_no_project_and_nothing_to_fix(tmp_path: Path) -> None:
    home, person = tmp_path / "home", tmp_path / "person"
    person.mkdir()
    result = run(home, person, "doctor", "--json", "--user-home", str(person), HOME=str(person))
    checks = {check["area"]: check for check in json.loads(result.stdout)["checks"]}
    project = checks["project"]
    assert project["ok"] and not project.get("fix"), project
    assert "your home folder" in str(project["seen"]) and "user notes only" in str(project["seen"])
    # Another user's folder is a problem to fix, not a design: still reported.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 65534, 65534)
    _, checks = _doctor(home, shared, person)
    assert not checks["project"]["ok"] and "another user" in str(checks["project"]["seen"])


def test_a_broken_settings_file_is_named_with_its_fix(tmp_path: Path) -> None:
    home, user, project = tmp_path / "home", tmp_path / "user", tmp_path / "project"
    for folder in (home, user, project / ".oharness"):
        folder.mkdir(parents=True)
    _, checks = _doctor(home, project, user)
    assert checks["config"]["ok"]
    broken = {
        home / "config.json": ('{"memory": ', "not valid JSON"),
        home / "plugins.json": ('{"runtimePlugins": 5}', "must be a list"),
        project / ".oharness" / "config.json": (
            '{"memory": {"recall": {"minScore": "high"}}}',
            "must be a number",
        ),
    }
    for path, (text, said) in broken.items():
        path.write_text(text, encoding="utf-8")
        code, checks = _doctor(home, project, user)
        assert code == 3 and not checks["config"]["ok"], path
        assert str(path) in str(checks["config"]["seen"]) and said in str(checks["config"]["seen"])
        assert checks["config"]["fix"]
        path.unlink()


def test_a_set_up_machine_and_a_broken_integration(tmp_path: Path) -> None:
    home, user, project = tmp_path / "home", tmp_path / "user", tmp_path / "project"
    user.mkdir()
    project.mkdir()
    ok(home, project, "project", "init")
    ok(home, project, "integrate", "claude-code", "--user-home", str(user))
    server = subprocess.Popen(
        [sys.executable, "-m", "oharness.cli.main", "serve", "--port", str(free_port())],
        cwd=project,
        env={**os.environ, "OHARNESS_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (home / "daemon.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        _, checks = _doctor(home, project, user)
        assert checks["daemon"]["ok"] and "answering" in str(checks["daemon"]["seen"])
        assert checks["claude-code"]["ok"] and "set up" in str(checks["claude-code"]["seen"])
        assert str(project.resolve()) in str(checks["project"]["seen"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    settings = user / ".claude" / "settings.json"
    kept = settings.read_text()
    before_capture = json.loads(kept)
    del before_capture["hooks"]["Stop"], before_capture["hooks"]["SessionEnd"]
    settings.write_text(json.dumps(before_capture))
    code, checks = _doctor(home, project, user)
    assert code == 3 and "the capture hooks (Stop, SessionEnd)" in str(
        checks["claude-code"]["seen"]
    )
    assert checks["claude-code"]["fix"] == "oharness integrate claude-code"
    settings.write_text(kept)
    state = user / ".claude.json"
    data = json.loads(state.read_text())
    data["mcpServers"]["oharness"]["command"] = str(tmp_path / "gone" / "oharness")
    state.write_text(json.dumps(data))
    code, checks = _doctor(home, project, user)
    assert code == 3 and "no such file" in str(checks["claude-code"]["seen"])
    assert checks["claude-code"]["fix"] == "oharness integrate claude-code"
