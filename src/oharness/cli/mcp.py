"""``oharness mcp``: the memory tools for any MCP client (Claude Code, Codex, …) over stdio."""

from __future__ import annotations

from pathlib import Path

import click

from oharness.cli.context import home_from_environment
from oharness.errors import UnavailableError
from oharness.project.identity import find_project
from oharness.tools.workspace import open_workspace


def should_register(start: Path, home: Path) -> bool:
    """Register a project only where it is clearly one (a git checkout), never a bare folder."""
    location = find_project(start, home)
    return location is not None and (location.root / ".git").exists()


@click.command("mcp")
@click.option(
    "--project",
    "project_path",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Use the project at PATH (default: the folder the client starts the server in).",
)
@click.option(
    "--allow-forget",
    is_flag=True,
    help="Let forget run on clients that cannot ask the person (MCP elicitation); their own "
    "tool approval is then the only check.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def mcp(project_path: Path | None, allow_forget: bool, debug: bool) -> None:
    """Serve remember, memory and forget over MCP on standard input and output."""
    try:
        import anyio

        from oharness.bridges.mcp_server import McpOptions, build_server, serve_stdio
    except ImportError as exc:
        raise UnavailableError(
            f"the MCP server needs the mcp extra ({exc.name} is missing): "
            "pip install 'oharness[mcp]'"
        ) from exc
    home = home_from_environment()
    start = project_path if project_path is not None else Path.cwd()
    register = should_register(start, home)
    # Opened before serving so a broken configuration is reported at once, not on a call.
    workspace = open_workspace(start, home, register=register)
    options = McpOptions(workspace.settings.memory.index_chars, allow_forget=allow_forget)
    server = build_server(lambda: workspace.service, options)
    try:
        anyio.run(serve_stdio, server)
    finally:
        workspace.close()
