"""What every page request knows: the daemon, the workspace, the language, how to link.

A :class:`Section` is one entry of the navigation: its name is its URL segment
(``/memory/<name>``), its template (``templates/sections/<name>.html``) and its label key
(``nav.<name>``). ``context`` gives the template's variables; ``routes`` adds the section's
own fragment and action routes to the page router.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request

from oharness.daemon.auth import SAFE_METHODS
from oharness.daemon.errors import DaemonApiError
from oharness.daemon.page.i18n import DEFAULT_LANGUAGE, Translator, choose_language
from oharness.daemon.state import DaemonState
from oharness.daemon.workspaces import DaemonWorkspace
from oharness.types import Scope

PAGE_PREFIX: Final = "/memory"
#: The largest form body a page action reads (a note is at most 128 KiB; the rest is slack).
MAX_FORM_BYTES: Final = 512 * 1024


@dataclass(frozen=True)
class PageView:
    """One request to the page, resolved: whose memory, which language."""

    request: Request
    state: DaemonState
    hosted: DaemonWorkspace
    language: str
    t: Translator
    #: The note watcher's version this render was made at (``/events?since=``); None: unknown.
    watch_version: int | None = None

    @property
    def workspace_param(self) -> str | None:
        """The ``workspace`` query value links carry (None for the default workspace)."""
        return None if self.hosted.default else self.hosted.project_id

    def url(self, path: str, **params: object) -> str:
        """A page URL keeping the workspace and language; ``None`` values are left out."""
        query: dict[str, str] = {}
        if self.workspace_param is not None:
            query["workspace"] = self.workspace_param
        if self.language != DEFAULT_LANGUAGE and self.request.query_params.get("lang"):
            query["lang"] = self.language
        for key, value in params.items():
            if value is not None and value != "":
                query[key] = str(value)
        full = path if path.startswith("/") else f"{PAGE_PREFIX}/{path}"
        return f"{full}?{urlencode(query)}" if query else full

    def workspace_url(self, path: str, hosted: DaemonWorkspace) -> str:
        """The same page for another hosted workspace."""
        query = {} if hosted.default else {"workspace": hosted.project_id}
        if self.language != DEFAULT_LANGUAGE and self.request.query_params.get("lang"):
            query["lang"] = self.language
        full = f"{PAGE_PREFIX}/{path}"
        return f"{full}?{urlencode(query)}" if query else full

    @property
    def events_url(self) -> str:
        """The event stream of this workspace (its own events and the daemon-wide ones), from
        the note watcher's version this render was made at."""
        project_id = self.hosted.project_id
        query: dict[str, object] = {} if project_id is None else {"workspace": project_id}
        if self.watch_version is not None:
            query["since"] = self.watch_version
        return f"/events?{urlencode(query)}"

    @property
    def csrf_token(self) -> str:
        return self.state.auth.csrf_token

    @property
    def is_fragment(self) -> bool:
        """An htmx request (it swaps part of the page) rather than a navigation."""
        return self.request.headers.get("hx-request") == "true"

    def changed(self, scope: Scope, source: str = "page") -> None:
        """After the page wrote a note: wake sync for that scope and tell other tabs."""
        self.state.changed(self.hosted, scope, source)


def page_view(request: Request, *, check: bool = True) -> PageView:
    """Resolve ``?workspace=`` (a hosted project id; the default without it) and the language.

    Raises :class:`DaemonApiError`: 404 for a workspace the daemon does not host, 409 when memory is
    switched off for it (``check=False`` skips that: the error page itself).
    """
    state: DaemonState = request.app.state.daemon
    workspace = request.query_params.get("workspace") or None
    hosted = state.registry.default if not check else state.workspace_for(workspace)
    language = choose_language(
        request.query_params.get("lang"), request.headers.get("accept-language")
    )
    view = PageView(request, state, hosted, language, Translator(language, state.options.clock()))
    if check and not hosted.memory_enabled():
        raise DaemonApiError(409, "managed_memory_unavailable", view.t("page.memory_off"))
    return view


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded form body (the last value of each key), at most :data:`MAX_FORM_BYTES`."""
    from urllib.parse import parse_qsl

    if request.method in SAFE_METHODS:
        return {}
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_FORM_BYTES:
            raise DaemonApiError(413, "form_too_large", "the form is too large to be a note")
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DaemonApiError(400, "invalid_form", "the form is not UTF-8 text") from exc
    return dict(parse_qsl(text, keep_blank_values=True, strict_parsing=False))


ContextBuilder = Callable[[PageView], Mapping[str, Any]]
RouteAdder = Callable[[APIRouter], None]


@dataclass(frozen=True)
class Section:
    """One section of the page (see the module notes)."""

    name: str
    context: ContextBuilder
    routes: RouteAdder | None = None
