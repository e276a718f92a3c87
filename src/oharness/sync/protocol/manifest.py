"""The stored manifest (spec 06.1) and the object-key layout of a scope."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from oharness.errors import ValidationError
from oharness.sync.protocol.fields import (
    MANIFEST_FORMAT,
    USER_SEGMENT_PATTERN,
    JsonObject,
    SyncScope,
    is_revision,
    is_valid_segment,
)


def _fail(message: str, field_name: str) -> ValidationError:
    return ValidationError(message, field=field_name)


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(f"{what} must be a JSON object", what)
    return cast(Mapping[str, Any], value)


def _int(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if type(value) is not int or value < 0:
        raise _fail(f"{key!r} must be an integer >= 0", key)
    return value


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class ManifestNote:
    """A live note in the stored manifest."""

    rev: str
    hash: str
    size: int
    typed: bool
    changed_at: int
    v: int


@dataclass(frozen=True)
class ManifestTombstone:
    """A deleted note in the stored manifest."""

    rev: str
    deleted_at: int
    v: int


#: Commit ids kept in a manifest: a base this many versions old can still be checked.
HISTORY_LENGTH: Final = 1024


@dataclass(frozen=True)
class Manifest:
    """``manifest.json`` of one scope (spec 06.1).

    ``generation`` is a random id written when the manifest is first created (a reset storage
    gets a new one); ``history`` holds the random commit ids of the last versions, oldest
    first, the last one being ``version``'s (see "Storage generation" in the protocol doc).
    Manifests written before these fields have neither: unknown, never a mismatch.
    """

    version: int = 0
    updated_at: int = 0
    gc_version: int = 0
    notes: Mapping[str, ManifestNote] = field(default_factory=dict)
    tombstones: Mapping[str, ManifestTombstone] = field(default_factory=dict)
    generation: str | None = None
    history: tuple[str, ...] = ()

    @property
    def commit(self) -> str | None:
        """The commit id of the current version (``None``: written by an older server)."""
        return self.history[-1] if self.history else None

    def commit_at(self, version: int) -> str | None:
        """The commit id of ``version`` while it is within the history, else ``None``."""
        index = len(self.history) - 1 - (self.version - version)
        return self.history[index] if 0 <= index < len(self.history) else None

    def to_json(self) -> JsonObject:
        """The stored JSON form (always format 2; generation and commit lead, for the peek)."""
        head: JsonObject = {"format": MANIFEST_FORMAT, "version": self.version}
        if self.generation is not None and self.commit is not None:
            head["generation"] = self.generation
            head["commit"] = self.commit
        return {
            **head,
            "updatedAt": self.updated_at,
            "gcVersion": self.gc_version,
            "notes": {
                note_id: {
                    "rev": note.rev,
                    "hash": note.hash,
                    "size": note.size,
                    "typed": note.typed,
                    "changedAt": note.changed_at,
                    "v": note.v,
                }
                for note_id, note in sorted(self.notes.items())
            },
            "tombstones": {
                note_id: {"rev": tomb.rev, "deletedAt": tomb.deleted_at, "v": tomb.v}
                for note_id, tomb in sorted(self.tombstones.items())
            },
            "history": list(self.history),
        }


def manifest_to_bytes(manifest: Manifest) -> bytes:
    """Serialise a manifest for storage (compact UTF-8 JSON, keys sorted by note id)."""
    return json.dumps(manifest.to_json(), separators=(",", ":"), ensure_ascii=False).encode()


_MANIFEST_HEAD: Final = re.compile(
    rb'\{"format":2,"version":(\d+),(?:"generation":"([0-9a-f]{1,64})","commit":"([0-9a-f]{1,64})",)?'
)


@dataclass(frozen=True)
class ManifestHead:
    """What the first bytes of a stored manifest say."""

    version: int
    generation: str | None
    commit: str | None


def peek_manifest_head(data: bytes) -> ManifestHead | None:
    """Version, generation and commit of a manifest this code wrote, read from its first bytes
    without parsing the rest (``None`` when not in the expected form: parse it fully)."""
    match = _MANIFEST_HEAD.match(data, 0, 256)
    if not match:
        return None
    generation, commit = match.group(2), match.group(3)
    return ManifestHead(
        int(match.group(1)),
        generation.decode() if generation else None,
        commit.decode() if commit else None,
    )


def peek_manifest_version(data: bytes) -> int | None:
    """The version of a manifest this code wrote, read from its first bytes (see
    :func:`peek_manifest_head`)."""
    head = peek_manifest_head(data)
    return head.version if head else None


def parse_manifest(data: bytes) -> Manifest:
    """Parse a stored manifest (format 2; format 1, written before typed notes, has no
    ``typed`` and reads as untyped)."""
    try:
        obj = _object(json.loads(data.decode("utf-8")), "manifest")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(f"the manifest is not valid JSON: {exc}", "manifest") from exc
    fmt = obj.get("format", 1)
    if fmt not in (1, 2):
        raise _fail(
            f"manifest format {fmt!r} is newer than this server understands: upgrade it",
            "manifest",
        )
    # A scope's manifest can list thousands of notes and is read by every request: check
    # the entries with plain type tests rather than the per-field helpers.
    notes: dict[str, ManifestNote] = {}
    tombstones: dict[str, ManifestTombstone] = {}
    try:
        for note_id, entry in _object(obj.get("notes", {}), "manifest.notes").items():
            note = ManifestNote(
                entry["rev"],
                entry["hash"],
                entry["size"],
                entry.get("typed", False),
                entry["changedAt"],
                entry["v"],
            )
            if not (
                type(note.rev) is str
                and type(note.hash) is str
                and type(note.size) is int
                and type(note.typed) is bool
                and type(note.changed_at) is int
                and type(note.v) is int
            ):
                raise _fail(f"manifest entry {note_id!r} has a field of the wrong type", "manifest")
            notes[note_id] = note
        for note_id, entry in _object(obj.get("tombstones", {}), "manifest.tombstones").items():
            tomb = ManifestTombstone(entry["rev"], entry["deletedAt"], entry["v"])
            if not (type(tomb.rev) is str and type(tomb.deleted_at) is int and type(tomb.v) is int):
                raise _fail(f"tombstone {note_id!r} has a field of the wrong type", "manifest")
            tombstones[note_id] = tomb
    except (KeyError, TypeError, AttributeError) as exc:
        raise _fail(f"a manifest entry is incomplete ({exc!r})", "manifest") from exc
    generation = obj.get("generation")
    history = obj.get("history", [])
    if not (generation is None or type(generation) is str) or not (
        type(history) is list and all(type(item) is str for item in history)
    ):
        raise _fail("the manifest's generation or history has the wrong type", "manifest")
    return Manifest(
        version=_int(obj, "version"),
        updated_at=_int(obj, "updatedAt"),
        gc_version=_int(obj, "gcVersion"),
        notes=notes,
        tombstones=tombstones,
        generation=generation,
        history=tuple(history) if generation is not None else (),
    )


# --------------------------------------------------------------------------- key layout


#: The hashed form of a subject that is not a safe key segment (``u-`` + 32 hex digits).
_HASHED_SEGMENT: Final = re.compile(r"u-[0-9a-f]{32}")


def is_reserved_subject(sub: str) -> bool:
    """True for a subject shaped like the hashed form, which the server refuses: used as is,
    it would share a storage prefix with the subject whose hash it spells (spec 06.1)."""
    return _HASHED_SEGMENT.fullmatch(sub) is not None


def user_key_segment(sub: str) -> str:
    """The key segment of a verified user (or team) id: itself when it is a safe segment,
    else ``u-`` + the first 32 hex digits of its SHA-256 (spec 06.1).

    Injective because subjects of the hashed shape are refused before they get here (see
    :func:`is_reserved_subject`); existing stores keep their keys, nothing needs migrating."""
    if is_reserved_subject(sub):
        raise _fail(f"the subject {sub!r} has the reserved shape u-<32 hex digits>", "sub")
    if USER_SEGMENT_PATTERN.fullmatch(sub):
        return sub
    return "u-" + hashlib.sha256(sub.encode("utf-8", errors="surrogatepass")).hexdigest()[:32]


def user_prefix(user_segment: str) -> str:
    """Everything stored for one user's memory: ``users/<segment>/``."""
    return f"users/{user_segment}/"


def scope_prefix(user_segment: str, scope: SyncScope) -> str:
    """The key prefix of one scope, ending in ``/``."""
    if scope.kind == "user":
        return f"users/{user_segment}/memory/"
    if scope.project_id is None or not is_valid_segment(scope.project_id):
        raise _fail(f"invalid project id {scope.project_id!r}", "scope")
    return f"users/{user_segment}/projects/{scope.project_id}/memory/"


def manifest_key(prefix: str) -> str:
    """The manifest of the scope at ``prefix``."""
    return prefix + "manifest.json"


def object_key(prefix: str, note_id: str, rev: str) -> str:
    """The immutable object holding revision ``rev`` of note ``note_id``."""
    if not is_valid_segment(note_id) or not is_revision(rev):
        raise _fail(f"invalid object name {note_id!r}/{rev!r}", "id")
    return f"{prefix}objects/{note_id}/{rev}.md"


def user_erase_marker_key(user_segment: str) -> str:
    """The erase marker of a user."""
    return f"erased/users/{user_segment}.json"


def team_erase_marker_key(team_segment: str) -> str:
    """The erase marker of a team."""
    return f"erased/teams/{team_segment}.json"


def user_feed_prefix(user_segment: str) -> str:
    """A user's feed objects (removed by an erase)."""
    return f"feed/{user_segment}/"


def team_feed_prefix(team_segment: str) -> str:
    """A team's feed objects (removed by a team erase)."""
    return f"feed/team-{team_segment}/"
