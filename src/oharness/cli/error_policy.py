"""Running a click command under the CLI's error policy: one line on stderr, an exit code.

Shared by the whole CLI (:mod:`oharness.cli.main`) and by commands the console script runs
without loading the rest of it (``oharness mcp``: a client waits for its start-up).
"""

from __future__ import annotations

import json
import traceback

import click

from oharness.cli.context import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    flush_warnings,
)
from oharness.errors import OHarnessError
from oharness.notes.text import terminal_safe


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


def run_command(command: click.Command, args: list[str], prog_name: str) -> int:
    """Run a click command with the CLI's error policy; returns the exit code (0 ok, 1
    refused/failed, 2 usage, 3 problems found)."""
    code = _run(command, args, prog_name)
    flush_warnings(show=code in (EXIT_OK, EXIT_PROBLEMS))
    return code


def _run(command: click.Command, args: list[str], prog_name: str) -> int:
    debug = "--debug" in args
    as_json = "--json" in args
    try:
        # Without standalone mode, click returns the code of an explicit ``ctx.exit(code)``.
        result = command.main(args=args, prog_name=prog_name, standalone_mode=False)
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
