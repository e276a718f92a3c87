"""The Memory page (spec 11): server-rendered HTML at ``/memory``, htmx for the live parts.

See docs/page.md: what each section shows, how the page is served and secured, how to add a
section and the event → fragment convention.

- ``router`` — the page's routes, the static files, the section table; ``view`` — what every
  page request knows; ``render`` — Jinja2 rendering of a page or a fragment; ``threaded`` —
  fragments built off the event loop; ``signin`` — before and right after signing in;
- sections, each named for what it shows: ``notes`` (with ``notes_panel`` and ``captured``),
  ``sync`` (with ``cloud``, the page's handle on sync), ``conflicts``, ``tidy``, ``backups``
  (with ``backup_preview``), ``graph`` (with ``graph_layout`` and ``graph_labels``, pure);
- ``usage`` — what recall used, for the notes and graph sections;
- ``messages`` — what the page says about errors, findings and sync; ``i18n`` — the message
  catalogues.
"""

from oharness.daemon.page.router import SECTIONS, page_router

__all__ = ["SECTIONS", "page_router"]
