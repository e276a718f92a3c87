"""``oharness serve``: the local daemon (spec 10)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from oharness.cli.context import home_from_environment
from oharness.memory.workspace import wall_clock_ms
from oharness.project.paths import default_home

if TYPE_CHECKING:
    from oharness.daemon.state import McpSessions
    from oharness.harness.model import ChatModel
    from oharness.memory.workspace import Workspace


def _small_model(home: Path, start: Path) -> ChatModel | None:
    """``models.small`` of the default project's settings, with the providers' environment."""
    from oharness.project.config import load_settings
    from oharness.project.identity import find_project
    from oharness.project.paths import HomeLayout

    location = find_project(start, home)
    trusted = location.root if location and location.refused is None else None
    settings = load_settings(HomeLayout(home).config_file, trusted)
    if not settings.models.small:
        return None
    from oharness.cli.chat_run import provider_environment
    from oharness.harness.providers import create_model, parse_model_spec

    spec = parse_model_spec(settings.models.small, source="models.small")
    return create_model(spec, provider_environment())


def _registers(start: Path, home: Path, *, chosen: bool) -> bool:
    """Whether the daemon registers its start folder's project: when the person named it
    (``--project``) or it is a git repository, as a command that writes would; never a
    plain folder it merely started in (spec 01.8)."""
    from oharness.project.identity import find_project, registers_itself

    location = find_project(start, home)
    if location is None or location.refused is not None:
        return False
    return chosen or location.registered or registers_itself(location.root)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--project",
    "project_path",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The default workspace (default: the project of the current directory).",
)
@click.option(
    "--print-service",
    type=click.Choice(["systemd", "launchd"]),
    default=None,
    help="Print a user service definition that starts the daemon at login, and exit.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def serve(
    host: str, port: int, project_path: Path | None, print_service: str | None, debug: bool
) -> None:
    """Run the local daemon: memory tasks, recall, events and background sync."""
    try:
        from oharness.cli.capture_run import WorkspaceCapturer
        from oharness.daemon.serve import DaemonServer, is_loopback
        from oharness.daemon.service_file import service_definition
        from oharness.daemon.state import DaemonOptions
        from oharness.daemon.tasks.dream import ReviewDreamer
    except ImportError as exc:
        raise click.ClickException(
            f"the daemon needs the server extra ({exc.name} is missing): "
            "pip install 'oharness[server]'"
        ) from exc

    start = (project_path or Path.cwd()).resolve()
    if print_service is not None:  # printing installs nothing: the home is not even created
        home = default_home(os.environ.get("OHARNESS_HOME"), Path.home())
        executable = shutil.which("oharness") or sys.argv[0]
        click.echo(
            service_definition(
                print_service,
                executable=os.path.abspath(executable),
                home=home.resolve(),
                project=start,
                host=host,
                port=port,
            ),
            nl=False,
        )
        return
    home = home_from_environment(thorough=True)  # long-lived: every entry checked
    if not is_loopback(host):
        click.echo(
            f"WARNING: listening on {host}, not loopback: anyone who can reach this address "
            "and has the token can read and change your notes. Prefer 127.0.0.1.",
            err=True,
        )
    token = os.environ.get("OHARNESS_TOKEN")
    check = _check_seconds(os.environ.get(CHECK_VARIABLE))
    options = DaemonOptions(
        home=home,
        start=start,
        register_start=_registers(start, home, chosen=project_path is not None),
        bind_host=host,
        sync_token=token,
        small_model=_small_model(home, start),
        dreamer=ReviewDreamer(clock=wall_clock_ms, token=token),
        capturer=WorkspaceCapturer(),
        mcp_sessions=_mcp_sessions(),
    )
    if check is not None:
        options.sync_check_ms = int(check * 1000)
        options.follow_seconds = min(check, options.follow_seconds)
    DaemonServer(options, port=port, announce=lambda line: click.echo(line, err=True)).run()


def _mcp_sessions() -> McpSessions | None:
    """What serves agents' MCP sessions in the daemon, when the ``mcp`` extra is installed
    (imported beside the start, so neither the start nor the first session waits for it)."""
    if importlib.util.find_spec("mcp") is None:
        return None
    threading.Thread(
        target=importlib.import_module,
        args=("oharness.bridges.mcp_server",),
        name="oharness-mcp-import",
        daemon=True,
    ).start()

    async def serve(
        workspace: Callable[[], Workspace],
        allow_forget: bool,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        from oharness.bridges.mcp_server import serve_connection

        await serve_connection(workspace, allow_forget, reader, writer)

    return serve


#: Seconds between background sync's checks of each folder (default 20; tests shorten it).
CHECK_VARIABLE = "OHARNESS_DAEMON_SYNC_SECONDS"


def _check_seconds(value: str | None) -> float | None:
    """``OHARNESS_DAEMON_SYNC_SECONDS`` as a number of seconds (None when unset)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0.5 <= seconds <= 3600:
        raise click.ClickException(
            f"{CHECK_VARIABLE}={value!r} is not a number of seconds from 0.5 to 3600: fix or "
            "unset it"
        )
    return seconds
