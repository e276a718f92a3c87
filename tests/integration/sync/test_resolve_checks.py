"""A conflict merged by hand is checked like remember checks a note, and a refusal changes
nothing: the conflict stays open, the file stays as it was (spec 07.3, 02.2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syncharness import Clock, Machine, Server, resolver

from oharness.errors import LimitError, SecretError, ValidationError
from oharness.sync.conflicts import ConflictBook


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Machine, Machine, str]:
    clock = Clock()
    server = Server(clock)
    a = Machine("a", tmp_path / "a", tmp_path / "ha", server, clock)
    b = Machine("b", tmp_path / "b", tmp_path / "hb", server, clock)
    note_id = a.ws.service.remember("Shared", "line one\n").id
    a.sync(), b.sync()
    a.ws.service.remember("Shared", "line one from a\n", id=note_id)
    b.ws.service.remember("Shared", "line one from b\n", id=note_id)
    a.sync()
    assert b.sync().conflicts == [note_id]
    return a, b, note_id


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("token AKIA" + "ABCDEFGHIJKLMNOP\n", SecretError),
        ("x" * 200_000 + "\n", LimitError),
        (" \n", ValidationError),
    ],
)
def test_a_refused_hand_merge_changes_nothing(
    pair: tuple[Machine, Machine, str], text: str, error: type[Exception]
) -> None:
    _, b, note_id = pair
    before = b.files()[note_id]
    with pytest.raises(error):
        resolver(b).resolve(note_id, text=text)
    assert b.files()[note_id] == before
    assert note_id in ConflictBook(b.base().conflicts).ids()
    reasons = {record.reason for record in b.ws.service.backups().recent()}
    assert "conflict-discard" not in reasons
