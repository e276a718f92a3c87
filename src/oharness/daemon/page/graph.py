"""The page's Graph section: the notes' links and what recall uses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oharness.daemon.page.view import PageView, Section


def _context(view: PageView) -> Mapping[str, Any]:
    return {}


SECTION = Section("graph", _context)
