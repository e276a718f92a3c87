"""What the page says about errors, findings and sync, in the reader's language.

The library words its errors, review findings and sync reasons in English for the CLI and the
models. The page never shows those words: each is read by its stable parts (an error's code,
field and reason; a finding's kind and details; a sync error's or note problem's code; a pause
reason's kind) and said with a catalogue key, so every language gets every message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import markupsafe

from oharness.daemon.page.i18n import Translator
from oharness.daemon.page.render import command, marked
from oharness.errors import OHarnessError
from oharness.review.findings import TOO_LONG_CHARS

DAY_MS: Final = 24 * 3600 * 1000
_CODE_POINT: Final = re.compile(r"U\+[0-9A-F]{4,6}")

#: Pause reasons of the sync library, told apart by their wording (the reason is free text
#: there); the first match wins, the last key covers any reason not listed.
PAUSE_KINDS: Final = (
    ("account was erased", "erased"),
    ("bound to another account", "other_account"),
    ("bound to another origin", "other_origin"),
    ("is a copy of", "copied_folder"),
    ("older than this client", "old_server"),
    ("too frequent", "too_frequent"),
)
#: The command each sync message points at (kept as a command: it is typed, not translated).
_COMMANDS: Final = {
    "sync.paused.other_account": "oharness sync unbind",
    "sync.paused.other_origin": "oharness sync unbind",
    "sync.paused.copied_folder": "oharness project reset-id",
    "sync.paused.other": "oharness sync status",
    "sync.error.not_logged_in": "oharness login --origin URL",
    "sync.error.unauthorized": "oharness login --origin URL",
    "sync.error.other": "oharness sync status",
    "sync.note_error.misnamed": "oharness memory doctor",
    "sync.note_error.unreadable": "oharness memory doctor",
    "error.note_format": "oharness memory doctor",
}


def _first_key(t: Translator, *keys: str) -> str:
    for key in keys:
        if t.has(key):
            return key
    return keys[-1]


def error_key(t: Translator, error: OHarnessError) -> str:
    """The catalogue key that says ``error`` (by its code, reason and field)."""
    details = error.details
    own = details.get("message_key")
    if isinstance(own, str) and t.has(own):
        return own
    code = "secret" if error.code == "secret" else error.code
    reason, field = details.get("reason"), details.get("field")
    candidates = [f"error.{code}.{reason}"] if isinstance(reason, str) else []
    if isinstance(field, str):
        candidates.append(f"error.{code}.{field}")
    return _first_key(t, *candidates, f"error.{code}", "error.other")


def error_text(t: Translator, error: OHarnessError) -> markupsafe.Markup:
    """An error as the page says it."""
    key = error_key(t, error)
    values: dict[str, object] = dict(_command(key))
    if key == "error.other":
        values["code"] = error.code
    text = marked(t, key, **values)
    # The library names the characters it refused (U+202E…): code points read in any language.
    codes = list(dict.fromkeys(_CODE_POINT.findall(error.message)))
    if codes:
        text += markupsafe.Markup(" ") + marked(t, "error.characters", codes=", ".join(codes))
    return text


def _command(key: str) -> dict[str, markupsafe.Markup]:
    return {"command": command(_COMMANDS[key])} if key in _COMMANDS else {}


def pause_text(t: Translator, reason: str) -> markupsafe.Markup:
    """Why a scope's sync is paused (the library's reason, by its kind)."""
    kind = next((kind for words, kind in PAUSE_KINDS if words in reason), "other")
    key = f"sync.paused.{kind}"
    return marked(t, key, **_command(key))


def sync_error_text(t: Translator, code: str) -> markupsafe.Markup:
    """A scope's last sync error, by its code."""
    key = _first_key(t, f"sync.error.{code}", "sync.error.other")
    values: dict[str, object] = dict(_command(key))
    if key == "sync.error.other":
        values["code"] = code
    return marked(t, key, **values)


def note_error_text(t: Translator, code: str) -> markupsafe.Markup:
    """Why one note did not sync, by its code (a file that cannot be read: ``unreadable``)."""
    key = _first_key(t, f"sync.note_error.{code}", "sync.note_error.unreadable")
    return marked(t, key, **_command(key))


def finding_text(t: Translator, finding: Mapping[str, Any], now: int) -> markupsafe.Markup:
    """A review finding's message, from its kind and details."""
    kind = str(finding.get("kind"))
    notes = finding.get("notes") or ["?"]
    note = str(notes[0])
    if kind == "same-topic":
        return marked(t, "tidy.finding.same-topic", count=len(notes))
    if kind == "broken-link":
        return marked(t, "tidy.finding.broken-link", note=note, target=finding.get("target", ""))
    if kind == "missing-file":
        return marked(t, "tidy.finding.missing-file", note=note, path=finding.get("path", ""))
    if kind == "unused":
        last = max(int(finding.get("lastRecalledAt") or 0), int(finding.get("updatedAt") or 0))
        return marked(t, "tidy.finding.unused", note=note, days=max(0, (now - last) // DAY_MS))
    if kind == "too-long":
        chars = int(finding.get("chars") or 0)
        return marked(t, "tidy.finding.too-long", note=note, chars=chars, limit=TOO_LONG_CHARS)
    return marked(t, "tidy.finding.other", note=note)
