"""The steps of ``oharness setup``; ``oharness integrate AGENT`` runs the same ones for one agent.

Each step looks first and changes only what differs, so a second run changes nothing: the
agents' entries (never one that could not start), the daemon as a user service, and the
sign-in to a sync server. A step returns an :class:`Outcome` instead of raising, so one broken
configuration file does not stop the others; the command reports them all.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from oharness.bridges.integrate import apply, codex_hooks_switched_off, plan
from oharness.cli.installation import install_command, installed_extras, missing_extra
from oharness.errors import OHarnessError


@dataclass(frozen=True)
class Outcome:
    """What one step found or did; ``fix`` set: something stops memory working here."""

    area: str
    said: str
    changed: bool = False
    fix: str | None = None


@dataclass(frozen=True)
class SetupRequest:
    """Everything the steps need, read from the command line and the environment."""

    home: Path  # OHARNESS_HOME
    user_home: Path  # the person's home: agents' configuration and the user service
    config_home: Path  # $XDG_CONFIG_HOME, else user_home/.config
    executable: str  # the absolute path of oharness
    install: bool  # False: --uninstall
    dry_run: bool
    start: bool
    port: int
    environ: Mapping[str, str]


def detected_agents(user_home: Path, environ: Mapping[str, str]) -> list[str]:
    """The agents that look installed: their configuration folder or their command."""
    path = environ.get("PATH", "")
    found = []
    claude = (user_home / ".claude").exists() or (user_home / ".claude.json").exists()
    if claude or shutil.which("claude", path=path):
        found.append("claude-code")
    if (user_home / ".codex").exists() or shutil.which("codex", path=path):
        found.append("codex")
    return found


def agent_step(request: SetupRequest, agent: str, echo: Callable[[str], None]) -> Outcome:
    """Our MCP server and prompt hooks in ``agent``'s user configuration (or out of it)."""
    missing = missing_extra("mcp", "the MCP server") if request.install else None
    if missing is not None and not request.dry_run:
        return Outcome(agent, f"nothing was written: {missing}", fix=install_command(["mcp"]))
    try:
        changes = plan(agent, request.user_home, request.executable, install=request.install)
    except OHarnessError as exc:
        return Outcome(agent, f"nothing was written: {exc.message}", fix="fix the file named")
    changed = [change for change in changes if change.changed]
    for change in changed:
        echo(change.diff())
    verb = "would be " if request.dry_run else ""
    if not changed:
        said = "already set up" if request.install else "not set up; nothing to remove"
        return _with_codex_flag(request, agent, Outcome(agent, said))
    if request.dry_run:
        said = ", ".join(str(change.path) for change in changed) + f" {verb}changed"
        fix = install_command(["mcp"]) if missing else None
        return _with_codex_flag(request, agent, Outcome(agent, said, changed=True, fix=fix))
    backups = apply(changes)
    said = "updated " + ", ".join(str(change.path) for change in changed)
    if backups:
        said += " (backups: " + ", ".join(str(backup) for backup in backups) + ")"
    if agent == "codex" and request.install:
        said += "; Codex asks you to review and trust the new hooks before they run (/hooks)"
    return _with_codex_flag(request, agent, Outcome(agent, said, changed=True))


def _with_codex_flag(request: SetupRequest, agent: str, outcome: Outcome) -> Outcome:
    """A Codex configuration that switches hooks off gets the fix beside the outcome."""
    if agent != "codex" or not request.install:
        return outcome
    try:
        text = (request.user_home / ".codex" / "config.toml").read_text("utf-8")
    except OSError:
        return outcome
    key = codex_hooks_switched_off(text)
    if key is None:
        return outcome
    return Outcome(
        agent,
        f"{outcome.said}; but [features] {key} = false in config.toml keeps the prompt hooks off",
        changed=outcome.changed,
        fix=outcome.fix
        or f"set [features] hooks = true in {request.user_home / '.codex' / 'config.toml'}",
    )


def sign_in_step(
    request: SetupRequest,
    origin: str | None,
    token: str | None,
    ask: Callable[[str, bool], str] | None,
) -> Outcome:
    """Signed in to a sync server already, or with ``origin`` now (``ask``: prompt a person)."""
    from oharness.project.paths import HomeLayout
    from oharness.sync import actions
    from oharness.sync.settings_file import SyncSettingsFile

    layout = HomeLayout(request.home)
    settings = SyncSettingsFile(layout)
    try:
        known, has_token = settings.origin(), bool(settings.token())
    except OHarnessError as exc:
        return Outcome("sign-in", f"cannot be read: {exc.message}", fix="fix or remove the file")
    if not request.install:
        kept = f"kept ({known})" if known and has_token else "not signed in"
        return Outcome("sign-in", f"{kept}; 'oharness logout' forgets the token")
    if origin is None and known and has_token:
        return Outcome("sign-in", f"signed in to {known}")
    if origin is None and ask is not None:
        origin = ask("Sync server URL to sign in to (Enter to skip)", False).strip() or None
    if origin is None:
        return Outcome(
            "sign-in",
            "not signed in: notes stay on this machine "
            "(oharness setup --origin URL --token TOKEN signs in)",
        )
    origin = actions.check_origin(origin)
    if origin == known and has_token and token is None:
        return Outcome("sign-in", f"signed in to {known}")
    if request.dry_run:
        return Outcome("sign-in", f"would sign in to {origin}", changed=True)
    environ_token = request.environ.get("OHARNESS_TOKEN")
    token = token or environ_token or (ask("Token", True) if ask is not None else None)
    if not token:
        return Outcome(
            "sign-in",
            f"not signed in to {origin}: no token",
            fix=f"oharness login --origin {origin} --token TOKEN",
        )
    try:
        signed = actions.login(layout, origin, token, store_token=environ_token != token)
    except OHarnessError as exc:
        return Outcome("sign-in", f"not signed in: {exc.message}", fix="check the URL and token")
    seen = f"signed in to {signed.origin} as {signed.user_id}"
    if signed.needs_unlock:
        return Outcome(
            "sign-in", f"{seen}; {actions.NEEDS_UNLOCK}", fix="oharness sync unlock", changed=True
        )
    return Outcome("sign-in", seen, changed=True)


def extras_step() -> Outcome:
    """Which extras are installed (the agent and daemon steps say what each one lacks)."""
    extras = installed_extras()
    have = ", ".join(name for name, present in extras.items() if present) or "none"
    lacking = ", ".join(name for name, present in extras.items() if not present) or "none"
    return Outcome("extras", f"installed: {have}; not installed: {lacking}")


def environment_of(request: SetupRequest) -> dict[str, str]:
    """The environment the daemon is started with: ours, with OHARNESS_HOME named."""
    return {**os.environ, **request.environ, "OHARNESS_HOME": str(request.home)}
