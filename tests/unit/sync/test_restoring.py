"""A storage reset or restore is finished by the pass that moves the base past it (spec 07.2):
the base stays ``restoring`` on disk until then, so a pass cut short after the reset (killed,
offline) treats its next full listing as after a reset, never as deletions."""

from __future__ import annotations

from pathlib import Path

from oharness.sync.ancestor import AncestorStore, BaseNote, BaseState
from oharness.sync.plan import RemoteState, RemoteView
from oharness.sync.position import forget_remote, keep_restored

KEY = "project:p-0123456789abcdef0123456789abcdef"


def _state() -> BaseState:
    notes = {"kept-1": BaseNote("r1", "h1"), "lost-1": BaseNote("r2", "h2")}
    return BaseState(KEY, version=7, notes=notes, generation="g1", commit="c7")


def test_a_reset_marks_the_base_restoring_and_the_mark_survives_a_restart(tmp_path: Path) -> None:
    store = AncestorStore(tmp_path, KEY)
    state = _state()
    forget_remote(state)
    assert state.restoring and state.version is None and state.generation is None
    store.save(state)
    again = AncestorStore(tmp_path, KEY).load()
    assert again.restoring and set(again.notes) == {"kept-1", "lost-1"}
    again.restoring = False
    store.save(again)
    assert not AncestorStore(tmp_path, KEY).load().restoring


def test_only_a_full_listing_drops_what_the_server_lacks() -> None:
    state = _state()
    keep_restored(state, RemoteView({}, full=False))  # an 'unchanged' answer says nothing
    assert set(state.notes) == {"kept-1", "lost-1"}
    keep_restored(state, RemoteView({"kept-1": RemoteState("r9", "h1")}, full=True))
    assert set(state.notes) == {"kept-1"}
