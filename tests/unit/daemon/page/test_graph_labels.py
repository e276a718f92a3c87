"""The graph's labels: truncated summaries, none overlapping another label or a circle."""

from __future__ import annotations

import time

from oharness.daemon.page.graph_labels import LINE_PX, place_labels, text_width, truncated
from oharness.daemon.page.graph_layout import GraphNote, layout_graph


def _notes(linked: int, orphans: int) -> list[GraphNote]:
    notes = []
    for index in range(linked):  # groups of eight around a hub
        hub = index - index % 8
        links = (("project", f"n{hub}"),) if index != hub else ()
        summary = f"Linked note number {index} about the payment adapter and retries"
        notes.append(GraphNote(("project", f"n{index}"), summary, index % 5, links))
    for index in range(orphans):
        summary = f"部署流程 orphan {index}" if index % 3 == 0 else f"Orphan note {index}"
        notes.append(GraphNote(("user", f"o{index}"), summary, index % 7, ()))
    return notes


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_four_hundred_nodes_get_labels_that_never_collide() -> None:
    layout = layout_graph(_notes(240, 300), limit=400)
    assert layout.drawn == 400
    started = time.perf_counter()
    labels = place_labels(layout)
    elapsed = time.perf_counter() - started
    boxes = [(lb.x, lb.y, lb.x + lb.width, lb.y + LINE_PX) for lb in labels]
    circles = [
        (n.x - n.radius, n.y - n.radius, n.x + n.radius, n.y + n.radius) for n in layout.nodes
    ]
    for index, box in enumerate(boxes):
        assert box[0] >= 0 and box[2] <= layout.width and box[1] >= 0 and box[3] <= layout.height
        assert not any(_overlap(box, other) for other in boxes[index + 1 :])
        assert not any(_overlap(box, circle) for circle in circles)
    # Every orphan has room for its label; most linked notes too.
    labelled = {label.key for label in labels}
    orphans = [n.key for n in layout.nodes if n.orphan]
    assert all(key in labelled for key in orphans)
    assert len(labelled) >= 0.8 * layout.drawn
    assert elapsed < 1.0, elapsed


def test_summaries_are_truncated_with_an_ellipsis() -> None:
    assert truncated("Short one", 24) == "Short one"
    assert truncated("A summary that is much too long to draw", 12) == "A summary t…"
    assert len(truncated("x" * 100, 24)) == 24
    assert text_width("部署") > text_width("ab")


def test_the_same_notes_get_the_same_labels() -> None:
    notes = _notes(40, 20)
    first = place_labels(layout_graph(notes))
    second = place_labels(layout_graph(list(reversed(notes))))
    assert first == second
