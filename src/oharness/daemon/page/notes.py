"""The page's Notes section (spec 11, section 1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oharness.daemon.page.view import PageView, Section


def _context(view: PageView) -> Mapping[str, Any]:
    listing = view.hosted.workspace.service.listing(0, 200)
    return {"items": listing.items, "total": listing.total}


SECTION = Section("notes", _context)
