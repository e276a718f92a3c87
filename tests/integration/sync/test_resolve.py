"""Every conflict resolution, end to end between two machines (spec 07.3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syncharness import Clock, Machine, Server, resolver

from oharness.errors import NotFoundError, ValidationError


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


def _converge(a: Machine, b: Machine) -> None:
    for _ in range(2):
        b.sync(), a.sync()
    assert a.files() == b.files()


def test_keep_local_uploads_this_machines_version(pair: tuple[Machine, Machine, str]) -> None:
    a, b, note_id = pair
    result = resolver(b).resolve(note_id, keep="local")
    assert len(result.backups) == 1
    assert b.ws.service.backups().recent()[0].reason == "conflict-discard"
    assert b.sync().pushed == [note_id]
    _converge(a, b)
    assert "from b" in a.files()[note_id]


def test_take_cloud_writes_the_cloud_version(pair: tuple[Machine, Machine, str]) -> None:
    a, b, note_id = pair
    resolver(b).resolve(note_id, keep="cloud")
    assert "from a" in b.files()[note_id]
    assert b.ws.service.backups().recent()[0].reason == "conflict-take-cloud"
    assert b.sync().pushed == []
    _converge(a, b)


def test_keep_both_gives_the_cloud_copy_a_new_id(pair: tuple[Machine, Machine, str]) -> None:
    a, b, note_id = pair
    result = resolver(b).resolve(note_id, keep="both")
    assert result.new_id and result.new_id != note_id
    pushed = b.sync().pushed
    assert sorted(pushed) == sorted([note_id, result.new_id])
    _converge(a, b)
    assert "from b" in a.files()[note_id] and "from a" in a.files()[result.new_id]


def test_merge_by_hand(pair: tuple[Machine, Machine, str]) -> None:
    a, b, note_id = pair
    resolver(b).resolve(note_id, text="line one from a and b\n")
    assert [r.reason for r in b.ws.service.backups().recent()[:2]] == ["conflict-discard"] * 2
    _converge(a, b)
    assert a.ws.service.read(note_id).body == "line one from a and b\n"


def test_bad_resolutions_change_nothing(pair: tuple[Machine, Machine, str]) -> None:
    a, b, note_id = pair
    before = b.files()
    with pytest.raises(ValidationError):
        resolver(b).resolve(note_id)
    with pytest.raises(ValidationError, match="keep the id"):
        resolver(b).resolve(note_id, text=a.files()[note_id].replace(note_id, "other-id"))
    with pytest.raises(NotFoundError):
        resolver(b).resolve("no-such-conflict", keep="local")
    broken = '---\n{"summary": "Merged", "tags": []\n---\nmerged body\n'  # the "}" left out
    with pytest.raises(ValidationError, match=r"starts like a note file but .*not valid JSON"):
        resolver(b).resolve(note_id, text=broken)
    assert b.files() == before
    assert b.sync().conflicts == [note_id]


def test_a_note_file_merged_by_hand_keeps_the_id_and_creation_time_it_leaves_out(
    pair: tuple[Machine, Machine, str],
) -> None:
    a, b, note_id = pair
    created = b.ws.service.read(note_id).created_at
    resolver(b).resolve(note_id, text='---\n{"summary": "Merged", "tags": ["x"]}\n---\nboth\n')
    _converge(a, b)
    merged = a.ws.service.read(note_id)
    assert (merged.summary, merged.body, merged.tags) == ("Merged", "both\n", ("x",))
    assert merged.created_at == created > 0


def test_cloud_changed_again_after_resolution_is_not_overwritten(
    pair: tuple[Machine, Machine, str],
) -> None:
    a, b, note_id = pair
    resolver(b).resolve(note_id, keep="local")
    a.ws.service.remember("Shared", "line one from a, again\n", id=note_id)
    a.sync()
    result = b.sync()
    assert result.conflicts == [note_id]  # a new conflict, never a blind overwrite
    assert "again" in a.files()[note_id]
