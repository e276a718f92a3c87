"""Labels for the link graph (pure, deterministic): each note's summary, truncated, placed
where it overlaps no other label and no circle.

Every drawn note gets a label where there is room: its summary cut to :data:`LONG` characters,
else to :data:`SHORT`, tried right, left, below and above its circle. Notes are labelled in
order of importance (most recalled, then most linked, then by key), so crowded spots name the
notes that matter. A note left without a label still has its name on hover and focus. Widths
are estimated on the generous side (the page sets the labels' font and size), so the boxes
drawn by a browser are never wider than the ones checked here.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import Final

from oharness.daemon.page.graph_layout import Layout, NodeKey, PlacedNode

#: The labels' font size in px (page.css's ``.node-label`` uses the same).
FONT_PX: Final = 11.0
LINE_PX: Final = 14.0
#: Advance widths assumed per character: generous for a proportional sans-serif.
NARROW_PX: Final = 7.0
WIDE_PX: Final = 12.0
LONG: Final = 24
SHORT: Final = 12
GAP: Final = 3.0
_CELL: Final = 64.0


@dataclass(frozen=True)
class Label:
    """One label: its text and the box it takes (``x``, ``y`` its top left; text baseline at
    ``y + FONT_PX``)."""

    key: NodeKey
    text: str
    x: float
    y: float
    width: float

    @property
    def baseline(self) -> float:
        return self.y + FONT_PX


Box = tuple[float, float, float, float]  # left, top, right, bottom


def text_width(text: str) -> float:
    """The estimated drawn width of ``text`` (wide East Asian characters count double)."""
    return sum(
        WIDE_PX if unicodedata.east_asian_width(char) in ("W", "F") else NARROW_PX for char in text
    )


def truncated(summary: str, limit: int) -> str:
    """``summary`` cut to at most ``limit`` characters, with an ellipsis when cut."""
    summary = " ".join(summary.split())
    return summary if len(summary) <= limit else summary[: limit - 1].rstrip() + "…"


class _Grid:
    """Boxes bucketed by cell, so a test for overlap looks only near the box."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[Box]] = defaultdict(list)

    def _cells_of(self, box: Box) -> list[tuple[int, int]]:
        left, top, right, bottom = box
        return [
            (cx, cy)
            for cx in range(int(left // _CELL), int(right // _CELL) + 1)
            for cy in range(int(top // _CELL), int(bottom // _CELL) + 1)
        ]

    def add(self, box: Box) -> None:
        for cell in self._cells_of(box):
            self._cells[cell].append(box)

    def free(self, box: Box) -> bool:
        left, top, right, bottom = box
        for cell in self._cells_of(box):
            for other in self._cells.get(cell, ()):
                if left < other[2] and other[0] < right and top < other[3] and other[1] < bottom:
                    return False
        return True


def _candidates(node: PlacedNode, width: float) -> list[tuple[float, float]]:
    """Top-left corners to try for a label ``width`` wide: right, left, below, above."""
    r = node.radius
    middle = node.y - LINE_PX / 2
    return [
        (node.x + r + GAP, middle),
        (node.x - r - GAP - width, middle),
        (node.x - width / 2, node.y + r + GAP),
        (node.x - width / 2, node.y - r - GAP - LINE_PX),
    ]


def place_labels(layout: Layout, degree: dict[NodeKey, int] | None = None) -> list[Label]:
    """Labels for the layout's notes (dangling targets have none), none overlapping another
    label or any circle, all inside the picture."""
    degree = degree or {}
    grid = _Grid()
    notes = [node for node in layout.nodes if not node.dangling and isinstance(node.key, tuple)]
    for node in layout.nodes:
        r = node.radius
        grid.add((node.x - r, node.y - r, node.x + r, node.y + r))
    order = sorted(notes, key=lambda n: (-n.recalls, -degree.get(_key(n), 0), _key(n)))
    labels: list[Label] = []
    for node in order:
        label = _place(node, grid, layout.width, layout.height)
        if label is not None:
            grid.add((label.x, label.y, label.x + label.width, label.y + LINE_PX))
            labels.append(label)
    return labels


def _key(node: PlacedNode) -> NodeKey:
    assert isinstance(node.key, tuple)
    return node.key


def _place(node: PlacedNode, grid: _Grid, width: float, height: float) -> Label | None:
    for limit in (LONG, SHORT):
        text = truncated(node.summary, limit)
        if not text:
            return None
        size = text_width(text)
        for x, y in _candidates(node, size):
            box = (x, y, x + size, y + LINE_PX)
            inside = x >= 0 and y >= 0 and x + size <= width and y + LINE_PX <= height
            if inside and grid.free(box):
                return Label(_key(node), text, x, y, size)
    return None
