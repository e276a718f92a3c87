"""No module over 600 lines and no function over 80 (STYLE.md: "look again at 600").

80, not less: a function that reads straight through at 70 lines is better than three that
pass packed tuples between them to stay under a smaller cap.

Run as a script to see the largest of each: ``python tests/unit/test_code_size.py``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "oharness"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: Known offenders, each held at its size so it cannot grow (none is left): nothing may join.
KNOWN: dict[str, int] = {}


def module_sizes() -> dict[str, int]:
    """Lines per module, by path under ``src/oharness``."""
    return {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SRC.rglob("*.py"))
    }


def function_sizes() -> dict[str, int]:
    """Lines per function or method (``module:Class.name``), nested ones on their own too."""
    sizes: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = str(path.relative_to(SRC))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        _walk(tree, module, "", sizes)
    return sizes


def _walk(node: ast.AST, module: str, prefix: str, sizes: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            end = child.end_lineno or child.lineno
            sizes[f"{module}:{name}"] = end - child.lineno + 1
            _walk(child, module, f"{name}.", sizes)
        elif isinstance(child, ast.ClassDef):
            _walk(child, module, f"{prefix}{child.name}.", sizes)
        else:
            _walk(child, module, prefix, sizes)


def test_no_module_is_over_600_lines() -> None:
    over = {name: lines for name, lines in module_sizes().items() if lines > MAX_MODULE_LINES}
    assert over == {}, f"split these modules (over {MAX_MODULE_LINES} lines): {over}"


def test_no_new_function_is_over_80_lines() -> None:
    over = {
        name: lines
        for name, lines in function_sizes().items()
        if lines > max(MAX_FUNCTION_LINES, KNOWN.get(name, 0))
    }
    assert over == {}, f"split these functions (over {MAX_FUNCTION_LINES} lines): {over}"


def test_the_walk_finds_methods_and_nested_functions(tmp_path: Path) -> None:
    sizes: dict[str, int] = {}
    code = "class A:\n    def f(self):\n        def g():\n            pass\n        return g\n"
    _walk(ast.parse(code), "m.py", "", sizes)
    assert sizes == {"m.py:A.f": 4, "m.py:A.f.g": 2}


def main() -> int:
    modules = sorted(module_sizes().items(), key=lambda item: -item[1])[:8]
    functions = sorted(function_sizes().items(), key=lambda item: -item[1])[:12]
    print("largest modules:")
    for name, lines in modules:
        print(f"  {lines:5d}  {name}")
    print("largest functions:")
    for name, lines in functions:
        print(f"  {lines:5d}  {name}{'  (known offender)' if name in KNOWN else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


#: A tuple of this many values or more crossing a function boundary is a named type waiting.
MAX_TUPLE_RETURN = 4
#: Conversions whose whole point is the tuple (compared in tests).
TUPLE_RETURNS_ALLOWED = {"capture/switches.py:Switches.as_tuple"}


def packed_tuple_returns() -> dict[str, int]:
    """Functions annotated to return a fixed tuple, by size (``module:name``)."""
    found: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = str(path.relative_to(SRC))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    _record_tuple(item, f"{module}:{node.name}.", found)
        for item in tree.body:
            _record_tuple(item, f"{module}:", found)
    return found


def _record_tuple(node: ast.AST, prefix: str, found: dict[str, int]) -> None:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return
    returns = node.returns
    if not (isinstance(returns, ast.Subscript) and getattr(returns.value, "id", "") == "tuple"):
        return
    parts = returns.slice.elts if isinstance(returns.slice, ast.Tuple) else [returns.slice]
    if any(isinstance(part, ast.Constant) and part.value is Ellipsis for part in parts):
        return  # tuple[X, ...]: a sequence, not packed values
    found[f"{prefix}{node.name}"] = len(parts)


def test_no_function_returns_a_packed_tuple_of_four_or_more() -> None:
    packed = {
        name: size
        for name, size in packed_tuple_returns().items()
        if size >= MAX_TUPLE_RETURN and name not in TUPLE_RETURNS_ALLOWED
    }
    assert packed == {}, f"return a small named type (a dataclass) instead: {packed}"


def test_the_tuple_check_sees_a_packed_return() -> None:
    found: dict[str, int] = {}
    code = "def f() -> tuple[int, str, bool, float]:\n    pass\n"
    _record_tuple(ast.parse(code).body[0], "m.py:", found)
    assert found == {"m.py:f": 4}
    _record_tuple(ast.parse("def g() -> tuple[int, ...]:\n    pass\n").body[0], "m.py:", found)
    assert "m.py:g" not in found
