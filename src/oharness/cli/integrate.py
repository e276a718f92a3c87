"""``oharness integrate claude-code|codex``: ``oharness setup`` for one agent — its MCP server
and prompt hooks, the daemon as a user service, the sign-in — by the same steps."""

from __future__ import annotations

from typing import Any

import click

from oharness.bridges.integrate import AGENTS
from oharness.cli.setup import run_setup, setup_options


@click.command("integrate")
@click.argument("agent", type=click.Choice(AGENTS))
@setup_options
def integrate(agent: str, **options: Any) -> None:
    """Add the oharness MCP server and prompt hooks to AGENT's user configuration, and the
    rest of 'oharness setup'."""
    run_setup([agent], **options)
