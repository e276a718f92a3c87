"""Three-way merge, pure (no I/O): :mod:`~oharness.merge.text` for bodies (diff3-style, by
line) and :mod:`~oharness.merge.note` for whole notes (summary, type, tags, body, times).

Conflicts are values (:class:`~oharness.merge.text.TextMerge` with ``ok=False``), not
exceptions.
"""
