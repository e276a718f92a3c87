"""Jinja2 rendering of the page: the layout around a section, or a fragment alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2
import markupsafe
from starlette.responses import HTMLResponse

from oharness.daemon.page.i18n import LANGUAGES, Translator
from oharness.daemon.page.view import PageView, Section
from oharness.notes.invisible import escape_invisible, invisible_positions
from oharness.types import NOTE_TYPES, default_scope_for


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
    env.filters["when"] = _when
    env.filters["ago"] = _ago
    env.filters["editable"] = EditableText
    env.filters["invisible_codes"] = invisible_codes
    env.globals["NOTE_TYPES"] = NOTE_TYPES
    env.globals["user_types"] = _user_types
    env.globals["command"] = command
    return env


@jinja2.pass_context
def _when(context: jinja2.runtime.Context, ms: int | None) -> str:
    """``|when``: an epoch-milliseconds time in the page's language (empty for none)."""
    translator: Translator = context["t"]
    return translator.moment(ms)


@jinja2.pass_context
def _ago(context: jinja2.runtime.Context, ms: int | None) -> str:
    """``|ago``: an epoch-milliseconds time relative to now, in the page's language."""
    translator: Translator = context["t"]
    return translator.ago(ms)


@jinja2.pass_context
def _user_types(context: jinja2.runtime.Context) -> str:
    """The types ``remember`` saves to the user's own notes when no scope is given, by name
    (``default_scope_for``, so the form says what saving does)."""
    translator: Translator = context["t"]
    kinds = [kind for kind in NOTE_TYPES if default_scope_for(kind) == "user"]
    return ", ".join(translator(f"type.{kind}") for kind in kinds)


def command(text: str) -> markupsafe.Markup:
    """A command a person types, as code inside a message (never translated)."""
    return markupsafe.Markup('<code translate="no">{}</code>').format(text)


def marked(t: Translator, key: str, **values: object) -> markupsafe.Markup:
    """A message whose values are the person's data (ids, summaries, paths, commands): each
    escaped and marked ``translate="no"`` (so the translation check tells data from words);
    a value already made of messages (``Markup``) goes in as it is."""
    shown = {
        name: value
        if isinstance(value, markupsafe.Markup)
        or (isinstance(value, int) and not isinstance(value, bool))
        else markupsafe.Markup('<span class="data" translate="no">{}</span>').format(
            _shown(str(value))
        )
        for name, value in values.items()
    }
    return markupsafe.Markup(markupsafe.escape(t(key, **_placeholders(shown))).format(**shown))


class _Hole(str):
    """A placeholder kept for :func:`marked`'s second pass (its format spec is dropped)."""

    def __format__(self, spec: str) -> str:
        return str(self)


def _placeholders(values: Mapping[str, object]) -> dict[str, object]:
    return {
        name: value if isinstance(value, int) else _Hole("{" + name + "}")
        for name, value in values.items()
    }


def _common(view: PageView) -> dict[str, Any]:
    return {
        "view": view,
        "t": view.t,
        "lang": view.language,
        "tm": lambda key, **values: marked(view.t, key, **values),
        "languages": [(code, view.t(f"page.language_name.{code}")) for code in LANGUAGES],
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
