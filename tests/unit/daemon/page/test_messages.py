"""What the page says about errors, sync and findings: catalogue keys, both languages."""

from __future__ import annotations

import pytest

from oharness.daemon.page.backup_preview import DiffLine, body_diff
from oharness.daemon.page.i18n import Translator
from oharness.daemon.page.messages import error_text, finding_text, pause_text
from oharness.errors import LimitError, NotFoundError, SecretError, ValidationError
from oharness.sync.panel import SWITCHED_OFF
from oharness.sync.sync_service import OLD_SERVER

#: The pause reasons the sync library gives, as it words them.
REASONS = {
    "erased": "the account was erased on the sync server; sync stopped and every local note "
    "stays (gone)",
    "other_account": "project notes are bound to another account (u1) than the one signed in "
    "(u2); use a separate OHARNESS_HOME for that account, or 'oharness sync unbind p' to rebind",
    "other_origin": "project notes are bound to another origin (a) than the one signed in (b)",
    "copied_folder": "this folder is a copy of /x, which syncs as the same project",
    "old_server": f"{OLD_SERVER} (user notes are not synced until then)",
    "too_frequent": "sync was too frequent; it will be retried in 30 s",
    "other": SWITCHED_OFF + " and something new",
}


@pytest.mark.parametrize(("kind", "reason"), REASONS.items())
def test_every_pause_reason_is_said_by_its_kind(kind: str, reason: str) -> None:
    english = Translator("en")
    if kind == "other":
        assert "says why" in pause_text(english, "a reason no one wrote yet")
        return
    expected = english(f"sync.paused.{kind}", command="X").split("X")[0]
    assert str(pause_text(english, reason)).startswith(expected[:30])
    chinese = str(pause_text(Translator("zh-CN"), reason))
    assert not any(word in chinese for word in ("bound", "account", "erased", "frequent"))


def test_errors_are_said_by_code_field_and_reason() -> None:
    chinese = Translator("zh-CN")
    summary = error_text(chinese, ValidationError("summary has U+202E: remove it", field="summary"))
    assert "摘要" in summary and "U+202E" in summary and "remove" not in summary
    assert "凭据" in error_text(chinese, SecretError("looks like a credential", field="body"))
    assert "太大" in error_text(chinese, LimitError("body too large", field="body"))
    assert "已不存在" in error_text(chinese, NotFoundError("no note 'x'"))
    own = ValidationError("changed", field="form", message_key="notes.changed_meanwhile")
    assert error_text(Translator("en"), own).startswith("This note changed since you opened it")


def test_a_finding_is_worded_from_its_kind_and_details() -> None:
    day = 86_400_000
    unused = {"kind": "unused", "notes": ["old-note-3fa"], "lastRecalledAt": 0, "updatedAt": day}
    text = finding_text(Translator("en"), unused, now=96 * day)
    assert "was neither recalled nor changed for 95 days" in text and "old-note-3fa" in text
    one = finding_text(Translator("en"), {**unused, "updatedAt": 94 * day}, now=96 * day)
    assert "for 2 days" in one
    group = {"kind": "same-topic", "notes": ["a", "b", "c"]}
    assert "3 条笔记主题相同" in finding_text(Translator("zh-CN"), group, now=0)
    broken = {"kind": "broken-link", "notes": ["src-1ab"], "target": "<gone>"}
    html = str(finding_text(Translator("en"), broken, now=0))
    assert '<span class="data" translate="no">&lt;gone&gt;</span>' in html  # data, escaped


def test_the_preview_diff_marks_lines_of_each_side() -> None:
    assert body_diff("a\nb\nc\n", "a\nB\nc\nd\n") == (
        DiffLine("same", "a"),
        DiffLine("removed", "b"),
        DiffLine("added", "B"),
        DiffLine("same", "c"),
        DiffLine("added", "d"),
    )
