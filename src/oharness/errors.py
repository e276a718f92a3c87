"""The one exception tree of oharness.

Every error the library raises on purpose derives from :class:`OHarnessError`. Each carries a
message that says what went wrong *and what to do about it*, plus structured fields for callers
that want to react programmatically (``code`` is stable and documented). The tree lists every
exception the library defines, with the module of those defined outside this one (a test holds
the list to the code).

Tree::

    OHarnessError
    ├── ConfigError             a config file or key is wrong (names the file and key)
    ├── ProjectError            no project here, home used as a project, bad memory.dir
    ├── NoteFormatError         a note file or frontmatter cannot be parsed
    │   └── FrontmatterError    an imported file's frontmatter cannot be read (also a
    │                           ValueError; importers.frontmatter)
    ├── ValidationError         input refused: bad id, summary, type, tags, size
    │   └── SecretError         input looks like a credential (never echoes it)
    ├── NotFoundError           no note / backup with that id
    ├── ConflictError           case-insensitive id collision, ambiguous id across scopes
    ├── LimitError              maxNotes reached, body too large
    ├── UnavailableError        a feature or scope is not available here (says why)
    ├── PathSafetyError         a path would escape its directory
    ├── DaemonRefused           the local daemon answered a hook, but not 200 (``status``,
    │                           ``code``; also a ValueError; bridges.prompt_hook)
    ├── DaemonError             the daemon refused an SDK request or could not be reached
    │                           (``status``, 0 then; ``code``; sdk.client)
    ├── SyncError               the sync server refused a request or could not be reached
    │                           (``code``: the server's error code; ``retry_after`` seconds)
    ├── StorageError            the file system refused (permission, disk full, lock timeout)
    │   ├── PreconditionFailed  an object store's conditional write lost: re-read and retry
    │   └── StorageUnavailable  an object store cannot be reached or failed: retry later
    ├── ModelError              a model provider failed (``status``, ``transient``;
    │   │                       harness.model)
    │   └── ModelCancelled      the model call was cancelled (harness.model)
    ├── WrongKey                a passphrase or recovery key does not open the account's
    │                           key envelope (sync.e2e)
    ├── SealError               a sealed note cannot be opened: damaged, moved, or sealed
    │                           with another key (sync.e2e)
    │
    │   internal to the sync server, never leaving it:
    ├── SyncApiError            a refused request, turned into its HTTP error body
    │                           (server.responses)
    ├── TokenRejected           a bearer token that does not verify: 401 (server.auth)
    │
    │   internal to the daemon, never leaving it:
    ├── DaemonApiError          a refused request, turned into its HTTP error body
    │                           (daemon.errors)
    ├── TaskFailure             a memory task failed with a stable code (daemon.errors)
    └── TaskCancelled           a queued or running task was cancelled (daemon.tasks.lane)

Two private exceptions carry control flow and never leave their module (``sync.batch._Retry``,
``capture.switches._NotPlain``).

Merge conflicts and sync rejections are values, not exceptions.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the per-prompt hook imports this module
if TYPE_CHECKING:
    from typing import Any

#: The error codes of failures worth retrying later with nothing changed: the service or the
#: network could not be reached, or requests came too fast (``retry_after`` then says when).
#: The one definition: ``SyncError.transient``, a sync pass's status and the scheduler's
#: cooldown all use it.
TRANSIENT_CODES = frozenset({"unavailable", "network", "rate_limited"})


def is_transient(code: str | None) -> bool:
    """Whether an error ``code`` names a failure worth retrying later (:data:`TRANSIENT_CODES`)."""
    return code in TRANSIENT_CODES


class OHarnessError(Exception):
    """Root of every error oharness raises on purpose."""

    code = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description: stable code, message and structured details."""
        return {"code": self.code, "message": self.message, **self.details}


class ConfigError(OHarnessError):
    code = "config"


class ProjectError(OHarnessError):
    code = "project"


class NoteFormatError(OHarnessError):
    code = "note_format"


class ValidationError(OHarnessError):
    code = "invalid"


class SecretError(ValidationError):
    code = "secret"


class NotFoundError(OHarnessError):
    code = "not_found"


class ConflictError(OHarnessError):
    code = "conflict"


class LimitError(OHarnessError):
    code = "limit"


class UnavailableError(OHarnessError):
    code = "unavailable"


class PathSafetyError(OHarnessError):
    code = "path_safety"


class StorageError(OHarnessError):
    code = "storage"


class PreconditionFailed(StorageError):
    code = "precondition_failed"


class StorageUnavailable(StorageError):
    code = "unavailable"


class SyncError(OHarnessError):
    """A request-level sync failure; per-note rejections are values, not this."""

    code = "sync"

    def __init__(
        self,
        message: str,
        *,
        code: str = "sync",
        status: int | None = None,
        retry_after: float | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message, **details)
        self.code = code
        self.status = status
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """True for failures worth retrying later (network, 429, 503): see :func:`is_transient`."""
        return is_transient(self.code)
