"""``oharness doctor``: is memory set up and working on this machine? Each problem with its fix.

It looks, and changes nothing: the installed extras, the settings files, the daemon (does it
answer?), the sign-in and the sync switch, what the last sync passes left (a scope paused or
failing, conflicts waiting, notes that do not sync), each agent integration (are our entries
there, and could the MCP entry start?), and the project of the current folder by the one
discovery rule. It exits 0 when nothing needs fixing and 3 when something does
(``EXIT_PROBLEMS``), like ``memory doctor``.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from oharness.cli.context import EXIT_PROBLEMS, emit_json, home_from_environment, say
from oharness.cli.installation import install_command, installed_extras


@dataclass(frozen=True)
class Finding:
    """One line of the report: what was looked at, what was seen, and the fix if any."""

    area: str
    seen: str
    fix: str | None = None

    @property
    def ok(self) -> bool:
        return self.fix is None

    def to_json(self) -> dict[str, Any]:
        return {"area": self.area, "ok": self.ok, "seen": self.seen, "fix": self.fix}


def check_extras(extras: dict[str, bool]) -> Finding:
    have = [name for name, present in extras.items() if present]
    missing = [name for name, present in extras.items() if not present]
    seen = f"installed: {', '.join(have) or 'none'}; not installed: {', '.join(missing) or 'none'}"
    return Finding("extras", seen)


def check_daemon(home: Path, extras: dict[str, bool]) -> Finding:
    """Does a daemon for this home answer?"""
    import httpx2

    try:
        info = json.loads((home / "daemon.json").read_text("utf-8"))
        token = (home / "daemon-token").read_text("utf-8").strip()
        url = str(info["url"])
    except (OSError, ValueError, KeyError, TypeError):
        fix = "oharness setup --start (a user service; or run oharness serve)"
        if not extras["server"]:
            fix = f"{install_command(['server'])}, then oharness setup --start"
        return Finding("daemon", "not running (background sync and the Memory page are off)", fix)
    try:
        answer = httpx2.get(
            f"{url}/workspaces", headers={"Authorization": f"Bearer {token}"}, timeout=2.0
        )
    except httpx2.HTTPError as exc:
        return Finding(
            "daemon",
            f"{url} does not answer ({type(exc).__name__})",
            "restart it: stop the old process, then oharness setup --start",
        )
    if answer.status_code != 200:
        return Finding("daemon", f"{url} answered {answer.status_code}", "restart oharness serve")
    hosted = answer.json().get("workspaces", [])
    return Finding("daemon", f"answering at {url}, hosting {len(hosted)} workspace(s)")


def check_sign_in(home: Path) -> list[Finding]:
    """Signed in to a sync server, the switch on, and what the last passes left?"""
    from oharness.errors import OHarnessError
    from oharness.project.paths import HomeLayout
    from oharness.sync.settings_file import SyncSettingsFile

    settings = SyncSettingsFile(HomeLayout(home))
    try:
        origin, token, enabled = settings.origin(), settings.token(), settings.enabled()
    except OHarnessError as exc:
        return [Finding("sign-in", f"cannot be read: {exc.message}", "fix or remove the file")]
    if not origin or not token:
        return [
            Finding(
                "sign-in",
                "not signed in: notes stay on this machine",
                "oharness setup --origin URL --token TOKEN (or oharness login)",
            )
        ]
    found = [Finding("sign-in", f"signed in to {origin}")]
    if not enabled:
        found.append(Finding("sync", "switched off", "oharness sync on"))
        return found
    return found + check_sync_state()


#: How many notes that do not sync the report names (the rest are counted).
UNSYNCED_NAMED = 5


def check_sync_state() -> list[Finding]:
    """What the last passes left (read from this machine's sync state; nothing is sent): a
    scope paused or failing, conflicts waiting, notes that do not sync, for the user scope,
    this folder's project and every project this machine used."""
    from oharness.cli.context import open_for
    from oharness.errors import OHarnessError
    from oharness.memory.workspace import wall_clock_ms
    from oharness.sync.actions import scope_error, sync_status, unsynced_files, workspace_sync

    try:
        workspace = open_for(None, register=False)
        data = sync_status(*workspace_sync(workspace, clock=wall_clock_ms))
    except OHarnessError as exc:
        return [Finding("sync", f"its state cannot be read: {exc.message}", "oharness sync status")]
    found: list[Finding] = []
    for scope in data["scopes"]:
        name = scope["scope"]
        if scope.get("paused"):
            found.append(Finding(f"sync {name}", f"paused: {scope['paused']}", "as it says"))
        elif (error := scope_error(scope)) is not None:
            failed = f"failed: {error['message']}"
            found.append(Finding(f"sync {name}", failed, "oharness sync now"))
        if scope.get("conflicts"):
            found.append(_conflicts(f"sync {name}", len(scope["conflicts"])))
        unsynced = unsynced_files(scope)
        if unsynced:
            named = [f"{file} ({why})" if why else file for file, why in unsynced.items()]
            more = (
                f"; and {len(named) - UNSYNCED_NAMED} more" if len(named) > UNSYNCED_NAMED else ""
            )
            found.append(
                Finding(
                    f"sync {name}",
                    f"{len(unsynced)} note(s) do not sync: "
                    + "; ".join(named[:UNSYNCED_NAMED])
                    + more,
                    "as each says; oharness sync status lists them all, oharness memory doctor"
                    " says why",
                )
            )
    here = workspace.project.root.resolve() if workspace.project is not None else None
    for project in data.get("projects", []):
        if Path(project["root"]).resolve() == here:
            continue  # said above
        area, where = f"sync {project['root']}", f"cd {shlex.quote(str(project['root']))}, then "
        if project.get("paused"):
            found.append(Finding(area, f"paused: {project['paused']}", "as it says"))
        elif project.get("lastError"):
            message = project["lastError"].get("message", "")
            found.append(Finding(area, f"failed: {message}", f"{where}oharness sync now"))
        if project.get("conflicts"):
            found.append(_conflicts(area, len(project["conflicts"]), where))
        if project.get("notSynced"):
            found.append(
                Finding(
                    area,
                    f"{project['notSynced']} note(s) do not sync",
                    f"{where}oharness sync status names each with its fix",
                )
            )
    if not found:
        found.append(Finding("sync", "no pause, error or conflict left by the last passes"))
    return found


def _conflicts(area: str, count: int, where: str = "") -> Finding:
    return Finding(
        area,
        f"{count} conflict(s) waiting for you",
        f"{where}oharness sync conflicts, then oharness sync resolve ID --keep local|cloud|both",
    )


def _our_mcp_command(agent: str, user_home: Path) -> str | None:
    """The command of our MCP entry in ``agent``'s configuration, if there is one."""
    try:
        if agent == "claude-code":
            data = json.loads((user_home / ".claude.json").read_text("utf-8"))
            entry = data.get("mcpServers", {}).get("oharness")
            return str(entry["command"]) if isinstance(entry, dict) else None
        import tomllib

        data = tomllib.loads((user_home / ".codex" / "config.toml").read_text("utf-8"))
        entry = data.get("mcp_servers", {}).get("oharness")
        return str(entry["command"]) if isinstance(entry, dict) else None
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def _our_hooks(agent: str, user_home: Path, event: str = "UserPromptSubmit") -> bool:
    path = user_home / (".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json")
    try:
        groups = json.loads(path.read_text("utf-8")).get("hooks", {}).get(event, [])
    except (OSError, ValueError, AttributeError):
        return False
    for group in groups if isinstance(groups, list) else []:
        for hook in group.get("hooks", []) if isinstance(group, dict) else []:
            command = hook.get("command") if isinstance(hook, dict) else None
            if isinstance(command, str) and " hook " in f" {' '.join(shlex.split(command))} ":
                return True
    return False


#: The hooks capture needs (docs/capture.md); an install from before capture lacks them.
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")


def check_integration(agent: str, user_home: Path, extras: dict[str, bool]) -> Finding:
    """Our entries in ``agent``'s configuration, and whether they can start."""
    command, hooks = _our_mcp_command(agent, user_home), _our_hooks(agent, user_home)
    if command is None and not hooks:
        return Finding(agent, f"not set up (oharness integrate {agent} adds it)")
    problems = []
    if command is None or not hooks:
        problems.append("the MCP server" if command is None else "the prompt hooks")
    elif not Path(command).is_file():
        problems.append(f"the MCP entry's command {command} (no such file)")
    missing = [event for event in CAPTURE_EVENTS if not _our_hooks(agent, user_home, event)]
    if hooks and missing:
        problems.append(f"the capture hooks ({', '.join(missing)})")
    if command is not None and not extras["mcp"]:
        problems.append("the mcp extra (the MCP server cannot start without it)")
    if problems:
        fix = f"oharness integrate {agent}"
        if not extras["mcp"]:
            fix = f"{install_command(['mcp'])}, then {fix}"
        return Finding(agent, f"missing or broken: {'; '.join(problems)}", fix)
    return Finding(agent, f"MCP server, prompt and capture hooks set up ({command})")


def check_config(start: Path, home: Path) -> Finding:
    """The settings files every command reads: yours (``config.json``), the plugins file and
    the current project's ``.oharness/config.json``."""
    from oharness.errors import OHarnessError
    from oharness.harness.plugin_config import read_plugins_file
    from oharness.project.config import load_settings
    from oharness.project.discovery import discover
    from oharness.project.paths import HomeLayout

    layout = HomeLayout(home)
    found = discover(str(start), str(home))
    root = Path(found.root) if found is not None and found.refused is None else None
    try:
        load_settings(layout.config_file, root)
        read_plugins_file(layout.plugins_file)
    except OHarnessError as exc:
        return Finding("config", exc.message, "fix the file named above (every command reads it)")
    return Finding("config", "readable")


def check_project(start: Path, home: Path) -> Finding:
    """The project of the current folder, by the one discovery rule."""
    from oharness.project.discovery import discover, never_project, read_project_id

    found = discover(str(start), str(home))
    if found is None:
        return Finding("project", f"{start} is inside OHARNESS_HOME: user notes only")
    if found.refused is not None and not found.registered:
        reason = never_project(found.root, os.path.realpath(home))
        if reason is not None:  # as designed, nothing to fix: user notes work here
            return Finding("project", f"none here ({reason}, never a project): user notes only")
    if found.refused is not None:
        return Finding("project", f"refused: {found.refused}", "see docs/memory.md")
    where = f" (from the worktree {found.worktree})" if found.worktree else ""
    if not found.registered:
        return Finding("project", f"{found.root}{where}: not registered yet (a write registers it)")
    return Finding("project", f"{read_project_id(found.root)} at {found.root}{where}")


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.option(
    "--user-home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The home folder holding the agents' configuration (default: ~).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def doctor(as_json: bool, user_home: Path | None, debug: bool) -> None:
    """Check the daemon, sign-in, integrations, extras and this folder's project."""
    home = home_from_environment()
    extras = installed_extras()
    people_home = user_home if user_home is not None else Path.home()
    findings = [
        check_extras(extras),
        check_config(Path.cwd(), home),
        check_daemon(home, extras),
        *check_sign_in(home),
        *(check_integration(agent, people_home, extras) for agent in ("claude-code", "codex")),
        check_project(Path.cwd(), home),
    ]
    problems = [finding for finding in findings if not finding.ok]
    if as_json:
        emit_json({"ok": not problems, "checks": [f.to_json() for f in findings]})
    else:
        for finding in findings:
            say(f"{'ok ' if finding.ok else 'FIX'}  {finding.area}: {finding.seen}")
            if finding.fix:
                say(f"     fix: {finding.fix}")
        say("nothing to fix" if not problems else f"{len(problems)} thing(s) to fix")
    if problems:
        raise click.exceptions.Exit(EXIT_PROBLEMS)
