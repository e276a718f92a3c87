"""Entry point: ``oharness``. Errors are one line on stderr and a non-zero exit code."""

from __future__ import annotations

import sys

import click

from oharness import __version__
from oharness.cli.error_policy import run_command
from oharness.cli.lazy import LazyGroup

#: Every command, imported only when it runs (or when ``--help`` lists them).
COMMANDS = {
    "memory": "oharness.cli.memory:memory",
    "project": "oharness.cli.project:project",
    "login": "oharness.cli.sync:login",
    "logout": "oharness.cli.sync:logout",
    "sync": "oharness.cli.sync:sync",
    "sync-server": "oharness.cli.sync_server:sync_server",
    "chat": "oharness.cli.chat:chat",
    "serve": "oharness.cli.serve:serve",
    "demo": "oharness.cli.demo:demo",
    "demo-sync-server": "oharness.cli.demo:demo_sync_server",
    "mcp": "oharness.cli.mcp:mcp",
    "integrate": "oharness.cli.integrate:integrate",
    "doctor": "oharness.cli.doctor:doctor",
    "setup": "oharness.cli.setup:setup",
}


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="oharness")
@click.option(
    "--debug",
    is_flag=True,
    help="Show tracebacks on errors (also accepted after the command).",
)
def cli(debug: bool) -> None:
    """oharness: durable memory for AI agents."""


@cli.command(
    "hook",
    context_settings={"ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    """Agent hooks: 'hook claude-code user-prompt-submit|session-start' (JSON on stdin)."""
    from oharness.cli.hook import run_hook

    code = run_hook(list(args))
    if code:
        raise click.exceptions.Exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 refused/failed, 2 usage, 3 problems found)."""
    args = sys.argv[1:] if argv is None else argv
    return run_command(cli, args, "oharness")


if __name__ == "__main__":
    sys.exit(main())
