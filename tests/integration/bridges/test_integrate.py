"""``oharness integrate`` on fixture configuration files: keys and comments kept, backups,
dry run, idempotence, uninstall restoring the files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomlkit
from tests.integration.bridges.runner import ok, run

CLAUDE_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/branch-note"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
    },
}
CLAUDE_STATE = {"numStartups": 42, "mcpServers": {"github": {"command": "gh-mcp"}}, "projects": {}}
CODEX_CONFIG = """# my Codex settings
model = "gpt-5.5"  # the default model

[features]
hooks = true

# servers I use
[mcp_servers.docs]
command = "docs-mcp"
args = ["--fast"]
"""


def _claude_home(tmp_path: Path) -> Path:
    home = tmp_path / "user"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    (home / ".claude.json").write_text(json.dumps(CLAUDE_STATE))
    return home


def _integrate(home: Path, tmp_path: Path, *args: str) -> str:
    return ok(home, tmp_path, "integrate", *args, "--user-home", str(home)).stdout


def test_claude_code_install_keeps_everything_and_backs_up(home: Path, tmp_path: Path) -> None:
    user = _claude_home(tmp_path)
    before_settings = (user / ".claude" / "settings.json").read_text()
    before_state = (user / ".claude.json").read_text()
    out = _integrate(user, tmp_path, "claude-code")
    assert "+" in out and "backups:" in out
    settings = json.loads((user / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and settings["permissions"] == CLAUDE_SETTINGS["permissions"]
    assert settings["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    prompt_hooks = [h for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert prompt_hooks[0]["command"] == "~/bin/branch-note"
    assert prompt_hooks[1]["command"].endswith("hook claude-code user-prompt-submit")
    start_hooks = [h for g in settings["hooks"]["SessionStart"] for h in g["hooks"]]
    assert start_hooks[0]["command"].endswith("hook claude-code session-start")
    state = json.loads((user / ".claude.json").read_text())
    assert state["numStartups"] == 42 and state["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert state["mcpServers"]["oharness"]["args"] == ["mcp"]
    assert Path(state["mcpServers"]["oharness"]["command"]).name == "oharness"
    backups = sorted((user / ".claude").glob("settings.json.oharness-backup-*"))
    assert backups and backups[0].read_text() == before_settings
    assert next(user.glob(".claude.json.oharness-backup-*")).read_text() == before_state

    again = _integrate(user, tmp_path, "claude-code")
    assert "already set up" in again and "nothing changed" in again
    assert sum(len(g["hooks"]) for g in settings["hooks"]["UserPromptSubmit"]) == 2

    _integrate(user, tmp_path, "claude-code", "--uninstall")
    assert json.loads((user / ".claude" / "settings.json").read_text()) == CLAUDE_SETTINGS
    assert json.loads((user / ".claude.json").read_text()) == CLAUDE_STATE


def test_dry_run_prints_the_diff_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    user = _claude_home(tmp_path)
    before = sorted(p.name for p in user.rglob("*"))
    out = _integrate(user, tmp_path, "claude-code", "--dry-run")
    assert "--- " in out and "+++ " in out and "dry run" in out
    assert "hook claude-code user-prompt-submit" in out
    assert sorted(p.name for p in user.rglob("*")) == before


def test_codex_keeps_comments_and_other_servers(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    config = user / ".codex" / "config.toml"
    config.write_text(CODEX_CONFIG)
    _integrate(user, tmp_path, "codex")
    text = config.read_text()
    assert "# my Codex settings" in text and "# the default model" in text
    assert "# servers I use" in text
    parsed = tomlkit.parse(text)
    assert parsed["mcp_servers"]["docs"]["args"] == ["--fast"]
    assert parsed["mcp_servers"]["oharness"]["args"] == ["mcp"]
    hooks = json.loads((user / ".codex" / "hooks.json").read_text())
    command = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command.endswith("hook codex user-prompt-submit")
    assert next((user / ".codex").glob("config.toml.oharness-backup-*")).read_text() == CODEX_CONFIG
    _integrate(user, tmp_path, "codex", "--uninstall")
    assert config.read_text() == CODEX_CONFIG
    assert json.loads((user / ".codex" / "hooks.json").read_text()) == {}


def test_fresh_home_gets_new_files(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "empty-user"
    user.mkdir()
    _integrate(user, tmp_path, "claude-code")
    assert (user / ".claude" / "settings.json").is_file() and (user / ".claude.json").is_file()
    assert not list(user.rglob("*oharness-backup*"))


def test_files_made_and_backups_are_private(home: Path, tmp_path: Path) -> None:
    def integrate(user: Path) -> None:  # the oharness home apart from the user's home
        ok(home, tmp_path, "integrate", "claude-code", "--user-home", str(user))

    fresh = tmp_path / "fresh-user"
    fresh.mkdir()
    integrate(fresh)
    for made in (fresh / ".claude.json", fresh / ".claude" / "settings.json"):
        assert made.stat().st_mode & 0o777 == 0o600, made
    user = _claude_home(tmp_path)
    (user / ".claude.json").chmod(0o600)
    (user / ".claude" / "settings.json").chmod(0o644)
    integrate(user)
    assert next(user.glob(".claude.json.oharness-backup-*")).stat().st_mode & 0o777 == 0o600
    assert (user / ".claude.json").stat().st_mode & 0o777 == 0o600
    [backup] = (user / ".claude").glob("settings.json.oharness-backup-*")
    assert backup.stat().st_mode & 0o777 == 0o600
    assert (user / ".claude" / "settings.json").stat().st_mode & 0o777 == 0o644  # as it was


def test_broken_config_is_refused_and_untouched(home: Path, tmp_path: Path) -> None:
    user = _claude_home(tmp_path)
    settings = user / ".claude" / "settings.json"
    settings.write_text("{ broken")
    result = run(home, tmp_path, "integrate", "claude-code", "--user-home", str(user))
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert settings.read_text() == "{ broken"
    assert json.loads((user / ".claude.json").read_text()) == CLAUDE_STATE


def test_codex_hook_alias_runs(home: Path, project_dir: Path) -> None:
    payload = json.dumps({"session_id": "c1", "cwd": str(project_dir), "source": "startup"})
    result = run(home, project_dir, "hook", "codex", "session-start", input=payload)
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_a_customised_entry_keeps_its_arguments_and_a_rerun_changes_nothing(
    home: Path, tmp_path: Path
) -> None:
    user = _claude_home(tmp_path)
    state = json.loads((user / ".claude.json").read_text())
    state["mcpServers"]["oharness"] = {
        "type": "stdio",
        "command": "/old/bin/oharness",
        "args": ["mcp", "--allow-forget"],
        "env": {"OHARNESS_HOME": "/srv/notes"},
    }
    (user / ".claude.json").write_text(json.dumps(state))
    _integrate(user, tmp_path, "claude-code")
    entry = json.loads((user / ".claude.json").read_text())["mcpServers"]["oharness"]
    assert entry["args"] == ["mcp", "--allow-forget"]
    assert entry["env"] == {"OHARNESS_HOME": "/srv/notes"}
    assert entry["command"] != "/old/bin/oharness"
    again = _integrate(user, tmp_path, "claude-code")
    assert "already set up" in again


def test_codex_inline_tables_and_a_customised_entry(home: Path, tmp_path: Path) -> None:
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    config = user / ".codex" / "config.toml"
    config.write_text(
        'mcp_servers = { docs = { command = "docs-mcp" }, '
        'oharness = { command = "/old/oharness", args = ["mcp", "--allow-forget"], '
        "startup_timeout_sec = 20 } }\n"
    )
    _integrate(user, tmp_path, "codex")
    parsed = tomlkit.parse(config.read_text())
    assert parsed["mcp_servers"]["docs"]["command"] == "docs-mcp"
    assert parsed["mcp_servers"]["oharness"]["args"] == ["mcp", "--allow-forget"]
    assert parsed["mcp_servers"]["oharness"]["startup_timeout_sec"] == 20
    assert "nothing changed" in _integrate(user, tmp_path, "codex")


def test_no_entry_that_cannot_start_is_written(home: Path, tmp_path: Path) -> None:
    """Without the mcp extra (hidden from a real process), integrate writes nothing, says the
    install command and exits 1; a dry run shows the diff and the same fix."""
    hidden = tmp_path / "hide-mcp"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text("import sys\nsys.modules['mcp'] = None\n")
    user = tmp_path / "empty-user"
    user.mkdir()
    args = ("integrate", "claude-code", "--user-home", str(user))
    result = run(home, tmp_path, *args, PYTHONPATH=str(hidden))
    assert result.returncode == 1, result.stdout
    assert "mcp extra" in result.stdout and "[mcp,server]" in result.stderr
    assert "nothing was written" in result.stdout and list(user.iterdir()) == []
    result = run(home, tmp_path, *args, "--dry-run", PYTHONPATH=str(hidden))
    assert result.returncode == 0 and "+++ " in result.stdout and "fix: " in result.stdout
    assert list(user.iterdir()) == []


CAPTURE_EVENTS = {"Stop": "stop", "PreCompact": "pre-compact", "SessionEnd": "session-end"}


def _ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        hook
        for group in settings["hooks"].get(event, [])
        for hook in group["hooks"]
        if " hook " in hook["command"]
    ]


def test_capture_hooks_are_registered_beside_the_prompt_hooks_and_kept_where_moved(
    home: Path, tmp_path: Path
) -> None:
    user = _claude_home(tmp_path)
    settings_path = user / ".claude" / "settings.json"
    mine = {"hooks": [{"type": "command", "command": "~/bin/notify-done"}]}
    old = {**CLAUDE_SETTINGS, "hooks": {**CLAUDE_SETTINGS["hooks"], "Stop": [mine]}}
    settings_path.write_text(json.dumps(old, indent=2))
    _integrate(user, tmp_path, "claude-code")
    settings = json.loads(settings_path.read_text())
    for event, name in CAPTURE_EVENTS.items():
        [hook] = _ours(settings, event)
        assert hook["command"].endswith(f"hook claude-code {name}") and hook["timeout"] == 10
    assert settings["hooks"]["Stop"][0] == mine

    # The person moves our Stop entry before theirs: a rerun leaves it there.
    settings["hooks"]["Stop"].reverse()
    settings_path.write_text(json.dumps(settings, indent=2))
    moved = settings_path.read_text()
    assert "nothing changed" in _integrate(user, tmp_path, "claude-code")
    assert settings_path.read_text() == moved

    # An install from before capture (prompt hooks only) gains the capture hooks on a rerun.
    for event in CAPTURE_EVENTS:
        settings["hooks"][event] = [
            g for g in settings["hooks"][event] if not _ours({"hooks": {event: [g]}}, event)
        ]
        if not settings["hooks"][event]:
            del settings["hooks"][event]
    settings_path.write_text(json.dumps(settings, indent=2))
    assert "+" in _integrate(user, tmp_path, "claude-code")
    upgraded = json.loads(settings_path.read_text())
    assert all(len(_ours(upgraded, event)) == 1 for event in CAPTURE_EVENTS)
    assert len(_ours(upgraded, "UserPromptSubmit")) == 1

    _integrate(user, tmp_path, "claude-code", "--uninstall")
    assert json.loads(settings_path.read_text())["hooks"]["Stop"] == [mine]


def test_codex_capture_hooks_keep_within_codex_session_end_budget(
    home: Path, tmp_path: Path
) -> None:
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    (user / ".codex" / "config.toml").write_text(CODEX_CONFIG)
    _integrate(user, tmp_path, "codex")
    hooks = json.loads((user / ".codex" / "hooks.json").read_text())
    timeouts = {event: _ours(hooks, event)[0]["timeout"] for event in CAPTURE_EVENTS}
    assert timeouts == {"Stop": 10, "PreCompact": 10, "SessionEnd": 3}
    assert _ours(hooks, "Stop")[0]["command"].endswith("hook codex stop")
    assert "nothing changed" in _integrate(user, tmp_path, "codex")


def test_a_linked_settings_file_is_written_where_it_points_and_stays_a_link(
    home: Path, tmp_path: Path
) -> None:
    # Dotfiles managers (stow, home-manager) keep settings.json as a link into their folder.
    user = tmp_path / "user"
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    (user / ".claude").mkdir(parents=True)
    (dotfiles / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS, indent=4) + "\n")
    link = user / ".claude" / "settings.json"
    link.symlink_to(dotfiles / "settings.json")
    _integrate(user, tmp_path, "claude-code")
    assert link.is_symlink()
    written = (dotfiles / "settings.json").read_text()
    assert "hook claude-code user-prompt-submit" in written
    assert '\n    "model"' in written  # indented as the person's file was
    _integrate(user, tmp_path, "claude-code", "--uninstall")
    assert link.is_symlink()
    assert json.loads((dotfiles / "settings.json").read_text()) == CLAUDE_SETTINGS


def test_a_customised_hook_timeout_and_an_empty_event_list_are_kept(
    home: Path, tmp_path: Path
) -> None:
    user = _claude_home(tmp_path)
    path = user / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["Notification"] = []  # an event oharness does not use: left alone
    path.write_text(json.dumps(settings, indent=2))
    _integrate(user, tmp_path, "claude-code")
    settings = json.loads(path.read_text())
    (mine,) = _ours(settings, "UserPromptSubmit")
    mine["timeout"] = 30
    path.write_text(json.dumps(settings, indent=2))
    again = _integrate(user, tmp_path, "claude-code")
    assert "already set up" in again
    assert [
        hook["timeout"] for hook in _ours(json.loads(path.read_text()), "UserPromptSubmit")
    ] == [30]
    _integrate(user, tmp_path, "claude-code", "--uninstall")
    assert json.loads(path.read_text()) == {
        **CLAUDE_SETTINGS,
        "hooks": {**CLAUDE_SETTINGS["hooks"], "Notification": []},
    }
