"""Same-topic groups: notes of one scope whose summaries and tags largely overlap (05.1).

The similarity is the one behind ``likelyDuplicate`` (:func:`oharness.recall.score.similarity`,
the cosine of the two notes' stemmed summary + tag term sets, common words removed). Two notes
are on the same topic from :data:`SAME_TOPIC` up, a threshold tuned on the planted-duplicates
set in ``tests/data/review/`` (``bench/review_quality.py`` prints recall and false groups).

Grouping is greedy, deterministic and complete-linkage: pairs at or above the threshold,
strongest first, join their groups while the joined group stays within :data:`MAX_GROUP`
notes and *every* pair in it is at or above the threshold too (so a chain of look-alikes —
"integration tests need Docker", "unit tests must not need Docker" — never glues two distinct
topics together). The threshold is 0.55, a little below ``likelyDuplicate``'s 0.6: on the
planted set 0.55 finds 97.7 % of the groups with no false group, 0.6 misses rewordings
(93 %), and 0.5 lets close but distinct topics in (9 % false groups).

Candidate pairs come from an inverted index over the terms; a term held by
more than :data:`CANDIDATE_DF` notes does not propose pairs (it still counts in the score).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from oharness.recall.score import similarity

#: Summary + tags similarity from which notes of one scope are reported as one topic (every
#: pair of a group reaches it). Tuned on ``tests/data/review/planted.json``.
SAME_TOPIC: Final = 0.55
MIN_GROUP: Final = 2
MAX_GROUP: Final = 6
CANDIDATE_DF: Final = 200


@dataclass(frozen=True)
class TopicGroup:
    """Indices into the notes given to :func:`same_topic_groups`, and the weakest link."""

    members: tuple[int, ...]
    score: float


def _candidate_pairs(terms: Sequence[frozenset[str]]) -> set[tuple[int, int]]:
    holders: dict[str, list[int]] = defaultdict(list)
    for index, note_terms in enumerate(terms):
        for term in note_terms:
            holders[term].append(index)
    pairs: set[tuple[int, int]] = set()
    for members in holders.values():
        if len(members) < 2 or len(members) > CANDIDATE_DF:
            continue
        for position, first in enumerate(members):
            for second in members[position + 1 :]:
                pairs.add((first, second))
    return pairs


def same_topic_groups(
    terms: Sequence[frozenset[str]], threshold: float = SAME_TOPIC
) -> list[TopicGroup]:
    """Groups of 2–6 notes on the same topic, given each note's summary + tag terms."""
    scored = []
    for first, second in _candidate_pairs(terms):
        score = similarity(terms[first], terms[second])
        if score >= threshold:
            scored.append((score, first, second))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    group_of: dict[int, list[int]] = {}
    for _, first, second in scored:
        one = group_of.get(first, [first])
        other = group_of.get(second, [second])
        if one is other:
            continue
        if len(one) + len(other) > MAX_GROUP:
            continue
        if any(similarity(terms[a], terms[b]) < threshold for a in one for b in other):
            continue
        joined = sorted(one + other)
        for member in joined:
            group_of[member] = joined
    groups: dict[int, TopicGroup] = {}
    for members in group_of.values():
        key = members[0]
        if key in groups or len(members) < MIN_GROUP:
            continue
        weakest = min(
            similarity(terms[a], terms[b])
            for position, a in enumerate(members)
            for b in members[position + 1 :]
        )
        groups[key] = TopicGroup(tuple(members), weakest)
    return [groups[key] for key in sorted(groups)]
