"""The page's Backups (spec 11, section 5): not available yet (the section says so plainly)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oharness.daemon.page.view import PageView, Section


def _context(view: PageView) -> Mapping[str, Any]:
    return {}


SECTION = Section("backups", _context)
