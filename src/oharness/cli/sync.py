"""``oharness login|logout`` and ``oharness sync …`` (spec 07, 12)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from oharness.cli.context import (
    common_options,
    emit_json,
    format_time,
    home_from_environment,
    open_for,
    stdin_is_terminal,
    warn,
)
from oharness.errors import OHarnessError, ValidationError
from oharness.memory.workspace import Workspace, wall_clock_ms
from oharness.notes.format import Note, parse_note_bytes
from oharness.project.paths import HomeLayout
from oharness.types import parse_scope

if TYPE_CHECKING:  # the HTTP client stack loads only for commands that talk to the server
    from oharness.sync.sync_service import PassReport, SyncService, SyncTarget


def _sync_of(workspace: Workspace) -> tuple[SyncService, list[SyncTarget]]:
    from oharness.sync.actions import workspace_sync

    return workspace_sync(
        workspace, clock=wall_clock_ms, environ_token=os.environ.get("OHARNESS_TOKEN")
    )


def _home() -> HomeLayout:
    return HomeLayout(home_from_environment())


@click.command()
@click.option("--origin", required=True, help="The sync server's URL, e.g. https://sync.example.")
@click.option("--token", default=None, help="Access token (default: OHARNESS_TOKEN, or a prompt).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--debug", is_flag=True)
def login(origin: str, token: str | None, as_json: bool, debug: bool) -> None:
    """Sign in to a sync server; the token is checked, then kept in credentials.json (0600)."""
    from oharness.sync import actions

    origin = actions.check_origin(origin)
    environ_token = os.environ.get("OHARNESS_TOKEN")
    token = token or environ_token
    if not token:
        if not stdin_is_terminal():
            raise ValidationError(
                "no token: pass --token, set OHARNESS_TOKEN, or run on a terminal to be asked"
            )
        token = click.prompt("Token", hide_input=True)
    signed = actions.login(_home(), origin, token, store_token=environ_token != token)
    if as_json:
        emit_json(signed.to_json())
    else:
        click.echo(f"Signed in to {signed.origin} as {signed.user_id} ({signed.plan} plan)")
        if not signed.sync_enabled:
            click.echo("Cloud sync is switched off; 'oharness sync on' switches it back on.")
        if signed.needs_unlock:
            click.echo(actions.NEEDS_UNLOCK[0].upper() + actions.NEEDS_UNLOCK[1:] + ".")


@click.command()
def logout() -> None:
    """Forget the stored token (notes, bindings and the origin stay)."""
    from oharness.sync.actions import logout as sign_out

    removed = sign_out(_home())
    click.echo("Signed out." if removed else "No stored token; nothing to do.")


@click.group()
def sync() -> None:
    """Cloud sync of project and user notes: status, sync now, the switch, conflicts,
    end-to-end encryption."""


def _print_status(data: dict[str, Any]) -> None:
    from oharness.sync.actions import scope_error

    click.echo(f"cloud sync: {'on' if data['enabled'] else 'off'}")
    if data.get("endToEnd") == "on":
        click.echo("end-to-end encrypted: this machine holds the key; the server reads no note")
    elif data.get("endToEnd") == "pending":
        click.echo(
            "end-to-end encryption: turning it on did not finish; 'oharness sync encrypt' "
            "completes it"
        )
    for scope in data["scopes"]:
        when = format_time(scope["lastSyncedAt"]) if scope.get("lastSyncedAt") else "never"
        click.echo(f"{scope['scope']}: last synced {when}")
        if scope.get("account"):
            click.echo(f"  account {scope['account']} at {scope['origin']}")
        if scope.get("paused"):
            click.echo(f"  paused: {scope['paused']}")
        if (error := scope_error(scope)) is not None:
            click.echo(f"  error: {error['message']}")
        pull = scope.get("lastPull") or {}
        if any(pull.values()):
            click.echo(
                f"  last pull: {pull.get('added', 0)} added, {pull.get('modified', 0)} modified,"
                f" {pull.get('removed', 0)} removed"
            )
        for note_id in scope.get("conflicts", []):
            click.echo(f"  conflict: {note_id} ('oharness sync resolve {note_id} --keep …')")
        for item in scope.get("noteErrors", []):
            click.echo(f"  not synced: {_note_label(item)}: {item['message']}")
        listed = {item.get("file") for item in scope.get("noteErrors", [])}
        for name in scope.get("unsyncable", []):
            if name not in listed:
                click.echo(f"  not synced (unreadable or over the limit): {name}")
        if scope.get("planLimits"):
            limits = scope["planLimits"]
            click.echo(f"  free plan: at most {limits.get('maxNotes')} notes")
    _print_projects(data.get("projects", []))


def _print_projects(projects: list[dict[str, Any]]) -> None:
    """When each project this machine used last synced (the daemon syncs every one)."""
    if not projects:
        return
    click.echo("projects used on this machine (the daemon syncs each):")
    for project in projects:
        when = format_time(project["lastSyncedAt"]) if project.get("lastSyncedAt") else "never"
        line = f"  {project['root']}: last synced {when}"
        if project.get("conflicts"):
            line += f", {len(project['conflicts'])} conflicts waiting ('oharness sync conflicts')"
        if project.get("lastError"):
            line += f", error: {project['lastError'].get('message')}"
        click.echo(line)


@sync.command()
@common_options
def status(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Show sync status per scope (changes nothing, sends nothing)."""
    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    from oharness.sync.actions import sync_status

    data = sync_status(*_sync_of(workspace))
    if as_json:
        emit_json(data)
    else:
        _print_status(data)


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None
    state: dict[str, Any] = {}

    def show(stage: str, done: int, total: int) -> None:
        if total < 50:
            return
        bar = state.get(stage)
        if bar is None:
            bar = click.progressbar(length=total, label=stage, file=sys.stderr)
            bar.__enter__()
            state[stage] = bar
        bar.update(done - bar.pos)

    return show


def _note_label(item: dict[str, Any]) -> str:
    return str(item.get("file") or item.get("id"))


def _describe(report: PassReport) -> list[str]:
    """What a pass did, for stdout (its failures go to stderr: :func:`_failures`)."""
    label = report.target.scope
    if report.paused:
        return [f"{label}: paused: {report.paused}"]
    if report.error:
        return []
    result = report.result
    assert result is not None
    if result.skipped:
        return [f"{label}: skipped: {result.skipped}"]
    lines = [
        f"{label}: pushed {len(result.pushed)}, pulled {len(result.pulled)}, merged "
        f"{len(result.merged)}, conflicts {len(result.conflicts)}"
        + (
            f", removed {result.removed} (forgotten elsewhere; a backup is kept)"
            if result.removed
            else ""
        )
        + (f", {len(report.note_errors())} not synced" if report.note_errors() else "")
    ]
    if result.reset:
        lines.append(
            f"  the sync storage was reset or restored: {label} notes were re-synced (nothing "
            "was deleted here)"
        )
    lines += [f"  conflict: {note_id}" for note_id in result.conflicts]
    return lines


def _failures(report: PassReport) -> list[str]:
    """One line for a failed pass, and one per note that did not sync."""
    label = report.target.scope
    if report.error:
        return [f"oharness: error: {report.error['message']}"]
    return [
        f"oharness: {label}: not synced: {_note_label(item)}: {item['message']}"
        for item in report.note_errors()
    ]


@sync.command()
@common_options
def now(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """Sync now: push, pull, merge; conflicts wait for you."""
    from oharness.sync.actions import sync_now

    workspace = open_for(project_path, register=True)  # pulling notes writes them
    warn(workspace, as_json)
    progress = None if as_json else _progress_printer()
    outcome = sync_now(*_sync_of(workspace), progress=progress)
    if as_json:
        emit_json(outcome.status)
    else:
        for report in outcome.reports:
            for line in _describe(report):
                click.echo(line)
    for report in outcome.reports:
        for line in _failures(report):
            click.echo(line, err=True)
    # A scope paused for any reason but 'sync off' did not sync: a script must see it.
    if outcome.failed or any(r.paused and not r.switched_off for r in outcome.reports):
        raise click.exceptions.Exit(1)  # every failure and pause was printed above, once


@sync.command("on")
def switch_on() -> None:
    """Switch cloud sync on (both scopes)."""
    from oharness.sync.actions import set_sync_enabled

    set_sync_enabled(_home(), True)
    click.echo("Cloud sync is on.")


@sync.command("off")
def switch_off() -> None:
    """Switch cloud sync off (both scopes; nothing in the cloud is deleted)."""
    from oharness.sync.actions import set_sync_enabled

    set_sync_enabled(_home(), False)
    click.echo(
        "Cloud sync is off: nothing is sent or fetched until 'oharness sync on'. Copies the "
        "cloud already holds are not deleted."
    )


@sync.command()
@common_options
def conflicts(project_path: Path | None, as_json: bool, debug: bool) -> None:
    """List open conflicts with this machine's and the cloud's versions."""
    from oharness.sync.actions import list_conflicts

    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    found = list_conflicts(*_sync_of(workspace))
    if as_json:
        emit_json({"conflicts": found})
        return
    if not found:
        click.echo("No conflicts.")
    for item in found:
        click.echo(f"{item['id']} ({item['scope']}): {item['reason']}")
        for line in _conflict_lines(item):
            click.echo(line)


def _parsed(text: str | None) -> Note | None:
    if text is None:
        return None
    try:
        return parse_note_bytes(text.encode("utf-8", errors="surrogatepass"))
    except OHarnessError:
        return None


def _conflict_lines(item: dict[str, Any]) -> list[str]:
    """Each side's summary, type, tags and first body lines, marking what changed since the
    last synced version."""
    base = _parsed(item.get("base"))
    lines = []
    for side, title in (("local", "this machine"), ("cloud", "the cloud")):
        text = item.get(side)
        note = _parsed(text)
        if note is None:
            gone = "(deleted: --keep local deletes it everywhere)" if side == "local" else ""
            gone = gone or "(deleted)"
            lines.append(f"  {title}: " + (gone if text is None else "(unreadable)"))
            continue
        lines.append(f"  {title}:")
        for name, value, before in (
            ("summary", note.summary, base.summary if base else None),
            ("type", note.type or "(none)", (base.type or "(none)") if base else None),
            ("tags", ", ".join(note.tags) or "(none)", ", ".join(base.tags) or "(none)")
            if base
            else ("tags", ", ".join(note.tags) or "(none)", None),
        ):
            mark = " (changed)" if before is not None and before != value else ""
            lines.append(f"    {name}: {value}{mark}")
        changed = base is not None and base.body != note.body
        first = note.body.strip().splitlines()[:3]
        lines.append(f"    body{' (changed)' if changed else ''}: " + " / ".join(first))
    return lines


@sync.command()
@common_options
@click.argument("note_id")
@click.option("--keep", type=click.Choice(["local", "cloud", "both"]), default=None)
@click.option(
    "--text-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A note (or just a body) merged by hand.",
)
@click.option("--scope", type=click.Choice(["project", "user"]), default=None)
def resolve(
    project_path: Path | None,
    as_json: bool,
    debug: bool,
    note_id: str,
    keep: str | None,
    text_file: Path | None,
    scope: str | None,
) -> None:
    """Resolve a conflict; the next sync uploads the choice (set-aside versions are backed up)."""
    if (keep is None) == (text_file is None):
        raise click.UsageError("give exactly one of --keep local|cloud|both and --text-file F")
    from oharness.sync import actions

    workspace = open_for(project_path, register=False)
    warn(workspace, as_json)
    service, targets = _sync_of(workspace)
    chosen = actions.conflict_target(
        service, targets, note_id, scope, hint="'oharness sync conflicts' lists them"
    )
    result = actions.resolve_conflict(
        service,
        chosen,
        workspace.service.backups(),
        note_id,
        keep=keep,  # type: ignore[arg-type]  # click.Choice gives one of the three
        text=text_file.read_text(encoding="utf-8") if text_file else None,
        clock=wall_clock_ms,
        max_note_bytes=workspace.settings.memory.max_note_bytes,
    )
    report = service.run(chosen)
    data = actions.resolution_json(result)
    data["synced"] = report.result is not None and report.error is None
    if as_json:
        emit_json(data)
        return
    click.echo(
        f"Resolved {note_id}: kept {result.keep}"
        + (f"; cloud copy is {result.new_id}" if result.new_id else "")
    )
    for line in _describe(report):
        click.echo(line)
    for line in _failures(report):
        click.echo(line, err=True)


@sync.command()
@common_options
@click.argument("scope", type=click.Choice(["project", "user"]))
@click.option("--confirm", "confirm_key", default=None, help="Type the scope key to confirm.")
def unbind(
    project_path: Path | None, as_json: bool, debug: bool, scope: str, confirm_key: str | None
) -> None:
    """Unbind a scope from its account and origin (deliberate: type the scope key)."""
    workspace = open_for(project_path, register=False)
    key = workspace.service.scope_key(parse_scope(scope))
    if confirm_key is None:
        if not stdin_is_terminal():
            raise ValidationError(f"to unbind, pass --confirm {key}")
        confirm_key = click.prompt(f"Type the scope key to unbind ({key})")
    if confirm_key != key:
        raise ValidationError(f"the typed key does not match {key}; nothing changed")
    from oharness.sync.actions import unbind_scope

    removed = unbind_scope(workspace.home, key)
    click.echo(f"Unbound {key}." if removed else f"{key} was not bound; nothing changed.")


# ---- end-to-end encryption ---------------------------------------------------------------


def _signed_in_client() -> Any:
    from oharness.sync.encryption import account_client

    return account_client(_home(), os.environ.get("OHARNESS_TOKEN"))


def _read_secret(label: str, from_stdin: bool, *, confirm: bool) -> str:
    """A passphrase from the first line of stdin (scripts) or typed, hidden, on a terminal."""
    if from_stdin:
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise ValidationError(f"no {label} on stdin: write it as the first line")
        return line
    if not stdin_is_terminal():
        raise ValidationError(f"no terminal to type the {label} on: pass --passphrase-stdin")
    typed: str = click.prompt(label.capitalize(), hide_input=True, confirmation_prompt=confirm)
    return typed


@sync.command()
@click.option("--passphrase-stdin", is_flag=True, help="Read the passphrase from stdin.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--off", is_flag=True, help="Turn it off: every note is uploaded in clear.")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def encrypt(passphrase_stdin: bool, yes: bool, off: bool, debug: bool) -> None:
    """Turn on end-to-end encryption for the signed-in account and move its cloud notes."""
    from oharness.sync.encryption import LOSS_WARNING, turn_on

    if off:
        _turn_off(yes)
        return
    click.echo(LOSS_WARNING)
    if not yes:
        if not stdin_is_terminal():
            raise ValidationError("no terminal to confirm on: pass --yes")
        click.confirm("Turn on end-to-end encryption?", abort=True)
    passphrase = _read_secret("passphrase", passphrase_stdin, confirm=True)
    client = _signed_in_client()

    def show(recovery: str) -> None:
        click.echo(
            f"Recovery key (shown once; keep it somewhere safe, away from this machine):\n"
            f"  {recovery}"
        )

    try:
        done = turn_on(_home(), client, passphrase, show_recovery=show)
    finally:
        client.close()
    click.echo(
        f"End-to-end encryption is on: {done.notes} notes of {done.scopes} scopes moved sealed; "
        f"the readable copies were erased from the server ({done.erased} objects)."
    )
    click.echo("On your other machines: 'oharness sync unlock' enters the passphrase.")


def _turn_off(yes: bool) -> None:
    from oharness.sync.encryption import turn_off

    click.echo(
        "Turning end-to-end encryption off uploads every note in clear: the sync server will "
        "be able to read them. Local notes are not touched."
    )
    if not yes:
        if not stdin_is_terminal():
            raise ValidationError("no terminal to confirm on: pass --yes")
        click.confirm("Upload every note in clear and turn encryption off?", abort=True)
    client = _signed_in_client()
    try:
        done = turn_off(_home(), client)
    finally:
        client.close()
    if done.scopes == 0 and done.unnamed == 0:
        click.echo("End-to-end encryption is off here; this machine forgot the key.")
        return
    click.echo(
        f"End-to-end encryption is off: {done.notes} notes of {done.scopes} scopes uploaded in "
        "clear, the sealed copies erased, the key forgotten on this machine."
    )
    if done.unnamed:
        click.echo(
            f"{done.unnamed} sealed scopes could not be named and were left sealed on the "
            "server; this machine keeps the key ('oharness sync encrypt --off' again retries)."
        )


@sync.command()
@click.option("--passphrase-stdin", is_flag=True, help="Read the passphrase from stdin.")
@click.option("--recovery-key", "use_recovery", is_flag=True, help="Enter the recovery key.")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def unlock(passphrase_stdin: bool, use_recovery: bool, debug: bool) -> None:
    """Enter the passphrase of an end-to-end encrypted account on this machine."""
    from oharness.sync.encryption import unlock as enter

    label = "recovery key" if use_recovery else "passphrase"
    secret = _read_secret(label, passphrase_stdin, confirm=False)
    client = _signed_in_client()
    try:
        key = enter(
            _home(),
            client,
            passphrase=None if use_recovery else secret,
            recovery_key=secret if use_recovery else None,
        )
    finally:
        client.close()
    click.echo(f"Unlocked: this machine syncs {key.user_id}'s notes end-to-end encrypted.")


@sync.command()
@click.option("--passphrase-stdin", is_flag=True, help="Read the new passphrase from stdin.")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
def passphrase(passphrase_stdin: bool, debug: bool) -> None:
    """Change the passphrase of an end-to-end encrypted account (no note is uploaded again)."""
    from oharness.sync.encryption import change_passphrase

    new = _read_secret("new passphrase", passphrase_stdin, confirm=True)
    client = _signed_in_client()
    try:
        change_passphrase(_home(), client, new)
    finally:
        client.close()
    click.echo("Passphrase changed; the recovery key is the same.")
