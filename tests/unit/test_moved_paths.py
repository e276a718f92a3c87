"""The import paths the documentation showed before the memory package moved keep working for
one release, each with a ``DeprecationWarning`` that names the new path at the importer's line."""

from __future__ import annotations

import importlib
import sys

import pytest

MOVED = {
    "oharness.tools.workspace": ("oharness.memory.workspace", "open_workspace"),
    "oharness.tools.definitions": ("oharness.memory.tools", "openai_tools"),
    "oharness.tools.note_filter": ("oharness.memory.note_filter", "NoteFilter"),
    "oharness.tools.attach": ("oharness.memory.attach", "recall_for_message"),
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_new_modules_objects(old: str) -> None:
    new, name = MOVED[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}") as caught:
        alias = importlib.import_module(old)
    assert caught[0].filename == __file__  # the importer's line, not the import machinery's
    moved_to = importlib.import_module(new)
    assert getattr(alias, name) is getattr(moved_to, name)
    public = [attribute for attribute in vars(moved_to) if not attribute.startswith("_")]
    assert all(getattr(alias, attribute) is getattr(moved_to, attribute) for attribute in public)
