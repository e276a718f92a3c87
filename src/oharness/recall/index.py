"""The in-memory recall index over the notes of both scopes (spec 03.2, 03.3).

An inverted index keyed by ``(scope, id)`` (:mod:`~oharness.recall.postings`): a note is
added, replaced or removed by touching only its own terms, so an edit shows in the next
recall. Scores are summed over the postings of the message's terms
(:mod:`~oharness.recall.scoring`; the formula and its scale: :mod:`~oharness.recall.score`).
:meth:`RecallIndex.recall` decides what to attach to a user message (gate, threshold, at most
``perTurn`` notes; usually nothing), :meth:`RecallIndex.search` ranks for an explicit query.

Not thread-safe: callers serialise access (one index per process).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from itertools import zip_longest
from typing import TYPE_CHECKING, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall import gate
from oharness.recall.build import ASKS, TagMarks, note_entry
from oharness.recall.judge import Judge, Passed
from oharness.recall.postings import (
    CacheKey,
    IntArray,
    NoteEntry,
    NoteKey,
    Notes,
    Postings,
    Read,
    TermOrder,
    term_order,
)
from oharness.recall.score import (
    DEFAULT_PARAMS,
    LIKELY_DUPLICATE,
    ScoringParams,
    Usage,
    similarity,
    usage_boost,
)
from oharness.recall.scoring import Scored, WeightedGroups, accumulate, cover, read_terms
from oharness.recall.tokenize import LINK_MARK, PRIOR_VERY_COMMON, Tokenizer
from oharness.recall.vocabulary import Vocabulary
from oharness.settings import RecallSettings
from oharness.types import Scope

if TYPE_CHECKING:  # types only: a process that loads and recalls never reads a note
    from oharness.notes.format import Note

FloatArray = npt.NDArray[np.float64]

_DEFAULT_SETTINGS: Final = RecallSettings()


class _Ranked(NamedTuple):
    """A ranked note."""

    score: float
    key: NoteKey
    slot: int


#: Search: a note whose tags hold every query word found in any note's tags scores this much
#: more, one holding some of them the same share of it (tags are facets: the speaker, the
#: project, the subject a note was filed under; a query naming a speaker and a month favours
#: that speaker's notes of that month over the speaker's others and the month's others).
TAG_FACET: Final = 1.0
#: Search: the share of the query's weight a note matches is raised to this power (a note
#: matching most of the query beats one matching a single word many times).
COVERAGE_POWER: Final = 1.5
#: Search: share of a note's score given to the notes linking to it (a reply gets a share
#: of what it answers), ASKED_SHARE when the note asks something (a question's answer is in
#: its reply); from the best LINK_SOURCES notes, and again from the best LINK_SOURCES of
#: those shares (a reply's reply, LINK_HOPS links away at most).
LINK_SHARE: Final = 0.2
ASKED_SHARE: Final = 0.4
LINK_SOURCES: Final = 50
LINK_HOPS: Final = 2


@dataclass(frozen=True)
class Hit:
    """One ranked note; ``in_summary_or_tags``: a query word matched its summary or tags
    (always true for :meth:`RecallIndex.recall`: that is the gate)."""

    scope: Scope
    id: str
    score: float
    in_summary_or_tags: bool

    @property
    def key(self) -> NoteKey:
        """``(scope, id)``."""
        return (self.scope, self.id)


class RecallIndex:
    """Ranks notes of both scopes against a message or query."""

    def __init__(
        self, tokenizer: Tokenizer | None = None, params: ScoringParams = DEFAULT_PARAMS
    ) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        self.params = params
        self._postings = Postings(gate.SHORT_BODY)
        self._judge = Judge(self._postings, self.tokenizer, params)
        self._tag_marks = TagMarks(self.tokenizer)

    @classmethod
    def from_settings(cls, settings: RecallSettings) -> RecallIndex:
        """An empty index whose tokeniser uses ``settings.languages``."""
        return cls(Tokenizer(settings.languages))

    def __len__(self) -> int:
        return len(self._postings)

    def __contains__(self, key: object) -> bool:
        return key in self._postings.slot_of

    def keys(self) -> list[NoteKey]:
        """The ``(scope, id)`` of every indexed note."""
        return list(self._postings.slot_of)

    def cache_key(self, key: NoteKey) -> CacheKey | None:
        """The validation key a note was added with (see :mod:`oharness.recall.cache`)."""
        slot = self._postings.slot_of.get(key)
        return None if slot is None else self._postings.cache_keys[slot]

    # -- changes ---------------------------------------------------------------------------

    def add(self, scope: Scope, note: Note, *, cache_key: CacheKey | None = None) -> None:
        """Index ``note``, replacing any note with the same ``(scope, id)``."""
        self._postings.add(self._entry(scope, note, cache_key))

    def add_many(
        self,
        notes: Iterable[tuple[Scope, Note]],
        cache_keys: Mapping[NoteKey, CacheKey] | None = None,
    ) -> None:
        """Index many notes at once (faster than :meth:`add` in a loop)."""
        keys, listed = cache_keys or {}, list(notes)
        postings = self._postings
        entries = (self._entry(scope, note, keys.get((scope, note.id))) for scope, note in listed)
        distinct = len({(scope, note.id) for scope, note in listed}) == len(listed) > 1
        if not postings.keys and distinct:  # an empty index adopts them as its base
            postings.adopt(*term_order(entries, postings.vocabulary))
            return
        for entry in entries:
            postings.add(entry)

    def remove(self, scope: Scope, note_id: str) -> bool:
        """Forget a note; False when it was not indexed."""
        return self._postings.remove_many([(scope, note_id)]) > 0

    def term_order(self) -> tuple[Vocabulary, Notes, TermOrder]:
        """What the cache stores: the terms, every note (without its terms) and the postings
        in term order."""
        return self._postings.vocabulary, *self._postings.term_order()

    def restore(
        self,
        terms: Vocabulary,
        notes: Notes,
        order: TermOrder,
        read: Read | None = None,
        stale: Iterable[NoteKey] = (),
    ) -> None:
        """Adopt what the cache stores - the terms, the notes and their postings in term
        ``order`` - as they are (``read``: reads a term's postings from the file), then remove
        the ``stale`` notes; only into an empty index."""
        if len(self._postings.vocabulary) or self._postings.keys:
            raise ValueError("a recall cache is read into an empty index only")
        self._postings.vocabulary = terms
        self._postings.adopt(notes, order, read)
        self._postings.remove_many(stale)

    # -- queries ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """Best notes for ``query``, highest first: no gate, no threshold (``memory(query)``).

        Ranking: the score of :mod:`~oharness.recall.score` with plain BM25 term weights,
        multiplied by the share of the query's weight the note matches (so a note matching
        most of the query beats one matching a single word many times), its tag facets, and
        shared along links (:meth:`_share_along_links`).
        """
        if limit <= 0 or not len(self._postings):
            return []
        groups = [(group, 1.0) for group in self.tokenizer.query_terms(query)]
        scores, shared = self._score(groups)
        scores = self._share_along_links(scores)
        found = _slots(scores > 0)
        return [
            Hit(key[0], key[1], score, bool(shared[slot] > 0))
            for score, key, slot in self._best(scores[found], found, limit)
        ]

    def recall(
        self,
        message: str,
        *,
        exclude: Collection[NoteKey | str] = (),
        settings: RecallSettings | None = None,
        usage: Mapping[NoteKey, Usage] | None = None,
        now: int = 0,
    ) -> list[Hit]:
        """Notes to attach to a user message: at most ``per_turn``, best first, often none.

        A note qualifies when its score reaches ``min_score`` and the message names its topic:
        the weighted words of the message and of the note's summary and tags overlap enough
        (:mod:`~oharness.recall.gate`; a phrase of the summary in the message counts extra).

        ``exclude`` holds notes already attached in this session, as ``(scope, id)`` or as a
        bare id (meaning both scopes). ``usage`` (recall counts, last use at ``now``) only
        reorders qualifying notes, by at most :data:`~oharness.recall.score.USAGE_BOOST_MAX`.
        Of ``settings`` only ``enabled``, ``per_turn`` and ``min_score`` are read: the
        languages are fixed when the index is made (:meth:`from_settings`).
        """
        config = settings if settings is not None else _DEFAULT_SETTINGS
        if not config.enabled or config.per_turn <= 0 or len(self._postings) == 0:
            return []
        passed = self._judge.passed(message, config.min_score, config.per_turn, exclude)
        if passed is None:
            return []
        per_turn = config.per_turn
        ranked = self._best(passed.ranking, passed.slots, max(gate.GATE_CANDIDATES, per_turn))
        if usage:  # usage may lift a note past others only within USAGE_BOOST_MAX
            lifted = {
                r.key: r.score + usage_boost(usage[r.key], now) for r in ranked if r.key in usage
            }
            ranked.sort(key=lambda item: (-lifted.get(item.key, item.score), item.key))
        if len(ranked) > 1:  # none far below the best, unless a phrase of its summary is said
            floor = gate.RELATIVE_FLOOR * ranked[0].score
            ranked = [item for item in ranked if item.score >= floor or item.slot in passed.named]
        chosen = ranked[:per_turn]
        return self._beside_search(passed, chosen)

    def _beside_search(self, passed: Passed, chosen: list[_Ranked]) -> list[Hit]:
        """The notes to attach: as many as the gate ``chosen`` (best first), taken in turn
        from its order and from the search order of the notes it judged (a message word in
        the summary or tags, the score at least ``minScore``, not excluded): the gate's first,
        search's first, the gate's second...

        The gate is good at whether a message names a note at all, and at the note it names
        most clearly; search (plain BM25 weights, the share of the message a note matches,
        links) is better at which notes hold the answer (docs/recall.md, Quality)."""
        if len(chosen) <= 1:  # the gate's first note comes first: nothing to take in turn
            return [Hit(key[0], key[1], score, True) for score, key, _ in chosen]
        scores = self._share_along_links(_searched(passed.plain))
        eligible = np.zeros(len(scores), dtype=np.bool_)
        eligible[passed.judged] = True  # each matches in its summary or tags
        best = self._best(scores[eligible], _slots(eligible), len(chosen))
        gate_scores = {slot: score for score, _, slot in chosen}
        order: dict[int, None] = {}
        for pair in zip_longest(chosen, best):
            order.update((item.slot, None) for item in pair if item is not None)
        hits: list[Hit] = []
        for slot in list(order)[: len(chosen)]:
            scope, note_id = self._postings.keys[slot]  # type: ignore[misc]
            score = gate_scores.get(slot, float(passed.scores[slot]))
            hits.append(Hit(scope, note_id, score, True))
        return hits

    def related(
        self, note: Note, limit: int = 5, *, scope: Scope | None = None, gated: bool = True
    ) -> list[Hit]:
        """Notes on the same topic as ``note`` (its own entry excluded), best first.

        The floor: a note is related when ``note``'s text (summary, tags and body) sent as a
        message would attach it - the recall gate and the default ``minScore`` - so sharing
        a word or two is not enough, and an empty list is the usual answer for a new topic.
        ``gated=False`` ranks by the search scorer with no floor (candidates for a closer
        test, such as :meth:`likely_duplicate`).
        """
        if limit <= 0:
            return []
        text = "\n".join((note.summary, " ".join(note.tags), note.body))
        own: set[NoteKey] = (
            {(scope, note.id)} if scope else {("project", note.id), ("user", note.id)}
        )
        if gated:
            return self.recall(text, exclude=own, settings=RecallSettings(per_turn=limit))
        hits = self.search(text, limit + len(own))
        return [hit for hit in hits if hit.key not in own][:limit]

    def similarity(self, first: Note, second: Note) -> float:
        """Summary + tags similarity of two notes, 0..1 (:func:`~.score.similarity`)."""
        return similarity(self.summary_terms(first), self.summary_terms(second))

    def likely_duplicate(self, first: Note, second: Note) -> bool:
        """True when two notes are on the same topic: similarity >= ``LIKELY_DUPLICATE``."""
        return self.similarity(first, second) >= LIKELY_DUPLICATE

    def summary_terms(self, note: Note) -> frozenset[str]:
        """The terms of a note's summary and tags, without the most common words."""
        text = note.summary + "\n" + "\n".join(note.tags)
        prior = self.tokenizer.prior
        return frozenset(t for t in self.tokenizer.tokens(text) if prior(t) < PRIOR_VERY_COMMON)

    # -- internals -------------------------------------------------------------------------

    def _entry(self, scope: Scope, note: Note, cache_key: CacheKey | None) -> NoteEntry:
        return note_entry(self._postings, self.tokenizer, self._tag_marks, (scope, note), cache_key)

    def _score(self, groups: WeightedGroups) -> tuple[FloatArray, FloatArray]:
        """Search scores per slot (:func:`_searched`), and per slot the weight of the words
        matching summary or tags."""
        postings, params = self._postings, self.params
        terms = [term for group, _ in groups for term in group]
        infos = read_terms(postings, self.tokenizer, params, terms, search=True)
        norms = postings.norms(params.boosts, params.length_factors)
        scored = accumulate(infos, groups, norms, params)
        return _searched(scored), scored.shared

    def _share_along_links(self, scores: FloatArray) -> FloatArray:
        """Scores with a share of each strong note's score given to the notes linking to it:
        :data:`LINK_SHARE`, or :data:`ASKED_SHARE` from a note that asks something.

        A reply links to what it answers, a detail to its overview: a query matching the
        question finds the answer beside it. Only the :data:`LINK_SOURCES` best notes give;
        the shares given are passed on the same way, :data:`LINK_HOPS` links in all.
        """
        postings = self._postings
        (asking,) = postings.slots_of_many([ASKS])
        total, giving = scores.copy(), scores
        for _ in range(LINK_HOPS):
            candidates = np.flatnonzero(giving > 0)  # live notes: each has a key
            if len(candidates) > LINK_SOURCES:
                best = np.argpartition(-giving[candidates], LINK_SOURCES - 1)[:LINK_SOURCES]
                candidates = candidates[best]
            asks = np.isin(candidates, asking) if asking is not None else False
            amounts = giving[candidates] * np.where(asks, ASKED_SHARE, LINK_SHARE)
            marks = [LINK_MARK + postings.keys[slot][1] for slot in candidates.tolist()]  # type: ignore[index]
            linked = [
                (linking, amount)
                for linking, amount in zip(postings.slots_of_many(marks), amounts, strict=True)
                if linking is not None
            ]
            if not linked:
                break
            targets = np.concatenate([linking for linking, _ in linked])
            values = np.repeat([amount for _, amount in linked], [len(at) for at, _ in linked])
            giving = np.zeros_like(scores)
            np.add.at(giving, targets, values)
            total += giving
        return total

    def _best(self, values: FloatArray, candidates: IntArray, limit: int) -> list[_Ranked]:
        """The best ``limit`` of the ``candidates`` slots by their ``values``, best first (ties
        by key)."""
        if len(candidates) > limit:
            kth = values[np.argpartition(-values, limit - 1)[limit - 1]]
            kept = values >= kth  # keep ties: the order below is by key
            values, candidates = values[kept], candidates[kept]
        owners = self._postings.keys
        slots = candidates.tolist()
        ranked = sorted(
            map(_Ranked, values.tolist(), [owners[slot] for slot in slots], slots),
            key=lambda item: (-item.score, item.key),
        )
        return ranked[:limit]


def _searched(scored: Scored) -> FloatArray:
    """Search's score: plain BM25 weights, times the share of the query's weight the note
    matches and its tag facets."""
    covered, query_weight, facets = cover(scored.words, len(scored.scores))
    if query_weight <= 0:
        return scored.scores
    share = np.minimum(covered / query_weight, 1.0) ** COVERAGE_POWER
    return scored.scores * share * (1.0 + TAG_FACET * facets)


def _slots(flags: npt.NDArray[np.bool_]) -> IntArray:
    return np.flatnonzero(flags).astype(np.int32)
