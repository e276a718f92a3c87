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

Candidate pairs come from an inverted index over the terms; a term held by more than
:func:`candidate_limit` notes (1 % of the scope, at least 20) does not propose pairs, though it
still counts in the score: two notes on one topic share at least one rarer word or tag.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from oharness.recall.score import similarity

#: Summary + tags similarity from which notes of one scope are reported as one topic (every
#: pair of a group reaches it). Tuned on ``tests/data/review/planted.json``.
SAME_TOPIC: Final = 0.55
MIN_GROUP: Final = 2
MAX_GROUP: Final = 6
CANDIDATE_MIN_DF: Final = 20


def candidate_limit(note_count: int) -> int:
    """The most notes a term may be held by and still propose pairs."""
    return max(CANDIDATE_MIN_DF, note_count // 100)


@dataclass(frozen=True)
class TopicGroup:
    """Indices into the notes given to :func:`same_topic_groups`, and the weakest link."""

    members: tuple[int, ...]
    score: float


def _scored_pairs(
    terms: Sequence[frozenset[str]], threshold: float
) -> list[tuple[float, int, int]]:
    """Pairs at or above ``threshold``, found through the rarer terms they share.

    A pair is scored only when the rarer terms it shares, plus as many common ones as either
    note holds, could reach the threshold (|A ∩ B| >= t·sqrt(|A|·|B|)).
    """
    holders: dict[str, list[int]] = defaultdict(list)
    for index, note_terms in enumerate(terms):
        for term in note_terms:
            holders[term].append(index)
    limit = candidate_limit(len(terms))
    proposing = {term: members for term, members in holders.items() if 1 < len(members) <= limit}
    common = [sum(1 for t in note_terms if len(holders[t]) > limit) for note_terms in terms]
    scored = []
    for first, note_terms in enumerate(terms):
        shared: Counter[int] = Counter()
        for term in note_terms:
            members = proposing.get(term)
            if members is not None:
                shared.update(member for member in members if member > first)
        size = len(note_terms)
        for second, count in shared.items():
            other = terms[second]
            bound = count + min(common[first], common[second])
            if bound < threshold * math.sqrt(size * len(other)):
                continue
            score = similarity(note_terms, other)
            if score >= threshold:
                scored.append((score, first, second))
    return scored


def same_topic_groups(
    terms: Sequence[frozenset[str]], threshold: float = SAME_TOPIC
) -> list[TopicGroup]:
    """Groups of 2–6 notes on the same topic, given each note's summary + tag terms."""
    scored = _scored_pairs(terms, threshold)
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
