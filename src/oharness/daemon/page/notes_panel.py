"""The Notes section's right-hand panel: one note with its links, or the note form."""

from __future__ import annotations

from typing import Any

from oharness.daemon.page.usage import DAY_MS, DAYS, day_series, usage_counts, usage_history
from oharness.daemon.page.view import PageView
from oharness.errors import NotFoundError, OHarnessError
from oharness.notes.ids import check_id
from oharness.types import Scope


def parse_note_ref(value: str) -> tuple[str | None, Scope | None]:
    """``project:ID`` / ``user:ID`` (as the page's links carry them) or a bare id."""
    prefix, sep, rest = value.partition(":")
    scope: Scope | None = None
    if sep and prefix in ("project", "user"):
        scope = "user" if prefix == "user" else "project"
        value = rest
    try:
        return check_id(value), scope
    except OHarnessError:
        return None, None


def empty_form() -> dict[str, str]:
    return {"id": "", "hash": "", "summary": "", "type": "", "tags": "", "scope": "", "body": ""}


def note_panel(
    view: PageView, ref: str, *, edit: bool = False, new: bool = False
) -> dict[str, Any]:
    """What the panel shows: ``new`` (the empty form), ``edit``, ``view``, ``gone`` or ``none``."""
    service = view.hosted.workspace.service
    base: dict[str, Any] = {"ref": ref, "scopes": service.available_scopes()}
    if new:
        return {**base, "mode": "new", "form": empty_form(), "errors": {}}
    if not ref:
        return {**base, "mode": "none"}
    note_id, scope = parse_note_ref(ref)
    if note_id is None:
        return {**base, "mode": "gone"}
    try:
        note = service.read(note_id, scope)
    except NotFoundError:
        return {**base, "mode": "gone"}
    if edit:
        form = {
            "id": note.id,
            "hash": note.hash,
            "summary": note.summary,
            "type": note.type or "",
            "tags": ", ".join(note.tags),
            "scope": note.scope,
            "body": note.body,
        }
        return {**base, "mode": "edit", "note": note, "form": form, "errors": {}}
    workspace = view.hosted.workspace
    usage = usage_counts(workspace).get((note.scope, note.id))
    per_day = usage_history(workspace).get((note.scope, note.id), {}) if usage else {}
    series = day_series(per_day, view.state.options.clock() // DAY_MS)
    return {**base, "mode": "view", "note": note, "usage": usage, "series": series, "days": DAYS}
