"""The page's To tidy up list (spec 11, section 4): not available yet (it says so plainly)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oharness.daemon.page.view import PageView, Section


def _context(view: PageView) -> Mapping[str, Any]:
    return {}


SECTION = Section("tidy", _context)
