"""The in-memory recall index over the notes of both scopes (spec 03.2, 03.3).

An inverted index keyed by ``(scope, id)``: for every term, the slots of the notes holding it
and the term's frequency in each field (summary, tags, body). One note is added, replaced or
removed by touching only its own terms' postings, so an edit shows in the next recall without
a rebuild. Scores are accumulated with numpy over the postings of the message's terms; the
formula and its scale are described in :mod:`oharness.recall.score`.

Not thread-safe: callers serialise access (one index per process, updated under its owner's
lock).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oharness.notes.format import Note
from oharness.recall.postings import CacheKey, NoteEntry, NoteKey, Postings
from oharness.recall.score import (
    DEFAULT_PARAMS,
    MIN_TERM_WEIGHT,
    ScoringParams,
    Usage,
    similarity,
    term_weight,
    usage_boost,
)
from oharness.recall.tokenize import Tokenizer
from oharness.settings import RecallSettings
from oharness.types import Scope

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Hit:
    """One ranked note. ``in_summary_or_tags``: a message word matched its summary or tags."""

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
        self._postings = Postings(self.tokenizer.prior)

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
        self._postings.insert(
            [self._entry(scope, note, keys.get((scope, note.id))) for scope, note in notes]
        )

    def remove(self, scope: Scope, note_id: str) -> bool:
        """Forget a note; False when it was not indexed."""
        return self._postings.delete((scope, note_id))

    def entries(self) -> tuple[list[str], list[NoteEntry]]:
        """The vocabulary and every note's indexed form (what the cache stores)."""
        return self._postings.export()

    def restore(self, terms: list[str], entries: Iterable[NoteEntry]) -> None:
        """Add notes from their indexed form, with term ids into ``terms``."""
        self._postings.insert(self._postings.translate(terms, entries))

    # -- queries ---------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """Best notes for ``query``, highest first: no gate, no threshold (``memory(query)``)."""
        scored = self._score(query, capped=False)
        if scored is None or limit <= 0:
            return []
        scores, head = scored
        return self._hits(scores, head, scores > 0, limit)

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

        A note qualifies when a word of the message matches its summary or tags and its score
        reaches ``min_score``. ``exclude`` holds notes already attached in this session, as
        ``(scope, id)`` or as a bare id (meaning both scopes). ``usage`` (recall counts, last
        use at ``now``) only reorders qualifying notes by at most
        :data:`~oharness.recall.score.USAGE_BOOST_MAX`.
        """
        config = settings if settings is not None else RecallSettings()
        if not config.enabled or config.per_turn <= 0:
            return []
        scored = self._score(message, capped=True)
        if scored is None:
            return []
        scores, head = scored
        allowed = head & (scores >= config.min_score)
        for slot in self._postings.slots_of(exclude):
            allowed[slot] = False
        candidates = self._hits(scores, head, allowed, limit=len(self._postings))
        if usage:
            boosted = [(hit.score + _boost(usage, hit.key, now), hit) for hit in candidates]
            boosted.sort(key=lambda pair: (-pair[0], pair[1].scope, pair[1].id))
            candidates = [hit for _, hit in boosted]
        return candidates[: config.per_turn]

    def related(self, note: Note, limit: int = 5, *, scope: Scope | None = None) -> list[Hit]:
        """Notes on a similar topic to ``note`` (its own entry excluded), best first."""
        text = "\n".join((note.summary, " ".join(note.tags), note.body))
        hits = self.search(text, limit + 2)
        own = {(scope, note.id)} if scope else {("project", note.id), ("user", note.id)}
        return [hit for hit in hits if hit.key not in own][:limit]

    def similarity(self, first: Note, second: Note) -> float:
        """Summary + tags similarity of two notes (see :func:`~oharness.recall.score.similarity`)."""
        return similarity(self.summary_terms(first), self.summary_terms(second))

    def summary_terms(self, note: Note) -> frozenset[str]:
        """The terms of a note's summary and tags."""
        return frozenset(self.tokenizer.tokens(note.summary + "\n" + "\n".join(note.tags)))

    # -- internals -------------------------------------------------------------------------

    def _entry(self, scope: Scope, note: Note, cache_key: CacheKey | None) -> NoteEntry:
        count = self.tokenizer.counts
        fields = (count(note.summary), count("\n".join(note.tags)), count(note.body))
        return self._postings.entry(scope, note.id, cache_key, fields)

    def _score(self, text: str, *, capped: bool) -> tuple[FloatArray, BoolArray] | None:
        postings = self._postings
        note_count = len(postings)
        if note_count == 0:
            return None
        norms = postings.norms(self.params)
        capacity = norms.shape[0]
        scores = np.zeros(capacity, dtype=np.float64)
        head = np.zeros(capacity, dtype=np.bool_)
        top = self.params.k1 + 1.0
        for group in self.tokenizer.query_terms(text):
            parts: list[tuple[npt.NDArray[np.int32], FloatArray]] = []
            for term in group:
                found = postings.lookup(term)
                if found is None:
                    continue
                term_id, slots, frequencies = found
                weight = term_weight(
                    len(slots), note_count, postings.priors[term_id], self.params, capped=capped
                )
                if weight < MIN_TERM_WEIGHT:
                    continue
                x = np.einsum("ij,ij->i", frequencies, norms[slots], dtype=np.float64)
                parts.append((slots, (weight * top) * x / (x + self.params.k1)))
                head[slots[frequencies[:, 0] + frequencies[:, 1] > 0]] = True
            if len(parts) == 1:
                slots, contribution = parts[0]
                scores[slots] += contribution
            elif parts:
                # A word with several stems counts its best-matching stem once.
                best = np.zeros(capacity, dtype=np.float64)
                for slots, contribution in parts:
                    best[slots] = np.maximum(best[slots], contribution)
                scores += best
        return scores, head

    def _hits(self, scores: FloatArray, head: BoolArray, mask: BoolArray, limit: int) -> list[Hit]:
        candidates = np.flatnonzero(mask)
        if len(candidates) > limit:
            values = scores[candidates]
            kth = values[np.argpartition(-values, limit - 1)[limit - 1]]
            candidates = candidates[values >= kth]  # keep ties: the order below is by key
        owners = self._postings.owners
        ranked = sorted(
            ((float(scores[slot]), owners[slot], bool(head[slot])) for slot in candidates.tolist()),
            key=lambda item: (-item[0], item[1]),
        )
        return [Hit(key[0], key[1], score, matched) for score, key, matched in ranked[:limit]]


def _boost(usage: Mapping[NoteKey, Usage], key: NoteKey, now: int) -> float:
    found = usage.get(key)
    return usage_boost(found, now) if found is not None else 0.0
