"""The layer rules import-linter cannot express, over the same import graph (grimp).

``lint-imports`` enforces the layer table (``[tool.importlinter]`` in pyproject.toml). This
module adds what it cannot see or say:

- dynamic imports (``importlib.import_module("oharness.x")``, ``__import__``) obey the same
  table, and a dynamic import whose name is not a literal is listed here with its reason;
- inside the package, the top-level package (the public API, which re-exports from every
  layer) is imported only for ``__version__``;
- the sync server depends, directly or not, only on the object stores, the wire protocol, the
  note format and layer 0 (a module allow-list; import-linter forbids whole packages only).

Run as a script (``python tests/unit/layer_rules.py [REPO]``) it prints every violation and
exits 1 when there is one; ``tests/unit/test_layers.py`` runs the same checks.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

#: What the sync server may depend on (the modules and everything under them).
SERVER_MAY_IMPORT = (
    "oharness.server",
    "oharness.storage",
    "oharness.sync.protocol",
    "oharness.notes.format",
    "oharness.notes.ids",
    "oharness.notes.text",
    "oharness.notes.invisible",  # which characters a summary may hold: the note format
    "oharness.errors",
    "oharness.types",
    "oharness.settings",
    "oharness.fsio",
)

#: Modules whose dynamic imports take a computed name, and why that is safe.
COMPUTED_DYNAMIC_IMPORTS = {
    "storage/s3.py": "imports the optional third-party boto3/botocore by name",
    "exports.py": "imports what a package's lazy_exports table names (the tables are checked)",
    "cli/lazy.py": "imports the commands the CLI's lazy tables name (each is loaded by a test)",
}

_FACADE_IMPORT = "from oharness import __version__"
_DYNAMIC_CALLS = {"import_module", "__import__"}
_LAZY_EXPORTS = "lazy_exports"


def layer_rows(repo: Path = REPO) -> list[tuple[str, ...]]:
    """The layers contract's lines, highest first, as package names (optional ones unwrapped)."""
    config = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [contract for contract in contracts if contract["id"] == "layers"]
    rows = []
    for line in layers["layers"]:
        separator = "|" if "|" in line else ":"
        rows.append(tuple(part.strip().strip("()") for part in line.split(separator)))
    return rows


def may_import(rows: list[tuple[str, ...]], importer: str, target: str) -> bool:
    """Whether package ``importer`` may import package ``target`` under the layers contract."""
    if importer == target:
        return True
    level = {name: index for index, row in enumerate(rows) for name in row}
    if importer not in level or target not in level:
        return False
    return level[target] > level[importer]


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _dynamic_targets(tree: ast.AST, package: str) -> list[tuple[int, str | None]]:
    """(line, absolute module name or None when computed) of every dynamic import call."""
    found: list[tuple[int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == _LAZY_EXPORTS:
            found.extend(_lazy_export_targets(tree, node))
            continue
        if not isinstance(node, ast.Call) or _call_name(node) not in _DYNAMIC_CALLS:
            continue
        if not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            found.append((node.lineno, None))
            continue
        name = first.value
        if name.startswith("."):  # relative to the importing module's package
            dots = len(name) - len(name.lstrip("."))
            base = package.split(".")[: len(package.split(".")) - dots + 1]
            name = ".".join([*base, name.lstrip(".")]).rstrip(".")
        found.append((node.lineno, name))
    return found


def _lazy_export_targets(tree: ast.AST, call: ast.Call) -> list[tuple[int, str | None]]:
    """The modules a ``lazy_exports(package, table)`` call names (the table may be a dict
    literal or a module-level name bound to one, ``**dict.fromkeys(names, "module")`` too)."""
    table = call.args[1] if len(call.args) > 1 else None
    if isinstance(table, ast.Name):
        bound = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign | ast.AnnAssign)
            and any(
                isinstance(target, ast.Name) and target.id == table.id
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
        ]
        table = bound[0] if bound else None
    if not isinstance(table, ast.Dict):
        return [(call.lineno, None)]
    found: list[tuple[int, str | None]] = []
    for value in table.values:
        if isinstance(value, ast.Call) and len(value.args) == 2:  # dict.fromkeys(names, module)
            value = value.args[1]
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.append((value.lineno, value.value))
        else:
            found.append((value.lineno, None))
    return found


def dynamic_import_violations(repo: Path = REPO) -> list[str]:
    """Dynamic imports that break the layer table or take an unlisted computed name."""
    rows = layer_rows(repo)
    src = repo / "src" / "oharness"
    violations = []
    for path in sorted(src.rglob("*.py")):
        relative = path.relative_to(src).as_posix()
        if relative == "__init__.py":
            continue  # the public API sits above every layer (see facade_import_violations)
        parts = path.relative_to(src).with_suffix("").parts
        package = ".".join(["oharness", *parts[:-1]])
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target in _dynamic_targets(tree, package):
            where = f"{relative}:{line}"
            if target is None:
                if relative not in COMPUTED_DYNAMIC_IMPORTS:
                    violations.append(f"{where} imports a computed module name")
                continue
            names = target.split(".")
            if names[0] != "oharness":
                continue
            other = names[1] if len(names) > 1 else "the public API package"
            if not may_import(rows, parts[0], other):
                violations.append(f"{where} dynamically imports {target}")
    return violations


def facade_import_violations(graph: Any) -> list[str]:
    """Imports of the top-level package other than ``from oharness import __version__``."""
    violations = []
    for module in sorted(graph.find_modules_that_directly_import("oharness")):
        for detail in graph.get_import_details(importer=module, imported="oharness"):
            if detail["line_contents"].strip() != _FACADE_IMPORT:
                violations.append(
                    f"{module}:{detail['line_number']} imports the public API package "
                    f"({detail['line_contents'].strip()}); import the defining module instead"
                )
    return violations


def server_import_violations(graph: Any) -> list[str]:
    """Modules the sync server depends on, directly or not, outside its allow-list.

    The public API package's own imports are left out, as in the layers contract: inside the
    package it is imported only for ``__version__`` (:func:`facade_import_violations`).
    """
    for imported in graph.find_modules_directly_imported_by("oharness"):
        graph.remove_import(importer="oharness", imported=imported)
    upstream = graph.find_upstream_modules("oharness.server", as_package=True)
    allowed = {"oharness"}  # the package itself, imported only for __version__ (checked above)
    violations = []
    for module in sorted(upstream - allowed):
        if not any(module == name or module.startswith(name + ".") for name in SERVER_MAY_IMPORT):
            chains = graph.find_shortest_chains(
                importer="oharness.server", imported=module, as_packages=True
            )
            via = " -> ".join(min(chains)) if chains else "indirectly"
            violations.append(f"the server depends on {module} ({via})")
    return violations


def all_violations(repo: Path = REPO) -> list[str]:
    """Every violation of the rules above in the checkout at ``repo``."""
    import grimp  # imported here: the script puts the checkout's src first on sys.path

    graph = grimp.build_graph("oharness", cache_dir=None)
    return [
        *dynamic_import_violations(repo),
        *facade_import_violations(graph),
        *server_import_violations(graph),
    ]


def main(argv: list[str]) -> int:
    repo = Path(argv[1]).resolve() if len(argv) > 1 else REPO
    sys.path.insert(0, str(repo / "src"))
    violations = all_violations(repo)
    for violation in violations:
        print(violation)
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
