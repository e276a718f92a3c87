"""``oharness integrate claude-code|codex``: register our MCP server and hooks with that agent."""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path

import click

from oharness.bridges.integrate import AGENTS, apply, plan
from oharness.errors import UnavailableError


def oharness_command() -> str:
    """The absolute path of this ``oharness`` executable (agents start it without our PATH)."""
    sibling = Path(sys.executable).with_name("oharness")
    if sibling.is_file():
        return str(sibling)
    launched = Path(sys.argv[0])
    return str(launched.resolve()) if launched.name == "oharness" else "oharness"


def missing_mcp_extra() -> str | None:
    """Why the ``oharness mcp`` entry would not start here, or None when it would."""
    if find_spec("mcp") is not None:
        return None
    return (
        "the MCP server needs the mcp extra, which is not installed here, so an 'oharness mcp' "
        "entry could not start; install it first: pip install 'oharness[mcp]' (nothing was "
        "written)"
    )


@click.command("integrate")
@click.argument("agent", type=click.Choice(AGENTS))
@click.option("--dry-run", is_flag=True, help="Print the diff only; change nothing.")
@click.option("--uninstall", is_flag=True, help="Remove only our entries.")
@click.option(
    "--user-home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The home folder holding the agent's configuration (default: ~).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def integrate(
    agent: str, dry_run: bool, uninstall: bool, user_home: Path | None, debug: bool
) -> None:
    """Add the oharness MCP server and prompt hooks to AGENT's user configuration."""
    home = user_home if user_home is not None else Path.home()
    missing = None if uninstall else missing_mcp_extra()
    if missing is not None and not dry_run:
        raise UnavailableError(missing)
    changes = plan(agent, home, oharness_command(), install=not uninstall)
    changed = [change for change in changes if change.changed]
    if not changed:
        click.echo(
            f"{agent}: nothing to change ({'not installed' if uninstall else 'already installed'})"
        )
        return
    for change in changed:
        click.echo(change.diff(), nl=False)
    if dry_run:
        click.echo("dry run: nothing written")
        if missing is not None:
            click.echo(f"warning: {missing}", err=True)
        return
    backups = apply(changes)
    for change in changed:
        click.echo(f"updated {change.path}")
    for backup in backups:
        click.echo(f"backup: {backup}")
    if agent == "codex" and not uninstall:
        click.echo("Codex asks you to review and trust new hooks before they run (/hooks).")
