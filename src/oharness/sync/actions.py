"""What a person asks of sync, as library calls that return values (spec 07.3, 07.6, 07.7).

The CLI (``oharness login|logout|sync …``), the daemon's REST endpoints and the Memory page
call these same functions; they parse and print, nothing more. Sign-in checks the token
against the server before anything is saved; a conflict is found in the scope that holds it,
resolved with its set-aside versions backed up, and uploaded by the next pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import httpx2

from oharness.errors import OHarnessError, SyncError, UnavailableError, ValidationError
from oharness.memory.workspace import Workspace
from oharness.notes.backups import BackupStore
from oharness.project.identity import DEFAULT_MEMORY_DIR
from oharness.project.paths import HomeLayout, stable_scope_key
from oharness.project.used import used_projects
from oharness.sync.client import SyncClient
from oharness.sync.conflicts import ConflictBook, ConflictRecord
from oharness.sync.encryption import load_key
from oharness.sync.resolve import DEFAULT_MAX_NOTE_BYTES, ConflictResolver, Resolution
from oharness.sync.settings_file import SyncSettingsFile
from oharness.sync.sync_service import (
    PassReport,
    SyncService,
    SyncTarget,
    combined_status,
    sync_targets,
)
from oharness.types import Clock, Scope

Keep = Literal["local", "cloud", "both"]
Progress = Callable[[str, int, int], None]
#: Runs the passes of one target (the daemon's coordinator, or :meth:`SyncService.run`).
PassRunner = Callable[[SyncTarget], Sequence[PassReport]]


# ---- signing in and out ----------------------------------------------------------------


@dataclass(frozen=True)
class SignIn:
    """A checked sign-in: the account the token belongs to."""

    origin: str
    user_id: str
    plan: str
    sync_enabled: bool
    #: The account is end-to-end encrypted and this machine does not hold its key yet: sync
    #: waits for ``oharness sync unlock``.
    needs_unlock: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "userId": self.user_id,
            "plan": self.plan,
            "needsUnlock": self.needs_unlock,
        }


#: What login and setup say when the account is encrypted and this machine has no key.
NEEDS_UNLOCK: Final = (
    "the account is end-to-end encrypted: 'oharness sync unlock' enters its passphrase on this "
    "machine (sync waits until then; nothing is uploaded in clear)"
)


def check_origin(origin: str) -> str:
    """A sync server URL as it is stored (no trailing slash), or a one-line refusal."""
    if not origin.startswith(("https://", "http://")):
        raise ValidationError(f"--origin {origin!r} must be an http:// or https:// URL")
    return origin.rstrip("/")


def login(
    home: HomeLayout,
    origin: str,
    token: str,
    *,
    store_token: bool = True,
    http: httpx2.Client | None = None,
) -> SignIn:
    """Check ``token`` with the server, then record the origin (and the token, 0600, unless
    ``store_token`` is false: it came from the environment). Nothing is saved on failure."""
    origin = check_origin(origin)
    client = SyncClient(origin, token, http=http)
    try:
        identity = client.identity()
        try:
            encrypted = client.keys().envelope is not None
        except SyncError:  # a server without encryption: nothing to unlock
            encrypted = False
    except SyncError as exc:
        raise SyncError(f"sign-in failed, nothing saved: {exc.message}", code=exc.code) from exc
    finally:
        client.close()
    settings = SyncSettingsFile(home)
    settings.login(origin, token if store_token else None)
    held = load_key(home)
    holds = (
        held is not None
        and held.active
        and (held.origin, held.user_id)
        == (
            origin,
            identity.user_id,
        )
    )
    return SignIn(
        origin, identity.user_id, identity.plan, settings.enabled(), encrypted and not holds
    )


def logout(home: HomeLayout) -> bool:
    """Forget the stored token (notes, bindings and the origin stay); True if there was one."""
    return SyncSettingsFile(home).logout()


def set_sync_enabled(home: HomeLayout, enabled: bool) -> None:
    """The one switch for both scopes, honoured by every process (nothing is deleted)."""
    SyncSettingsFile(home).set_enabled(enabled)


def unbind_scope(home: HomeLayout, scope_key: str) -> bool:
    """Remove a scope's binding to its account and origin; True if it was bound."""
    return SyncSettingsFile(home).unbind(scope_key)


# ---- status and passes -----------------------------------------------------------------


def workspace_sync(
    workspace: Workspace,
    *,
    clock: Clock,
    environ_token: str | None = None,
    http: httpx2.Client | None = None,
) -> tuple[SyncService, list[SyncTarget]]:
    """The sync service of a workspace's home and its notes folders as targets."""
    service = SyncService(
        workspace.home,
        backups=workspace.service.backups(),
        clock=clock,
        environ_token=environ_token,
        http=http,
    )
    return service, sync_targets(workspace)


def target_for(workspace: Workspace, targets: Sequence[SyncTarget], scope: Scope) -> SyncTarget:
    """The target of one scope, or why that scope is not available here."""
    for target in targets:
        if target.scope == scope:
            return target
    workspace.service.store(scope)  # raises the clear "not available" reason
    raise UnavailableError(f"the {scope} scope is not available here", scope=scope)


def sync_status(service: SyncService, targets: Sequence[SyncTarget]) -> dict[str, Any]:
    """The 07.7 status of these targets together (changes nothing, sends nothing), and when
    each project this machine used last synced (``projects``)."""
    status = combined_status(
        [service.status(target) for target in targets], service.settings.enabled()
    )
    status["projects"] = used_project_statuses(service)
    held = load_key(service.home)
    accounts = {scope.get("account") for scope in status["scopes"]} - {None}
    if held is not None and (held.origin != service.settings.origin() or accounts - {held.user_id}):
        held = None  # another account's key: its scopes are paused, saying so
    # "pending": a turning-on that did not finish ('oharness sync encrypt' again completes it).
    status["endToEnd"] = None if held is None else ("on" if held.active else "pending")
    return status


def unsynced_files(scope: dict[str, Any]) -> dict[str, str]:
    """The files a scope's last pass held back (its 07.7 status), each with why ("" when the
    pass said only that it did not sync)."""
    found = dict.fromkeys(map(str, scope.get("unsyncable", [])), "")
    for item in scope.get("noteErrors", []):
        found[str(item.get("file") or item.get("id"))] = str(item.get("message", ""))
    return found


def scope_error(scope: dict[str, Any]) -> dict[str, Any] | None:
    """A scope's last error (its 07.7 status) unless it is a note the server refused, which
    the scope's note errors already name with their own fix: not "sync again", but "split it"
    or "make room"."""
    error = scope.get("lastError")
    codes = {item.get("code") for item in scope.get("noteErrors", [])}
    return None if not error or error.get("code") in codes else dict(error)


def used_project_statuses(service: SyncService) -> list[dict[str, Any]]:
    """Every project this machine used (the daemon syncs each): folder, id, when it last
    synced, its waiting conflicts, last error, pause and how many notes do not sync."""
    found = []
    for used in used_projects(service.home):
        key = stable_scope_key("project", used.project_id)
        scope = service.status_of("project", key, used.memory_dir or used.root / DEFAULT_MEMORY_DIR)
        found.append(
            {
                "root": str(used.root),
                "projectId": used.project_id,
                "lastSyncedAt": scope["lastSyncedAt"],
                "conflicts": scope["conflicts"],
                "lastError": scope_error(scope),
                "paused": scope.get("paused"),
                "notSynced": len(unsynced_files(scope)),
            }
        )
    return found


@dataclass(frozen=True)
class SyncNow:
    """The passes one "sync now" ran, and the status after them."""

    reports: tuple[PassReport, ...]
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True when a pass failed or some note did not sync."""
        return any(report.failed for report in self.reports)

    def passes_json(self) -> list[dict[str, Any]]:
        """Each pass: its scope, why it was paused, its error, when to retry."""
        return [
            {
                "scope": report.target.scope,
                "paused": report.paused,
                "error": report.error,
                "retryAfter": report.retry_after_ms,
            }
            for report in self.reports
        ]


def sync_now(
    service: SyncService,
    targets: Sequence[SyncTarget],
    *,
    progress: Progress | None = None,
    run: PassRunner | None = None,
) -> SyncNow:
    """One pass per target now (through ``run`` when a coordinator schedules passes)."""
    reports: list[PassReport] = []
    for target in targets:
        if run is not None:
            reports.extend(run(target))
        else:
            reports.append(service.run(target, progress=progress))
    ran = [report.target for report in reports]
    return SyncNow(tuple(reports), sync_status(service, ran))


# ---- conflicts -------------------------------------------------------------------------


def conflict_records(
    service: SyncService, targets: Sequence[SyncTarget]
) -> list[tuple[SyncTarget, ConflictRecord]]:
    """Every open conflict of these targets (oldest first within a scope), with its target."""
    return [
        (target, record)
        for target in targets
        for record in ConflictBook(service.base(target).conflicts).records()
    ]


def list_conflicts(service: SyncService, targets: Sequence[SyncTarget]) -> list[dict[str, Any]]:
    """Every open conflict of these targets, with its scope and both sides; this machine's
    side is the note file as it is now (``None``: deleted since), what ``--keep local``
    keeps."""
    found = []
    for target, record in conflict_records(service, targets):
        item = {"scope": target.scope, **record.to_json()}
        if target.store.get(record.id) is None:
            item["local"] = None
        else:
            with contextlib.suppress(OHarnessError):  # unreadable now: as recorded
                item["local"] = target.store.read_bytes(record.id).decode("utf-8", "replace")
        found.append(item)
    return found


def conflict_target(
    service: SyncService,
    targets: Sequence[SyncTarget],
    note_id: str,
    scope: str | None,
    *,
    hint: str = "list the conflicts to see them",
) -> SyncTarget:
    """The target holding an open conflict for ``note_id`` (or a clear refusal)."""
    for target in targets:
        if scope is not None and target.scope != scope:
            continue
        if note_id in ConflictBook(service.base(target).conflicts).ids():
            return target
    raise ValidationError(f"no open conflict for {note_id!r}; {hint}")


def resolve_conflict(
    service: SyncService,
    target: SyncTarget,
    backups: BackupStore,
    note_id: str,
    *,
    keep: Keep | None,
    text: str | None,
    clock: Clock,
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES,
) -> Resolution:
    """Resolve one conflict (set-aside versions backed up); the next pass uploads it. A text
    merged by hand is checked like ``remember`` checks a note."""
    if (keep is None) == (text is None):
        raise ValidationError("give exactly one of keep (local, cloud or both) and text")
    resolver = ConflictResolver(
        store=target.store,
        base=service.base(target),
        backups=backups,
        scope_key=target.scope_key,
        clock=clock,
        max_note_bytes=max_note_bytes,
    )
    return resolver.resolve(note_id, keep=keep, text=text)


def resolution_json(resolution: Resolution) -> dict[str, Any]:
    """A resolution as the CLI's ``--json`` and the REST endpoint show it."""
    return {
        "id": resolution.id,
        "keep": resolution.keep,
        "newId": resolution.new_id,
        "backups": list(resolution.backups),
    }
