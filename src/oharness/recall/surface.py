"""Stem matches whose words differ: "expression" meets "Express" (per-message recall; spec 03.2).

A Snowball stem joins a word's inflections ("change", "changes", "changed") and also some of
its derivations ("expression" and "express", "deployment" and "deploy", "uploader" and
"upload"). An inflection is the same word; a derivation is often another one, and the
commonest derivations of a software team's words name other things ("a regular expression",
"the Express framework"). So for the gate a message word matches a note's summary or tags
fully only when the note holds the same word up to its inflection (:func:`inflection_key`);
a match through the stem alone counts :data:`STEM_ONLY_FACTOR` of its weight in ``shared``
and as the distinctive word. The score itself is unchanged.

A word is its stem's *base* word when the stem takes nothing more from it than the inflection
(its key at most one letter longer than the stem: "express", "expressed", "pricing"), else it
is *derived* ("expression", "deployment"). A note keeps, beside its terms, a mark of each
derived word of its summary and tags (:data:`SURFACE_MARK` + key) and of each stem they hold
only through derived words (:data:`DERIVED_MARK` + stem). A base word of a message is then
weak only at the notes of the second mark, and a derived one at the notes holding its stem
without its mark: a look-up per message word, on the candidates alone.

Only English words of plain letters are compared (an identifier, a word of another script or
one with several stems is left as it matched).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from oharness.recall.accumulate import TermTable
from oharness.recall.gate import SHARED_GATE, SHORT_BODY
from oharness.recall.postings import IntArray, Postings
from oharness.recall.tokenize import Tokenizer
from oharness.recall.words import BRITISH_SPELLING, IRREGULAR_ENGLISH

FloatArray = npt.NDArray[np.float64]
#: A word as :func:`_word_of` reads it.
_Word = tuple[str, str, bool, str]
BoolArray = npt.NDArray[np.bool_]
SlotArray = npt.NDArray[np.integer[Any]]

#: Marks a derived word of a note's summary or tags by its inflection key.
SURFACE_MARK: Final = "\x05"
#: Marks a stem a note's summary or tags hold only through derived words.
DERIVED_MARK: Final = "\x06"
#: Share of its weight a message word matching a note only through the stem counts.
STEM_ONLY_FACTOR: Final = 0.5

_WORD: Final = re.compile(r"(?<![\w'.-])[a-z]+(?:'s)?(?![\w-])")
#: Inflectional endings, longest first, and what replaces them.
_ENDINGS: Final = (("ies", "y"), ("ied", "y"), ("ing", ""), ("'s", ""), ("ed", ""), ("es", ""))


def inflection_key(word: str) -> str:
    """``word`` (lower case) without its English inflection: the same key for "change",
    "changes", "changed" and "changing", or "add", "adding"; another for "expression" and
    "express". Only compared between words of the same stem, so it need not be a word."""
    word = BRITISH_SPELLING.get(word, word)
    word = IRREGULAR_ENGLISH.get(word, word)
    for ending, replacement in _ENDINGS:
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


def _word_of(tokenizer: Tokenizer, word: str) -> _Word | None:
    """A plain word's stem, inflection key, whether it is its stem's base word (the stem takes
    nothing more from it than its inflection: "express", "expressed", "pricing"; not
    "expression", "deployment") and the stem's :data:`DERIVED_MARK`; None with no single
    stem."""
    terms = tokenizer.tokens(word)
    if len(terms) != 1:
        return None
    stem = terms[0]
    key = _final_y(inflection_key(word.removesuffix("'s")))
    return stem, key, len(key) <= len(stem) + 1, DERIVED_MARK + stem


def _final_y(key: str) -> str:
    # Snowball writes a final y as i ("retry" -> "retri", "city" -> "citi").
    return key[:-1] + "y" if key.endswith("i") else key


#: What :func:`_word_of` found, per tokeniser signature (emptied when it grows too large).
_READ: Final[dict[str, dict[str, _Word | None]]] = {}
_READ_LIMIT: Final = 100_000


def _plain_words(tokenizer: Tokenizer, text: str) -> list[_Word]:
    """The plain English words of ``text`` with a single stem, as :func:`_word_of` reads them."""
    known = _READ.setdefault(tokenizer.signature, {})
    if len(known) > _READ_LIMIT:
        known.clear()
    found: list[_Word] = []
    for word in _WORD.findall(text.casefold()):
        if word in known:
            value = known[word]
        else:
            value = known[word] = _word_of(tokenizer, word)
        if value is not None:
            found.append(value)
    return found


def surface_marks(tokenizer: Tokenizer, text: str) -> list[str]:
    """The marks of the words of a note's summary and tags: each derived word by its key
    (:data:`SURFACE_MARK`), each stem held only through derived words (:data:`DERIVED_MARK`)."""
    if not _english(tokenizer):
        return []
    marks: dict[str, None] = {}
    based: set[str] = set()
    derived: set[str] = set()
    for stem, key, base, _ in _plain_words(tokenizer, text):
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
    table: TermTable,
    scored: tuple[FloatArray, FloatArray],
    slots: SlotArray,
) -> SlotArray:
    """The candidate ``slots`` still candidates once a message word (of ``groups``, the words
    the gate reads) matching a note's summary or tags only through its stem counts
    :data:`STEM_ONLY_FACTOR` of its weight; ``shared`` and ``strongest`` (per slot) are
    lowered in place at those slots."""
    if not len(slots) or not _english(tokenizer):
        return slots
    words = _said_stems(tokenizer, message, groups, postings)
    if not words:
        return slots
    shared, strongest = scored
    scratch = np.zeros(len(shared), dtype=np.bool_)
    weak_of: dict[str, BoolArray] = {}
    changed: BoolArray | None = None
    for stem, part in zip(words, table.get_many(list(words)), strict=True):
        if part is None or not len(part.head):
            continue
        said_base, keys = words[stem]
        if said_base:  # only the notes holding the stem through derived words alone
            derived_only = postings.lookup(DERIVED_MARK + stem)
            holders = derived_only[0] if derived_only is not None else part.head[:0]
        else:
            holders = part.head
        weak = _among(scratch, holders, slots)
        full = _holders(postings, [SURFACE_MARK + key for key in keys])
        if full is not None and weak.any():
            weak &= ~_among(scratch, full, slots)
        if weak.any():
            shared[slots[weak]] -= (1.0 - STEM_ONLY_FACTOR) * part.topic_weight
            weak_of[stem] = weak
            # Where it was the message's strongest word, the strongest is found again below.
            strongest_here = strongest[slots] <= part.topic_weight
            changed = weak & strongest_here if changed is None else changed | weak & strongest_here
    short = postings.body_lengths()[slots] <= SHORT_BODY
    if changed is not None and changed.any():
        _strongest_again(groups, table, weak_of, slots, changed, strongest)
    kept: SlotArray = slots[(shared[slots] >= SHARED_GATE) | short]
    return kept


def _said_stems(
    tokenizer: Tokenizer, message: str, groups: Sequence[tuple[str, ...]], postings: Postings
) -> dict[str, tuple[bool, set[str]]]:
    """Per stem of the gate's words that may match through the stem only: whether the message
    says it as its base word, and the inflection keys of its derived words said. A base word
    meets only notes holding the stem through derived words alone (few, marked); a derived
    word every note holding the stem but not that word."""
    read = {group[0] for group in groups if len(group) == 1}
    said: dict[str, tuple[bool, set[str], str]] = {}
    for stem, key, base, derived_mark in _plain_words(tokenizer, message):
        if stem in read:
            _, keys, _ = said.setdefault(stem, (False, set(), derived_mark))
            if base:
                said[stem] = (True, keys, derived_mark)
            else:
                keys.add(key)
    vocabulary = postings.vocabulary
    return {
        stem: (said_base, keys)
        for stem, (said_base, keys, derived_mark) in said.items()
        if (keys and not said_base) or (said_base and derived_mark in vocabulary)
    }


def _strongest_again(
    groups: Sequence[tuple[str, ...]],
    table: TermTable,
    weak_of: dict[str, BoolArray],
    slots: SlotArray,
    changed: BoolArray,
    strongest: FloatArray,
) -> None:
    """The strongest word of the message at the ``changed`` ones of ``slots``, each word at
    what it now counts (``weak_of``: per weakened stem, where it is weak among ``slots``)."""
    scratch = np.zeros(len(strongest), dtype=np.bool_)
    affected = slots[changed]
    best = np.zeros(len(affected), dtype=np.float64)
    for group in groups:
        for term, part in zip(group, table.get_many(list(group)), strict=True):
            if part is None or not len(part.head):
                continue
            value = np.where(_among(scratch, part.head, affected), part.topic_weight, 0.0)
            lowered = weak_of.get(term)
            if lowered is not None:
                value[lowered[changed]] *= STEM_ONLY_FACTOR
            np.maximum(best, value, out=best)
    strongest[affected] = best


def _holders(postings: Postings, terms: Sequence[str]) -> IntArray | None:
    """The slots holding any of ``terms``, or None when none does."""
    found = [hit[0] for hit in map(postings.lookup, terms) if hit is not None]
    return np.concatenate(found) if found else None


def _among(scratch: BoolArray, holders: IntArray, slots: SlotArray) -> BoolArray:
    """Per slot of ``slots``, whether it is one of ``holders`` (``scratch``: all False, and
    left so)."""
    scratch[holders] = True
    found: BoolArray = scratch[slots]
    scratch[holders] = False
    return found


def _english(tokenizer: Tokenizer) -> bool:
    return bool({"english", "porter"} & set(tokenizer.languages))
