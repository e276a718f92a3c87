"""Key rules shared by every object store, so backends stay interchangeable.

A key is a ``/``-separated path of segments. Every backend refuses the same keys, with a
:class:`~oharness.errors.ValidationError`, before touching storage:

- 1 to 1,024 bytes of UTF-8; no leading, trailing or doubled ``/`` (no empty segment);
- no segment ``.`` or ``..``, and no segment starting with ``.`` (the file backend keeps its
  temp and lock files under dot-names, so such keys are reserved everywhere);
- no backslash and no control character (NUL, newline, ...);
- a segment is at most 255 bytes (the usual file-name limit).

A list prefix follows the same rules, except that it may be empty, may end with ``/``, and its
last segment may be partial (``users/ab`` lists ``users/abc/...``).
"""

from __future__ import annotations

from typing import Final

from oharness.errors import ValidationError

MAX_KEY_BYTES: Final = 1024
MAX_SEGMENT_BYTES: Final = 255


def validate_key(key: str) -> str:
    """Return ``key`` unchanged, or raise :class:`ValidationError` saying what is wrong."""
    if not isinstance(key, str) or not key:
        raise _invalid(key, "it is empty")
    if _utf8_length(key, "key") > MAX_KEY_BYTES:
        raise _invalid(key, f"it is longer than {MAX_KEY_BYTES} bytes")
    for segment in key.split("/"):
        _check_segment(key, segment)
    return key


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` unchanged if it can start a valid key (``""`` lists everything)."""
    if not isinstance(prefix, str):
        raise _invalid(prefix, "it is not a string", what="prefix")
    if not prefix:
        return prefix
    if _utf8_length(prefix, "prefix") > MAX_KEY_BYTES:
        raise _invalid(prefix, f"it is longer than {MAX_KEY_BYTES} bytes", what="prefix")
    *complete, last = prefix.split("/")
    for segment in complete:
        _check_segment(prefix, segment, what="prefix")
    if last:
        _check_segment(prefix, last, what="prefix")
    return prefix


def validate_condition(if_match: str | None, if_none_match: bool) -> None:
    """Refuse a put that asks for both conditions (it could never succeed)."""
    if if_match is not None and if_none_match:
        raise ValidationError(
            "a put takes if_match (replace that version) or if_none_match (create only), not both",
        )
    if if_match is not None and not if_match:
        raise ValidationError("if_match is empty: pass the ETag returned by get or put")


def _check_segment(key: str, segment: str, *, what: str = "key") -> None:
    if not segment:
        raise _invalid(key, "it has an empty segment (a leading, trailing or double '/')", what)
    if segment.startswith("."):
        raise _invalid(key, f"segment {segment!r} starts with '.' (reserved)", what)
    if "\\" in segment:
        raise _invalid(key, "it contains a backslash", what)
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in segment):
        raise _invalid(key, "it contains a control character", what)
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise _invalid(key, f"a segment is longer than {MAX_SEGMENT_BYTES} bytes", what)


def _utf8_length(value: str, what: str) -> int:
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise _invalid(value, "it is not valid Unicode text", what) from None


def _invalid(key: object, reason: str, what: str = "key") -> ValidationError:
    shown = repr(key) if len(repr(key)) <= 80 else repr(key)[:77] + "..."
    return ValidationError(
        f"invalid object {what} {shown}: {reason}; use '/'-separated segments of letters, "
        "digits, '-', '_' and '.' (not first)",
        key=str(key)[:200],
    )
