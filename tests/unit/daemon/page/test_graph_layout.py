"""The graph layout: deterministic, capped, orphans apart, dangling links drawn."""

from __future__ import annotations

import math

from oharness.daemon.page.graph_layout import GraphNote, layout_graph, node_radius
from oharness.daemon.page.usage import day_series


def _chain(count: int, prefix: str = "n") -> list[GraphNote]:
    notes = []
    for index in range(count):
        links = (("project", f"{prefix}{index - 1}"),) if index else ()
        notes.append(GraphNote(("project", f"{prefix}{index}"), f"note {index}", index, links))
    return notes


def test_same_notes_same_picture_whatever_their_order() -> None:
    notes = [*_chain(12), GraphNote(("user", "alone"), "alone", 0, ("gone",))]
    first = layout_graph(notes)
    second = layout_graph(list(reversed(notes)))
    assert first.nodes == second.nodes and first.edges == second.edges


def test_nodes_do_not_overlap_and_stay_inside() -> None:
    notes = [
        *_chain(40),
        *_chain(25, "m"),
        *[GraphNote(("user", f"o{i}"), "o", 0, ()) for i in range(30)],
    ]
    layout = layout_graph(notes)
    placed = [n for n in layout.nodes if not n.dangling]
    for node in placed:
        assert 0 <= node.x <= layout.width and 0 <= node.y <= layout.height
    for index, a in enumerate(placed):
        for b in placed[index + 1 :]:
            assert math.dist((a.x, a.y), (b.x, b.y)) > 1, (a.key, b.key)


def test_orphans_are_apart_and_dangling_targets_marked() -> None:
    notes = [
        *_chain(3),
        GraphNote(("project", "solo"), "solo", 2, ()),
        GraphNote(("project", "broken"), "broken", 0, ("nowhere",)),
    ]
    layout = layout_graph(notes)
    by_key = {n.key: n for n in layout.nodes}
    assert by_key[("project", "solo")].orphan
    assert not by_key[("project", "broken")].orphan  # a dangling link is a link
    assert by_key["nowhere"].dangling
    assert layout.orphans == 1 and layout.dangling == 1
    assert by_key[("project", "solo")].y > max(
        n.y for n in layout.nodes if not n.orphan and not n.dangling
    )
    assert any(e.dangling for e in layout.edges)


def test_the_cap_draws_linked_groups_first_then_the_most_recalled_orphans() -> None:
    notes = [*_chain(30), *[GraphNote(("user", f"o{i}"), "o", i, ()) for i in range(100)]]
    layout = layout_graph(notes, limit=40)
    drawn = [n for n in layout.nodes if not n.dangling]
    assert layout.total == 130 and layout.drawn == len(drawn) == 40
    orphans = sorted(n.key[1] for n in drawn if n.orphan)
    assert orphans == sorted(f"o{i}" for i in range(90, 100))
    giant = layout_graph(_chain(500), limit=50)  # one group larger than the cap
    assert giant.drawn == 50


def test_bigger_for_more_recalls_within_bounds() -> None:
    assert node_radius(0) < node_radius(4) < node_radius(100) <= 22


def test_day_series_is_the_last_days_oldest_first() -> None:
    series = day_series({100: 3, 98: 1, 50: 7}, today=100, days=5)
    assert series.values == (0, 0, 1, 0, 3) and series.total == 4 and series.peak == 3
    assert series.last_day == "1970-04-11"
