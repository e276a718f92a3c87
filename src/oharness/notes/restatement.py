"""Whether new text restates a note's fact, or keeps all of a note's facts (no model needed).

Two notes on the same topic are not the same fact: "billing deploys Monday 8:00" and "mailer
deploys Monday 13:00" share a topic and differ in what a reader relies on. These rules decide
when a note may be replaced by new text without losing anything it said.

A text's facts are read as one sequence, after Unicode compatibility folding and case folding,
of:

- its **numbers** (times, dates, versions, amounts: ``8:00``, ``2026-12-05``, ``v1.4``; leading
  zeros of the first group dropped, so ``08:00`` is ``8:00``);
- its **words**, less a short list of words that carry no fact (articles, ``is``, ``on``, ``at``,
  pronouns…; never ``not``, ``no``, ``never``, ``before``, ``after``). Each Han, kana or Hangul
  character is a word of its own.

Two words match when they are equal after dropping a plural or tense ending (``deploy`` /
``deploys`` / ``deployed``), or both have at least five letters and differ by a typo
(similarity ≥ 0.85: ``biling`` / ``billing``). ``mailer`` / ``billing``, ``monday`` / ``sunday``
and ``jon`` / ``john`` do not match.

:func:`same_fact`: the numbers and words align one to one, in order, each pair matching — only
case, punctuation, spacing, filler words, endings and typos differ. :func:`restates`: the same,
but the new text may add words and numbers anywhere (it states the old fact and more) — never
a negation (``not``, ``no``, ``never``, ``don't``, ``except``…), which would turn the old fact
around.
:func:`missing_facts`: the numbers and words of the old text that the new text does not hold.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher
from typing import Final

_NUMBER: Final = re.compile(r"\d+(?:[.,:/-]\d+)*")
_TOKEN: Final = re.compile(
    r"\d+(?:[.,:/-]\d+)*"
    r"|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
    r"|[^\W\d_]+(?:['’][^\W\d_]+)*"
)
_FILLER: Final = frozenset(
    re.findall(
        r"\S+",
        """a an the is are was were be been being am it its it's this that these those there
        here on at in of to for by with from as and or so also just very really currently now
        then we our us you your they their them he she his her i my me please note that's which
        who every each""",
    )
)
_NEGATIONS: Final = frozenset(
    re.findall(r"\S+", "not no never none nothing nobody without except instead neither nor cannot")
)
_ENDINGS: Final = ("ing", "ed", "es", "s")
_TYPO_LETTERS: Final = 5
_TYPO_SIMILARITY: Final = 0.85


def _number(text: str) -> str:
    return "#" + re.sub(r"^0+(?=\d)", "", text)


def facts(text: str) -> tuple[str, ...]:
    """The numbers (marked ``#``) and fact-bearing words of ``text``, in order."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    found: list[str] = []
    for match in _TOKEN.finditer(folded):
        token = match.group()
        if _NUMBER.fullmatch(token):
            found.append(_number(token))
        elif token not in _FILLER:
            found.append(token.replace("’", "'"))
    return tuple(found)


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if len(word) > len(ending) + 3 and word.endswith(ending):
            return word[: -len(ending)]
    return word


def words_match(first: str, second: str) -> bool:
    """The same word, give or take an ending or a typo; numbers only when equal."""
    if first == second:
        return True
    if first.startswith("#") or second.startswith("#"):
        return False
    if _stem(first) == _stem(second):
        return True
    if min(len(first), len(second)) < _TYPO_LETTERS:
        return False
    return SequenceMatcher(None, first, second).ratio() >= _TYPO_SIMILARITY


def _negates(token: str) -> bool:
    return token in _NEGATIONS or token.endswith("n't")


def _in_order(old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    """Every token of ``old`` matches a token of ``new``, in the same order."""
    position = 0
    for token in old:
        while position < len(new) and not words_match(token, new[position]):
            position += 1
        if position == len(new):
            return False
        position += 1
    return True


def _aligned(old: str, new: str, *, additions: bool) -> bool:
    before, after = facts(old), facts(new)
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    for kind, start, stop, other_start, other_stop in matcher.get_opcodes():
        removed, added = before[start:stop], after[other_start:other_stop]
        if kind == "equal":
            continue
        if additions and any(_negates(token) for token in added):
            return False
        if kind == "insert" and additions:
            continue
        if (
            kind == "replace"
            and len(removed) == len(added)
            and all(map(words_match, removed, added))
        ):
            continue
        if kind == "replace" and additions and _in_order(removed, added):
            continue
        return False
    return True


def same_fact(old: str, new: str) -> bool:
    """True when ``new`` states what ``old`` states and nothing else (near-identical text)."""
    return _aligned(old, new, additions=False)


def restates(old: str, new: str) -> bool:
    """True when ``new`` states everything ``old`` states, in order, and perhaps more."""
    return _aligned(old, new, additions=True)


def missing_facts(old: str, new: str) -> list[str]:
    """The numbers and words of ``old`` that ``new`` does not hold (empty: nothing is lost)."""
    after = facts(new)
    present = Counter(token for token in after if token.startswith("#"))
    words = {token for token in after if not token.startswith("#")}
    missing: list[str] = []
    for token in facts(old):
        if token.startswith("#"):
            if present[token] > 0:
                present[token] -= 1
            else:
                missing.append(token[1:])
        elif token not in missing and not any(words_match(token, other) for other in words):
            missing.append(token)
    return missing
