"""``minScore`` at its boundary: a note scoring exactly the threshold is attached, one a hair
below it is not (the threshold is "at least", spec 03.2)."""

from __future__ import annotations

import math

from oharness.notes.format import Note
from oharness.recall import RecallIndex
from oharness.settings import RecallSettings

K8S = Note(
    "k8s-cluster-1ab",
    "Kubernetes cluster lives in eu-west-1",
    "Both staging and production run there; kubectl contexts are named after them.",
    ("infra", "k8s"),
)
MESSAGE = "where does the kubernetes cluster run?"


def test_a_score_equal_to_min_score_attaches_and_one_just_below_does_not() -> None:
    index = RecallIndex()
    index.add_many([("project", K8S)])
    [hit] = index.recall(MESSAGE)
    assert hit.score > 0
    at = index.recall(MESSAGE, settings=RecallSettings(min_score=hit.score))
    assert [found.id for found in at] == [K8S.id]
    above = math.nextafter(hit.score, math.inf)
    assert index.recall(MESSAGE, settings=RecallSettings(min_score=above)) == []
