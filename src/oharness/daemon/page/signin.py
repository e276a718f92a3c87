"""What a browser sees before it is signed in, and right after the one-time link."""

from __future__ import annotations

from markupsafe import Markup
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse

from oharness.daemon.page.i18n import Translator, choose_language
from oharness.daemon.page.render import command, environment, marked
from oharness.daemon.page.view import PAGE_PREFIX


def _translator(connection: HTTPConnection) -> Translator:
    language = choose_language(
        connection.query_params.get("lang"), connection.headers.get("accept-language")
    )
    return Translator(language)


def _render(t: Translator, *, signed_in: bool) -> str:
    def tm(key: str, **values: object) -> Markup:
        return marked(t, key, **values)

    template = environment().get_template("signin.html")
    return template.render(t=t, tm=tm, command=command, lang=t.language, signed_in=signed_in)


def wants_page(connection: HTTPConnection, method: str) -> bool:
    """A browser navigating to the page (not an htmx request or an API client)."""
    path = connection.url.path
    return (
        method == "GET"
        and (path == PAGE_PREFIX or path.startswith(PAGE_PREFIX + "/"))
        and connection.headers.get("hx-request") != "true"
        and "text/html" in connection.headers.get("accept", "")
    )


def signin_required(connection: HTTPConnection) -> HTMLResponse:
    """401 as a page saying how to sign in (the daemon's one-time link)."""
    t = _translator(connection)
    html = _render(t, signed_in=False)
    return HTMLResponse(html, status_code=401, headers={"Cache-Control": "no-store"})


def signed_in(connection: HTTPConnection) -> HTMLResponse:
    """The answer to the one-time link: signed in, on to the page."""
    t = _translator(connection)
    html = _render(t, signed_in=True)
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})
