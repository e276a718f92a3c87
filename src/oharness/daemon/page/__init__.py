"""The Memory page (spec 11): server-rendered HTML at ``/memory``, htmx for the live parts.

See docs/page.md: what each section shows, how the page is served and secured, how to add a
section and the event → fragment convention.
"""

from oharness.daemon.page.router import SECTIONS, page_router

__all__ = ["SECTIONS", "page_router"]
