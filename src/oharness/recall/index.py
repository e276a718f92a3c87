"""The in-memory recall index over the notes of both scopes (spec 03.2, 03.3).

An inverted index keyed by ``(scope, id)``: for every term, the slots of the notes holding it
and the term's frequency in each field (summary, tags, body). One note is added, replaced or
removed by touching only its own terms' postings, so an edit shows in the next recall without
a rebuild. Scores are accumulated with numpy over the postings of the message's terms; the
formula and its scale are described in :mod:`oharness.recall.score`.

Two ways in: :meth:`RecallIndex.recall` decides what to attach to a user message (gate,
threshold, at most ``perTurn`` notes; usually nothing), :meth:`RecallIndex.search` ranks for
an explicit query (no gate, no threshold, widened by pseudo-relevance feedback).

Not thread-safe: callers serialise access (one index per process, updated under its owner's
lock).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from oharness.notes.format import Note
from oharness.recall import gate, surface
from oharness.recall.accumulate import Scored, TermTable, WeightedGroups, accumulate
from oharness.recall.build import ASKS, Batch, note_marks, without_links
from oharness.recall.judge import Judge
from oharness.recall.postings import (
    CacheKey,
    Columns,
    FreqArray,
    IntArray,
    NoteEntry,
    NoteKey,
    Postings,
)
from oharness.recall.score import (
    DEFAULT_PARAMS,
    LIKELY_DUPLICATE,
    ScoringParams,
    Usage,
    WeightMemo,
    search_weight,
    similarity,
    term_weight,
    usage_boost,
)
from oharness.recall.tags import TAG_MARK, UNUSED_TAG_MARK, TagMarks
from oharness.recall.tokenize import (
    LINK_MARK,
    PHRASE_MARK,
    PRIOR_VERY_COMMON,
    Tokenizer,
)
from oharness.settings import RecallSettings
from oharness.types import Scope

FloatArray = npt.NDArray[np.float64]
SlotArray = npt.NDArray[np.integer[Any]]

_MARKS: Final = (
    PHRASE_MARK,
    LINK_MARK,
    TAG_MARK,
    UNUSED_TAG_MARK,
    surface.SURFACE_MARK,
    surface.DERIVED_MARK,
)
_DEFAULT_SETTINGS: Final = RecallSettings()
#: A ranked note: its score, its key, its slot.
_Ranked = tuple[float, NoteKey, int]


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

#: Pseudo-relevance feedback of :meth:`RecallIndex.search`: results read, words added, and
#: the weight of the strongest added word relative to a query word.
FEEDBACK_NOTES: Final = 5
FEEDBACK_TERMS: Final = 40
FEEDBACK_WEIGHT: Final = 0.4


@dataclass(frozen=True)
class Hit:
    """One ranked note.

    ``in_summary_or_tags``: a query word matched the note's summary or tags (for
    :meth:`RecallIndex.recall`, a distinctive word; always true there, as that is the gate).
    """

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
        self._postings = Postings()
        self._memo = WeightMemo(params)
        self._recall_table = TermTable(self._postings, params, self._weights, tagged=False)
        self._search_table = TermTable(self._postings, params, self._search_weights)
        self._judge = Judge(
            self._postings, self.tokenizer, params, self._recall_table, self._weight
        )
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
        return self._postings.cache_keys.get(key)

    # -- changes ---------------------------------------------------------------------------

    def add(self, scope: Scope, note: Note, *, cache_key: CacheKey | None = None) -> None:
        """Index ``note``, replacing any note with the same ``(scope, id)``."""
        self._postings.insert([self._entry(scope, note, cache_key)])

    def update(self, scope: Scope, note: Note, *, cache_key: CacheKey | None = None) -> None:
        """Re-index an edited note (same as :meth:`add`; reads better at call sites)."""
        self.add(scope, note, cache_key=cache_key)

    def add_many(
        self,
        notes: Iterable[tuple[Scope, Note]],
        cache_keys: Mapping[NoteKey, CacheKey] | None = None,
    ) -> None:
        """Index many notes at once (much faster than :meth:`add` in a loop)."""
        keys = cache_keys or {}
        batch = Batch(self.tokenizer, self._tag_marks)
        for scope, note in notes:
            batch.add(scope, note, keys.get((scope, note.id)))
        self._postings.insert_columns(batch.columns(self._postings))

    def remove(self, scope: Scope, note_id: str) -> bool:
        """Forget a note; False when it was not indexed."""
        return self._postings.delete((scope, note_id))

    def entries(self) -> tuple[list[str], list[NoteEntry]]:
        """The vocabulary and every note's indexed form (what the cache stores)."""
        return self._postings.export()

    def restore(
        self,
        terms: list[str],
        entries: list[NoteEntry],
        order: IntArray | None = None,
        flat: tuple[IntArray, FreqArray] | None = None,
    ) -> None:
        """Add notes from their indexed form, with term ids into ``terms``.

        ``order`` (postings sorted by term, as the cache stores them) lets an empty index
        adopt the entries without sorting; ``flat`` is the entries' postings concatenated.
        """
        self._judge.reset()  # term ids may be renumbered
        if order is not None and len(self._postings) == 0 and not self._postings.terms:
            self._postings.load(terms, entries, order, flat)
        else:
            self._postings.insert(self._postings.translate(terms, entries))

    def restore_columns(self, terms: list[str], columns: Columns) -> None:
        """Add notes from their indexed form as columns (:mod:`~oharness.recall.cache`)."""
        self._judge.reset()  # term ids may be renumbered
        self._postings.adopt(terms, columns)

    # -- queries ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10, *, expand: bool = True) -> list[Hit]:
        """Best notes for ``query``, highest first: no gate, no threshold (``memory(query)``).

        Ranking: the score of :mod:`~oharness.recall.score` with plain BM25 term weights,
        multiplied by the share of the query's weight the note matches (so a note matching
        most of the query beats one matching a single word many times). With ``expand``, the
        query is widened once by pseudo-relevance feedback: the most characteristic words of
        the first :data:`FEEDBACK_NOTES` results are added at a fraction of a query word's
        weight, which finds notes that say the same thing in other words.
        """
        if limit <= 0:
            return []
        groups = [(group, 1.0) for group in self.tokenizer.query_terms(query)]
        scored = self._score(groups, recall=False)
        if scored is None:
            return []
        if expand:
            first = self._hits(scored[0], scored[1], np.flatnonzero(scored[0]), FEEDBACK_NOTES)
            extra = self._feedback(first, {term for group, _ in groups for term in group})
            if extra:
                scored = self._score(groups + extra, recall=False)
                assert scored is not None
        scores, shared = scored
        scores = self._share_along_links(scores)
        return self._hits(scores, shared, np.flatnonzero(scores > 0), limit)

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
        judge = self._judge
        read = judge.message(message)
        if not read.groups:  # no word that can score (related words come from the words)
            return []
        scored = self._accumulate(judge.scored_groups(read))
        shared = scored.shared
        read.weights = scored.weights
        if read.related:
            judge.add_related(read, shared)
        found = self._candidates(scored, config.min_score, exclude)
        # No candidate that may pass: nothing to judge, no phrase or tag to look up.
        candidates = judge.candidates(read, scored, *found) if found is not None else None
        if candidates is None:
            return []
        stay = surface.weaken_stem_only(
            self.tokenizer, message, read.groups, self._postings, self._recall_table, candidates
        )
        if stay is not None:
            candidates = candidates.select(stay)
        scores = scored.scores
        chosen, tags = judge.judge(read, candidates, scores, config.per_turn)
        ranking = scores[chosen] * (1.0 + gate.TAG_RANK * tags)
        return self._attached(ranking, chosen, read.named, config.per_turn, (usage, now))

    def _candidates(
        self, scored: Scored, min_score: float, exclude: Collection[NoteKey | str]
    ) -> tuple[SlotArray, npt.NDArray[np.bool_]] | None:
        """The slots (ascending) the gate judges - a word of the message in the summary or
        tags, the score at least ``min_score``, not excluded - and per slot whether the note
        is short; None when there is none."""
        shared = scored.shared
        slots = np.flatnonzero(shared > 0)
        if not len(slots):  # no word of the message in any summary or tags: no score needed
            return None
        slots = slots[scored.scores[slots] >= min_score]
        if exclude:
            excluded = self._postings.slots_of(exclude)
            if excluded:
                slots = slots[~np.isin(slots, excluded)]
        if not len(slots):
            return None
        return slots, self._postings.body_lengths()[slots] <= gate.SHORT_BODY

    def _attached(
        self,
        ranking: FloatArray,
        chosen: SlotArray,
        named: Collection[int],
        per_turn: int,
        used: tuple[Mapping[NoteKey, Usage] | None, int],
    ) -> list[Hit]:
        """The passing notes (``chosen``, ranked by ``ranking``) to attach, best first: lifted
        by their ``used`` (usage, now) within the usage boost, none far below the best."""
        usage, now = used
        passing = self._best(ranking, chosen, max(gate.GATE_CANDIDATES, per_turn))
        if usage:  # usage may lift a note past others only within USAGE_BOOST_MAX
            boosted = [
                (score + _boost(usage, key, now), (score, key, slot))
                for score, key, slot in passing
            ]
            boosted.sort(key=lambda pair: (-pair[0], pair[1][1]))
            passing = [ranked for _, ranked in boosted]
        kept = self._beside_the_best(passing, named)[:per_turn]
        return [Hit(key[0], key[1], score, True) for score, key, _ in kept]  # shared > 0

    def _beside_the_best(self, passing: list[_Ranked], named: Collection[int]) -> list[_Ranked]:
        """The passing notes without those far below the best: under
        :data:`~.gate.RELATIVE_FLOOR` of its score, unless a phrase of their summary is in the
        message (``named``; two notes on "the kubernetes migration", one long, one short)."""
        if len(passing) < 2:
            return passing
        floor = gate.RELATIVE_FLOOR * passing[0][0]
        return [ranked for ranked in passing if ranked[0] >= floor or ranked[2] in named]

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
        hits = self.search(text, limit + len(own), expand=False)
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
        tokenizer = self.tokenizer
        body, links = without_links(note.body)
        count = tokenizer.counts
        fields = (count(note.summary), count("\n".join(note.tags)), count(body))
        summary = (fields[0], tokenizer.phrases(note.summary))
        marks = note_marks(tokenizer, self._tag_marks, note, (body, links), summary)
        return self._postings.entry(scope, note.id, cache_key, fields, marks)

    def _score(
        self, groups: WeightedGroups, *, recall: bool = True
    ) -> tuple[FloatArray, FloatArray] | None:
        """Scores per slot, and per slot the weight of the words matching summary or tags.

        ``recall`` selects the recall weights (prior, cap); otherwise search weights and the
        query-coverage factor apply. A word with several stems counts its best stem once.
        """
        if len(self._postings) == 0:
            return None
        scored = self._accumulate(groups, recall=recall)
        scores = scored.scores
        if not recall and scored.query_weight > 0:
            scores *= np.minimum(scored.covered / scored.query_weight, 1.0) ** COVERAGE_POWER
            if scored.tagged.any():
                scores *= self._tag_facets(groups, len(scores))
        return scores, scored.shared

    def _accumulate(self, groups: WeightedGroups, *, recall: bool = True) -> Scored:
        """The sums of :func:`~.accumulate.accumulate` over every slot."""
        slots = len(self._postings.entries_by_slot())  # every slot a posting may name
        table = self._recall_table if recall else self._search_table
        return accumulate(table, groups, slots, search=not recall)

    def _tag_facets(self, groups: WeightedGroups, capacity: int) -> FloatArray:
        """Per slot, 1 + :data:`TAG_FACET` times the share of the query's facet words (its own
        words some note holds in its tags) that the note holds in its tags."""
        matched = np.zeros(capacity, dtype=np.float64)
        facets = 0
        table = self._search_table
        for group, factor in groups:
            if factor != 1.0:
                continue  # feedback words are no facets
            parts = [part for part in table.get_many(list(group)) if part is not None]
            tagged = [part.tagged for part in parts if len(part.tagged)]
            if not tagged:
                continue
            facets += 1
            hit = np.zeros(capacity, dtype=np.bool_)
            for slots in tagged:
                hit[slots] = True
            matched += hit
        return 1.0 + TAG_FACET * matched / max(1, facets)

    def _share_along_links(self, scores: FloatArray) -> FloatArray:
        """Scores with a share of each strong note's score given to the notes linking to it:
        :data:`LINK_SHARE`, or :data:`ASKED_SHARE` from a note that asks something.

        A reply links to what it answers, a detail to its overview: a query matching the
        question finds the answer beside it. Only the :data:`LINK_SOURCES` best notes give;
        the shares given are passed on the same way, :data:`LINK_HOPS` links in all.
        """
        postings = self._postings
        found = postings.lookup(ASKS)
        asking = found[0] if found is not None else np.empty(0, dtype=np.int32)
        total = scores.copy()
        giving = scores
        for _ in range(LINK_HOPS):
            candidates = np.flatnonzero(giving > 0)
            if len(candidates) == 0:
                break
            if len(candidates) > LINK_SOURCES:
                best = np.argpartition(-giving[candidates], LINK_SOURCES - 1)[:LINK_SOURCES]
                candidates = candidates[best]
            amounts = giving[candidates] * np.where(
                np.isin(candidates, asking), ASKED_SHARE, LINK_SHARE
            )
            targets: list[IntArray] = []
            values: list[float] = []
            owners = postings.owners
            for slot, amount in zip(candidates.tolist(), amounts.tolist(), strict=True):
                linking = postings.lookup(LINK_MARK + owners[slot][1])
                if linking is not None:
                    targets.append(linking[0])
                    values.extend([amount] * len(linking[0]))
            if not targets:
                break
            giving = np.zeros_like(scores)
            np.add.at(giving, np.concatenate(targets), values)
            total += giving
        return total

    def _weight(self, term: str, document_frequency: int, *, recall: bool = True) -> float:
        note_count = len(self._postings)
        if recall:
            prior = self.tokenizer.prior(term)
            return term_weight(document_frequency, note_count, prior, self.params)
        return search_weight(document_frequency, note_count, self.params)

    def _weights(self, terms: list[str], document_frequencies: list[int]) -> list[float]:
        """:meth:`_weight` of many terms (recall weights)."""
        priors = self.tokenizer.priors(terms)
        return self._memo.recall(document_frequencies, len(self._postings), priors)

    def _search_weights(self, terms: list[str], document_frequencies: list[int]) -> list[float]:
        """:meth:`_weight` of many terms (search weights)."""
        return self._memo.search(document_frequencies, len(self._postings))

    def _feedback(self, hits: list[Hit], query_terms: set[str]) -> WeightedGroups:
        """Expansion words from the first results, weighted for :meth:`search`."""
        if not hits:
            return []
        postings = self._postings
        note_count = len(postings)
        candidates: dict[int, float] = {}
        for hit in hits:
            entry = postings.entry_of(hit.key)
            counts = entry.frequencies.sum(axis=1)
            total = float(counts.sum()) or 1.0
            share = hit.score / hits[0].score
            for term_id, count in zip(entry.term_ids.tolist(), counts.tolist(), strict=True):
                frequency = postings.document_frequency(term_id)
                term = postings.terms[term_id]
                if frequency < 2 or term in query_terms or term[0] in _MARKS:
                    continue  # a word of one note cannot lead anywhere new
                rarity = search_weight(frequency, note_count, self.params)
                candidates[term_id] = candidates.get(term_id, 0.0) + count / total * rarity * share
        best = sorted(candidates.items(), key=lambda item: -item[1])[:FEEDBACK_TERMS]
        if not best:
            return []
        strongest = best[0][1]
        return [
            ((postings.terms[term_id],), FEEDBACK_WEIGHT * value / strongest)
            for term_id, value in best
        ]

    def _hits(
        self, scores: FloatArray, shared: FloatArray, candidates: SlotArray, limit: int
    ) -> list[Hit]:
        """The best ``limit`` of the ``candidates`` slots, as hits, best first (ties by key)."""
        return [
            Hit(key[0], key[1], score, bool(shared[slot] > 0))
            for score, key, slot in self._best(scores[candidates], candidates, limit)
        ]

    def _best(self, values: FloatArray, candidates: SlotArray, limit: int) -> list[_Ranked]:
        """The best ``limit`` of the ``candidates`` slots by their ``values``, best first (ties
        by key), as (score, key, slot)."""
        if len(candidates) > limit:
            kth = values[np.argpartition(-values, limit - 1)[limit - 1]]
            kept = values >= kth  # keep ties: the order below is by key
            values, candidates = values[kept], candidates[kept]
        owners = self._postings.owners
        slots = candidates.tolist()
        ranked = sorted(
            zip(values.tolist(), [owners[slot] for slot in slots], slots, strict=True),
            key=lambda item: (-item[0], item[1]),
        )
        return ranked[:limit]


def _boost(usage: Mapping[NoteKey, Usage], key: NoteKey, now: int) -> float:
    found = usage.get(key)
    return usage_boost(found, now) if found is not None else 0.0
