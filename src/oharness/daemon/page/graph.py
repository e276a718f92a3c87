"""The page's Graph section: see the memory — its links, and what recall actually uses.

- The link graph of both scopes (:mod:`graph_layout`), drawn as server-side SVG: node size is
  the note's recall count on this machine (``memory-usage/``), dangling links end in a red
  node, orphans sit apart; every node is a link that opens the note. At most :data:`DRAWN`
  notes are drawn; the page says how many and which were left out.
- Recall use over time: recalls per day over the last :data:`DAYS` days, overall and for the
  most recalled notes (the per-day counts ``memory-usage/`` keeps, see
  :mod:`oharness.memory.usage`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oharness.daemon.page.graph_labels import place_labels
from oharness.daemon.page.graph_layout import GraphNote, NodeKey, layout_graph
from oharness.daemon.page.usage import (
    DAY_MS,
    DAYS,
    day_series,
    usage_counts,
    usage_history,
    usage_stamp,
)
from oharness.daemon.page.view import PageView, Section
from oharness.memory.memory_service import MemoryService
from oharness.memory.workspace import Workspace

#: The most notes the graph draws (linked components first, then orphans).
DRAWN: Final = 400
#: How many notes the "most recalled" table lists.
TOP: Final = 15


def graph_notes(service: MemoryService, recalls: Mapping[NodeKey, int]) -> list[GraphNote]:
    """Every note with its links resolved as everywhere (notes/links.py: project first)."""
    notes = service.all_notes()
    index = service.link_index()
    found = []
    for stored in notes:
        links: list[NodeKey | str] = []
        for target in stored.links:
            resolved = index.resolve(target)
            if resolved.scope is not None and resolved.id is not None:
                links.append((resolved.scope, resolved.id))
            else:
                links.append(target)
        key = (stored.scope, stored.id)
        found.append(GraphNote(key, stored.note.summary, recalls.get(key, 0), tuple(links)))
    return found


#: The last context per workspace, with what it was computed from.
_CACHE: dict[str, tuple[object, Mapping[str, Any]]] = {}


def _context(view: PageView) -> Mapping[str, Any]:
    """The section's data; computed again only when the notes or the recall counts changed."""
    workspace = view.hosted.workspace
    service = workspace.service
    service.all_notes()  # brings the stores' generations up to date with the disk
    today = view.state.options.clock() // DAY_MS
    stamp = (
        tuple((scope, service.store(scope).generation) for scope in service.available_scopes()),
        usage_stamp(workspace),
        today,
    )
    cached = _CACHE.get(view.hosted.key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    context = _compute(workspace, today)
    _CACHE[view.hosted.key] = (stamp, context)
    return context


def _compute(workspace: Workspace, today: int) -> Mapping[str, Any]:
    service = workspace.service
    counts = usage_counts(workspace)
    recalls: dict[NodeKey, int] = {key: usage.count for key, usage in counts.items()}
    notes = graph_notes(service, recalls)
    layout = layout_graph(notes, limit=DRAWN)
    degree: dict[NodeKey, int] = {note.key: len(note.links) for note in notes}
    for note in notes:
        for target in note.links:
            if isinstance(target, tuple):
                degree[target] = degree.get(target, 0) + 1
    labels = {label.key: label for label in place_labels(layout, degree)}
    dangling_links = sum(1 for note in notes for t in note.links if isinstance(t, str))
    history = usage_history(workspace)
    overall: dict[int, int] = {}
    for per_day in history.values():
        for day, count in per_day.items():
            overall[day] = overall.get(day, 0) + count
    summaries = {note.key: note.summary for note in notes}
    top = sorted(
        (key for key in counts if key in summaries),
        key=lambda key: (-counts[key].count, key),
    )[:TOP]
    return {
        "layout": layout,
        "labels": labels,
        "dangling_links": dangling_links,
        "overall": day_series(overall, today),
        "top": [
            {
                "ref": f"{key[0]}:{key[1]}",
                "summary": summaries[key],
                "usage": counts[key],
                "series": day_series(history.get(key, {}), today),
            }
            for key in top
        ],
        "days": DAYS,
    }


SECTION = Section("graph", _context)
