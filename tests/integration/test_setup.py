"""``oharness setup`` in a fresh HOME: agents' entries kept as customised, the daemon started
where no service manager exists (this machine has no systemd user session), a systemd unit
written where ``systemctl --user`` answers (a stand-in on PATH that records its calls), sign-in
to a real sync server, idempotence, dry run and uninstall."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import tomlkit
from tests.integration.sync.cliworld import Server, Storage, free_port, token_for

OHARNESS = Path(sys.executable).with_name("oharness")
CODEX_INLINE = (
    "# mine\n"
    'mcp_servers = { docs = { command = "docs-mcp" }, '
    'oharness = { command = "/old/oharness", args = ["mcp", "--allow-forget"] } }\n'
)


class Person:
    """A fresh HOME (with XDG folders inside it) and an OHARNESS_HOME, driving the CLI."""

    def __init__(self, root: Path, **env: str) -> None:
        self.user = root / "user"
        self.home = self.user / ".oharness"
        (self.user / ".claude").mkdir(parents=True)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OHARNESS_", "XDG_"))},
            "HOME": str(self.user),
            "XDG_CONFIG_HOME": str(self.user / ".config"),
            **env,
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(OHARNESS), *args],
            cwd=self.user,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the HOME outside OHARNESS_HOME (configuration, services)."""
        return {
            str(path.relative_to(self.user)): path.read_bytes()
            for path in sorted(self.user.rglob("*"))
            if path.is_file() and self.home not in path.parents
        }


@pytest.fixture
def person(tmp_path: Path) -> Iterator[Person]:
    someone = Person(tmp_path)
    yield someone
    try:  # a daemon this test started in the background
        pid = json.loads((someone.home / "daemon.json").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return
    os.kill(pid, signal.SIGTERM)


def test_without_a_service_manager_setup_starts_the_daemon_and_a_rerun_changes_nothing(
    person: Person,
) -> None:
    codex = person.user / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text(CODEX_INLINE)
    port = str(free_port())
    first = person.run("setup", "--start", "--port", port)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "started in the background" in first.stdout and "nohup" in first.stdout
    assert f"answering at http://127.0.0.1:{port}" in first.stdout
    entry = tomlkit.parse(codex.read_text())["mcp_servers"]["oharness"]
    assert entry["args"] == ["mcp", "--allow-forget"] and entry["command"] == str(OHARNESS)
    assert codex.read_text().startswith("# mine\nmcp_servers = {")  # still inline
    claude = json.loads((person.user / ".claude.json").read_text())
    assert claude["mcpServers"]["oharness"]["args"] == ["mcp"]
    before = person.snapshot()

    again = person.run("setup", "--start", "--port", port)
    assert again.returncode == 0 and "nothing changed" in again.stdout, again.stdout
    assert person.snapshot() == before

    gone = person.run("setup", "--uninstall")
    assert gone.returncode == 0, gone.stderr
    assert "oharness" not in tomlkit.parse(codex.read_text())["mcp_servers"]
    assert "oharness" not in json.loads((person.user / ".claude.json").read_text())["mcpServers"]
    # No service: the daemon setup started is stopped, as a service would be.
    assert f"the daemon at http://127.0.0.1:{port} stopped" in gone.stdout, gone.stdout
    assert "answering at" not in person.run("setup", "--dry-run").stdout


def test_the_nohup_command_is_printed_and_works_as_printed(person: Person) -> None:
    port = str(free_port())
    said = person.run("setup", "--port", port)
    assert said.returncode == 0, said.stderr
    line = next(line for line in said.stdout.splitlines() if "daemon with: " in line)
    command = line.split("start the daemon with: ", 1)[1].split("  (or run", 1)[0]
    shutil.rmtree(person.home / "logs", ignore_errors=True)  # as in a home nothing logged to yet
    repository = person.user / "shop"  # pasted in a repository: the daemon must not take it
    repository.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repository, check=True)
    subprocess.run(
        ["bash", "-c", f"umask 022; {command}"],
        cwd=repository,
        env=person.env,
        check=True,
        timeout=30,
    )
    deadline = time.monotonic() + 30  # the daemon of the printed command, not one setup starts
    while "answering at" not in (said := person.run("setup", "--port", port)).stdout:
        assert time.monotonic() < deadline, said.stdout
        time.sleep(0.5)
    assert f"answering at http://127.0.0.1:{port}" in said.stdout, said.stdout
    _assert_private_log(person)
    assert list(repository.iterdir()) == [repository / ".git"]


def test_a_daemon_started_by_setup_logs_to_a_private_file(person: Person) -> None:
    started = person.run("setup", "--start", "--port", str(free_port()))
    assert "answering at" in started.stdout, started.stdout + started.stderr
    _assert_private_log(person)


def test_setup_prints_a_sign_in_link_for_the_memory_page(person: Person) -> None:
    port = free_port()
    started = person.run("setup", "--start", "--port", str(port))
    found = re.search(r"open (http://127\.0\.0\.1:\d+/auth\?code=\S+) once", started.stdout)
    assert found is not None, started.stdout
    first = httpx2.get(found.group(1))
    assert first.status_code == 200 and "oharness_session" in first.headers.get("set-cookie", "")
    assert httpx2.get(found.group(1)).status_code == 401  # once
    again = person.run("setup", "--port", str(port))  # run again: a new link
    link = re.search(r"open (\S+/auth\?code=\S+) once", again.stdout)
    assert link is not None and link.group(1) != found.group(1)
    dry = person.run("setup", "--dry-run")  # changes nothing: the link printed last still works
    assert "/auth?code=" not in dry.stdout and "prints a sign-in link" in dry.stdout
    assert httpx2.get(link.group(1)).status_code == 200


def test_setup_run_again_after_a_crash_restarts_the_daemon_on_its_port(person: Person) -> None:
    port = free_port()
    started = person.run("setup", "--start", "--port", str(port))
    assert f"answering at http://127.0.0.1:{port}" in started.stdout, started.stdout
    pid = json.loads((person.home / "daemon.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    again = person.run("setup", "--start")  # as doctor says after a crash: no --port
    assert f"answering at http://127.0.0.1:{port}" in again.stdout, again.stdout
    # A clean stop (a shutdown) removes daemon.json: the next setup --start keeps the port too.
    pid = json.loads((person.home / "daemon.json").read_text())["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while (person.home / "daemon.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (person.home / "daemon.json").exists()
    restarted = person.run("setup", "--start")
    assert f"answering at http://127.0.0.1:{port}" in restarted.stdout, restarted.stdout


def _assert_private_log(person: Person) -> None:
    log = person.home / "logs" / "daemon.log"
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert "could be read by other users" not in log.read_text()  # nothing to tighten at start


def _fake_systemctl(tmp_path: Path) -> tuple[str, Path]:
    """A ``systemctl`` first on PATH that records its arguments and succeeds."""
    folder, log = tmp_path / "bin", tmp_path / "systemctl.log"
    folder.mkdir()
    script = folder / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}", log


def test_a_systemd_user_unit_is_written_enabled_and_removed(tmp_path: Path) -> None:
    path, log = _fake_systemctl(tmp_path)
    person = Person(tmp_path, PATH=path)
    result = person.run("setup", "--port", "18399")
    assert result.returncode == 0, result.stdout + result.stderr
    unit = person.user / ".config" / "systemd" / "user" / "oharness.service"
    text = unit.read_text()
    assert f'ExecStart="{OHARNESS}" "serve" "--host" "127.0.0.1" "--port" "18399"\n' in text
    assert "--project" not in text and "WantedBy=default.target" in text
    assert f'Environment="OHARNESS_HOME={person.home}"' in text
    assert f'WorkingDirectory="{person.home}"' in text
    calls = log.read_text().splitlines()
    assert calls[-2:] == ["--user daemon-reload", "--user enable oharness"]

    log.write_text("")
    again = person.run("setup", "--port", "18399")
    assert "nothing changed" in again.stdout and log.read_text() == "--user show-environment\n"

    removed = person.run("setup", "--uninstall")
    assert removed.returncode == 0 and not unit.exists()
    assert "--user disable --now oharness" in log.read_text()


def test_a_config_folder_outside_the_home_gets_no_service(tmp_path: Path) -> None:
    path, _ = _fake_systemctl(tmp_path)
    elsewhere = tmp_path / "shared-config"
    person = Person(tmp_path, PATH=path, XDG_CONFIG_HOME=str(elsewhere))
    result = person.run("setup")
    assert result.returncode == 1 and "outside your home" in result.stdout
    assert "XDG_CONFIG_HOME" in result.stderr and not elsewhere.exists()


def test_sign_in_to_a_real_sync_server_then_nothing_to_do(tmp_path: Path) -> None:
    person = Person(tmp_path)
    server = Server(Storage(f"file://{tmp_path / 'objects'}", {}), tmp_path / "server.log")
    try:
        args = ("setup", "--origin", server.origin, "--token", token_for("ada"))
        first = person.run(*args)
        assert first.returncode == 0 and f"signed in to {server.origin} as ada" in first.stdout
        again = person.run("setup", "--origin", server.origin)
        assert f"signed in to {server.origin}" in again.stdout and "nothing changed" in again.stdout
        wrong = person.run("setup", "--origin", server.origin, "--token", "not-a-token")
        assert wrong.returncode == 1 and "fix: check the URL and token" in wrong.stdout
    finally:
        server.stop()


def test_codex_hooks_switched_off_are_named_with_the_fix(person: Person) -> None:
    codex = person.user / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text("[features]\ncodex_hooks = false\n")
    result = person.run("setup", "--agent", "codex", "--dry-run")
    assert "[features] codex_hooks = false" in result.stdout
    assert "fix: set [features] hooks = true" in result.stdout
    assert codex.read_text() == "[features]\ncodex_hooks = false\n"  # a dry run wrote nothing


def test_capture_by_asking_the_agent_is_switched_on_only_when_chosen(person: Person) -> None:
    person.home.mkdir(mode=0o700)
    config = person.home / "config.json"
    mine = {"memory": {"recall": {"perTurn": 3}}, "models": {"main": None}}
    config.write_text(json.dumps(mine))
    port = str(free_port())
    first = person.run("setup", "--agent", "claude-code", "--port", port)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "ok   capture: off (docs/capture.md" in first.stdout  # no terminal: never asked
    assert json.loads(config.read_text()) == mine

    dry = person.run("setup", "--agent", "claude-code", "--ask-agent", "--dry-run")
    assert "ask-the-agent mode would be switched on" in dry.stdout
    assert json.loads(config.read_text()) == mine

    on = person.run("setup", "--agent", "claude-code", "--ask-agent", "--port", port)
    assert "done capture: ask-the-agent mode switched on" in on.stdout, on.stdout
    expected = {**mine, "memory": {"recall": {"perTurn": 3}, "autoExtract": {"askAgent": True}}}
    assert json.loads(config.read_text()) == expected
    again = person.run("setup", "--agent", "claude-code", "--ask-agent", "--port", port)
    assert "ok   capture: on: the agent is asked to save" in again.stdout
    settings = json.loads((person.user / ".claude" / "settings.json").read_text())
    assert {"Stop", "PreCompact", "SessionEnd"} <= set(settings["hooks"])

    off = person.run("setup", "--agent", "claude-code", "--no-ask-agent", "--port", port)
    assert "done capture: ask-the-agent mode switched off" in off.stdout
    assert json.loads(config.read_text())["memory"]["autoExtract"] == {"askAgent": False}
