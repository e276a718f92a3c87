"""Entry point: ``oharness``. Errors are one line on stderr and a non-zero exit code."""

from __future__ import annotations

import json
import sys
import traceback

import click

from oharness import __version__
from oharness.cli.chat import chat
from oharness.cli.context import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    flush_warnings,
)
from oharness.cli.demo import demo, demo_sync_server
from oharness.cli.extract import extract
from oharness.cli.integrate import integrate
from oharness.cli.mcp import mcp
from oharness.cli.memory import memory
from oharness.cli.project import project
from oharness.cli.review import merge, review
from oharness.cli.serve import serve
from oharness.cli.sync import login, logout, sync
from oharness.cli.sync_server import sync_server
from oharness.cli.transfer import export_memories, import_memories
from oharness.errors import OHarnessError
from oharness.notes.text import terminal_safe


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oharness")
def cli() -> None:
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


def _one_line(message: str) -> str:
    return terminal_safe(" ".join(message.split()), multiline=False)


def report_error(code: str, message: str, *, as_json: bool) -> None:
    """One line on stderr; with ``--json`` also ``{"error": {"code", "message"}}`` on stdout."""
    line = _one_line(message)
    click.echo(f"oharness: error: {line}", err=True)
    if as_json:
        click.echo(json.dumps({"error": {"code": code, "message": line}}, ensure_ascii=False))


def _usage_message(exc: click.UsageError) -> str:
    message = exc.format_message()
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    return message


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 refused/failed, 2 usage, 3 problems found)."""
    args = sys.argv[1:] if argv is None else argv
    code = _run(args)
    flush_warnings(show=code in (EXIT_OK, EXIT_PROBLEMS))
    return code


def _run(args: list[str]) -> int:
    debug = "--debug" in args
    as_json = "--json" in args
    try:
        # Without standalone mode, click returns the code of an explicit ``ctx.exit(code)``.
        result = cli.main(args=args, prog_name="oharness", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else "oharness --help")
        return EXIT_OK
    except click.UsageError as exc:
        report_error("usage", _usage_message(exc), as_json=as_json)
        return EXIT_USAGE
    except click.ClickException as exc:
        report_error("error", exc.format_message(), as_json=as_json)
        return exc.exit_code or EXIT_FAILED
    except click.Abort:
        report_error("aborted", "aborted; nothing was changed", as_json=as_json)
        return EXIT_FAILED
    except OHarnessError as exc:
        if debug:
            traceback.print_exc()
        report_error(exc.code, exc.message, as_json=as_json)
        return EXIT_FAILED
    except KeyboardInterrupt:
        report_error("interrupted", "interrupted", as_json=as_json)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if debug:
            traceback.print_exc()
        report_error(
            "internal",
            f"unexpected error: {type(exc).__name__}: {exc} (run with --debug for details)",
            as_json=as_json,
        )
        return EXIT_FAILED
    return result if isinstance(result, int) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
