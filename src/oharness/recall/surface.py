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
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from oharness.recall.gate import SHARED_GATE, Candidates
from oharness.recall.postings import IntArray, Postings
from oharness.recall.scoring import TermInfo
from oharness.recall.tokenize import Tokenizer
from oharness.recall.words import BRITISH_SPELLING, IRREGULAR_ENGLISH

FloatArray = npt.NDArray[np.float64]
#: A word as :func:`_word_of` reads it.
_Word = tuple[str, str, bool, str]
BoolArray = npt.NDArray[np.bool_]
SlotArray = npt.NDArray[np.integer[Any]]
#: Terms -> what each adds (None where no note holds it): :func:`~.scoring.read_terms`.
Lookup = Callable[[list[str]], list[TermInfo | None]]

#: Marks a derived word of a note's summary or tags by its inflection key.
SURFACE_MARK: Final = "\x05"
#: Marks a stem a note's summary or tags hold only through derived words.
DERIVED_MARK: Final = "\x06"
#: Share of its weight a message word matching a note only through the stem counts.
STEM_ONLY_FACTOR: Final = 0.5

_WORD: Final = re.compile(r"(?<![\w'.-])[a-z]+(?:'s)?(?![\w-])")
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


def _word_of(word: str, stem: str | None) -> _Word:
    """A plain word's stem (its single term, None with none or several), inflection key,
    whether it is its stem's base word (the stem takes nothing more from it than its
    inflection: "express", "expressed", "pricing"; not "expression", "deployment") and the
    stem's :data:`DERIVED_MARK`; :data:`_NOT_PLAIN` with no single stem."""
    if stem is None:
        return _NOT_PLAIN
    key = _final_y(inflection_key(word.removesuffix("'s")))
    return stem, key, len(key) <= len(stem) + 1, DERIVED_MARK + stem


def _final_y(key: str) -> str:
    # Snowball writes a final y as i ("retry" -> "retri", "city" -> "citi").
    return key[:-1] + "y" if key.endswith("i") else key


#: What :func:`_word_of` found, per tokeniser signature (emptied when it grows too large).
_READ: Final[dict[str, dict[str, _Word]]] = {}
_READ_LIMIT: Final = 100_000
#: A word with no single stem (its empty stem is no term: it matches nothing).
_NOT_PLAIN: Final[_Word] = ("", "", False, "")


def _plain_words(tokenizer: Tokenizer, text: str) -> list[_Word]:
    """The distinct plain English words of ``text`` (in order) as :func:`_word_of` reads
    them; a word with no single stem as :data:`_NOT_PLAIN`."""
    known = _READ.get(tokenizer.signature)
    if known is None or len(known) > _READ_LIMIT:
        known = _READ[tokenizer.signature] = {}
    words = dict.fromkeys(_WORD.findall(text.casefold()))
    found = list(map(known.get, words))
    if None in found:  # words not read before: their stems found together
        new = [word for word, value in zip(words, found, strict=True) if value is None]
        read = dict(zip(new, map(_word_of, new, tokenizer.single_terms(new)), strict=True))
        known.update(read)
        found = [
            value if value is not None else read[word]
            for word, value in zip(words, found, strict=True)
        ]
    return cast(list[_Word], found)  # no None left


def surface_marks(tokenizer: Tokenizer, text: str) -> list[str]:
    """The marks of the words of a note's summary and tags: each derived word by its key
    (:data:`SURFACE_MARK`), each stem held only through derived words (:data:`DERIVED_MARK`)."""
    if not _english(tokenizer):
        return []
    marks: dict[str, None] = {}
    based: set[str] = set()
    derived: set[str] = set()
    for stem, key, base, _ in _plain_words(tokenizer, text):
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
    table: Lookup,
    candidates: Candidates,
) -> BoolArray | None:
    """Per candidate, whether it is still one once a message word (of ``groups``, the words
    the gate reads) matching a note's summary or tags only through its stem counts
    :data:`STEM_ONLY_FACTOR` of its weight; None when no word does (all stay). The
    candidates' ``shared`` and ``strongest`` are lowered in place where it does."""
    if not len(candidates) or not _english(tokenizer):
        return None
    words = _said_stems(tokenizer, message, groups, postings)
    if not words:
        return None
    held = _stem_holders(words, table, postings)
    if not held:
        return None
    # The candidates among every stem's holders at once: (stem, candidate) in stem order.
    arrays = [holders for _, _, _, holders in held]
    at = candidates.where[np.concatenate(arrays) if len(arrays) > 1 else arrays[0]]
    among = at >= 0
    if not among.any():
        return None
    stem_of = np.repeat(np.arange(len(held)), [len(holders) for holders in arrays])[among]
    at = at[among]
    shared, strongest = candidates.shared, candidates.strongest
    weak_of: dict[str, BoolArray] = {}
    changed: BoolArray | None = None
    for number in dict.fromkeys(stem_of.tolist()):  # the stems meeting a candidate, in order
        stem, weight, keys, _ = held[number]
        weak = np.zeros(len(candidates), dtype=np.bool_)
        weak[at[stem_of == number]] = True
        full = _holders(postings, [SURFACE_MARK + key for key in keys])
        if full is not None:
            weak &= ~candidates.flags(full)
            if not weak.any():
                continue
        shared[weak] -= (1.0 - STEM_ONLY_FACTOR) * weight
        weak_of[stem] = weak
        # Where it was the message's strongest word, the strongest is found again below.
        strongest_here = strongest <= weight
        changed = weak & strongest_here if changed is None else changed | weak & strongest_here
    if not weak_of:
        return None
    if changed is not None and changed.any():
        _strongest_again(groups, table, weak_of, candidates, changed)
    stay: BoolArray = (shared >= SHARED_GATE) | candidates.short
    return stay


def _stem_holders(
    words: dict[str, tuple[bool, set[str]]], table: Lookup, postings: Postings
) -> list[tuple[str, float, set[str], IntArray]]:
    """Per stem of :func:`_said_stems` (in order) that some note may match through the stem
    only: the stem, its topic weight, the keys of its derived words said, and the notes
    where it may (a base word: those holding the stem through derived words alone)."""
    held: list[tuple[str, float, set[str], IntArray]] = []
    for stem, part in zip(words, table(list(words)), strict=True):
        if part is None or not len(part.head):
            continue
        said_base, keys = words[stem]
        holders = part.head
        if said_base:  # only the notes holding the stem through derived words alone
            derived_only = postings.slots_of(DERIVED_MARK + stem)
            if derived_only is None:
                continue
            holders = derived_only
        if len(holders):
            held.append((stem, part.topic_weight, keys, holders))
    return held


def _said_stems(
    tokenizer: Tokenizer, message: str, groups: Sequence[tuple[str, ...]], postings: Postings
) -> dict[str, tuple[bool, set[str]]]:
    """Per stem of the gate's words that may match through the stem only: whether the message
    says it as its base word, and the inflection keys of its derived words said. A base word
    meets only notes holding the stem through derived words alone (few, marked); a derived
    word every note holding the stem but not that word."""
    read = {group[0] for group in groups if len(group) == 1}
    words = [word for word in _plain_words(tokenizer, message) if word[0] in read]
    if not words:
        return {}
    based = {word[0] for word in words if word[2]}
    derived: dict[str, set[str]] = {}
    for stem, key in [(word[0], word[1]) for word in words if not word[2]]:
        derived.setdefault(stem, set()).add(key)
    vocabulary = postings.vocabulary
    found: dict[str, tuple[bool, set[str]]] = {}
    for stem in dict.fromkeys(word[0] for word in words):  # in the order of first mention
        if stem in based:
            if DERIVED_MARK + stem in vocabulary:
                found[stem] = (True, derived.get(stem, set()))
        else:  # said only as derived words
            found[stem] = (False, derived[stem])
    return found


def _strongest_again(
    groups: Sequence[tuple[str, ...]],
    table: Lookup,
    weak_of: dict[str, BoolArray],
    candidates: Candidates,
    changed: BoolArray,
) -> None:
    """The strongest word of the message at the ``changed`` candidates, each word at what it
    now counts (``weak_of``: per weakened stem, the candidates where it is weak).

    The few notes changed are found in the summary and tags holders of all the words at
    once; each (note, word) found then weighs in plain Python."""
    terms = [term for group in groups for term in group]
    found = [
        (term, part)
        for term, part in zip(terms, table(terms), strict=True)
        if part is not None and len(part.head)
    ]
    affected = np.flatnonzero(changed)
    best = dict.fromkeys(affected.tolist(), 0.0)  # per changed candidate (its position)
    if found:
        heads = [part.head for _, part in found]
        at = candidates.where[np.concatenate(heads)]
        word = np.repeat(np.arange(len(found)), [len(head) for head in heads])
        held = at >= 0
        at, word = at[held], word[held]
        hits = changed[at]
        weak = {term: lowered.tolist() for term, lowered in weak_of.items()}
        for position, number in zip(at[hits].tolist(), word[hits].tolist(), strict=True):
            term, part = found[number]
            value = part.topic_weight
            lowered = weak.get(term)
            if lowered is not None and lowered[position]:
                value *= STEM_ONLY_FACTOR
            if value > best[position]:
                best[position] = value
    candidates.strongest[affected] = list(best.values())


def _holders(postings: Postings, terms: Sequence[str]) -> IntArray | None:
    """The slots holding any of ``terms``, or None when none does."""
    found = [slots for slots in map(postings.slots_of, terms) if slots is not None]
    return np.concatenate(found) if found else None


def _english(tokenizer: Tokenizer) -> bool:
    return bool({"english", "porter"} & set(tokenizer.languages))
