"""Recall: lexical scoring of notes against messages and queries (spec 03.2, 03.3).

The names below are re-exported from their modules, imported on first use (a command that does
not recall never pays for numpy and the stemmers); their signatures and docstrings are the
modules' own. :mod:`~oharness.recall.tokenize` splits and stems text,
:mod:`~oharness.recall.index` holds the notes and answers ``search`` (the ``memory(query)``
path), ``recall`` (the per-message path) and ``related``, :mod:`~oharness.recall.cache` keeps
the machine-local derived index; :mod:`~oharness.recall.score` is the formula and the
documented scale of ``minScore``.

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
    "write_cache": "oharness.recall.cache",
    "read_cache": "oharness.recall.cache",
}

__all__ = ["Hit", "RecallIndex", "Tokenizer", "available_languages", "read_cache", "write_cache"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from oharness.recall.cache import read_cache, write_cache
    from oharness.recall.index import Hit, RecallIndex
    from oharness.recall.tokenize import Tokenizer, available_languages
