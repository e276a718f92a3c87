"""The page's Notes section (spec 11, section 1): both scopes, search, filters, open, edit.

- Search is the ``memory`` tool's (:meth:`MemoryService.search`, the recall scorer), then the
  type, tag and scope filters; without a query, every note, most recently updated first. At
  most :data:`SHOWN` rows are drawn (the page says how many matched).
- Create and edit go through :meth:`MemoryService.remember`, so the page refuses exactly what
  the tool refuses (a credential, a bad type, an empty summary…), shown next to the field, with
  nothing written. An edit also carries the hash of the version it started from: when the note
  changed meanwhile (the agent, sync), the save is refused with the person's text kept.
- Delete is :meth:`MemoryService.forget` with the backup reason ``page-delete``.
- Markdown files of the notes folders that are not notes (yet) are listed below the notes
  with the reason and the fix (:func:`oharness.memory.doctor.loose_files`); their button is
  ``oharness memory adopt``'s :func:`oharness.importers.adopt.adopt_file`.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from fastapi import APIRouter
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from oharness.daemon.page.captured import captured_context
from oharness.daemon.page.i18n import Translator
from oharness.daemon.page.messages import error_text
from oharness.daemon.page.notes_panel import note_panel, parse_note_ref
from oharness.daemon.page.render import marked, render_fragment
from oharness.daemon.page.usage import usage_counts
from oharness.daemon.page.view import PageView, Section, page_view, read_form
from oharness.errors import ConflictError, OHarnessError, SecretError, ValidationError
from oharness.importers.adopt import adopt_file
from oharness.memory.doctor import loose_files
from oharness.memory.memory_service import MemoryService
from oharness.memory.note_filter import MAX_TAG_CHARS, NoteFilter
from oharness.notes.format import Note
from oharness.notes.invisible import escape_invisible
from oharness.notes.loose import MAX_READ_BYTES, LooseFile
from oharness.notes.store import NOTE_SUFFIX, StoredNote
from oharness.types import NOTE_TYPES, SCOPES, Scope, parse_scope

#: The most rows the list draws; the rest are counted, not drawn.
SHOWN: Final = 200
#: The most tags the tag filter offers (the most used; a tag in a note links to its filter).
TAG_CHOICES: Final = 100
FORM_FIELDS: Final = ("summary", "type", "tags", "scope", "body")


@dataclass(frozen=True)
class Filters:
    query: str = ""
    type: str = ""
    tag: str = ""
    scope: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> Filters:
        scope = params.get("scope", "")
        kind = params.get("type", "")
        return cls(
            query=params.get("q", "").strip()[:500],
            type=kind if kind in (*NOTE_TYPES, "none") else "",
            tag=params.get("tag", "").strip().casefold()[:MAX_TAG_CHARS],
            scope=scope if scope in SCOPES else "",
        )

    def keeps(self, stored: StoredNote) -> bool:
        """The library's filter (``NoteFilter``: the CLI's and the API's too)."""
        return NoteFilter(self.scope, self.type, self.tag).keeps(stored)

    def query_params(self) -> dict[str, str]:
        return {"q": self.query, "type": self.type, "tag": self.tag, "scope": self.scope}


@dataclass(frozen=True)
class Row:
    stored: StoredNote
    snippet: str = ""


def matching_notes(service: MemoryService, filters: Filters) -> list[Row]:
    """The notes the list shows, best first (search) or newest first (no query)."""
    if filters.query:
        # Filtered, every match is needed; unfiltered, one more than is drawn says "more".
        filtered = filters.type or filters.tag or filters.scope
        limit = len(service.all_notes()) if filtered else SHOWN + 1
        hits = service.search(filters.query, limit=max(1, limit))
        rows = []
        for hit in hits:
            stored = service.store(hit.scope).get(hit.id)
            if stored is not None and filters.keeps(stored):
                rows.append(Row(stored, hit.snippet))
        return rows
    notes = [stored for stored in service.all_notes() if filters.keeps(stored)]
    notes.sort(key=lambda s: (-s.note.updated_at, s.scope, s.id))
    return [Row(stored) for stored in notes]


def common_tags(service: MemoryService, chosen: str) -> list[str]:
    """The :data:`TAG_CHOICES` most used tags, sorted, and the chosen one (a tag's own link)."""
    used = Counter(tag for stored in service.all_notes() for tag in stored.note.tags)
    tags = {tag for tag, _ in used.most_common(TAG_CHOICES)}
    if chosen:
        tags.add(chosen.strip().lower())
    return sorted(tags)


def _list_context(view: PageView) -> dict[str, Any]:
    service = view.hosted.workspace.service
    filters = Filters.of(view.request.query_params)
    rows = matching_notes(service, filters)
    counts = usage_counts(view.hosted.workspace)
    return {
        "filters": filters,
        "rows": rows[:SHOWN],
        "matched": len(rows),
        # An unfiltered search stops one past what is drawn: the total is not counted.
        "best_only": bool(filters.query)
        and len(rows) > SHOWN
        and not (filters.type or filters.tag or filters.scope),
        "counts": counts,
        "open_ref": view.request.query_params.get("note", ""),
        "loose": [(file, loose_line(file, view.t)) for file in loose_files(service)],
    }


def loose_line(file: LooseFile, t: Translator) -> str:
    """A loose file's reason and fix in the page's language (the command line keeps the
    library's English, with the parse error's details)."""
    folder, _, name = file.relative.rpartition("/")
    expected = f"{file.note_id}{NOTE_SUFFIX}"
    if file.note_id is not None:
        where = "in_subfolder" if folder else "misnamed" if file.code == "misnamed" else "renamed"
        why = t(f"notes.loose_why.{where}", id=file.note_id, file=name, folder=folder)
    elif file.code in ("too_large", "unreadable"):
        why = t(f"notes.loose_why.{file.code}", limit=MAX_READ_BYTES)
    else:
        problem = f"notes.loose_problem.{file.code}"
        why = t(
            "notes.loose_why.not_a_note",
            problem=t(problem if t.has(problem) else "notes.loose_problem.other"),
        )
    command = file.adopt_command()
    fix = t(
        f"notes.loose_fix.{file.fix_kind}",
        id=file.note_id or "",
        expected=expected,
        command=command,
    )
    return t("notes.loose_line", why=why, fix=fix)


def _context(view: PageView) -> Mapping[str, Any]:
    service = view.hosted.workspace.service
    params = view.request.query_params
    tags = common_tags(service, params.get("tag", ""))
    return {
        **_list_context(view),
        "types": NOTE_TYPES,
        "scopes": service.available_scopes(),
        "tags": tags,
        "panel": note_panel(
            view,
            params.get("note", ""),
            edit=params.get("edit") == "1",
            new=params.get("new") == "1",
        ),
        "notice": _notice(view),
        "similar": _similar(view),
        "captured": captured_context(view),
    }


def _similar(view: PageView) -> dict[str, str] | None:
    """The likely duplicate remember named after a save, if it still exists."""
    note_id, scope = parse_note_ref(view.request.query_params.get("similar", ""))
    if note_id is None or not view.request.query_params.get("saved"):
        return None
    try:
        stored = view.hosted.workspace.service.find(note_id, scope)
    except OHarnessError:
        return None
    return {"ref": f"{stored.scope}:{stored.id}", "summary": stored.note.summary}


def _notice(view: PageView) -> str | Markup:
    params = view.request.query_params
    if params.get("adopted"):
        key = "notes.adopted" if params.get("backup") else "notes.adopted_back"
        values = {name: params.get(name, "") for name in ("adopted", "backup", "note")}
        note_id = values["note"].partition(":")[2]
        return view.t(key, file=values["adopted"], id=note_id, backup=values["backup"])
    if params.get("saved"):
        return view.t("notes.saved")
    if params.get("deleted"):
        return marked(view.t, "notes.deleted", backup=params.get("deleted", ""))
    return ""


# ---- saving and deleting ----------------------------------------------------------------------


def _refusal(view: PageView, form: Mapping[str, str], error: OHarnessError) -> Response:
    """The form again (422) with the reason next to the field it concerns."""
    field = str(error.details.get("field") or "")
    if isinstance(error, SecretError) and field not in FORM_FIELDS:
        field = "body"
    errors = {field if field in FORM_FIELDS else "form": error_text(view.t, error)}
    context = {
        "form": dict(form),
        "errors": errors,
        "editing": bool(form.get("id")),
        "scopes": view.hosted.workspace.service.available_scopes(),
    }
    return render_fragment(view, "notes/form.html", context, status=422)


def _redirect(view: PageView, **params: object) -> Response:
    return Response(status_code=204, headers={"HX-Redirect": view.url("notes", **params)})


def _save(view: PageView, form: Mapping[str, str]) -> Response:
    service = view.hosted.workspace.service
    note_id = form.get("id", "")
    kind = form.get("type", "")
    scope_value = form.get("scope", "")
    scope: Scope | None = (
        "user" if scope_value == "user" else ("project" if scope_value == "project" else None)
    )
    try:
        if note_id:
            _refuse_lossy_save(service.find(note_id, scope).note, form)
        result = service.remember(
            form.get("summary", ""),
            form.get("body", ""),
            type=kind or None,
            tags=form.get("tags", ""),
            scope=scope,
            id=note_id or None,
            expected_hash=(form.get("hash") or None) if note_id else None,
        )
    except OHarnessError as exc:
        if isinstance(exc, ConflictError) and exc.details.get("reason") == "changed":
            # the file, read under the lock, holds a hand edit made since the form was opened
            exc = ValidationError(
                "changed since opened", field="form", message_key="notes.changed_meanwhile"
            )
        return _refusal(view, form, exc)
    if result.changed:
        view.changed(result.scope)
    twin = result.likely_duplicate  # remember's hint, shown as the tool shows it to a model
    similar = f"{twin['scope']}:{twin['id']}" if twin else None
    return _redirect(view, note=f"{result.scope}:{result.id}", saved=1, similar=similar)


def _refuse_lossy_save(note: Note, form: Mapping[str, str]) -> None:
    """Refuse a save that would change what the person left as it was: a summary or tags
    whose invisible characters the form shows as escapes (``\\u202e``: they can neither be
    seen nor removed as they are), sent back unchanged, would be written as that text; a tag
    written by hand with a space would be split in two."""
    tags = ", ".join(note.tags)
    for field, value in (("summary", note.summary), ("tags", tags)):
        shown = escape_invisible(value)
        if shown != value and form.get(field, "").strip() == shown:
            raise ValidationError(
                f"the {field} holds invisible characters shown as escapes; delete them to save",
                field=field,
                message_key="notes.invisible_shown",
            )
    if form.get("tags", "") == tags and any(len(tag.split()) > 1 for tag in note.tags):
        raise ValidationError(  # "load testing" would come back as "load" and "testing"
            "a tag written by hand holds a space and would become two tags: join its words "
            "with a hyphen",
            field="tags",
            message_key="notes.tag_space",
        )


def _delete(view: PageView, form: Mapping[str, str]) -> Response:
    service = view.hosted.workspace.service
    note_id, scope = parse_note_ref(form.get("note", ""))
    if note_id is None:
        raise ValidationError("gone", message_key="notes.gone")
    result = service.forget(note_id, scope, reason="page-delete")
    view.changed(result.scope)
    return _redirect(view, deleted=result.backup_id)


def _adopt(request: Request, form: Mapping[str, str]) -> Response:
    """The loose file becomes a note (or is put back under its own name), then the page
    opens it; a refusal is shown beside the list with nothing changed."""
    view = page_view(request)
    try:
        scope = parse_scope(form.get("scope") or "project")
        result = adopt_file(view.hosted.workspace, scope, form.get("file", ""))
    except OHarnessError as exc:
        return render_fragment(view, "notes/message.html", {"message": exc.message}, status=422)
    view.changed(result.scope)
    return _redirect(
        view,
        note=f"{result.scope}:{result.id}",
        adopted=result.source,
        backup=result.backup_id,
    )


def _list(request: Request) -> Response:
    view = page_view(request)
    context = _list_context(view)
    response = render_fragment(view, "notes/list.html", context)
    if request.headers.get("hx-trigger") == "notes-filters":  # the address follows the search
        filters: Filters = context["filters"]
        response.headers["HX-Push-Url"] = view.url("notes", **filters.query_params())
    return response


def _panel(request: Request) -> Response:
    view = page_view(request)
    panel = note_panel(view, request.query_params.get("note", ""))
    return render_fragment(view, "notes/panel.html", {"panel": panel})


def _delete_or_explain(request: Request, form: Mapping[str, str]) -> Response:
    view = page_view(request)
    try:
        return _delete(view, form)
    except OHarnessError as exc:
        return render_fragment(
            view, "notes/message.html", {"message": error_text(view.t, exc)}, status=422
        )


#: How many notes the editor suggests after ``[[``.
SUGGESTIONS: Final = 8


def link_suggestions(service: MemoryService, typed: str) -> list[dict[str, str]]:
    """Notes to link for what follows ``[[``: ids starting with it first, then ids or
    summaries containing it (case-insensitive), project first, at most :data:`SUGGESTIONS`."""
    needle = typed.strip().casefold()
    ranked: list[tuple[int, int, str, StoredNote]] = []
    for order, stored in enumerate(service.all_notes()):
        note_id, summary = stored.id.casefold(), stored.note.summary.casefold()
        if note_id.startswith(needle):
            rank = 0
        elif summary.startswith(needle):
            rank = 1
        elif needle in note_id or needle in summary:
            rank = 2
        else:
            continue
        ranked.append((rank, order, stored.id, stored))
    ranked.sort(key=lambda item: item[:3])
    return [
        {"id": stored.id, "summary": stored.note.summary, "scope": stored.scope}
        for *_, stored in ranked[:SUGGESTIONS]
    ]


def _routes(router: APIRouter) -> None:
    @router.get("/notes/link-suggestions")
    async def suggestions(request: Request) -> Response:
        view = page_view(request)
        typed = request.query_params.get("q", "")[:200]
        found = await asyncio.to_thread(link_suggestions, view.hosted.workspace.service, typed)
        return JSONResponse(found, headers={"Cache-Control": "no-store"})

    # The work runs in a worker thread: it reads and writes files, and at thousands of notes
    # a list takes long enough to hold up the event streams on the daemon's loop.
    @router.get("/notes/list")
    async def notes_list(request: Request) -> Response:
        return await asyncio.to_thread(_list, request)

    @router.get("/notes/captured")
    async def notes_captured(request: Request) -> Response:
        view = page_view(request)
        context = {"captured": await asyncio.to_thread(captured_context, view)}
        return render_fragment(view, "notes/captured.html", context)

    @router.get("/notes/panel")
    async def notes_panel(request: Request) -> Response:
        return await asyncio.to_thread(_panel, request)

    @router.post("/notes/save")
    async def notes_save(request: Request) -> Response:
        form = await read_form(request)
        return await asyncio.to_thread(lambda: _save(page_view(request), form))

    @router.post("/notes/adopt")
    async def notes_adopt(request: Request) -> Response:
        form = await read_form(request)
        return await asyncio.to_thread(_adopt, request, form)

    @router.post("/notes/delete")
    async def notes_delete(request: Request) -> Response:
        form = await read_form(request)
        return await asyncio.to_thread(_delete_or_explain, request, form)


SECTION = Section("notes", _context, _routes)
