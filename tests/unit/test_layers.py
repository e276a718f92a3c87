"""The layer table of docs/architecture.md: lower layers never import higher ones."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "oharness"

#: package (first component under oharness) -> layer number
LAYERS = {
    "errors": 0,
    "types": 0,
    "settings": 0,
    "fsio": 0,
    "notes": 1,
    "recall": 1,
    "merge": 1,
    "storage": 1,
    "project": 1,
    "tools": 2,
    "review": 2,
    "extraction": 2,
    "sync": 2,
    "importers": 2,
    "harness": 3,
    "server": 3,
    "daemon": 3,
    "sdk": 3,
    "bridges": 3,
    "cli": 4,
}


def _component(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "oharness" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        if relative.parts == ("__init__.py",):
            continue
        name = relative.parts[0].removesuffix(".py")
        assert name in LAYERS, f"{relative}: add {name!r} to the layer table"


def test_lower_layers_never_import_higher_ones() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        if relative.parts == ("__init__.py",):
            continue
        own = relative.parts[0].removesuffix(".py")
        for module in _imports(path):
            other = _component(module)
            if other is None or other == own:
                continue
            if other not in LAYERS:
                violations.append(f"{relative} imports unknown package {module}")
            elif LAYERS[other] > LAYERS[own] or (LAYERS[other] == LAYERS[own] and own == "errors"):
                violations.append(
                    f"{relative} (L{LAYERS[own]}) imports {module} (L{LAYERS[other]})"
                )
    assert violations == []


def test_the_layer_table_in_the_docs_matches() -> None:
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in LAYERS:
        if (SRC / name).exists() or (SRC / f"{name}.py").exists():
            assert f"`{name}`" in doc, f"docs/architecture.md does not place {name!r}"


#: The sync server may use only the object stores, the wire protocol and the note format, so it
#: can be deployed without the rest of the client.
SERVER_MAY_IMPORT = (
    "oharness.server",
    "oharness.storage",
    "oharness.sync.protocol",
    "oharness.notes.format",
    "oharness.notes.ids",
    "oharness.errors",
    "oharness.types",
    "oharness.settings",
    "oharness.fsio",
)


def test_the_server_imports_only_storage_protocol_and_note_format() -> None:
    violations = []
    for path in (SRC / "server").rglob("*.py"):
        for module in _imports(path):
            if module.startswith("oharness.") and not module.startswith(SERVER_MAY_IMPORT):
                violations.append(f"{path.relative_to(SRC)} imports {module}")
    assert violations == []
