"""Running sync for the scopes of one ``OHARNESS_HOME`` (spec 07.5–07.7), one pass at a time.

Before a pass: the off switch, the stored origin and token, the 429 deadline (persisted, so a
restarted process does not retry early), the scope's binding to its first account and origin,
a project folder copied by hand (paused) versus a moved one (followed) or a git clone (a
replica with its own state: :mod:`oharness.sync.replicas`). The account is verified with
``identity`` only when the token changed since the last verification, so a pass where nothing
changed stays one request. After a pass the scope's status is recorded (``status.json``).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2

from oharness.errors import OHarnessError, SyncError, is_transient
from oharness.notes.backups import BackupStore
from oharness.notes.store import NoteStore
from oharness.project.paths import HomeLayout, folder_state_key
from oharness.sync.ancestor import AncestorStore
from oharness.sync.client import SyncClient
from oharness.sync.conflicts import ConflictBook
from oharness.sync.encryption import (
    forget_key,
    key_path,
    load_key,
    note_seen_encrypted,
    sealed_client_for,
    seen_encrypted,
)
from oharness.sync.protocol import SyncScope
from oharness.sync.replicas import Claim, claim, is_git_clone, take_over
from oharness.sync.result import PassResult
from oharness.sync.scope_sync import ScopeSync
from oharness.sync.sealed_client import SealedClient
from oharness.sync.settings_file import SyncSettingsFile
from oharness.types import Clock, Scope

if TYPE_CHECKING:
    from oharness.memory.workspace import Workspace

OLD_SERVER = "the sync server is older than this client: upgrade the server first"
#: How long a verified identity (account and protocols) is trusted before it is read again.
IDENTITY_RECHECK_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class SyncTarget:
    """One notes directory and the scope it syncs with."""

    scope: Scope
    scope_key: str
    store: NoteStore
    project_id: str | None = None
    project_root: Path | None = None

    @property
    def label(self) -> str:
        return "project notes" if self.scope == "project" else "your user notes"


def sync_targets(workspace: Workspace) -> list[SyncTarget]:
    """The notes folders of a workspace as sync targets (project first, when registered)."""
    service = workspace.service
    project = workspace.project
    identity = project.identity if project is not None else None
    targets = []
    for scope in service.available_scopes():
        in_project = scope == "project" and project is not None
        targets.append(
            SyncTarget(
                scope=scope,
                scope_key=service.scope_key(scope),
                store=service.store(scope),
                project_id=identity.id if in_project and identity is not None else None,
                project_root=project.root if in_project and project is not None else None,
            )
        )
    return targets


@dataclass
class PassReport:
    """The outcome of asking for a pass: ran (``result``), or why not (``paused``/``error``)."""

    target: SyncTarget
    result: PassResult | None = None
    paused: str | None = None
    error: dict[str, str] | None = None
    retry_after_ms: int | None = None
    #: The server is older than this client (protocol 1): its identity is read at every pass.
    old_server: bool = False
    #: Paused by the server's answer to a request (an encrypted account without the key here,
    #: an erased account), not by a check made before asking.
    paused_by_server: bool = False
    #: Paused because the person switched cloud sync off ('oharness sync off'), by choice.
    switched_off: bool = False

    @property
    def failed(self) -> bool:
        """True when the pass failed, or some note in it did not sync."""
        return self.error is not None or (self.result is not None and self.result.failed)

    def note_errors(self) -> list[dict[str, Any]]:
        """The notes that did not sync in this pass, each with its reason."""
        return self.result.note_errors() if self.result is not None else []

    @property
    def transient(self) -> bool:
        return self.error is not None and is_transient(self.error.get("code"))


def _fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


class SyncService:
    """Sync passes for one home (shared by every directory of a process)."""

    def __init__(
        self,
        home: HomeLayout,
        *,
        backups: BackupStore,
        clock: Clock,
        environ_token: str | None = None,
        http: httpx2.Client | None = None,
        cancelled: Callable[[], bool] | None = None,
        on_request: Callable[[], None] | None = None,
    ) -> None:
        self.home = home
        self.settings = SyncSettingsFile(home)
        self.backups = backups
        self.clock = clock
        self.environ_token = environ_token
        self.http = http
        self.cancelled = cancelled
        #: Called before every request (the coordinator's request budget).
        self.on_request = on_request

    @property
    def sync_dir(self) -> Path:
        return self.home.sync_dir

    def base(self, target: SyncTarget) -> AncestorStore:
        """The sync state of ``target``'s notes folder (taken over from an earlier release's
        state of the project, or a folder moved here, the first time it is asked for)."""
        self._claim(target)
        return self._own_base(target)

    def _own_base(self, target: SyncTarget) -> AncestorStore:
        key = folder_state_key(target.scope_key, target.store.directory)
        return AncestorStore(self.sync_dir, target.scope_key, key)

    def _claim(self, target: SyncTarget) -> Claim:
        """What a project folder without state of its own starts from (see
        :mod:`oharness.sync.replicas`); a state to take over is moved to it here."""
        own = self._own_base(target)
        if target.scope != "project" or own.state_path.exists():
            return Claim()
        found = claim(self.sync_dir, target.scope_key, target.store.directory, target.project_id)
        if found.adopt is not None and not take_over(found.adopt, own.folder):
            return Claim(busy=True)
        return Claim(other=found.other)

    # ---- one pass ------------------------------------------------------------------------

    def run(
        self, target: SyncTarget, *, progress: Callable[[str, int, int], None] | None = None
    ) -> PassReport:
        """One pass over ``target`` (manual or scheduled: the checks are the same)."""
        report = self._run(target, progress)
        self._record(target, report)
        return report

    def _run(
        self, target: SyncTarget, progress: Callable[[str, int, int], None] | None
    ) -> PassReport:
        base = self.base(target)
        status = base.load_status()
        if not self.settings.enabled():
            return PassReport(
                target, paused="cloud sync is switched off ('oharness sync on')", switched_off=True
            )
        origin, token = self.settings.origin(), self.settings.token(self.environ_token)
        if not origin or not token:
            return PassReport(
                target,
                error={
                    "code": "not_logged_in",
                    "message": "not signed in: run 'oharness login --origin URL'",
                },
            )
        if status.get("erased"):
            return PassReport(target, paused=str(status["erased"]))
        deadline = status.get("retryAfter")
        if isinstance(deadline, int) and deadline > self.clock():
            return PassReport(
                target,
                paused="sync was too frequent; it will be retried after the server's wait",
                retry_after_ms=deadline,
            )
        bound = self.settings.target(target.scope_key)
        if bound.origin and bound.origin != origin:
            return PassReport(target, paused=self._other("origin", bound.origin, origin, target))
        client = sealed_client_for(
            self.home, origin, token, http=self.http, on_request=self.on_request
        )
        try:
            protocol, paused = self._verify(target, client, status, token, origin)
            if paused:
                return PassReport(target, paused=paused, old_server=protocol == 1)
            paused = self._plain_after_reset(client, origin, str(status["account"]["userId"]))
            if paused:
                return PassReport(target, paused=paused)
            copied = self._check_folder(target)
            if copied:
                return PassReport(target, paused=copied)
            engine = ScopeSync(
                store=target.store,
                base=base,
                client=client,
                scope=SyncScope(target.scope, target.project_id),
                scope_key=target.scope_key,
                backups=self.backups,
                clock=self.clock,
                protocol=protocol,
                progress=progress,
                cancelled=self.cancelled,
            )
            return PassReport(target, result=engine.run(), old_server=protocol == 1)
        except SyncError as exc:
            return self._failed(target, exc)
        except OHarnessError as exc:
            return PassReport(target, error={"code": exc.code, "message": exc.message})
        finally:
            client.close()

    def _plain_after_reset(self, client: SyncClient, origin: str, user_id: str) -> str | None:
        """Why a device without the key must not sync in clear, or None: it was refused as
        the account is end-to-end encrypted, and the server now holds no key envelope and
        never stored one since (its storage was reset or restored); a machine holding the
        key puts the envelope back at its next pass. An envelope stored as "off" (encryption
        turned off on purpose) ends the wait."""
        if isinstance(client, SealedClient) or not seen_encrypted(self.home, origin, user_id):
            return None
        stored = client.keys()
        if stored.envelope is not None:
            return None  # still encrypted: the server refuses plain notes with the fix
        if stored.version > 0:
            note_seen_encrypted(self.home, origin, user_id, seen=False)
            return None
        return (
            "encrypted: this account was end-to-end encrypted when this machine last synced, "
            "and the server now holds no key (its storage was reset or restored): nothing is "
            "uploaded in clear; a machine holding the key puts it back at its next pass, then "
            "'oharness sync unlock' here (if none holds it any more, 'oharness sync encrypt "
            "--off --yes' syncs in clear)"
        )

    def _other(self, what: str, bound: str, now: str, target: SyncTarget) -> str:
        return (
            f"{target.label} are bound to another {what} ({bound}) than the one signed in "
            f"({now}); use a separate OHARNESS_HOME for that {what}, or 'oharness sync unbind "
            f"{target.scope_key}' to rebind deliberately"
        )

    def check_protocol(self, target: SyncTarget, client: SyncClient) -> tuple[int, str | None]:
        """The protocol a pass of ``target`` speaks, or why it is paused: the recorded identity,
        read again on a new token, daily, at every pass while the server is older than this
        client, and after the server answered 426 (:meth:`forget_identity`)."""
        origin, token = self.settings.origin() or "", self.settings.token(self.environ_token) or ""
        return self._verify(target, client, self.base(target).load_status(), token, origin)

    def forget_identity(self, target: SyncTarget) -> None:
        """The server changed its protocols (a 426): the next pass reads its identity again."""
        status = self.base(target).load_status()
        status.pop("account", None)
        with contextlib.suppress(OHarnessError):
            self.base(target).save_status(status)

    def _verify(
        self,
        target: SyncTarget,
        client: SyncClient,
        status: dict[str, Any],
        token: str,
        origin: str,
    ) -> tuple[int, str | None]:
        """The protocol to speak, or why this scope is paused (identity only on a new token)."""
        known = status.get("account")
        if not (isinstance(known, dict) and self._still_valid(known, token)):
            identity = client.identity()
            known = {
                "checkedAt": self.clock(),
                "token": _fingerprint(token),
                "userId": identity.user_id,
                "protocols": list(identity.protocols),
                "plan": identity.plan,
                "planLimits": identity.plan_limits.to_json() if identity.plan_limits else None,
            }
            status["account"] = known
            self.base(target).save_status(status)
        user_id = str(known["userId"])
        bound = self.settings.target(target.scope_key)
        if bound.user_id and bound.user_id != user_id:
            return 0, self._other("account", bound.user_id, user_id, target)
        if not bound.user_id:
            self.settings.bind(target.scope_key, user_id, origin)
        held = load_key(self.home)
        if held is not None and held.origin == origin and held.user_id != user_id:
            return 0, (
                f"the end-to-end key kept on this machine ({key_path(self.home)}) is account "
                f"{held.user_id}'s, and {user_id} is signed in: nothing is synced with it. If "
                f"{user_id}'s account is encrypted, 'oharness sync unlock' enters its passphrase "
                f"(the key is replaced); if not, remove that file ({held.user_id}'s passphrase "
                "brings that key back)"
            )
        protocols = known.get("protocols") or [2]
        if 2 in protocols:
            return 2, None
        if target.scope == "user":
            return 1, f"{OLD_SERVER} (user notes are not synced until then)"
        return 1, None

    def _still_valid(self, known: dict[str, Any], token: str) -> bool:
        """The recorded identity holds for this token and is recent enough: protocol support
        is checked again daily, and at every pass while the server is older than this client
        (one small request, so an upgrade is noticed at the next pass, not hours later)."""
        if known.get("token") != _fingerprint(token):
            return False
        checked = known.get("checkedAt")
        if not isinstance(checked, int) or 2 not in (known.get("protocols") or [2]):
            return False
        return self.clock() - checked < IDENTITY_RECHECK_MS

    def _check_folder(self, target: SyncTarget) -> str | None:
        """A project folder copied by hand is paused; a clone syncs as a replica of its own."""
        found = self._claim(target)
        if found.busy:
            return "another process is syncing this folder's notes; the next pass takes them up"
        if found.other is None or is_git_clone(target.project_root, target.project_id):
            return None
        other_root = found.other.parent
        return (
            f"this folder is a copy of {other_root}, which syncs as the same project; give "
            "the copy its own identity with 'oharness project reset-id' (or sync from the "
            "original); clones made with 'git clone' sync as replicas of one project"
        )

    def _failed(self, target: SyncTarget, exc: SyncError) -> PassReport:
        error = {"code": exc.code, "message": f"{target.label}: {exc.message}"}
        if exc.code == "protocol_unsupported":  # the server changed: read its identity again
            self.forget_identity(target)
        if exc.code == "rate_limited":
            wait = exc.retry_after if exc.retry_after is not None else 60.0
            deadline = self.clock() + int(wait * 1000)
            error["message"] = (
                f"{target.label}: sync was too frequent; it will be retried in {int(wait)} s"
            )
            return PassReport(target, error=error, retry_after_ms=deadline)
        if exc.code == "stale_key":  # it would seal for no one, or put back a dead envelope
            forget_key(self.home)
        if exc.code in ("encrypted_account", "encryption_off", "stale_key"):
            account = self.base(target).load_status().get("account")
            origin = self.settings.origin()
            if exc.code != "encryption_off" and isinstance(account, dict) and origin:
                with contextlib.suppress(OSError):
                    note_seen_encrypted(self.home, origin, str(account.get("userId")), seen=True)
            return PassReport(target, paused=f"encrypted: {exc.message}", paused_by_server=True)
        if exc.code == "account_erased":
            return PassReport(
                target,
                paused=f"the account was erased on the sync server; sync stopped and every "
                f"local note stays ({exc.message})",
                paused_by_server=True,
            )
        return PassReport(target, error=error)

    # ---- status --------------------------------------------------------------------------

    def _record(self, target: SyncTarget, report: PassReport) -> None:
        base = self.base(target)
        status = base.load_status()
        now = self.clock()
        if report.retry_after_ms is not None and report.error is not None:
            status["retryAfter"] = report.retry_after_ms
        if report.paused and "erased" in report.paused:
            status["erased"] = report.paused
        status["paused"] = report.paused
        status["lastError"] = report.error
        if report.result is not None and report.result.skipped is None:
            result = report.result
            status["lastSyncedAt"] = now
            status["lastPass"] = result.to_json()
            if result.added or result.modified or result.removed:
                status["lastPull"] = result.to_json()["lastPull"]
                status["lastPullAt"] = now
            if result.rejected:
                status["lastError"] = {
                    "code": result.rejected[0]["reason"],
                    "message": f"{target.label}: {result.rejected[0]['message']}",
                }
            status.pop("retryAfter", None)
        with contextlib.suppress(OHarnessError):  # informative; the real state is in the base
            base.save_status(status)

    def status(self, target: SyncTarget) -> dict[str, Any]:
        """The 07.7 status of one scope."""
        return self._status(target.scope, target.scope_key, self.base(target))

    def status_of(self, scope: Scope, scope_key: str, directory: Path) -> dict[str, Any]:
        """The 07.7 status of the notes folder ``directory`` of ``scope_key`` (its workspace
        need not be open; nothing is taken over or written)."""
        base = AncestorStore(self.sync_dir, scope_key, folder_state_key(scope_key, directory))
        return self._status(scope, scope_key, base)

    def _status(self, scope: Scope, scope_key: str, base: AncestorStore) -> dict[str, Any]:
        saved = base.load_status()
        bound = self.settings.target(scope_key)
        account = _dict(saved.get("account"))
        last_pass = _dict(saved.get("lastPass"))
        return {
            "scope": scope,
            "key": scope_key,
            "enabled": bound.enabled,
            "account": bound.user_id,
            "origin": bound.origin,
            "paused": saved.get("paused"),
            "lastSyncedAt": saved.get("lastSyncedAt"),
            "lastError": saved.get("lastError"),
            "lastPull": saved.get("lastPull", {"added": 0, "modified": 0, "removed": 0}),
            "lastPullAt": saved.get("lastPullAt"),
            "pushed": last_pass.get("pushed", []),
            "pulled": last_pass.get("pulled", []),
            "merged": last_pass.get("merged", []),
            "conflicts": sorted(ConflictBook(base.conflicts).ids()),
            "unsyncable": last_pass.get("unsyncable", []),
            "noteErrors": last_pass.get("noteErrors", []),
            "reset": bool(last_pass.get("reset")),
            "retryAfter": saved.get("retryAfter"),
            "plan": account.get("plan"),
            "planLimits": account.get("planLimits"),
        }


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def combined_status(scopes: list[dict[str, Any]], enabled: bool) -> dict[str, Any]:
    """Both scopes together: on only when on for both; the older last-synced time."""
    times = [scope.get("lastSyncedAt") for scope in scopes]
    known = [time for time in times if isinstance(time, int)]
    return {
        "enabled": enabled and all(scope.get("enabled") for scope in scopes),
        "lastSyncedAt": min(known) if known and len(known) == len(times) else None,
        "scopes": scopes,
    }
