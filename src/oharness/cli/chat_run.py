"""The work behind ``oharness chat``: a thin agent loop with the memory plugin on (spec 09.6).

``-p MESSAGE`` sends one message, prints the final answer on stdout and exits; everything else
("recalled N memories", "saved N memories", the session id to resume) goes to stderr, so the
answer can be piped. Without ``-p`` it is interactive: ``/compact``, ``/session``, ``/exit``.
Permission prompts are asked on the terminal; with no terminal on stdin the answer is no.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import click

from oharness.cli.context import emit_json, open_for, stdin_is_terminal, warn
from oharness.harness.harness import Harness, HarnessOptions, create_harness
from oharness.harness.memory_plugin import MemoryPluginOptions
from oharness.harness.model import CancelToken, ModelError
from oharness.harness.permission import (
    ApprovalRequest,
    Approver,
    headless_approver,
    parse_mode,
)
from oharness.harness.plugin_host import RunEvent
from oharness.harness.providers import Models, ProviderEnvironment, configured_models
from oharness.harness.session import Session
from oharness.harness.tool_runner import RunResult

HELP_TEXT = "Commands: /compact (summarise older turns), /session (show the id), /exit (or Ctrl-D)"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def provider_environment() -> ProviderEnvironment:
    """The providers' usual environment variables."""
    return ProviderEnvironment(
        openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        openai_api_key=os.environ.get("OPENAI_API_KEY") or None,
        anthropic_api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
        anthropic_base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
    )


def terminal_approver(request: ApprovalRequest) -> bool:
    """Ask on the terminal whether a tool may run."""
    arguments = json.dumps(request.arguments, ensure_ascii=False, indent=2)
    if len(arguments) > 2000:
        arguments = arguments[:2000] + "\n…"
    click.echo(f"\n{request.tool} ({request.reason}) wants to run with:\n{arguments}", err=True)
    return click.confirm(f"Allow {request.tool}?", default=False, err=True)


def event_printer(*, verbose: bool) -> Callable[[RunEvent], None]:
    """Show what a run does on stderr: recall and saves always, tool calls when ``verbose``."""

    def show(event: RunEvent) -> None:
        data = event.data
        if event.kind == "memory.extracted":  # what a pass saved after the previous run
            click.echo(str(data.get("text", "")), err=True)
        elif event.kind == "memory.recalled":
            click.echo(f"recalled {_plural(int(data.get('count', 0)), 'memory')}", err=True)
        elif event.kind == "memory.saved":
            click.echo(f"saved {_plural(int(data.get('count', 0)), 'memory')}", err=True)
        elif event.kind == "compaction":
            replaced = int(data.get("replaced", 0))
            click.echo(f"compacted {_plural(replaced, 'older message')} into a summary", err=True)
        elif verbose and event.kind == "tool.call":
            click.echo(f"· {data.get('name')}", err=True)
        elif event.kind == "tool.result" and data.get("permission") in ("deny", "not-approved"):
            click.echo(f"{data.get('name')} was refused ({data.get('permission')})", err=True)
        elif event.kind == "tool.result" and data.get("errorCode") == "secret":
            click.echo(
                f"{data.get('name')} was refused: it looked like a credential (nothing saved)",
                err=True,
            )

    return show


def _close_models(models: Models) -> None:
    for model in (models.main, models.small):
        close = getattr(model, "close", None)
        if callable(close):
            close()


def _send(harness: Harness, session: Session, text: str, *, verbose: bool) -> RunResult | None:
    cancel = CancelToken()
    try:
        return harness.send(session, text, on_event=event_printer(verbose=verbose), cancel=cancel)
    except KeyboardInterrupt:
        cancel.cancel()
        click.echo("(interrupted)", err=True)
        return None


def _interactive(harness: Harness, session: Session) -> None:
    click.echo(f"oharness chat · session {session.id} · {harness.models.main.name}", err=True)
    click.echo(HELP_TEXT, err=True)
    while True:
        try:
            line = input("> ")
        except EOFError:
            click.echo("", err=True)
            return
        except KeyboardInterrupt:
            click.echo("", err=True)
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/help":
            click.echo(HELP_TEXT, err=True)
            continue
        if text == "/session":
            click.echo(f"session {session.id}", err=True)
            continue
        try:
            if text == "/compact":
                done = harness.compact(session, on_event=event_printer(verbose=True))
                if done is None:
                    click.echo("nothing to compact yet", err=True)
                continue
            result = _send(harness, session, line, verbose=True)
        except ModelError as exc:
            click.echo(f"error: {exc.message}", err=True)
            continue
        if result is not None:
            click.echo(result.text)
            if result.outcome == "max_steps":
                click.echo("(stopped after too many tool rounds)", err=True)


def run_chat(
    message: str | None,
    model: str | None,
    permission_mode: str | None,
    resume_id: str | None,
    project_path: Path | None,
    as_json: bool,
) -> None:
    """The body of ``oharness chat`` (imported only when the command runs)."""
    # Starting an agent in a folder chooses it as the project (spec 01.4: first use).
    workspace = open_for(project_path, register=True, explicit=True, for_model=True)
    warn(workspace, as_json, now=True)
    models = configured_models(
        workspace.settings.models, provider_environment(), main_override=model
    )
    approver: Approver = terminal_approver if stdin_is_terminal() else headless_approver
    options = HarnessOptions(
        workspace=workspace,
        models=models,
        permission_mode=parse_mode(permission_mode) if permission_mode else None,
        approver=approver,
        memory=MemoryPluginOptions(sync_token=os.environ.get("OHARNESS_TOKEN") or None),
    )
    try:
        harness = create_harness(options)
        try:
            _run(harness, message, resume_id, as_json)
        finally:
            harness.close()
    finally:
        _close_models(models)


def _run(harness: Harness, message: str | None, resume_id: str | None, as_json: bool) -> None:
    session = harness.resume_session(resume_id) if resume_id else harness.new_session()
    if message is None:
        _interactive(harness, session)
        if session.path is not None:
            click.echo(f"resume with: oharness chat --resume {session.id}", err=True)
        return
    result = harness.send(session, message, on_event=event_printer(verbose=False))
    if as_json:
        emit_json(
            {
                "sessionId": session.id,
                "text": result.text,
                "outcome": result.outcome,
                "recalled": [dict(e.data) for e in result.events_of("memory.recalled")],
                "saved": [dict(e.data) for e in result.events_of("memory.saved")],
                "extracted": [dict(e.data) for e in result.events_of("memory.extracted")],
                "tools": [
                    {"name": t.call.name, "permission": t.permission, "result": t.result}
                    for t in result.tools
                ],
            }
        )
    else:
        click.echo(result.text)
    if session.path is not None:
        click.echo(
            f"session {session.id} (resume with: oharness chat --resume {session.id})", err=True
        )
    else:
        click.echo(f"session {session.id} was not saved (see the warning above)", err=True)
    if result.outcome == "max_steps":
        click.echo("stopped after too many tool rounds", err=True)
        raise click.exceptions.Exit(1)
