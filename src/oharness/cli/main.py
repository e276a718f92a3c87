"""Entry point: ``oharness``. Errors are one line on stderr and a non-zero exit code."""

from __future__ import annotations

import sys

import click

from oharness import __version__
from oharness.cli.chat import chat
from oharness.cli.demo import demo, demo_sync_server
from oharness.cli.doctor import doctor
from oharness.cli.extract import extract
from oharness.cli.integrate import integrate
from oharness.cli.mcp import mcp
from oharness.cli.memory import memory
from oharness.cli.project import project
from oharness.cli.review import merge, review
from oharness.cli.run import run_command
from oharness.cli.serve import serve
from oharness.cli.sync import login, logout, sync
from oharness.cli.sync_server import sync_server
from oharness.cli.transfer import export_memories, import_memories


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oharness")
@click.option(
    "--debug",
    is_flag=True,
    help="Show tracebacks on errors (also accepted after the command).",
)
def cli(debug: bool) -> None:
    """oharness: durable memory for AI agents."""


memory.add_command(review)
memory.add_command(merge)
memory.add_command(extract)
memory.add_command(import_memories)
memory.add_command(export_memories)
cli.add_command(memory)
cli.add_command(project)
cli.add_command(login)
cli.add_command(logout)
cli.add_command(sync)
cli.add_command(sync_server)
cli.add_command(chat)
cli.add_command(serve)
cli.add_command(demo)
cli.add_command(demo_sync_server)
cli.add_command(mcp)
cli.add_command(integrate)
cli.add_command(doctor)


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
