"""``oharness setup``: from install to working memory in one command (``integrate AGENT`` runs
the same steps for one agent).

It checks the extras, writes the agents' entries (never one that could not start), installs
the daemon as a user service (``--start`` starts it now), and offers sign-in to a sync server.
``--dry-run`` shows what would change; ``--uninstall`` removes our entries and the service and
keeps notes and sign-in. A second run changes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from oharness.bridges.integrate import AGENTS
from oharness.cli.context import EXIT_FAILED, home_from_environment, stdin_is_terminal
from oharness.cli.installation import oharness_command
from oharness.cli.setup_steps import (
    Outcome,
    SetupRequest,
    agent_step,
    detected_agents,
    extras_step,
    sign_in_step,
)
from oharness.project.paths import default_home

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_PORT = 4318


def setup_options(func: F) -> F:
    """The options ``setup`` and ``integrate`` share."""
    options = [
        click.option("--dry-run", is_flag=True, help="Show what would change; change nothing."),
        click.option("--uninstall", is_flag=True, help="Remove our entries and the service."),
        click.option("--start", is_flag=True, help="Start the daemon now (else at login)."),
        click.option(
            "--port",
            default=None,
            type=click.IntRange(1),
            help=f"The daemon's port (default: the one it used last, else {DEFAULT_PORT}).",
        ),
        click.option("--origin", default=None, help="Sign in to this sync server."),
        click.option("--token", default=None, help="Its token (default: OHARNESS_TOKEN)."),
        click.option(
            "--user-home",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="The home folder holding the agents' configuration (default: ~).",
        ),
        click.option("--debug", is_flag=True, help="Show tracebacks on errors."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command("setup")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    type=click.Choice(AGENTS),
    help="Set up this agent (repeatable; default: the agents found in your home).",
)
@click.option(
    "--ask-agent/--no-ask-agent",
    default=None,
    help="Capture by asking the agent to save at the end of a session (costs its tokens; "
    "asked when left out, on a terminal, with no capture set up).",
)
@setup_options
def setup(agents: tuple[str, ...], ask_agent: bool | None, **options: Any) -> None:
    """Set up memory here: extras, agents, capture, the daemon as a user service, sign-in."""
    run_setup(list(agents) or None, ask_agent=ask_agent, **options)


def run_setup(
    agents: list[str] | None,
    *,
    dry_run: bool,
    uninstall: bool,
    start: bool,
    port: int | None,
    origin: str | None,
    token: str | None,
    user_home: Path | None,
    debug: bool,
    ask_agent: bool | None = None,
) -> None:
    """Run every step, print each outcome, and exit 1 when one needs fixing."""
    from oharness.cli.setup_capture import capture_step
    from oharness.cli.user_service import daemon_step

    request = _request(user_home, install=not uninstall, dry_run=dry_run, start=start, port=port)
    if agents is None:
        agents = list(AGENTS) if uninstall else detected_agents(request.user_home, os.environ)
    outcomes = [extras_step()] if not uninstall else []
    for agent in agents:
        outcomes.append(agent_step(request, agent, lambda diff: click.echo(diff, nl=False)))
    if not agents:
        outcomes.append(
            Outcome("agents", "no Claude Code or Codex found (oharness setup --agent NAME)")
        )
    terminal = stdin_is_terminal() and not dry_run
    outcomes.append(capture_step(request, ask_agent, _confirm if terminal else None))
    outcomes.append(daemon_step(request))
    ask = _prompt if terminal and origin is None else None
    outcomes.append(sign_in_step(request, origin, token, ask))
    _report(outcomes, dry_run=dry_run)


def _request(
    user_home: Path | None, *, install: bool, dry_run: bool, start: bool, port: int | None
) -> SetupRequest:
    people_home = (user_home or Path.home()).absolute()
    config = os.environ.get("XDG_CONFIG_HOME")
    # A chosen home (tests, another account's files) keeps its service beside its agents.
    config_home = Path(config) if config and user_home is None else people_home / ".config"
    home = (
        default_home(os.environ.get("OHARNESS_HOME"), Path.home())
        if dry_run
        else home_from_environment()
    )
    if port is None:  # a run again keeps the daemon where it was (a restart after a crash)
        port = last_port(home) or DEFAULT_PORT
    return SetupRequest(
        home=home.absolute(),
        user_home=people_home,
        config_home=config_home.absolute(),
        executable=oharness_command(),
        install=install,
        dry_run=dry_run,
        start=start,
        port=port,
        environ=dict(os.environ),
    )


def last_port(home: Path) -> int | None:
    """The port of the daemon this home ran last: its ``daemon.json`` (left by a crash), else
    the port setup last started it on (``daemon.json`` goes with a clean stop)."""
    from urllib.parse import urlsplit

    from oharness.cli.user_service import PORT_FILE

    try:
        url = json.loads((home / "daemon.json").read_text("utf-8"))["url"]
        return urlsplit(str(url)).port
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        port = int((home / PORT_FILE).read_text("ascii").strip())
    except (OSError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def _confirm(text: str) -> bool:
    return bool(click.confirm(text, default=False))


def _prompt(text: str, secret: bool) -> str:
    return str(click.prompt(text, default="", show_default=False, hide_input=secret))


def _report(outcomes: list[Outcome], *, dry_run: bool) -> None:
    for outcome in outcomes:
        mark = "FIX " if outcome.fix else ("done" if outcome.changed else "ok  ")
        click.echo(f"{mark} {outcome.area}: {outcome.said}")
        if outcome.fix:
            click.echo(f"     fix: {outcome.fix}")
    problems = [outcome for outcome in outcomes if outcome.fix]
    if dry_run:
        click.echo("dry run: nothing written")
    elif not any(outcome.changed for outcome in outcomes):
        click.echo("nothing changed")
    if problems and not dry_run:
        for outcome in problems:
            click.echo(
                f"oharness: error: {outcome.area}: {outcome.said} (fix: {outcome.fix})", err=True
            )
        raise click.exceptions.Exit(EXIT_FAILED)
