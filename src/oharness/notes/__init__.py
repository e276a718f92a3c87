"""Notes: the file format and everything that reads or writes a notes folder (spec 01, 02).

- ``format`` — the note file format and its content hash; ``ids`` — ids, summaries, tags and
  types; ``text``, ``invisible`` — the characters a note may hold and how untrusted text is shown;
- ``note_cache`` — one folder's loaded notes kept in step with the disk (reading only);
  ``folder_scan`` — a folder's listing and a ``stat`` of every note file; ``snapshot`` —
  the parsed notes a former process left;
- ``store`` — :class:`NoteStore`: the cache plus the writer (lock, atomic writes,
  compare-and-swap); ``stored`` — a note as a store holds it;
- ``links`` — links between notes; ``backups`` — backups before a replace or a removal;
- ``loose`` — Markdown files in a notes folder that are not notes; ``tempfiles`` — temp files
  left by killed writers;
- ``quoting`` — stored text put in front of a model as data; ``restatement`` — whether new text
  restates a note;
- ``secrets/`` — credential detection (see its own map).
"""
