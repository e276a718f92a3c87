"""Two small curated word tables for the per-message recall gate (English; spec 03.2).

**Related words.**

Recall matches words, not meaning, so a message can name a note's topic in other words than
the note uses: "how long are logs **kept**?" for a note on log **retention**, "the **maximum**
file size" for "uploads are **limited** to 25 MB". The notes' tags are the first remedy (the
system prompt asks for tags with synonyms); this table covers the few gaps that recur in the
notes of a software team: everyday words and their technical names, and common
abbreviations.

Each line is a set of words that stand for one another. A message word of a set also looks
for the other words of its set, at :data:`RELATED_FACTOR` of their weight, and a related
word is never the message's distinctive word: it can complete a topic the message's own
words name, never name one alone. Only an English stemmer uses the table.

**Frame words.** "What did we *decide* about the naming?", "do you *remember* the deploy
rule?": words that ask about the conversation or the memory itself frame the question and
say nothing of its topic; recall leaves them out of the message (search keeps them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

#: A related word counts this share of its weight (score and shared topic weight).
RELATED_FACTOR: Final = 0.5

RELATED_WORDS: Final[tuple[tuple[str, ...], ...]] = (
    ("keep", "retain", "retention"),
    ("maximum", "max", "limit"),
    ("minimum", "min"),
    ("delete", "remove"),
    ("database", "db"),
    ("repository", "repo"),
    ("configuration", "config"),
    ("documentation", "docs"),
    ("environment", "env"),
    ("production", "prod"),
    ("development", "dev"),
    ("authentication", "auth", "login"),
    ("permission", "access"),
    ("dependency", "package", "library"),
    ("slow", "latency", "performance"),
    ("price", "cost"),
    ("bug", "defect"),
    ("schedule", "cron"),
)


FRAME_WORDS: Final[tuple[str, ...]] = (
    "decide",
    "decision",
    "remember",
    "forget",
    "mention",
    "discuss",
    "talk",
    "agree",
)


def related_terms(
    analyse: Callable[[str], Iterable[str]],
) -> dict[str, tuple[str, ...]]:
    """Each term of the table -> the terms of the other words of its set.

    ``analyse`` turns a word into its terms (a tokeniser's ``tokens``), so the table meets
    the index's stems.
    """
    table: dict[str, tuple[str, ...]] = {}
    for words in RELATED_WORDS:
        terms = [tuple(analyse(word)) for word in words]
        for number, own in enumerate(terms):
            others = tuple(
                dict.fromkeys(
                    term
                    for other, group in enumerate(terms)
                    if other != number
                    for term in group
                    if term not in own
                )
            )
            for term in own:
                table[term] = tuple(dict.fromkeys((*table.get(term, ()), *others)))
    return table
