"""Recall: lexical scoring of notes against messages and queries (spec 03.2, 03.3).

The names below are re-exported from their modules, imported on first use (a command that does
not recall never pays for numpy and the stemmers); their signatures and docstrings are the
modules' own. :mod:`~oharness.recall.tokenize` splits and stems text,
:mod:`~oharness.recall.index` holds the notes and answers ``search`` (the ``memory(query)``
path), ``recall`` (the per-message path) and ``related``, :mod:`~oharness.recall.score` is the
formula and the documented scale of ``minScore``, :mod:`~oharness.recall.cache` keeps the
machine-local derived index.

Layer L1: imports only ``oharness.errors``, ``oharness.types``, ``oharness.settings``,
``oharness.notes`` and the third-party PyStemmer and numpy.
"""

from __future__ import annotations

from oharness.exports import lazy_exports

# Not typing.TYPE_CHECKING: importing typing would triple the cost of ``import oharness``
# (type checkers treat any name TYPE_CHECKING as true).
TYPE_CHECKING = False

_EXPORTS = {
    "Tokenizer": "oharness.recall.tokenize",
    "available_languages": "oharness.recall.tokenize",
    "RecallIndex": "oharness.recall.index",
    "Hit": "oharness.recall.index",
    "NoteKey": "oharness.recall.postings",
    "ScoringParams": "oharness.recall.score",
    "DEFAULT_PARAMS": "oharness.recall.score",
    "Usage": "oharness.recall.score",
    "usage_boost": "oharness.recall.score",
    "similarity": "oharness.recall.score",
    "term_weight": "oharness.recall.score",
    "search_weight": "oharness.recall.score",
    "saturation": "oharness.recall.score",
    "GATE_WEIGHT": "oharness.recall.score",
    "LIKELY_DUPLICATE": "oharness.recall.score",
    "USAGE_BOOST_MAX": "oharness.recall.score",
    "write_cache": "oharness.recall.cache",
    "read_cache": "oharness.recall.cache",
}

__all__ = [
    "DEFAULT_PARAMS",
    "GATE_WEIGHT",
    "LIKELY_DUPLICATE",
    "USAGE_BOOST_MAX",
    "Hit",
    "NoteKey",
    "RecallIndex",
    "ScoringParams",
    "Tokenizer",
    "Usage",
    "available_languages",
    "read_cache",
    "saturation",
    "search_weight",
    "similarity",
    "term_weight",
    "usage_boost",
    "write_cache",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from oharness.recall.cache import read_cache, write_cache
    from oharness.recall.index import Hit, RecallIndex
    from oharness.recall.postings import NoteKey
    from oharness.recall.score import (
        DEFAULT_PARAMS,
        GATE_WEIGHT,
        LIKELY_DUPLICATE,
        USAGE_BOOST_MAX,
        ScoringParams,
        Usage,
        saturation,
        search_weight,
        similarity,
        term_weight,
        usage_boost,
    )
    from oharness.recall.tokenize import Tokenizer, available_languages
