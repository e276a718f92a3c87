"""``oharness demo``: the Memory page on a sample project, in a temporary home (spec 11).

Nothing of the user's is read: not ``$OHARNESS_HOME`` or ``~/.oharness``, not ``OHARNESS_TOKEN``
or a model provider's keys. The sync server child gets a minimal environment of its own.
"""

from __future__ import annotations

import os
import signal
import sys
import webbrowser
from pathlib import Path
from types import FrameType

import click

from oharness.cli.context import EXIT_INTERRUPTED

#: Environment variables the sync server child keeps (what Python and the OS need to start).
_CHILD_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT", "PYTHONPATH")


def _browser_available() -> bool:
    """A graphical browser can plausibly open (never a text browser in this terminal)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open(url: str) -> None:
    try:
        opened = webbrowser.open(url, new=2)
    except Exception:  # a broken browser setup must never stop the demo
        opened = False
    if not opened:
        click.echo("could not open a browser: open the link above yourself")


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same clean stop as Ctrl-C (uvicorn takes over once serving)


def _child_environment() -> dict[str, str]:
    kept = {name: os.environ[name] for name in _CHILD_ENVIRONMENT if name in os.environ}
    return {**kept, "PYTHONUNBUFFERED": "1"}


@click.command()
@click.option(
    "--port",
    default=4319,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port of the page (a free one is used when it is taken).",
)
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option(
    "--no-sync-server",
    is_flag=True,
    help="Start without the demo's sync server (sync then shows its error).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def demo(port: int, no_open: bool, no_sync_server: bool, debug: bool) -> None:
    """The Memory page on a sample project, two devices and a sync server; Ctrl-C ends it."""
    try:
        from oharness.demo.run import DemoOptions, run_demo
    except ImportError as exc:
        raise click.ClickException(
            f"the demo needs the server extra ({exc.name} is missing): "
            "pip install 'oharness[server]'"
        ) from exc
    # Ctrl-C and SIGTERM stop it cleanly from the first moment (even where the shell started
    # it with SIGINT ignored); uvicorn takes both over once the page is served.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # -P: the child's working folder (the temporary home) is never put on sys.path.
    command = (sys.executable, "-P", "-m", "oharness.cli.entry", "demo-sync-server")
    options = DemoOptions(
        cloud_command=command,
        cloud_env=_child_environment(),
        port=port,
        sync_server=not no_sync_server,
        open_browser=None if no_open or not _browser_available() else _open,
        announce=click.echo,
    )
    if not no_open and options.open_browser is None:
        click.echo("no browser here: open the link below yourself")
    try:
        run_demo(options)
    except KeyboardInterrupt:  # stopped while starting: everything is removed already
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None


@click.command("demo-sync-server", hidden=True)
@click.option("--storage", required=True, type=click.Path(file_okay=False, path_type=Path))
def demo_sync_server(storage: Path) -> None:
    """The demo's sync server (started by 'oharness demo'; the secret comes on stdin)."""
    from oharness.demo.cloud import serve_cloud

    serve_cloud(storage, sys.stdin, click.echo)
