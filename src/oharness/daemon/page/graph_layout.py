"""The link graph's layout (pure, deterministic): components on rings, packed on shelves.

- Nodes are notes; an edge is a ``[[link]]`` from one note to the note it resolves to (project
  first, as recall resolves it), or to a *dangling* target no note has.
- Each connected component is laid out around its hub (the node with most links): breadth-first
  depth ``d`` on ring ``d``, spread evenly, the ring widened until its nodes do not overlap.
  Components are packed left to right on shelves, largest first; orphans (no link in or out)
  follow in a grid of their own, so they are easy to see.
- At most ``limit`` notes are drawn (linked components first, largest first, then orphans by
  recall count); the caller says on the page how many were left out.
- The same notes give the same picture: every order is sorted by stable keys.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

NodeKey = tuple[str, str]  # (scope, id)
WIDTH = 1200.0
RING = 70.0
SPACING = 34.0
MARGIN = 30.0
#: Orphans sit in a grid of columns wide enough for a circle and its label.
ORPHAN_COLUMN = 200.0
ORPHAN_ROW = 46.0


class GraphNote(NamedTuple):
    """One note as the graph sees it (a tuple: thousands are made per render)."""

    key: NodeKey
    summary: str
    recalls: int
    links: tuple[NodeKey | str, ...]  # a resolved note key, or a dangling target id


@dataclass(frozen=True)
class PlacedNode:
    key: NodeKey | str  # a dangling target is its id
    x: float
    y: float
    radius: float
    summary: str = ""
    recalls: int = 0
    dangling: bool = False
    orphan: bool = False


@dataclass(frozen=True)
class PlacedEdge:
    x1: float
    y1: float
    x2: float
    y2: float
    dangling: bool = False


@dataclass
class Layout:
    width: float = WIDTH
    height: float = 0.0
    nodes: list[PlacedNode] = field(default_factory=list)
    edges: list[PlacedEdge] = field(default_factory=list)
    total: int = 0
    drawn: int = 0
    orphans: int = 0
    dangling: int = 0
    orphans_top: float | None = None


def node_radius(recalls: int) -> float:
    """Bigger for notes recalled more (by area), within 6–22."""
    return min(22.0, 6.0 + 2.5 * math.sqrt(max(0, recalls)))


def _components(notes: Mapping[NodeKey, GraphNote]) -> list[list[NodeKey]]:
    neighbours: dict[NodeKey, set[NodeKey]] = {key: set() for key in notes}
    for key, note in notes.items():
        for target in note.links:
            if isinstance(target, tuple) and target in notes and target != key:
                neighbours[key].add(target)
                neighbours[target].add(key)
    seen: set[NodeKey] = set()
    found: list[list[NodeKey]] = []
    for start in sorted(notes):
        if start in seen:
            continue
        group, queue = [], deque([start])
        seen.add(start)
        while queue:
            current = queue.popleft()
            group.append(current)
            for other in sorted(neighbours[current] - seen):
                seen.add(other)
                queue.append(other)
        found.append(group)
    return found


def _has_links(note: GraphNote, incoming: set[NodeKey]) -> bool:
    return bool(note.links) or note.key in incoming


def _rings(group: Sequence[NodeKey], notes: Mapping[NodeKey, GraphNote]) -> list[list[NodeKey]]:
    members = set(group)
    neighbours: dict[NodeKey, list[NodeKey]] = {key: [] for key in group}
    for key in group:
        for target in notes[key].links:
            if isinstance(target, tuple) and target in members and target != key:
                neighbours[key].append(target)
                neighbours[target].append(key)
    hub = min(group, key=lambda k: (-len(neighbours[k]), -notes[k].recalls, k))
    rings: list[list[NodeKey]] = [[hub]]
    seen = {hub}
    while True:
        ring = sorted({n for k in rings[-1] for n in neighbours[k] if n not in seen})
        if not ring:
            return rings
        seen.update(ring)
        rings.append(ring)


def _place_component(
    group: Sequence[NodeKey], notes: Mapping[NodeKey, GraphNote]
) -> tuple[float, dict[NodeKey, tuple[float, float]]]:
    """Positions relative to the component's centre, and its radius."""
    rings = _rings(group, notes)
    where: dict[NodeKey, tuple[float, float]] = {rings[0][0]: (0.0, 0.0)}
    radius = RING * 0.5
    for depth, ring in enumerate(rings[1:], start=1):
        radius = max(radius + RING * 0.65, len(ring) * SPACING / (2 * math.pi))
        for index, key in enumerate(ring):
            angle = 2 * math.pi * index / len(ring) + depth * 0.4
            where[key] = (radius * math.cos(angle), radius * math.sin(angle))
    return radius + MARGIN, where


def _chosen(
    notes: Mapping[NodeKey, GraphNote], limit: int
) -> tuple[list[list[NodeKey]], list[NodeKey]]:
    incoming = {t for note in notes.values() for t in note.links if isinstance(t, tuple)}
    groups = _components(notes)
    linked = [g for g in groups if len(g) > 1 or _has_links(notes[g[0]], incoming)]
    linked.sort(key=lambda g: (-len(g), g[0]))
    orphans = sorted(
        (g[0] for g in groups if len(g) == 1 and not _has_links(notes[g[0]], incoming)),
        key=lambda k: (-notes[k].recalls, k),
    )
    chosen: list[list[NodeKey]] = []
    room = limit
    for group in linked:
        if len(group) > room:
            if not chosen:  # one giant component: draw its first nodes
                chosen.append(group[:room])
                room = 0
            continue
        chosen.append(group)
        room -= len(group)
    return chosen, orphans[: max(0, room)]


def layout_graph(notes: Iterable[GraphNote], *, limit: int = 400) -> Layout:
    """Place at most ``limit`` notes (see the module notes)."""
    by_key = {note.key: note for note in notes}
    chosen, orphans = _chosen(by_key, limit)
    result = Layout(total=len(by_key), width=WIDTH)
    incoming = {t for note in by_key.values() for t in note.links if isinstance(t, tuple)}
    result.orphans = sum(1 for n in by_key.values() if not _has_links(n, incoming))
    x = y = shelf = 0.0
    positions: dict[NodeKey, tuple[float, float]] = {}
    for group in chosen:
        radius, where = _place_component(group, by_key)
        if x + 2 * radius > WIDTH and x > 0:
            x, y, shelf = 0.0, y + shelf, 0.0
        cx, cy = x + radius, y + radius
        for key, (dx, dy) in where.items():
            positions[key] = (cx + dx, cy + dy)
        x += 2 * radius
        shelf = max(shelf, 2 * radius)
    y += shelf
    for key, (px, py) in positions.items():
        note = by_key[key]
        result.nodes.append(
            PlacedNode(key, px, py, node_radius(note.recalls), note.summary, note.recalls)
        )
    _place_dangling(result, by_key, positions)
    if orphans:
        result.orphans_top = y + 10
        per_row = max(1, int((WIDTH - MARGIN) // ORPHAN_COLUMN))
        for index, key in enumerate(orphans):
            row, column = divmod(index, per_row)
            note = by_key[key]
            result.nodes.append(
                PlacedNode(
                    key,
                    MARGIN + column * ORPHAN_COLUMN,
                    y + 50 + row * ORPHAN_ROW,
                    node_radius(note.recalls),
                    note.summary,
                    note.recalls,
                    orphan=True,
                )
            )
        y += 50 + (len(orphans) - 1) // per_row * ORPHAN_ROW + ORPHAN_ROW
    result.drawn = len(positions) + len(orphans)
    result.height = max(y, 120.0)
    # As wide as what is drawn: a small graph is not lost in a corner, a component wider
    # than the shelves widens the picture (the page scales it down to the screen).
    result.width = max(240.0, *(node.x + node.radius + MARGIN for node in result.nodes))
    if orphans:  # room for the last column's labels
        result.width = max(result.width, MARGIN + per_row * ORPHAN_COLUMN)
    return result


def _place_dangling(
    result: Layout,
    notes: Mapping[NodeKey, GraphNote],
    positions: Mapping[NodeKey, tuple[float, float]],
) -> None:
    """Edges between drawn notes; each dangling target a small node just off its source."""
    for key in sorted(positions):
        sx, sy = positions[key]
        dangling = [t for t in notes[key].links if isinstance(t, str)]
        for target in notes[key].links:
            if isinstance(target, tuple) and target in positions and target != key:
                tx, ty = positions[target]
                result.edges.append(PlacedEdge(sx, sy, tx, ty))
        for index, target in enumerate(sorted(set(dangling))):
            angle = -math.pi / 2 + index * 0.6
            dx, dy = sx + 32 * math.cos(angle), sy + 32 * math.sin(angle)
            result.edges.append(PlacedEdge(sx, sy, dx, dy, dangling=True))
            result.nodes.append(PlacedNode(target, dx, dy, 4.0, dangling=True))
            result.dangling += 1
