"""Jinja2 rendering of the page: the layout around a section, or a fragment alone."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2
import markupsafe
from starlette.responses import HTMLResponse

from oharness.daemon.page.i18n import LANGUAGE_NAMES, LANGUAGES
from oharness.daemon.page.view import PageView, Section
from oharness.notes.invisible import escape_invisible, invisible_positions
from oharness.types import NOTE_TYPES


class EditableText(str):
    """Text put in an editor as it is: its invisible characters kept (``|editable``)."""


def _shown(value: Any) -> Any:
    """Every value a template prints: invisible characters (bidi controls, zero-width…)
    shown as ``\\uXXXX`` (plain text, safe in an attribute too); an editor's text as it is."""
    if isinstance(value, EditableText):
        return str(value)
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return escape_invisible(value)
    return value


def invisible_codes(text: str) -> list[str]:
    """The invisible characters of ``text``, each once, as ``U+XXXX`` (an editor's hint)."""
    codes = (f"U+{ord(text[index]):04X}" for index in invisible_positions(text))
    return list(dict.fromkeys(codes))


@cache
def environment() -> jinja2.Environment:
    """The template environment (autoescaped; undefined variables are errors; invisible
    characters shown as escapes except in an editor)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("oharness.daemon.page", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["when"] = format_time
    env.filters["editable"] = EditableText
    env.filters["invisible_codes"] = invisible_codes
    env.globals["NOTE_TYPES"] = NOTE_TYPES
    return env


def format_time(ms: int | None) -> str:
    """An epoch-milliseconds time as ``YYYY-MM-DD HH:MM UTC`` (empty for none)."""
    if not ms:
        return ""
    moment = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _common(view: PageView) -> dict[str, Any]:
    return {
        "view": view,
        "t": view.t,
        "lang": view.language,
        "languages": [(code, LANGUAGE_NAMES[code]) for code in LANGUAGES],
    }


def render_fragment(
    view: PageView, template: str, context: Mapping[str, Any], *, status: int = 200
) -> HTMLResponse:
    """One template on its own (an htmx swap)."""
    html = environment().get_template(template).render({**_common(view), **context})
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def render_page(
    view: PageView,
    section: Section,
    sections: Sequence[Section],
    context: Mapping[str, Any],
    *,
    status: int = 200,
) -> HTMLResponse:
    """The whole page: the layout with ``section``'s template inside."""
    values = {
        **context,
        "section": section,
        "sections": sections,
        "section_template": f"sections/{section.name}.html",
    }
    return render_fragment(view, "base.html", values, status=status)
