"""Capture: automatic memory from Claude Code and Codex sessions (issue 30, spec 04).

The hooks of those agents name the session's transcript file; a pass reads the stretch no pass
has read yet and hands it to :mod:`oharness.extraction`.

- :mod:`oharness.capture.transcript` — Claude Code JSONL and Codex rollout lines as entries;
- :mod:`oharness.capture.cursor` — what each session has had read, the pending announcement;
- :mod:`oharness.capture.extraction_pass` — one pass: the project lock, the thresholds, extraction.

Nothing is re-exported here: a hook imports only the standard-library-only modules it needs
(``transcript`` and ``cursor``). See docs/capture.md.
"""
