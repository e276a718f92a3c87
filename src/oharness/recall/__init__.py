"""Recall: lexical scoring of notes against messages and queries (spec 03.2, 03.3;
docs/recall.md). Read top to bottom: tokenize (text to terms), postings (the index), score (the
formula), scoring (summed over postings), gate and judge (per-message recall), index (recall,
search, related), cache (the derived file).

The names below are imported on first use (a command that does not recall never pays for
numpy and the stemmers). Layer L1: imports only ``oharness.errors``, ``oharness.types``,
``oharness.settings``, ``oharness.notes`` and the third-party PyStemmer and numpy.
"""

from __future__ import annotations

from oharness.exports import lazy_exports

# Not typing's: importing typing triples the cost of ``import oharness``; checkers accept this one.
TYPE_CHECKING = False

_EXPORTS = {
    "Tokenizer": "oharness.recall.tokenize",
    "available_languages": "oharness.recall.tokenize",
    "RecallIndex": "oharness.recall.index",
    "Hit": "oharness.recall.index",
    "write_cache": "oharness.recall.cache",
    "read_cache": "oharness.recall.cache",
}

__all__ = ["Hit", "RecallIndex", "Tokenizer", "available_languages", "read_cache", "write_cache"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from oharness.recall.cache import read_cache, write_cache
    from oharness.recall.index import Hit, RecallIndex
    from oharness.recall.tokenize import Tokenizer, available_languages
