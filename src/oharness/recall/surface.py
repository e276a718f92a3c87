"""Stem matches whose words differ: "expression" meets "Express" (per-message recall; spec 03.2;
docs/recall.md, "The gate").

A Snowball stem joins a word's inflections and some of its derivations ("expression" and
"express"), which often name other things. For the gate a message word matches a note's
summary or tags fully only when the note holds the same word up to its inflection
(:func:`inflection_key`); a match through the stem alone counts :data:`STEM_ONLY_FACTOR` of its
weight in ``shared`` and as the distinctive word. A note keeps a mark of each *derived* word of
its summary and tags (:data:`SURFACE_MARK` + key: its stem takes more than the inflection
from it) and of each stem held only through such words (:data:`DERIVED_MARK` + stem), so the
check is a look-up per message word, on the candidates alone. Only plain English words with
one stem are compared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from oharness.recall.gate import SHARED_GATE, Candidates
from oharness.recall.postings import IntArray, Postings
from oharness.recall.tokenize import Tokenizer
from oharness.recall.words import BRITISH_SPELLING, IRREGULAR_ENGLISH

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
#: Per term: the slots holding it in their summary or tags, and its topic weight.
Heads = dict[str, tuple[IntArray, float]]

#: Marks a derived word of a note's summary or tags by its inflection key.
SURFACE_MARK: Final = "\x05"
#: Marks a stem a note's summary or tags hold only through derived words.
DERIVED_MARK: Final = "\x06"
#: Share of its weight a message word matching a note only through the stem counts.
STEM_ONLY_FACTOR: Final = 0.5

#: A plain word, or a compound of plain words joined by ``-`` or ``_`` ("load-balancer").
_WORD: Final = re.compile(r"(?<![\w'.-])[a-z]+(?:[-_][a-z]+)*(?:'s)?(?![\w-])")
_JOINS: Final = re.compile(r"[-_]")
#: Inflectional endings, longest first, and what replaces them, by the last letter of a
#: word they may end (a word ending otherwise has none).
_ENDINGS: Final = (("ies", "y"), ("ied", "y"), ("ing", ""), ("'s", ""), ("ed", ""), ("es", ""))
_ENDINGS_BY_LAST: Final = {
    last: tuple(pair for pair in _ENDINGS if pair[0].endswith(last)) for last in "sdg"
}
#: A British spelling as the American one, then an irregular form as its base: one look-up.
_RESPELLED: Final = {
    word: IRREGULAR_ENGLISH.get(BRITISH_SPELLING.get(word, word), BRITISH_SPELLING.get(word, word))
    for word in (*BRITISH_SPELLING, *IRREGULAR_ENGLISH)
}


def inflection_key(word: str) -> str:
    """``word`` (lower case) without its English inflection: the same key for "change",
    "changes", "changed" and "changing", or "add", "adding"; another for "expression" and
    "express". Only compared between words of the same stem, so it need not be a word."""
    word = _RESPELLED.get(word, word)
    endings = _ENDINGS_BY_LAST.get(word[-1:])
    if endings is not None:  # else no ending applies
        for ending, replacement in endings:
            if word.endswith(ending) and len(word) - len(ending) >= 2 and not word.endswith("eed"):
                word = word[: -len(ending)] + replacement
                break
        else:
            if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
                word = word[:-1]
    if len(word) > 2 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "adding" and "add", "stopped" and "stop"
    return word


class _Word(NamedTuple):
    """A plain word as :func:`_word_of` reads it."""

    stem: str  # its single term ("": none or several, it matches nothing)
    key: str  # its inflection key
    #: Whether it is its stem's base word: the stem takes nothing more from it than its
    #: inflection ("express", "expressed", "pricing"; not "expression", "deployment").
    base: bool


def _word_of(word: str, stem: str | None) -> _Word:
    """A plain word read with its single stem (None with none or several: :data:`_NOT_PLAIN`)."""
    if stem is None:
        return _NOT_PLAIN
    key = inflection_key(word.removesuffix("'s"))
    if key.endswith("i"):  # Snowball writes a final y as i ("retry" -> "retri")
        key = key[:-1] + "y"
    return _Word(stem, key, len(key) <= len(stem) + 1)


#: What :func:`_word_of` found, per tokeniser signature (emptied when it grows too large).
_READ: Final[dict[str, dict[str, _Word]]] = {}
_READ_LIMIT: Final = 100_000
#: A word with no single stem (its empty stem is no term: it matches nothing).
_NOT_PLAIN: Final = _Word("", "", False)


def _plain_words(tokenizer: Tokenizer, text: str) -> list[_Word]:
    """The distinct plain English words of ``text`` (in order) as :func:`_word_of` reads
    them, a compound's words and the compound written as one word among them (the tokeniser
    reads "load-balancer" as "load", "balancer" and "loadbalancer"); a word with no single
    stem as :data:`_NOT_PLAIN`."""
    known = _READ.get(tokenizer.signature)
    if known is None or len(known) > _READ_LIMIT:
        known = _READ[tokenizer.signature] = {}
    words: dict[str, None] = {}
    for found in _WORD.findall(text.casefold()):
        if "-" in found or "_" in found:  # its words, and all of it written as one word
            parts = _JOINS.split(found)
            words.update(dict.fromkeys([*parts, "".join(parts)]))
        else:
            words[found] = None
    for word in [word for word in words if word not in known]:
        terms = tokenizer.tokens(word)
        known[word] = _word_of(word, terms[0] if len(terms) == 1 else None)
    return [known[word] for word in words]


def surface_marks(tokenizer: Tokenizer, text: str) -> list[str]:
    """The marks of the words of a note's summary and tags: each derived word by its key
    (:data:`SURFACE_MARK`), each stem held only through derived words (:data:`DERIVED_MARK`)."""
    if not tokenizer.english:
        return []
    marks: dict[str, None] = {}
    based: set[str] = set()
    derived: set[str] = set()
    for stem, key, base in _plain_words(tokenizer, text):
        if not stem:
            continue
        if base:
            based.add(stem)
        else:
            derived.add(stem)
            marks[SURFACE_MARK + key] = None
    marks.update(dict.fromkeys(DERIVED_MARK + stem for stem in sorted(derived - based)))
    return list(marks)


def weaken_stem_only(
    tokenizer: Tokenizer,
    message: str,
    groups: Sequence[tuple[str, ...]],
    postings: Postings,
    heads: Heads,
    candidates: Candidates,
) -> BoolArray | None:
    """Per candidate, whether it is still one once a message word (of ``groups``, the words
    the gate reads) matching a note's summary or tags only through its stem counts
    :data:`STEM_ONLY_FACTOR` of its weight; None when no word does (all stay). ``heads``: per
    term of the words, the notes holding it in their summary or tags and its topic weight.
    The candidates' ``shared`` and ``strongest`` are lowered in place where it does."""
    if not len(candidates) or not tokenizer.english:
        return None
    stems = _said_stems(tokenizer, message, groups)
    marks = [DERIVED_MARK + stem for stem, (base, _) in stems.items() if base]
    marks += [SURFACE_MARK + key for _, keys in stems.values() for key in keys]
    held = dict(zip(marks, postings.slots_of_many(marks), strict=True))
    shared, strongest = candidates.shared, candidates.strongest
    weak_of: dict[str, BoolArray] = {}
    changed = np.zeros(len(candidates), dtype=np.bool_)
    for stem, (said_base, keys) in stems.items():
        head, weight = heads.get(stem, (None, 0.0))
        if head is None or not len(head):
            continue
        # A base word meets only the notes holding the stem through derived words alone.
        holders = held[DERIVED_MARK + stem] if said_base else head
        if holders is None:
            continue
        weak = candidates.flags(holders)
        for key in keys:  # a note holding the word said matches more than its stem
            full = held[SURFACE_MARK + key]
            if full is not None:
                weak &= ~candidates.flags(full)
        if not weak.any():
            continue
        shared[weak] -= (1.0 - STEM_ONLY_FACTOR) * weight
        weak_of[stem] = weak
        changed |= weak & (strongest <= weight)  # its strongest word: found again below
    if not weak_of:
        return None
    if changed.any():
        again = strongest_weight(heads, candidates.where, len(candidates), weak_of)
        strongest[changed] = again[changed]
    stay: BoolArray = (shared >= SHARED_GATE) | candidates.short
    return stay


def strongest_weight(
    heads: Heads, where: IntArray, count: int, weak_of: Mapping[str, BoolArray] | None = None
) -> FloatArray:
    """Per candidate (``where``: per slot its position among ``count``, -1 for none), the
    strongest topic weight of the words in its summary or tags, each at what it counts there
    (:data:`STEM_ONLY_FACTOR` of it where ``weak_of`` its term)."""
    best = np.zeros(count, dtype=np.float64)
    if not heads:
        return best
    weak_of = weak_of or {}
    terms = list(heads)
    found = where[np.concatenate([heads[term][0] for term in terms])]
    sizes = [len(heads[term][0]) for term in terms]
    weights = np.repeat([heads[term][1] for term in terms], sizes)
    ends = np.cumsum(sizes).tolist()
    for number, term in enumerate(terms):
        weak = weak_of.get(term)
        if weak is not None:
            start, end = ends[number] - sizes[number], ends[number]
            at = found[start:end]
            lowered = np.flatnonzero(at >= 0)
            lowered = lowered[weak[at[lowered]]] + start
            weights[lowered] *= STEM_ONLY_FACTOR
    among = found >= 0
    np.maximum.at(best, found[among], weights[among])
    return best


def _said_stems(
    tokenizer: Tokenizer, message: str, groups: Sequence[tuple[str, ...]]
) -> dict[str, tuple[bool, set[str]]]:
    """Per stem of the gate's words that may match through the stem only: whether the message
    says it as its base word, and the inflection keys of its derived words said. A base word
    meets only notes holding the stem through derived words alone (few, marked); a derived
    word every note holding the stem but not that word."""
    read = {group[0] for group in groups if len(group) == 1}
    found: dict[str, tuple[bool, set[str]]] = {}  # in the order of first mention
    for word in _plain_words(tokenizer, message):
        if word.stem in read:
            base, keys = found.get(word.stem, (False, set()))
            if not word.base:
                keys.add(word.key)
            found[word.stem] = (base or word.base, keys)
    return found
