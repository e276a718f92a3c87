"""The fields of a note as a write gives them, cleaned and checked (spec 02.1): what
``remember`` refuses, checkable before anything is opened or registered."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oharness.notes.ids import check_type, checked_tags, clean_body, clean_summary, split_tags
from oharness.notes.secrets import check_no_secrets


class Unset(enum.Enum):
    """Marks an argument the caller left out (distinct from an explicit ``None``)."""

    UNSET = "unset"


UNSET = Unset.UNSET


@dataclass(frozen=True)
class Fields:
    """A write's fields: cleaned, and ``UNSET`` where an update keeps the note's."""

    summary: str
    body: str
    type: str | Unset | None
    tags: tuple[str, ...] | Unset
    extra: dict[str, Any] | Unset = UNSET


def checked_fields(
    summary: str,
    body: str,
    type: str | Unset | None,
    tags: str | Iterable[str] | Unset | None,
    max_note_bytes: int,
) -> Fields:
    """The fields cleaned; raises what a write refuses in them (credentials in the tags as
    given; the rest is checked on the note as it would be stored)."""
    if tags is not UNSET and tags is not None:
        # Checked as given: cleaning lower-cases tags, which would hide an AWS key or JWT.
        check_no_secrets({"tags": "\n".join(split_tags(tags))})
    return Fields(
        summary=clean_summary(summary),
        body=clean_body(body, max_note_bytes),
        type=UNSET if type is UNSET else check_type(type),
        tags=UNSET if tags is UNSET else checked_tags(tags),
    )


def check_new_note(
    summary: str,
    body: str,
    *,
    type: str | Unset | None = UNSET,
    tags: str | Iterable[str] | Unset | None = UNSET,
) -> None:
    """Raise what :meth:`MemoryService.remember` refuses in a new note, whatever the folder's
    settings (the size limit is theirs): checked before a command registers a project for it,
    so a refused note leaves the folder as it was."""
    fields = checked_fields(summary, body, type, tags, max_note_bytes=2**62)
    check_secrets(fields.summary, () if fields.tags is UNSET else fields.tags, fields.body)


def check_secrets(summary: str, tags: Iterable[str], body: str) -> None:
    check_no_secrets({"summary": summary, "tags": "\n".join(tags), "body": body})
