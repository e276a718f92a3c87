"""Fragments built off the daemon's event loop (Cloud sync, Conflicts, To tidy up, Backups).

A section's context reads files (the review over thousands of notes, backups, sync state):
built in a worker thread, like the sections themselves (``router.render_section``), so the event
streams and the API never wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import HTMLResponse

from oharness.daemon.page.render import render_fragment
from oharness.daemon.page.view import PageView


async def fragment(
    view: PageView,
    template: str,
    build: Callable[[], Mapping[str, Any]],
    *,
    status: int = 200,
) -> HTMLResponse:
    """``template`` rendered with the context ``build()`` returns, both in a worker thread."""
    return await asyncio.to_thread(lambda: render_fragment(view, template, build(), status=status))
