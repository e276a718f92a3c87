"""``oharness project init|show|reset-id``."""

from __future__ import annotations

from pathlib import Path

import click

from oharness.cli.context import common_options, emit_json, home_from_environment, open_for, warn
from oharness.errors import ProjectError
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.notes.ids import random_hex
from oharness.project.identity import find_project, reset_project_id


@click.group()
def project() -> None:
    """Register and inspect the project of the current directory."""


def _describe(workspace: Workspace) -> dict[str, object]:
    info = workspace.project
    service = workspace.service
    counts = {scope: len(service.store(scope).notes()) for scope in service.available_scopes()}
    return {
        "root": str(info.root) if info else None,
        "registered": bool(info and info.registered),
        "id": info.identity.id if info and info.identity else None,
        "memoryDir": str(info.memory_dir) if info else None,
        "refused": info.refused if info else None,
        "home": str(workspace.home.home),
        "userMemoryDir": str(workspace.home.user_memory_dir) if workspace.user_available else None,
        "notes": counts,
    }


def _print(data: dict[str, object]) -> None:
    notes = data["notes"]
    assert isinstance(notes, dict)
    click.echo(f"project:   {data['root'] or '(none)'}")
    if data["refused"]:
        click.echo(f"refused:   {data['refused']}")
    click.echo(f"id:        {data['id'] or '(not registered)'}")
    held = "not read: refused" if data["refused"] else f"{notes.get('project', 0)} notes"
    click.echo(f"notes dir: {data['memoryDir'] or '-'} ({held})")
    click.echo(
        f"user dir:  {data['userMemoryDir'] or 'unavailable'} ({notes.get('user', 0)} notes)"
    )
    click.echo(f"home:      {data['home']}")


@project.command()
@common_options
def init(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Register the project (creates .oharness/project.json, MEMORY/, ARTIFACTS/)."""
    start = project_path if project_path is not None else Path.cwd()
    location = find_project(start, home_from_environment()) if start.is_dir() else None
    was_registered = location is not None and location.registered
    workspace = open_for(project_path, register=True, explicit=True)
    warn(workspace, as_json)
    info = workspace.project
    if info is not None and info.refused is not None:
        raise ProjectError(f"cannot register {info.root}: {info.refused}")
    if info is None or not info.registered:
        raise ProjectError(
            "this folder is inside OHARNESS_HOME, which is never a project; run 'oharness "
            "project init' in the project's own folder"
        )
    data = _describe(workspace)
    if as_json:
        emit_json(data)
    else:
        verb = "Already registered:" if was_registered else "Registered"
        click.echo(f"{verb} project {data['id']} at {data['root']}")
        _print(data)


@project.command()
@common_options
def show(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Show the project found from here, its id and notes folders (changes nothing)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    data = _describe(workspace)
    if as_json:
        emit_json(data)
    else:
        _print(data)


@project.command("reset-id")
@common_options
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def reset_id(project_path: Path | None, as_json: bool, debug: bool, yes: bool) -> None:
    """Give this project a new id on purpose (e.g. a copied folder that should stand alone)."""
    workspace = open_for(project_path, register=False)
    if workspace.project is None or not workspace.project.registered:
        raise ProjectError("no registered project here; run 'oharness project init' first")
    if not yes:
        click.confirm(
            "A new id detaches this project from its sync state, usage counts and sessions. "
            "Continue?",
            abort=True,
        )
    identity = reset_project_id(workspace.project.root, hex_source=random_hex, clock=wall_clock_ms)
    if as_json:
        emit_json({"root": str(workspace.project.root), "id": identity.id})
    else:
        click.echo(f"New project id {identity.id}")
