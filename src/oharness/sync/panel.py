"""The cloud sync panel's state (spec 07.6–07.7, 11): both scopes read as one switch.

:func:`sync_panel` reads the combined 07.7 status
(:func:`oharness.sync.sync_service.combined_status`) and says what a person needs to see: on only
when on for both scopes; the older "last synced";
each scope's error (its message without the scope's own label, which the page shows in the
reader's language), why it is paused, a 429 read as "too frequent, will be retried" (never as a
configuration problem), what the last pull brought, a free plan's limits, the notes that did not
sync with their reason; and whether "sync now" would be refused, and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from oharness.types import Scope

#: The paused reason a pass gives while the switch is off (the switch already says so).
SWITCHED_OFF: Final = "cloud sync is switched off"
_LABELS: Final = ("project notes: ", "your user notes: ")
Refusal = Literal["off", "signed_out", "rate_limited"]


@dataclass(frozen=True)
class PullCounts:
    """What the last pull brought."""

    added: int = 0
    modified: int = 0
    removed: int = 0

    @property
    def any(self) -> bool:
        return bool(self.added or self.modified or self.removed)


@dataclass(frozen=True)
class NoteIssue:
    """A note that did not sync, and why."""

    id: str | None
    file: str | None
    code: str
    message: str


@dataclass(frozen=True)
class ScopeError:
    """The last error of one scope (``message`` without the scope's label)."""

    code: str
    message: str


@dataclass(frozen=True)
class ScopePanel:
    """One scope's line of the panel."""

    scope: Scope
    enabled: bool
    account: str | None
    origin: str | None
    paused: str | None
    error: ScopeError | None
    rate_limited: bool
    retry_at: int | None
    last_synced_at: int | None
    last_pull: PullCounts
    #: When the last pull that brought something ran (None: before this was recorded).
    last_pull_at: int | None
    plan: str | None
    max_notes: int | None
    max_body_bytes: int | None
    conflicts: tuple[str, ...]
    note_errors: tuple[NoteIssue, ...]
    unsyncable: tuple[str, ...]

    @property
    def nothing_new(self) -> bool:
        """The latest pass pulled nothing (an earlier one may have)."""
        if self.last_synced_at is None:
            return False
        if self.last_pull_at is not None:
            return self.last_synced_at > self.last_pull_at
        return not self.last_pull.any

    @property
    def free_plan(self) -> bool:
        return self.plan == "free"


@dataclass(frozen=True)
class SyncPanel:
    """The whole panel."""

    enabled: bool
    signed_in: bool
    last_synced_at: int | None
    scopes: tuple[ScopePanel, ...]

    @property
    def rate_limited(self) -> bool:
        return any(scope.rate_limited for scope in self.scopes)

    @property
    def retry_at(self) -> int | None:
        """When a 429 wait ends (the latest of the scopes')."""
        times = [scope.retry_at for scope in self.scopes if scope.retry_at is not None]
        return max(times) if times else None

    @property
    def sync_now_refusal(self) -> Refusal | None:
        """Why "sync now" would not run now (None: it runs)."""
        if not self.enabled:
            return "off"
        if not self.signed_in:
            return "signed_out"
        if self.retry_at is not None:
            return "rate_limited"
        return None

    @property
    def conflict_count(self) -> int:
        return sum(len(scope.conflicts) for scope in self.scopes)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _unlabelled(message: str) -> str:
    for label in _LABELS:
        if message.startswith(label):
            return message[len(label) :]
    return message


def _error(value: object) -> ScopeError | None:
    if not isinstance(value, Mapping):
        return None
    code = _text(value.get("code")) or "error"
    return ScopeError(code, _unlabelled(_text(value.get("message")) or code))


def _issues(value: object) -> tuple[NoteIssue, ...]:
    if not isinstance(value, Sequence):
        return ()
    found = []
    for item in value:
        if isinstance(item, Mapping):
            code = _text(item.get("code")) or "error"
            message = _unlabelled(_text(item.get("message")) or code)
            found.append(NoteIssue(_text(item.get("id")), _text(item.get("file")), code, message))
    return tuple(found)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return ()
    return tuple(item for item in value if isinstance(item, str))


def scope_panel(status: Mapping[str, Any], now: int) -> ScopePanel:
    """One scope's status (07.7) as a panel line."""
    error = _error(status.get("lastError"))
    retry = _int(status.get("retryAfter"))
    retry_at = retry if retry is not None and retry > now else None
    paused = _text(status.get("paused"))
    rate_limited = retry_at is not None or (error is not None and error.code == "rate_limited")
    if paused and (paused.startswith(SWITCHED_OFF) or (rate_limited and "too frequent" in paused)):
        paused = None  # said by the switch and by the 429 line already
    pull = status.get("lastPull")
    pull = pull if isinstance(pull, Mapping) else {}
    limits = status.get("planLimits")
    limits = limits if isinstance(limits, Mapping) else {}
    scope: Scope = "user" if status.get("scope") == "user" else "project"
    return ScopePanel(
        scope=scope,
        enabled=status.get("enabled") is not False,
        account=_text(status.get("account")),
        origin=_text(status.get("origin")),
        paused=paused,
        error=error,
        rate_limited=rate_limited,
        retry_at=retry_at,
        last_synced_at=_int(status.get("lastSyncedAt")),
        last_pull=PullCounts(
            _int(pull.get("added")) or 0,
            _int(pull.get("modified")) or 0,
            _int(pull.get("removed")) or 0,
        ),
        last_pull_at=_int(status.get("lastPullAt")),
        plan=_text(status.get("plan")),
        max_notes=_int(limits.get("maxNotes")),
        max_body_bytes=_int(limits.get("maxBodyBytes")),
        conflicts=_strings(status.get("conflicts")),
        note_errors=_issues(status.get("noteErrors")),
        unsyncable=_strings(status.get("unsyncable")),
    )


def sync_panel(combined: Mapping[str, Any], *, signed_in: bool, now: int) -> SyncPanel:
    """The panel from :func:`~oharness.sync.sync_service.combined_status` and the sign-in."""
    scopes = combined.get("scopes")
    lines = tuple(
        scope_panel(status, now)
        for status in (scopes if isinstance(scopes, Sequence) else ())
        if isinstance(status, Mapping)
    )
    return SyncPanel(
        enabled=combined.get("enabled") is True,
        signed_in=signed_in,
        last_synced_at=_int(combined.get("lastSyncedAt")),
        scopes=lines,
    )
