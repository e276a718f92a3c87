"""Settings: frozen dataclasses built from layered JSON config dictionaries (spec 01.5, 01.6).

This module never reads the environment or files: callers pass the parsed layers (built-in
defaults are here; the user and project layers are read by :mod:`oharness.project.config`).

Layering rules:
- later layers override earlier ones key by key (nested objects are merged, not replaced);
- the project layer may switch ``memory.autoExtract.*`` and ``memory.consolidate.auto`` **off**
  but never on; an attempt is ignored with a warning;
- unknown keys are kept (in :attr:`Settings.raw`) and reported once as warnings;
- a value of the wrong type is a :class:`~oharness.errors.ConfigError` naming file and key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oharness.errors import ConfigError


@dataclass(frozen=True)
class RecallSettings:
    enabled: bool = True
    per_turn: int = 3
    budget_chars: int = 2000
    min_score: float = 1.2
    languages: tuple[str, ...] = ("english",)


@dataclass(frozen=True)
class AutoExtractSettings:
    on_compaction: bool = False
    on_stop: bool = False
    min_user_turns: int = 3
    #: Without a model, the Stop hook of Claude Code or Codex asks the agent itself, once per
    #: session, to save what is worth keeping (it costs the user's own tokens).
    ask_agent: bool = False


@dataclass(frozen=True)
class ConsolidateSettings:
    unused_days: int = 90
    auto: bool | str = "subscribers"
    cooldown_hours: int = 24
    max_merges: int = 3


@dataclass(frozen=True)
class MemorySettings:
    dir: str | None = None
    max_notes: int = 5000
    max_note_bytes: int = 131072
    index_chars: int = 4000
    recall: RecallSettings = field(default_factory=RecallSettings)
    auto_extract: AutoExtractSettings = field(default_factory=AutoExtractSettings)
    consolidate: ConsolidateSettings = field(default_factory=ConsolidateSettings)


@dataclass(frozen=True)
class ModelSettings:
    main: str | None = None
    small: str | None = None


@dataclass(frozen=True)
class Settings:
    memory: MemorySettings = field(default_factory=MemorySettings)
    models: ModelSettings = field(default_factory=ModelSettings)
    #: The merged JSON, unknown keys included, for plugins that own their own keys.
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: Human-readable warnings produced while layering (unknown keys, refused switch-ons).
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigLayer:
    """One parsed config file: where it came from (for messages) and its JSON object."""

    source: str
    data: Mapping[str, Any]
    is_project: bool = False


# key path -> (accepted python types, human type name)
_BOOL = ((bool,), "true or false")
_INT = ((int,), "an integer")
_POS_INT = ((int,), "a positive integer")
_NUMBER = ((int, float), "a number")
_STR_OR_NULL = ((str, type(None)), "a string")
_STR_LIST = ((list,), "a list of strings")
_AUTO = ((bool, str), 'true, false or "subscribers"')

_KNOWN: Final[dict[tuple[str, ...], tuple[tuple[type, ...], str]]] = {
    ("memory", "dir"): _STR_OR_NULL,
    ("memoryDir",): _STR_OR_NULL,
    ("memory", "maxNotes"): _POS_INT,
    ("memory", "maxNoteBytes"): _POS_INT,
    ("memory", "indexChars"): _POS_INT,
    ("memory", "recall", "enabled"): _BOOL,
    ("memory", "recall", "perTurn"): _POS_INT,
    ("memory", "recall", "budgetChars"): _POS_INT,
    ("memory", "recall", "minScore"): _NUMBER,
    ("memory", "recall", "languages"): _STR_LIST,
    ("memory", "autoExtract", "onCompaction"): _BOOL,
    ("memory", "autoExtract", "onStop"): _BOOL,
    ("memory", "autoExtract", "minUserTurns"): _INT,
    ("memory", "autoExtract", "askAgent"): _BOOL,
    ("memory", "consolidate", "unusedDays"): _POS_INT,
    ("memory", "consolidate", "auto"): _AUTO,
    ("memory", "consolidate", "cooldownHours"): _INT,
    ("memory", "consolidate", "maxMerges"): _INT,
    ("models", "main"): _STR_OR_NULL,
    ("models", "small"): _STR_OR_NULL,
    # Read by project discovery from the user's own config only (oharness.project.discovery).
    ("projects", "safeDirectories"): _STR_LIST,
}
# Objects we know (their own unknown children are warned about).
_KNOWN_OBJECTS: Final[frozenset[tuple[str, ...]]] = frozenset(
    {
        ("memory",),
        ("memory", "recall"),
        ("memory", "autoExtract"),
        ("memory", "consolidate"),
        ("models",),
        ("projects",),
    }
)
# Top-level keys owned by other components; kept without warnings.
_FOREIGN_TOP_LEVEL: Final[frozenset[str]] = frozenset(
    {"permissions", "plugins", "sync", "daemon", "server", "harness", "$schema"}
)
_CONSOLIDATE_LEVEL: Final[dict[object, int]] = {False: 0, "subscribers": 1, True: 2}


def _check_value(path: tuple[str, ...], value: Any, layer: ConfigLayer) -> None:
    types, type_name = _KNOWN[path]
    key = ".".join(path)
    bad = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
    if path[-1] == "auto" and isinstance(value, str) and value != "subscribers":
        bad = True
    if not bad and type_name == "a positive integer" and value <= 0:
        bad = True
    if not bad and type_name == "a list of strings":
        bad = not all(isinstance(item, str) and item for item in value)
    if bad:
        raise ConfigError(
            f"{layer.source}: key {key!r} must be {type_name}, got {json_repr(value)}; "
            "fix or remove it",
            file=layer.source,
            key=key,
        )


def json_repr(value: Any) -> str:
    """A short JSON-ish rendering of a config value for error messages."""
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _walk(
    data: Mapping[str, Any], layer: ConfigLayer, prefix: tuple[str, ...], warnings: list[str]
) -> None:
    for key, value in data.items():
        path = (*prefix, key)
        if path in _KNOWN:
            _check_value(path, value, layer)
        elif path in _KNOWN_OBJECTS:
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"{layer.source}: key {'.'.join(path)!r} must be a JSON object; "
                    "fix or remove it",
                    file=layer.source,
                    key=".".join(path),
                )
            _walk(value, layer, path, warnings)
        elif not (len(path) == 1 and key in _FOREIGN_TOP_LEVEL):
            warnings.append(f"{layer.source}: unknown key {'.'.join(path)!r} kept but not used")


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def _get(data: Mapping[str, Any], *path: str, default: Any = None) -> Any:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def _strip_switch_ons(
    merged_before: Mapping[str, Any], layer: ConfigLayer, warnings: list[str]
) -> dict[str, Any]:
    """Drop the project layer's attempts to switch automatic model work on."""
    data = _deep_merge({}, layer.data)
    for flag in ("onCompaction", "onStop", "askAgent"):
        wanted = _get(data, "memory", "autoExtract", flag)
        current = bool(_get(merged_before, "memory", "autoExtract", flag, default=False))
        if wanted is True and not current:
            del data["memory"]["autoExtract"][flag]
            warnings.append(
                f"{layer.source}: memory.autoExtract.{flag} ignored: a project config may switch "
                "automatic extraction off, never on (set it in your own config.json)"
            )
    wanted = _get(data, "memory", "consolidate", "auto")
    if wanted is not None:
        current = _get(merged_before, "memory", "consolidate", "auto", default="subscribers")
        if _CONSOLIDATE_LEVEL[wanted] > _CONSOLIDATE_LEVEL[current]:
            del data["memory"]["consolidate"]["auto"]
            warnings.append(
                f"{layer.source}: memory.consolidate.auto ignored: a project config may lower "
                "background merges, never raise them (set it in your own config.json)"
            )
    if _get(data, "projects", "safeDirectories") is not None:
        del data["projects"]["safeDirectories"]
        warnings.append(
            f"{layer.source}: projects.safeDirectories ignored: only your own config.json may "
            "name folders to trust (a repository cannot vouch for itself)"
        )
    return data


def build_settings(layers: list[ConfigLayer]) -> Settings:
    """Layer config files over the built-in defaults into one validated :class:`Settings`."""
    warnings: list[str] = []
    merged: dict[str, Any] = {}
    for layer in layers:
        _walk(layer.data, layer, (), warnings)
        data = _strip_switch_ons(merged, layer, warnings) if layer.is_project else layer.data
        merged = _deep_merge(merged, data)
    return Settings(
        memory=_memory_settings(merged),
        models=ModelSettings(
            main=_get(merged, "models", "main"), small=_get(merged, "models", "small")
        ),
        raw=merged,
        warnings=tuple(warnings),
    )


def _memory_settings(merged: Mapping[str, Any]) -> MemorySettings:
    d = MemorySettings()
    r, a, c = d.recall, d.auto_extract, d.consolidate

    def get(*path: str, default: Any) -> Any:
        return _get(merged, "memory", *path, default=default)

    memory_dir = get("dir", default=None)
    if memory_dir is None:
        memory_dir = _get(merged, "memoryDir")
    return MemorySettings(
        dir=memory_dir,
        max_notes=get("maxNotes", default=d.max_notes),
        max_note_bytes=get("maxNoteBytes", default=d.max_note_bytes),
        index_chars=get("indexChars", default=d.index_chars),
        recall=RecallSettings(
            enabled=get("recall", "enabled", default=r.enabled),
            per_turn=get("recall", "perTurn", default=r.per_turn),
            budget_chars=get("recall", "budgetChars", default=r.budget_chars),
            min_score=float(get("recall", "minScore", default=r.min_score)),
            languages=tuple(get("recall", "languages", default=r.languages)),
        ),
        auto_extract=AutoExtractSettings(
            on_compaction=get("autoExtract", "onCompaction", default=a.on_compaction),
            on_stop=get("autoExtract", "onStop", default=a.on_stop),
            min_user_turns=get("autoExtract", "minUserTurns", default=a.min_user_turns),
            ask_agent=get("autoExtract", "askAgent", default=a.ask_agent),
        ),
        consolidate=ConsolidateSettings(
            unused_days=get("consolidate", "unusedDays", default=c.unused_days),
            auto=get("consolidate", "auto", default=c.auto),
            cooldown_hours=get("consolidate", "cooldownHours", default=c.cooldown_hours),
            max_merges=get("consolidate", "maxMerges", default=c.max_merges),
        ),
    )
