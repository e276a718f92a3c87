"""What every command shares: where the home is, finding the project, output helpers."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from oharness.errors import ProjectError
from oharness.memory.memory_service import PERSON_HINTS
from oharness.memory.workspace import Workspace, open_workspace
from oharness.notes.text import terminal_safe
from oharness.project.identity import find_project, registers_itself
from oharness.project.paths import default_home, secure_home

F = TypeVar("F", bound=Callable[..., Any])

#: Exit codes (docs/memory.md, "Command line"): success; refused or failed; bad usage;
#: finished but found problems (``doctor``); interrupted.
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PROBLEMS = 3
EXIT_INTERRUPTED = 130


def home_from_environment(*, thorough: bool = False) -> Path:
    """``$OHARNESS_HOME``, else ``~/.oharness``, kept private (one notice when it was not;
    ``thorough``: every entry checked, for a long-lived process)."""
    home = default_home(os.environ.get("OHARNESS_HOME"), Path.home())
    try:
        notice = secure_home(home, thorough=thorough)
    except OSError:
        notice = None  # an unusable home: the command that needs it says why
    if notice:
        click.echo(f"notice: {terminal_safe(notice, multiline=False)}", err=True)
    return home


@contextmanager
def one_shot() -> Iterator[None]:
    """Run a command that ends its process (``@one_shot()``) without the cyclic garbage collector.

    A command over a large notes folder makes a million small objects (each note file's stamp,
    the recall cache's keys), none of them in a reference cycle that matters to a process about
    to end, and the collections their allocation sets off cost a tenth of the command at 50,000
    notes. Reference counting frees them as usual. At the end what exists is moved out of the
    collector's view (``gc.freeze``, as the daemon does once its index is loaded), so that
    turning it back on, and the last collection at exit, do not walk it all.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


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


def open_for(
    project_path: Path | None,
    *,
    register: bool,
    explicit: bool = False,
    for_model: bool = False,
    dry_run: bool = False,
    first_use: bool = False,
) -> Workspace:
    """Open the workspace of ``--project`` or the current directory.

    ``register`` (a command that writes) registers the project only where the person chose
    it: a folder named with ``--project``, a git repository, or ``explicit`` (``project
    init``). Any other folder stays unregistered: user notes work, and a project write is
    refused with how to register (docs/memory.md, "Scopes and projects"). Refusals speak
    to the person at the terminal, unless ``for_model`` (chat, where a model calls the tools).
    With ``dry_run`` a project the command would register opens as though registered, and
    nothing is written (what the dry run shows is what the real run does). With
    ``first_use`` (a command that reads notes), signed in to a sync server, a project the
    running daemon does not host yet - a fresh clone, which an agent's session would register -
    is hosted and pulled first, as at an agent's session start, so the first command there
    lists the other machines' notes.
    """
    start = project_path if project_path is not None else Path.cwd()
    if project_path is not None and not project_path.is_dir():
        raise ProjectError(
            f"--project {project_path}: no such folder; give the path of an existing folder"
        )
    home = home_from_environment()
    if register and not explicit and project_path is None:
        location = find_project(start, home)
        register = location is not None and registers_itself(location.root)
    if first_use and not register and _signed_in(home):  # else there is nothing to pull
        from oharness.bridges.first_use import pull_on_first_use

        pull_on_first_use(str(home), str(start), lambda why: say(f"warning: {why}", err=True))
    if dry_run:
        workspace = open_workspace(start, home, register=False, preview=register)
    else:
        workspace = open_workspace(start, home, register=register)
    if not for_model:
        workspace.service.hints = PERSON_HINTS
    context = click.get_current_context(silent=True)
    if context is not None:
        context.call_on_close(workspace.close)
    return workspace


def _signed_in(home: Path) -> bool:
    """Whether this home is signed in to a sync server (an unreadable file reads as not)."""
    from oharness.errors import OHarnessError
    from oharness.project.paths import HomeLayout
    from oharness.sync.settings_file import SyncSettingsFile

    settings = SyncSettingsFile(HomeLayout(home))
    try:
        return bool(settings.origin() and settings.token(os.environ.get("OHARNESS_TOKEN")))
    except OHarnessError:
        return False


def say(text: str, *, err: bool = False) -> None:
    """Print a line for a person; control characters a terminal would act on are escaped."""
    click.echo(terminal_safe(text), err=err)


def plural(count: int, word: str) -> str:
    """``1 note``, ``2 notes``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def emit_json(data: Any) -> None:
    """Print one JSON document."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


_pending_warnings: dict[str, None] = {}


def warn(workspace: Workspace, as_json: bool, *, now: bool = False) -> None:
    """Queue the workspace's warnings for stderr, printed once each when the command succeeds.

    A failing command prints only its one-line error (the error names the cause); ``now``
    prints at once, for commands that run long (chat).
    """
    if as_json:
        return
    for message in workspace.warnings:
        if now:
            click.echo(f"warning: {terminal_safe(message, multiline=False)}", err=True)
        else:
            _pending_warnings[message] = None


def flush_warnings(*, show: bool) -> None:
    """Print (``show``) or drop the queued warnings."""
    messages = list(_pending_warnings)
    _pending_warnings.clear()
    if show:
        for message in messages:
            click.echo(f"warning: {terminal_safe(message, multiline=False)}", err=True)


def format_time(ms: int) -> str:
    """A local date and time for people."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def stdin_is_terminal() -> bool:
    """True when a person is typing at standard input."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
