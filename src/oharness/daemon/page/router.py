"""The page's routes: ``/memory`` and ``/memory/<section>``, the static files, the sections.

The navigation is the memory plugin's page descriptor (spec 09.5, ``MEMORY_PAGE``): its
sections in order, each rendered by the implementation of the same name in :data:`SECTIONS`
(a descriptor section without one is an error when the router is built, so the two never
drift). Adding a section: a module ``page/<name>.py`` defining ``SECTION``, a template
``templates/sections/<name>.html``, its labels in ``strings/*.json``, one line below and one
``PageSection`` in the descriptor.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from oharness.daemon.errors import DaemonApiError
from oharness.daemon.page import backups, conflicts, graph, notes, sync, tidy
from oharness.daemon.page.messages import error_text
from oharness.daemon.page.render import render_fragment, render_page
from oharness.daemon.page.view import PAGE_PREFIX, Section, page_view
from oharness.errors import OHarnessError
from oharness.harness.memory_plugin import MEMORY_PAGE
from oharness.harness.plugin import PageDescriptor

#: Every section implementation, by name (the descriptor decides order and presence).
SECTIONS: Final[Mapping[str, Section]] = {
    module.SECTION.name: module.SECTION for module in (notes, sync, conflicts, tidy, backups, graph)
}

#: The vendored static files (name → content type); nothing else is served.
STATIC_FILES: Final = {
    "htmx-2.0.11.min.js": "text/javascript",
    "htmx-ext-sse-2.2.4.js": "text/javascript",
    "htmx-LICENSE.txt": "text/plain",
    "htmx-ext-sse-LICENSE.txt": "text/plain",
    "page.js": "text/javascript",
    "page.css": "text/css",
    "sections.css": "text/css",
    "favicon.svg": "image/svg+xml",
}


def described_sections(descriptor: PageDescriptor = MEMORY_PAGE) -> list[Section]:
    """The descriptor's sections, in its order, as implementations."""
    found = []
    for described in descriptor.sections:
        section = SECTIONS.get(described.id)
        if section is None:
            raise LookupError(
                f"the page descriptor names section {described.id!r}, which has "
                "no implementation in oharness.daemon.page"
            )
        found.append(section)
    return found


def _static(name: str) -> Response:
    content_type = STATIC_FILES.get(name)
    if content_type is None:
        raise DaemonApiError(404, "not_found", "no such file")
    data = resources.files(__package__).joinpath("static", name).read_bytes()
    return Response(
        data,
        media_type=content_type,
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )


def error_page(request: Request, error: OHarnessError) -> Response:
    """A refusal as a page (a navigation) or as a message the status bar shows (htmx)."""
    status = error.status if isinstance(error, DaemonApiError) else 400
    try:
        view = page_view(request, check=False)
    except OHarnessError:  # no workspace to word it for: the library's own words
        return JSONResponse({"error": error.message, "code": error.code}, status_code=status)
    message = error_text(view.t, error)
    if request.headers.get("hx-request") == "true":  # the status bar shows it (page.js)
        body = {"error": message.striptags(), "code": error.code, "page": True}
        return JSONResponse(body, status_code=status)
    context = {"message": message, "back_url": view.url("notes")}
    return render_fragment(view, "error.html", context, status=status)


def _render_section(request: Request, section: Section, sections: Sequence[Section]) -> Response:
    try:
        view = page_view(request)
        for listener in view.state.use_listeners:  # an open page counts as using the project
            listener(view.hosted)
        watcher = view.state.note_watcher
        if watcher is not None and not view.is_fragment:  # before any note is read
            view = dataclasses.replace(view, watch_version=watcher.look_now())
        context = section.context(view)
    except OHarnessError as exc:
        return error_page(request, exc)
    if view.is_fragment:
        return render_fragment(view, f"sections/{section.name}.html", context)
    return render_page(view, section, sections, context)


async def render_section(
    request: Request, section: Section, sections: Sequence[Section]
) -> Response:
    """A section: the whole page for a navigation, the section alone for an htmx refresh.

    Built in a worker thread: at thousands of notes a section takes a noticeable fraction of a
    second, which must not hold up the event streams and the API on the daemon's loop.
    """
    return await asyncio.to_thread(_render_section, request, section, sections)


def page_router(descriptor: PageDescriptor = MEMORY_PAGE) -> APIRouter:
    """The Memory page, mounted by the daemon at ``/memory``."""
    sections = described_sections(descriptor)
    first = sections[0]
    router = APIRouter(prefix=PAGE_PREFIX, include_in_schema=False)

    @router.get("")
    async def index(request: Request) -> Response:
        query = request.url.query
        target = f"{PAGE_PREFIX}/{first.name}" + (f"?{query}" if query else "")
        return RedirectResponse(target, status_code=303)

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        return _static(name)

    for section in sections:
        if section.routes is not None:
            section.routes(router)
        _add_section_route(router, section, sections)
    return router


def _add_section_route(router: APIRouter, section: Section, sections: list[Section]) -> None:
    async def show(request: Request) -> Response:
        return await render_section(request, section, sections)

    router.add_api_route(f"/{section.name}", show, methods=["GET"], name=f"page-{section.name}")
