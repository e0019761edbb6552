"""The package's shape: wings stand on shared floors, not on each other (read from the imports).

Every import of every file of ``miniagent/`` counts, also one inside a function or under
``TYPE_CHECKING``: a lazy import is still an arrow between two files.

- No import cycle between files.
- No file imports another wing's private module (a name starting with ``_`` inside another
  top-level package), and the wings keep their rules: MCP imports neither ``providers`` nor
  ``toolbox``; providers never import ``toolbox``; the floors ``net`` and ``process`` import no
  wing.
- No file over 600 lines; no function over 80 lines of code (docstring, comments and blank lines
  not counted).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "miniagent"
WINGS = ("cli", "mcp", "providers", "stores", "toolbox")
FLOORS = ("net", "process")
FORBIDDEN = {
    "mcp": ("providers", "toolbox", "cli"),
    "providers": ("toolbox", "cli", "mcp"),
    "toolbox": ("providers", "cli", "mcp"),
    "stores": ("providers", "toolbox", "cli", "mcp"),
    "net": (*WINGS, "process"),
    "process": (*WINGS, "net"),
}
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> Iterator[str]:
    """The miniagent modules one ``from ... import ...`` names (a package's names may be modules)."""
    if node.level:
        is_package = MODULES[module].name == "__init__.py"
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    if not target.startswith("miniagent"):
        return
    for alias in node.names:
        candidate = f"{target}.{alias.name}"
        yield candidate if candidate in MODULES else target


def imports_of(module: str) -> set[str]:
    """Every miniagent module that ``module`` imports, anywhere in the file."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found.update(name for name in _resolve(module, node) if name in MODULES)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in MODULES)
    found.discard(module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in WINGS + FLOORS) else None


def test_no_import_cycle_between_files() -> None:
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        path.append(module)
        for target in sorted(GRAPH[module]):
            if not target.startswith(f"{module}.") and not module.startswith(f"{target}."):
                visit(target)  # a package and its own files are one room
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)


def test_no_wing_reaches_into_another_wings_private_module() -> None:
    sideways = []
    for module, targets in GRAPH.items():
        for target in targets:
            wing, target_wing = _wing(module), _wing(target)
            private = any(part.startswith("_") and part != "__init__" for part in target.split(".")[2:])
            if target_wing is not None and target_wing != wing and private:
                sideways.append(f"{module} -> {target}")
    assert sideways == []


@pytest.mark.parametrize("wing", sorted(FORBIDDEN))
def test_wings_keep_their_rules(wing: str) -> None:
    broken = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _wing(module) == wing
        for target in targets
        if _wing(target) in FORBIDDEN[wing]
    )
    assert broken == []


def test_no_file_over_600_lines() -> None:
    long = {
        module: n
        for module, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert long == {}


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        first = body[0].end_lineno or body[0].lineno  # after the docstring
    else:
        first = node.lineno
    lines = source[first : node.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def test_no_function_over_80_lines_of_code() -> None:
    long = {}
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(node, source)
                if n > MAX_FUNCTION_LINES:
                    long[f"{module}.{node.name}"] = n
    assert long == {}
