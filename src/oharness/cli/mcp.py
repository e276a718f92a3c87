"""``oharness mcp``: the memory tools for any MCP client (Claude Code, Codex, …) over stdio."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from oharness.cli.context import home_from_environment
from oharness.errors import OHarnessError, UnavailableError
from oharness.memory.workspace import Workspace, open_workspace
from oharness.project.identity import registers_on_use


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
@click.option(
    "--in-process",
    is_flag=True,
    help="Serve the session in this process even when a daemon runs (by default the "
    "daemon serves it, which answers at once: docs/integrations.md).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def mcp(project_path: Path | None, allow_forget: bool, in_process: bool, debug: bool) -> None:
    """Serve remember, memory and forget over MCP on standard input and output."""
    start = project_path if project_path is not None else Path.cwd()
    serve_in_process(start, allow_forget)


def serve_in_process(
    start: Path, allow_forget: bool, streams: tuple[int, int] | None = None
) -> None:
    """Serve one session in this process: on standard input and output, or on ``streams``
    (input and output file descriptors, closed at the end: the relay's, when the daemon
    that served the session went away)."""
    try:
        import anyio

        from oharness.bridges.mcp_server import McpOptions, build_server, serve_stdio
    except ImportError as exc:
        raise UnavailableError(
            f"the MCP server needs the mcp extra ({exc.name} is missing): "
            "pip install 'oharness[mcp]'"
        ) from exc
    home = home_from_environment()
    workspace = LazyWorkspace(start, home, register=registers_on_use(start, home))
    server = build_server(workspace.get, McpOptions(allow_forget=allow_forget))
    # The notes load while the client initialises (an answer to ``initialize`` never waits
    # for them); a broken configuration is reported on stderr at once and by every call.
    threading.Thread(target=workspace.warm, name="oharness-mcp-open", daemon=True).start()
    try:
        anyio.run(serve_stdio, server, streams)
    finally:
        workspace.close()


class LazyWorkspace:
    """The workspace, opened once on first use (a failure is raised again by every use)."""

    def __init__(self, start: Path, home: Path, *, register: bool) -> None:
        self._start, self._home, self._register = start, home, register
        self._workspace: Workspace | None = None
        self._lock = threading.Lock()

    def get(self) -> Workspace:
        """The opened workspace."""
        with self._lock:
            return self._open()

    def _open(self) -> Workspace:
        if self._workspace is None:
            self._workspace = open_workspace(self._start, self._home, register=self._register)
        return self._workspace

    def warm(self) -> None:
        """Open it now, saying on stderr why it cannot be opened (before any call answers)."""
        with self._lock:
            try:
                self._open()
            except OHarnessError as exc:
                click.echo(f"oharness mcp: error: {exc.message}", err=True)

    def close(self) -> None:
        with self._lock:
            if self._workspace is not None:
                self._workspace.close()
