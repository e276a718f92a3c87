"""``oharness chat``: a thin agent loop in the terminal with the memory plugin on (spec 09.6).

The harness (models, plugin host, sessions) is imported only when the command runs, so every
other command starts without paying for it.
"""

from __future__ import annotations

from pathlib import Path

import click

#: The permission modes of spec 09.3 (``oharness.harness.permission.PERMISSION_MODES``).
PERMISSION_MODE_NAMES = ("default", "acceptEdits", "plan", "bypassPermissions")


@click.command()
@click.option(
    "-p", "--print", "message", default=None, help="Send MESSAGE, print the answer, exit."
)
@click.option("--model", default=None, help="openai:NAME or anthropic:NAME (default: models.main).")
@click.option(
    "--permission-mode",
    type=click.Choice(list(PERMISSION_MODE_NAMES)),
    default=None,
    help="default, acceptEdits, plan or bypassPermissions (default: permissions.defaultMode).",
)
@click.option("--resume", "resume_id", default=None, help="Continue the session with this id.")
@click.option(
    "--project",
    "project_path",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Work on the project at PATH instead of the one found from the current directory.",
)
@click.option("--json", "as_json", is_flag=True, help="With -p: print the result as JSON.")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def chat(
    message: str | None,
    model: str | None,
    permission_mode: str | None,
    resume_id: str | None,
    project_path: Path | None,
    as_json: bool,
    debug: bool,
) -> None:
    """Chat with an agent that remembers (one message with -p, else interactive)."""
    from oharness.cli.chat_run import run_chat

    run_chat(message, model, permission_mode, resume_id, project_path, as_json)
