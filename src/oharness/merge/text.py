"""A diff3-style three-way line merge.

Both sides are aligned with the base (``difflib.SequenceMatcher``, no junk heuristics). A base
line kept unchanged by both sides is *stable*; between two stable lines lies a chunk. A chunk
changed by one side takes that side's lines; changed identically by both, either; changed
differently by both, it is a conflict. So edits to the same line or to neighbouring lines
conflict, while edits separated by at least one unchanged line combine — as ``git merge-file``
does.

Lines are compared without their line terminator and the presence of a final newline is merged
separately, so appending to a text that lacked a final newline is not a change of its last line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass(frozen=True)
class ConflictRegion:
    """One place where both sides changed the base differently (line numbers are 1-based)."""

    base_start: int
    base_lines: tuple[str, ...]
    ours_lines: tuple[str, ...]
    theirs_lines: tuple[str, ...]


@dataclass(frozen=True)
class TextMerge:
    """The result: ``text`` when ``ok``, else the conflicting regions."""

    ok: bool
    text: str | None
    conflicts: tuple[ConflictRegion, ...] = ()


@dataclass(frozen=True)
class _Lines:
    lines: tuple[str, ...]
    final_newline: bool

    @classmethod
    def of(cls, text: str) -> _Lines:
        if not text:
            return cls((), False)
        parts = text.split("\n")
        if parts[-1] == "":
            return cls(tuple(parts[:-1]), True)
        return cls(tuple(parts), False)

    def join(self) -> str:
        if not self.lines:
            return ""
        return "\n".join(self.lines) + ("\n" if self.final_newline else "")


def _matches(base: Sequence[str], other: Sequence[str]) -> dict[int, int]:
    matcher = SequenceMatcher(None, base, other, autojunk=False)
    mapping: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapping[block.a + offset] = block.b + offset
    return mapping


def merge_lines(
    base: Sequence[str],
    ours: Sequence[str],
    theirs: Sequence[str],
    *,
    markers: tuple[str, str] | None = None,
) -> tuple[list[str] | None, list[ConflictRegion]]:
    """Merge line sequences; returns the merged lines, or ``None`` and the conflicts.

    With ``markers`` (the two sides' labels) a conflict is written inline, diff3 style, and the
    lines are returned along with the conflicts: a merge attempt for a person to finish.
    """
    to_ours = _matches(base, ours)
    to_theirs = _matches(base, theirs)
    stable = [
        (i, to_ours[i], to_theirs[i]) for i in range(len(base)) if i in to_ours and i in to_theirs
    ]
    # A sentinel stable line after the end closes the last chunk.
    stable.append((len(base), len(ours), len(theirs)))
    merged: list[str] = []
    conflicts: list[ConflictRegion] = []
    previous = (-1, -1, -1)
    for current in stable:
        b_chunk = base[previous[0] + 1 : current[0]]
        o_chunk = ours[previous[1] + 1 : current[1]]
        t_chunk = theirs[previous[2] + 1 : current[2]]
        if o_chunk == b_chunk:
            merged.extend(t_chunk)
        elif t_chunk == b_chunk or o_chunk == t_chunk:
            merged.extend(o_chunk)
        else:
            conflicts.append(
                ConflictRegion(previous[0] + 2, tuple(b_chunk), tuple(o_chunk), tuple(t_chunk))
            )
            if markers is not None:
                merged.extend(
                    [
                        f"<<<<<<< {markers[0]}",
                        *o_chunk,
                        "=======",
                        *t_chunk,
                        f">>>>>>> {markers[1]}",
                    ]
                )
        if current[0] < len(base):
            merged.append(base[current[0]])
        previous = current
    if conflicts and markers is None:
        return None, conflicts
    return merged, conflicts


def merge_text(base: str, ours: str, theirs: str) -> TextMerge:
    """Three-way merge of whole texts (see the module docstring for the rules)."""
    if ours == theirs or theirs == base:
        return TextMerge(True, ours)
    if ours == base:
        return TextMerge(True, theirs)
    b, o, t = _Lines.of(base), _Lines.of(ours), _Lines.of(theirs)
    lines, conflicts = merge_lines(b.lines, o.lines, t.lines)
    if lines is None:
        return TextMerge(False, None, tuple(conflicts))
    final = o.final_newline if o.final_newline != b.final_newline else t.final_newline
    return TextMerge(True, _Lines(tuple(lines), final).join())


def merge_text_marked(base: str, ours: str, theirs: str, labels: tuple[str, str]) -> TextMerge:
    """Like :func:`merge_text`, but conflicting regions are left in ``text`` between
    ``<<<<<<< ours-label`` / ``=======`` / ``>>>>>>> theirs-label`` lines (``ok`` is False)."""
    plain = merge_text(base, ours, theirs)
    if plain.ok:
        return plain
    b, o, t = _Lines.of(base), _Lines.of(ours), _Lines.of(theirs)
    lines, conflicts = merge_lines(b.lines, o.lines, t.lines, markers=labels)
    assert lines is not None
    return TextMerge(False, _Lines(tuple(lines), True).join(), tuple(conflicts))
