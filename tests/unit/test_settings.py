"""Layered configuration (spec 01.5, 01.6)."""

from __future__ import annotations

import pytest

from oharness.errors import ConfigError
from oharness.settings import ConfigLayer, build_settings


def test_defaults() -> None:
    settings = build_settings([])
    assert settings.memory.max_notes == 5000
    assert settings.memory.max_note_bytes == 131072
    assert settings.memory.index_chars == 4000
    assert settings.memory.recall.min_score == 1.2
    assert settings.memory.recall.languages == ("english",)
    assert settings.memory.consolidate.auto == "subscribers"
    assert settings.memory.auto_extract.on_stop is False


def test_later_layers_override_key_by_key() -> None:
    settings = build_settings(
        [
            ConfigLayer("user", {"memory": {"maxNotes": 10, "recall": {"perTurn": 5}}}),
            ConfigLayer("project", {"memory": {"recall": {"minScore": 2}}}, is_project=True),
        ]
    )
    assert settings.memory.max_notes == 10
    assert settings.memory.recall.per_turn == 5
    assert settings.memory.recall.min_score == 2.0


def test_project_may_switch_automatic_work_off_but_never_on() -> None:
    on = build_settings(
        [
            ConfigLayer(
                "proj.json",
                {"memory": {"autoExtract": {"onStop": True}, "consolidate": {"auto": True}}},
                is_project=True,
            )
        ]
    )
    assert on.memory.auto_extract.on_stop is False
    assert on.memory.consolidate.auto == "subscribers"
    assert any("onStop ignored" in warning for warning in on.warnings)
    assert any("consolidate.auto ignored" in warning for warning in on.warnings)

    user_on = ConfigLayer(
        "user.json", {"memory": {"autoExtract": {"onStop": True}, "consolidate": {"auto": True}}}
    )
    off = build_settings(
        [
            user_on,
            ConfigLayer(
                "proj.json",
                {"memory": {"autoExtract": {"onStop": False}, "consolidate": {"auto": False}}},
                is_project=True,
            ),
        ]
    )
    assert off.memory.auto_extract.on_stop is False
    assert off.memory.consolidate.auto is False
    kept = build_settings([user_on, ConfigLayer("proj.json", {}, is_project=True)])
    assert kept.memory.auto_extract.on_stop is True


def test_unknown_keys_are_kept_and_warned_about() -> None:
    settings = build_settings([ConfigLayer("c.json", {"memory": {"future": 1}, "other": {}})])
    assert settings.raw["memory"]["future"] == 1
    assert len(settings.warnings) == 2
    assert all("unknown key" in warning for warning in settings.warnings)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"memory": {"maxNotes": "many"}}, "memory.maxNotes"),
        ({"memory": {"maxNotes": 0}}, "memory.maxNotes"),
        ({"memory": {"recall": {"enabled": 1}}}, "memory.recall.enabled"),
        ({"memory": {"recall": {"languages": "english"}}}, "memory.recall.languages"),
        ({"memory": {"consolidate": {"auto": "always"}}}, "memory.consolidate.auto"),
        ({"memory": []}, "memory"),
        ({"memory": {"maxNotes": True}}, "memory.maxNotes"),
    ],
)
def test_wrong_types_name_the_file_and_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_settings([ConfigLayer("/home/me/.oharness/config.json", data)])
    assert caught.value.details == {"file": "/home/me/.oharness/config.json", "key": key}
    assert key in caught.value.message


def test_older_memory_dir_key_is_honoured() -> None:
    assert build_settings([ConfigLayer("c", {"memoryDir": "notes"})]).memory.dir == "notes"
    both = build_settings([ConfigLayer("c", {"memoryDir": "old", "memory": {"dir": "new"}})])
    assert both.memory.dir == "new"
