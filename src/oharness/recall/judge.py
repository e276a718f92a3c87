"""The per-message recall path (spec 03.2; docs/recall.md, "The gate"): which notes a message
names.

:class:`Judge` reads a message - frame words ("what did we *decide*") left out, words meaning
the same at full weight, related ones at :data:`RELATED_FACTOR` (listed in ``words.txt``),
words written together or apart and typos read as the notes write them - and applies
:mod:`~oharness.recall.gate` to the notes holding a message word in their summary or tags
whose score reaches ``minScore``. A match only through the stem counts less
(:mod:`~oharness.recall.surface`); a short note failing on its summary and tags is judged
again with its body words; everyday words alone that pass on ``per_turn`` notes or more
single none out.

Not thread-safe, as the index that owns it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Final

import numpy as np
import numpy.typing as npt

from oharness.recall import gate, surface
from oharness.recall.build import TAG_MARK, UNUSED_TAG_MARK
from oharness.recall.gate import Candidates
from oharness.recall.postings import IntArray, Postings
from oharness.recall.score import MIN_TERM_WEIGHT, ScoringParams
from oharness.recall.scoring import (
    Scored,
    TermInfo,
    WeightedGroups,
    accumulate,
    read_terms,
    term_weight,
)
from oharness.recall.tokenize import PHRASE_MARK, Tokenizer, unspaced_term
from oharness.recall.words import FRAME_WORDS, RELATED_WORDS, SAME_WORDS

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Groups = list[tuple[str, ...]]


#: A related word counts this share of its weight (score and shared topic weight).
RELATED_FACTOR: Final = 0.5

#: A message word no note holds, of at least UNKNOWN_LENGTH letters and at most
#: UNKNOWN_MAX_LENGTH (a longer run of letters is pasted data, and reading it costs time
#: growing with the square of its length), is read as two words written as one or as a typo
#: (:meth:`Judge.message`); at most UNKNOWN_WORDS such words per message.
UNKNOWN_LENGTH: Final = 5
UNKNOWN_MAX_LENGTH: Final = 30
UNKNOWN_WORDS: Final = 4
UNKNOWN_PAIR: Final = 0.4  # the share of its weight a CJK or Thai pair no note holds counts
#: A typo other than two letters swapped or one doubled is read from this many letters.
TYPO_LENGTH: Final = 8
_LETTERS: Final = "abcdefghijklmnopqrstuvwxyz"


def related_terms(analyse: Callable[[str], Iterable[str]]) -> dict[str, dict[str, float]]:
    """Each term of the related and same words -> the terms of the other words of its set and
    the share of their weight they count (``analyse``: a tokeniser's ``tokens``, so that the
    table meets the index's stems; a same word wins over a related one)."""
    table: dict[str, dict[str, float]] = {}
    for factor, sets in ((RELATED_FACTOR, RELATED_WORDS), (1.0, SAME_WORDS)):
        for words in sets:
            terms = [tuple(analyse(word)) for word in words]
            for own in terms:
                others = [term for group in terms if group is not own for term in group]
                for term in own:
                    found = table.setdefault(term, {})
                    found.update(dict.fromkeys((t for t in others if t not in own), factor))
    return table


@dataclass
class Message:
    """One message as the gate reads it."""

    groups: Groups  # its words, each as its alternative terms (frame words left out)
    phrases: list[str]  # its phrase terms
    related: list[tuple[int, dict[str, float]]]  # per word (its position): related terms
    named: frozenset[int] = frozenset()  # the slots judged whose summary holds a phrase of it
    #: Its terms that can name something (weight at least MIN_TERM_WEIGHT), by id: the
    #: number of their word and their weight.
    said: dict[int, tuple[int, float]] = field(default_factory=dict)
    #: Its words read together as a compound (:meth:`Judge._joined`): weighed as that one.
    apart: frozenset[int] = frozenset()


@dataclass
class Passed:
    """The notes a message names: their slots, their ranking score (the score lifted per whole
    tag said, :data:`~.gate.TAG_RANK`), the slots named by a phrase of their summary; what
    a second ranking of the judged notes needs (:meth:`.RecallIndex.recall`)."""

    slots: IntArray
    ranking: FloatArray
    named: frozenset[int]
    scores: FloatArray  # every note's score (by slot), passing or not
    #: The notes judged (a message word in the summary or tags, the score at least
    #: ``minScore``, not excluded), and the message's own words scored as search does.
    judged: IntArray
    plain: Scored


class Judge:
    """The per-message path over one index's postings; see the module docstring."""

    def __init__(self, postings: Postings, tokenizer: Tokenizer, params: ScoringParams) -> None:
        self._postings = postings
        self._tokenizer = tokenizer
        self._params = params
        english = tokenizer.english
        self._related = related_terms(tokenizer.tokens) if english else {}
        self._frame = frozenset(
            term for word in (FRAME_WORDS if english else ()) for term in tokenizer.tokens(word)
        )
        self._priors = np.zeros(0, dtype=np.float64)  # per term id; NaN: not known yet
        self._unspaced = np.zeros(0, dtype=np.int8)

    def message(self, text: str) -> Message:
        """``text`` as the gate reads it."""
        groups, phrases = self._tokenizer.message_terms(text)
        if not self._frame.isdisjoint(chain.from_iterable(groups)):
            groups = [group for group in groups if not self._frame.issuperset(group)]
        groups = self._read_unknown(groups, phrases)
        joined, apart = self._joined(text, groups)
        groups += joined
        said = set(chain.from_iterable(groups))
        related: list[tuple[int, dict[str, float]]] = []
        for number, group in enumerate(groups):
            found = [self._related.get(term, {}) for term in group]
            terms = {t: f for table in found for t, f in table.items() if t not in said}
            if terms:
                related.append((number, dict(sorted(terms.items()))))
        return Message(groups, phrases, related, apart=apart)

    def _read_unknown(self, groups: Groups, phrases: list[str]) -> Groups:
        """A message word no note holds may be two words written as one ("featureflags",
        "crashreports"): when its parts are a phrase of a summary, the message says the parts
        and the phrase. Otherwise it may be a typo ("deplyo", "andriod"): one edit away from a
        word of summaries or tags, it is read as that word (the one most notes name a topic
        with). Only lower-case letters, :data:`UNKNOWN_LENGTH` to :data:`UNKNOWN_MAX_LENGTH` of
        them, not an everyday word."""
        tokenizer = self._tokenizer
        held = self._held([group[0] for group in groups])
        known = {group[0] for group in groups}
        read: Groups = []
        left = UNKNOWN_WORDS
        for group, is_held in zip(groups, held, strict=True):
            term = group[0]
            if (
                left <= 0
                or is_held
                or not UNKNOWN_LENGTH <= len(term) <= UNKNOWN_MAX_LENGTH
                or not (term.isascii() and term.isalpha() and term.islower())
                or tokenizer.prior(term) > 0
            ):
                read.append(group)
                continue
            left -= 1
            parts = self._compound(term)
            if parts is not None:
                read.extend((part,) for part in parts if part not in known)
                phrases.append(f"{PHRASE_MARK}{parts[0]} {parts[1]}")
                continue
            fixed = self._typo(term)
            read.append((fixed,) if fixed is not None and fixed not in known else group)
        return read

    def _joined(self, text: str, groups: Groups) -> tuple[Groups, frozenset[int]]:
        """Compounds notes write joined or hyphenated ("exit-codes", "on-call") that the message
        writes apart ("exit code", "on call") and no note side by side, and the numbers of
        those words (the compound is said once: :meth:`_message_weight`)."""
        numbers = {term: number for number, group in enumerate(groups) for term in group}
        joined = {t: words for t, words in self._tokenizer.joined(text).items() if t not in numbers}
        held = self._held(list(joined))
        held_words = [item for item, found in zip(joined.items(), held, strict=True) if found]
        apart = self._held([self._tokenizer.phrase(*words) for _, words in held_words])
        read = [item for item, found in zip(held_words, apart, strict=True) if not found]
        words = {t for _, pair in read for word in pair for t in self._tokenizer.tokens(word)[:1]}
        return [(term,) for term, _ in read], frozenset(numbers[t] for t in words & numbers.keys())

    def _compound(self, term: str) -> tuple[str, str] | None:
        """The two terms ``term`` is written of, when they are a phrase notes hold or, else,
        both named in one note's summary or tags."""
        pairs: list[tuple[str, str]] = []
        for cut in range(3, len(term) - 2):
            first = self._tokenizer.tokens(term[:cut])
            second = self._tokenizer.tokens(term[cut:])
            if len(first) == 1 and len(second) == 1 and first != second:
                pairs.append((min(first[0], second[0]), max(first[0], second[0])))
        phrases = [f"{PHRASE_MARK}{first} {second}" for first, second in pairs]
        found = zip(pairs, self._held(phrases), strict=True)
        return next((pair for pair, held in found if held), None) or next(
            (pair for pair in pairs if self._named_together(pair)), None
        )

    def _named_together(self, pair: tuple[str, str]) -> bool:
        """Whether some note's summary or tags hold both terms of ``pair``."""
        ids = self._postings.vocabulary.get_many(list(pair))
        found = [self._postings.postings(term_id) for term_id in ids if term_id is not None]
        heads = [slots[counts[:, :2].any(axis=1)] for slots, counts in found]
        return len(heads) == 2 and bool(len(np.intersect1d(heads[0], heads[1])))

    def _typo(self, term: str) -> str | None:
        """The word of summaries or tags that most notes hold there one edit away from
        ``term``; None when there is none. Two letters swapped and a letter typed twice or
        once too few are the usual typos and rarely turn one real word into another
        ("andriod", "comit", "weeek"), so they are read at any length; another letter left
        out, added or changed only from :data:`TYPO_LENGTH` letters ("teraform", "kubernets"),
        as a shorter word is often another word ("trick", "track")."""
        cuts = [(term[:n], term[n:]) for n in range(len(term) + 1)]
        edits = {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
        edits |= {a + b[0] + b for a, b in cuts if b}  # a letter doubled ...
        edits |= {a + b[1:] for a, b in cuts if b[:1] == b[1:2]}  # ... or undoubled
        if len(term) >= TYPO_LENGTH:
            edits |= (
                {a + b[1:] for a, b in cuts if b}
                | {a + c + b[1:] for a, b in cuts if b for c in _LETTERS}
                | {a + c + b for a, b in cuts for c in _LETTERS}
            )
        edits.discard(term)
        ordered = sorted(edits)
        head_held = self._postings.head_held
        best, most = None, 0
        for edit, term_id in zip(ordered, self._postings.vocabulary.get_many(ordered), strict=True):
            if term_id is not None and term_id < len(head_held) and head_held[term_id] > most:
                best, most = edit, int(head_held[term_id])
        return best

    def _held(self, terms: list[str]) -> list[bool]:
        """Whether some note holds each term."""
        held, ids = self._postings.held, self._postings.vocabulary.get_many(terms)
        return [i is not None and i < len(held) and held[i] > 0 for i in ids]

    def passed(
        self, text: str, min_score: float, per_turn: int, exclude: Collection[object]
    ) -> Passed | None:
        """The notes ``text`` names (see the module docstring); None when there are none.
        ``exclude``: notes never attached, as keys or bare ids."""
        message = self.message(text)
        if not message.groups:
            return None
        groups: WeightedGroups = [(group, 1.0) for group in message.groups] + [
            ((term,), factor) for _, terms in message.related for term, factor in terms.items()
        ]
        terms = [term for group, _ in groups for term in group]
        postings, params = self._postings, self._params
        infos = read_terms(postings, self._tokenizer, params, terms, search=False)
        numbers = [number for number, (group, _) in enumerate(groups) for _ in group]
        for number, info in zip(numbers, infos[: sum(map(len, message.groups))], strict=False):
            if info is not None and info.weight >= MIN_TERM_WEIGHT:
                message.said[info.term_id] = (number, info.weight)
        norms = postings.norms(params.boosts, params.length_factors)
        scored = accumulate(infos, groups, norms, params, plain=True)
        if message.related:
            self._add_related(message, dict(zip(terms, infos, strict=True)), scored.shared)
        candidates = self._candidates(message, scored, min_score, exclude)
        if candidates is None:
            return None
        judged = candidates.slots.copy()
        stay = surface.weaken_stem_only(
            self._tokenizer, text, message.groups, postings, scored.heads, candidates
        )
        if stay is not None:
            candidates = candidates.select(stay)
        chosen, tags = self._judge(message, candidates, scored.scores, per_turn)
        ranking = scored.scores[chosen] * (1.0 + gate.TAG_RANK * tags)
        assert scored.plain is not None
        return Passed(chosen, ranking, message.named, scored.scores, judged, scored.plain)

    def _add_related(
        self, message: Message, infos: dict[str, TermInfo | None], shared: FloatArray
    ) -> None:
        """Add to ``shared`` the weight of related words found in summaries or tags, at their
        share, where the message word itself is not found."""
        for number, terms in message.related:
            best = np.zeros(len(shared), dtype=np.float64)
            for term, factor in terms.items():
                info = infos[term]
                if info is not None and info.weight > 0:
                    best[info.head] = np.maximum(best[info.head], factor * info.topic_weight)
            for term in message.groups[number]:
                info = infos[term]
                if info is not None:
                    best[info.head] = 0.0
            shared += best

    def _candidates(
        self, message: Message, scored: Scored, min_score: float, exclude: Collection[object]
    ) -> Candidates | None:
        """The notes the gate judges: a message word in the summary or tags, the score at
        least ``min_score``, not excluded."""
        postings = self._postings
        slots = np.flatnonzero(scored.shared > 0).astype(np.int32)
        slots = slots[scored.scores[slots] >= min_score]
        if exclude:
            slots = slots[~np.isin(slots, postings.slots_of_keys(exclude))]  # type: ignore[arg-type]
        if not len(slots):
            return None
        where = np.full(len(scored.shared), -1, dtype=np.int32)
        where[slots] = np.arange(len(slots), dtype=np.int32)
        strongest = surface.strongest_weight(scored.heads, where, len(slots))
        short = postings.lengths[slots, 2] <= gate.SHORT_BODY
        topic, body = self._topic_of(message.groups, slots, short)
        said = self._message_weight(message, scored.weights)
        shared = scored.shared[slots]
        return Candidates(slots, short, shared, strongest, topic, body, said, where)

    def _topic_of(
        self, groups: Groups, slots: IntArray, short: BoolArray
    ) -> tuple[FloatArray, FloatArray]:
        """Per note, the weight of its topic in the message's scripts (an English message is
        measured against the words, a Japanese one against the pairs, a mixed one against
        both) - each word weighing by the notes holding it in their summary or tags - and of
        a short note's other body words (weighing by the notes holding them anywhere)."""
        postings = self._postings
        firsts = [group[0] for group in groups]
        scripts = {bool(not term.isascii() and unspaced_term(term)) for term in firsts}
        ids, owner = postings.heads.gather(slots)
        weights, unspaced = self._weights(ids, postings.head_held)
        if scripts == {False}:
            weights = np.where(unspaced, 0.0, weights)
        elif scripts == {True}:
            weights = np.where(unspaced, weights, 0.0)
        topic = np.bincount(owner, weights, len(slots)).astype(np.float64, copy=False)
        ids, among_short = postings.bodies.gather(slots[short])
        body_weights, _ = self._weights(ids, postings.held)
        body_owner = np.flatnonzero(short)[among_short]
        body = np.bincount(body_owner, body_weights, len(slots)).astype(np.float64, copy=False)
        return topic, body

    def _weights(self, ids: IntArray, held: IntArray) -> tuple[FloatArray, BoolArray]:
        """The recall weight of each term of ``ids`` by ``held`` (notes per term), and whether
        each is of a script written without spaces (both kept per term id: neither changes)."""
        terms = self._postings.vocabulary
        if len(self._priors) < len(terms):
            grow = max(len(terms), 2 * len(self._priors)) - len(self._priors)
            self._priors = np.concatenate((self._priors, np.full(grow, np.nan)))
            self._unspaced = np.concatenate((self._unspaced, np.zeros(grow, dtype=np.int8)))
        priors = self._priors[ids]
        new = np.unique(ids[np.isnan(priors)])
        if len(new):  # read once per term, then kept
            words = [terms[term_id] for term_id in new.tolist()]
            self._priors[new] = list(map(self._tokenizer.prior, words))
            self._unspaced[new] = [not word.isascii() and unspaced_term(word) for word in words]
            priors = self._priors[ids]
        weights = term_weight(held[ids], len(self._postings), priors, self._params)
        return weights, self._unspaced[ids] > 0

    def _message_weight(self, message: Message, known: dict[str, float]) -> float:
        """The recall weight of a message's words (each word's best stem; a term no note
        holds weighs as such, a pair :data:`UNKNOWN_PAIR`; a compound's words as that one)."""
        note_count, prior = len(self._postings), self._tokenizer.prior

        def weight(term: str) -> float:
            found = known.get(term)
            if found is not None:
                return found
            # A CJK or Thai pair no note holds is mostly one across two words (前要, 要做).
            share = UNKNOWN_PAIR if unspaced_term(term) else 1.0
            return share * float(term_weight(0, note_count, prior(term), self._params))

        apart = message.apart
        return sum(max(map(weight, g)) for n, g in enumerate(message.groups) if n not in apart)

    def _judge(
        self, message: Message, candidates: Candidates, scores: FloatArray, per_turn: int
    ) -> tuple[IntArray, FloatArray]:
        """The slots of the candidates the message names, and per note of them how many of
        its whole tags the message says. A short note failing on its summary and tags is
        judged again with its body words."""
        slots = candidates.slots
        tags, tag_only, phrase = self._named_at(message, candidates)
        message.named = frozenset(slots[phrase].tolist())
        shared, topic, strongest = candidates.shared, candidates.topic, candidates.strongest
        named = phrase | tag_only
        ok = gate.passes(shared, topic, candidates.said, named, strongest)
        retry = np.flatnonzero(candidates.short & ~ok)
        if len(retry) > gate.SHORT_CANDIDATES:
            best = np.lexsort((slots[retry], -scores[slots[retry]]))[: gate.SHORT_CANDIDATES]
            retry = np.sort(retry[best])
        extra, extra_strongest = np.zeros(len(slots)), np.zeros(len(slots))
        words = np.zeros(len(slots), dtype=np.intp)
        for position in retry.tolist():
            found = self._body_match(message, int(slots[position]))
            extra[position], extra_strongest[position], words[position] = found
        strongest = np.maximum(strongest, extra_strongest)
        again = retry[extra[retry] > 0]  # a body word matched: a larger topic, more shared
        ok[again] = gate.passes(
            shared[again] + extra[again],
            topic[again] + candidates.body[again],
            candidates.said,
            phrase[again] | (tag_only[again] & (words[again] >= gate.NAMED_BODY_WORDS)),
            strongest[again],
        )
        everyday = ok & ~named & (strongest < gate.DISTINCTIVE)
        if np.count_nonzero(everyday) >= per_turn:
            ok &= ~everyday
        return slots[ok], tags[ok]

    def _named_at(
        self, message: Message, candidates: Candidates
    ) -> tuple[FloatArray, BoolArray, BoolArray]:
        """Per candidate: how many of its whole tags the message says, whether one of them
        has a word its summary does not use, and whether its summary holds a phrase of the
        message."""
        slots_of = self._postings.slots_of_many
        said = [group[0] for group in message.groups] + message.phrases
        tags = slots_of([TAG_MARK + term for term in said])
        tagged = [term for term, slots in zip(said, tags, strict=True) if slots is not None]
        unused = slots_of([UNUSED_TAG_MARK + term for term in tagged])
        phrases = slots_of(message.phrases)
        return (
            _held_by(candidates, tags).astype(np.float64),
            _held_by(candidates, unused) > 0,
            _held_by(candidates, phrases) > 0,
        )

    def _body_match(self, message: Message, slot: int) -> tuple[float, float, int]:
        """For a short note: the weight of the message words found in its body but not its
        summary or tags (each word's best stem, summed in the note's order), the strongest
        of them and how many."""
        said = message.said
        best: dict[int, float] = {}  # word -> its best stem's weight
        for term_id in self._postings.bodies[slot].tolist():
            found = said.get(term_id)
            if found is not None:
                best[found[0]] = max(best.get(found[0], 0.0), found[1])
        return sum(best.values()), max(best.values(), default=0.0), len(best)


def _held_by(candidates: Candidates, holders: list[IntArray | None]) -> npt.NDArray[np.intp]:
    """Per candidate, how many of ``holders`` (arrays of slots, or None) hold it."""
    held = [slots for slots in holders if slots is not None]
    found = candidates.where[np.concatenate([np.empty(0, dtype=np.int32), *held])]
    return np.bincount(found[found >= 0], minlength=len(candidates))
