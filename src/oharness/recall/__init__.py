"""Recall: lexical scoring of notes against messages and queries (spec 03.2, 03.3).

Import the submodules directly: this package imports nothing itself, so a command that does
not recall never pays for numpy and the stemmers.

Layer L1: imports only ``oharness.errors``, ``oharness.types``, ``oharness.settings``,
``oharness.notes`` and the third-party PyStemmer and numpy.

Public API
----------
Tokenising (:mod:`oharness.recall.tokenize`)
    ``Tokenizer(languages=("english",))`` - raises ``ConfigError`` (key
    ``memory.recall.languages``) for an unknown language.
    ``Tokenizer.tokens(text) -> list[str]``, ``Tokenizer.counts(text) -> dict[str, int]``,
    ``Tokenizer.query_terms(text) -> list[tuple[str, ...]]`` (one tuple of alternative stems
    per distinct word), ``Tokenizer.signature``; ``available_languages()``.

Index (:mod:`oharness.recall.index`)
    ``RecallIndex(tokenizer=None, params=DEFAULT_PARAMS)``,
    ``RecallIndex.from_settings(settings: RecallSettings)``.
    Changes, one note at a time and without a rebuild:
    ``add(scope, note, *, cache_key=None)`` (adds or replaces), ``update(...)`` (the same),
    ``remove(scope, note_id) -> bool``; in bulk: ``add_many(notes, cache_keys=None)``.
    Queries:
    ``search(query, limit=10, *, expand=True) -> list[Hit]`` - the ``memory(query)`` path:
    no gate, no threshold;
    ``recall(message, *, exclude=(), settings=None, usage=None, now=0) -> list[Hit]`` - the
    per-message path: gate on summary/tags, ``min_score``, at most ``per_turn`` notes;
    ``related(note, limit=5, *, scope=None) -> list[Hit]``;
    ``similarity(first, second) -> float`` and ``likely_duplicate(first, second) -> bool``
    (summary + tags, threshold ``LIKELY_DUPLICATE``).
    ``Hit(scope, id, score, in_summary_or_tags)``; note keys are ``(scope, id)``.

Scoring (:mod:`oharness.recall.score`)
    The formula and the documented scale of ``minScore``; ``ScoringParams``,
    ``term_weight``, ``search_weight``, ``saturation``, ``Usage(count, last_used)``,
    ``usage_boost(usage, now)`` (at most ``USAGE_BOOST_MAX`` = 0.05),
    ``similarity(terms_a, terms_b)``, ``GATE_WEIGHT``, ``LIKELY_DUPLICATE``.

Cache (:mod:`oharness.recall.cache`)
    ``write_cache(path, index) -> int`` (atomic) and
    ``read_cache(path, index, keys) -> set[NoteKey]`` (restores every note whose cached key
    equals the caller's current key; returns the notes to index from their files).
"""
