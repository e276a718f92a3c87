"""Stem matches whose words differ: "expression" meets "Express" (per-message recall; spec 03.2).

A Snowball stem joins a word's inflections ("change", "changes", "changed") and also some of
its derivations ("expression" and "express", "deployment" and "deploy", "uploader" and
"upload"). An inflection is the same word; a derivation is often another one, and the
commonest derivations of a software team's words name other things ("a regular expression",
"the Express framework"). So for the gate a message word matches a note's summary or tags
fully only when the note holds the same word up to its inflection (:func:`inflection_key`);
a match through the stem alone counts :data:`STEM_ONLY_FACTOR` of its weight in ``shared``
and as the distinctive word. The score itself is unchanged.

Only English words of plain letters are compared (an identifier, a word of another script or
one with several stems is left as it matched). A note's summary and tags words are kept as
marks (:data:`SURFACE_MARK` + key) beside its terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from oharness.recall.accumulate import TermTable
from oharness.recall.postings import Postings
from oharness.recall.tokenize import Tokenizer
from oharness.recall.words import BRITISH_SPELLING, IRREGULAR_ENGLISH

FloatArray = npt.NDArray[np.float64]

#: Marks a word of a note's summary or tags by its inflection key.
SURFACE_MARK: Final = "\x05"
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


def _plain_words(tokenizer: Tokenizer, text: str) -> Iterator[tuple[str, str]]:
    """The plain English words of ``text`` with a single stem: (stem, inflection key)."""
    for match in _WORD.finditer(text.casefold()):
        word = match.group()
        terms = tokenizer.tokens(word)
        if len(terms) == 1:
            yield terms[0], inflection_key(word.removesuffix("'s"))


def surface_marks(tokenizer: Tokenizer, text: str) -> list[str]:
    """The marks of the words of a note's summary and tags (see the module docstring)."""
    if not _english(tokenizer):
        return []
    return list(dict.fromkeys(SURFACE_MARK + key for _, key in _plain_words(tokenizer, text)))


def weaken_stem_only(
    tokenizer: Tokenizer,
    message: str,
    groups: Sequence[tuple[str, ...]],
    postings: Postings,
    table: TermTable,
    scored: tuple[FloatArray, FloatArray],
) -> None:
    """Count a message word (of ``groups``, the words the gate reads) matching a note's
    summary or tags only through its stem at :data:`STEM_ONLY_FACTOR`: lowers ``shared`` and
    ``strongest`` (both per slot) in place."""
    if not _english(tokenizer):
        return
    read = {group[0] for group in groups if len(group) == 1}
    keys: dict[str, set[str]] = {}
    for term, key in _plain_words(tokenizer, message):
        if term in read:
            keys.setdefault(term, set()).add(key)
    shared, strongest = scored
    weak_of: dict[str, npt.NDArray[np.bool_]] = {}
    for term, part in zip(keys, table.get_many(list(keys)), strict=True):
        if part is None or not len(part.head):
            continue
        weak = np.zeros(len(shared), dtype=np.bool_)
        weak[part.head] = True
        for key in keys[term]:
            found = postings.lookup(SURFACE_MARK + key)
            if found is not None:
                weak[found[0]] = False
        if weak.any():
            shared[weak] -= (1.0 - STEM_ONLY_FACTOR) * part.topic_weight
            weak_of[term] = weak
    if not weak_of:
        return
    # The distinctive word again where a word was weakened, each word at what it now counts.
    best = np.zeros(len(strongest), dtype=np.float64)
    for group in groups:
        for term, part in zip(group, table.get_many(list(group)), strict=True):
            if part is None or not len(part.head):
                continue
            value = np.full(len(part.head), part.topic_weight)
            lowered = weak_of.get(term)
            if lowered is not None:
                value[lowered[part.head]] *= STEM_ONLY_FACTOR
            best[part.head] = np.maximum(best[part.head], value)
    changed = np.logical_or.reduce(list(weak_of.values()))
    strongest[changed] = best[changed]


def _english(tokenizer: Tokenizer) -> bool:
    return bool({"english", "porter"} & set(tokenizer.languages))
