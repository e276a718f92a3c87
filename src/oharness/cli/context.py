"""What every command shares: where the home is, finding the project, output helpers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from oharness.project.paths import default_home
from oharness.tools.workspace import Workspace, open_workspace

F = TypeVar("F", bound=Callable[..., Any])


def home_from_environment() -> Path:
    """``$OHARNESS_HOME``, else ``~/.oharness``."""
    return default_home(os.environ.get("OHARNESS_HOME"), Path.home())


def common_options(func: F) -> F:
    """``--project``, ``--json`` and ``--debug`` on every command that touches notes."""
    func = click.option(
        "--project",
        "project_path",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Work on the project at PATH instead of the one found from the current directory.",
    )(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)
    func = click.option("--debug", is_flag=True, help="Show tracebacks on errors.")(func)
    return func


def open_for(project_path: Path | None, *, register: bool) -> Workspace:
    """Open the workspace of ``--project`` or the current directory."""
    start = project_path if project_path is not None else Path.cwd()
    if project_path is not None and not project_path.is_dir():
        raise click.ClickException(f"--project {project_path}: no such folder")
    workspace = open_workspace(start, home_from_environment(), register=register)
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(workspace.close)
    return workspace


def emit_json(data: Any) -> None:
    """Print one JSON document."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def warn(workspace: Workspace, as_json: bool) -> None:
    """Print the workspace's warnings to stderr (once each)."""
    if as_json:
        return
    for message in workspace.warnings:
        click.echo(f"warning: {message}", err=True)


def format_time(ms: int) -> str:
    """A local date and time for people."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def stdin_is_terminal() -> bool:
    """True when a person is typing at standard input."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
