"""The package's rooms and their one-way doors, read statically (ast; nothing is imported).

The layer order is declared once, in the "Architecture" table of docs/how-it-works.md: a module may import
modules of its own room or of a room listed above it, never one listed below it. Every import
counts, including imports inside functions and under ``TYPE_CHECKING``. The import graph must
have no cycle, and no module may import the package root (the public facade). Each failure
names the offending import (file and line).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "autorubric_local"


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    where: str  # path:line


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root/package``."""
    modules: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imports_of(root: Path, package: str) -> list[Import]:
    """Every import of one package module by another, resolved to the module it loads."""
    modules = module_files(root, package)
    found: list[Import] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                # ``from pkg import sub`` loads the submodule ``pkg.sub`` when it is one.
                subs = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [module, *subs]
            for target in targets:
                if target == package or target.startswith(package + "."):
                    found.append(Import(name, target, f"{path.relative_to(root)}:{node.lineno}"))
    return found


def declared_layers(readme: Path) -> list[str]:
    """Rooms in layer order, from the Architecture table (``| n | `room` | ...``)."""
    text = readme.read_text(encoding="utf-8")
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\|\s*\d+\s*\|\s*`([a-z_]+)/?`", section, flags=re.MULTILINE)


def room_of(module: str, package: str) -> str | None:
    """The room (first sub-package or module) of a dotted module; None for the package root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def layer_violations(imports: list[Import], layers: list[str], package: str) -> list[str]:
    """Upward imports and imports of the package root, as readable lines."""
    problems = []
    for imp in imports:
        source, target = room_of(imp.source, package), room_of(imp.target, package)
        if source is None:
            continue  # the root facade may re-export from every room
        if target is None:
            problems.append(f"{imp.where}: {imp.source} imports the package root {imp.target}")
        elif layers.index(target) > layers.index(source):
            problems.append(
                f"{imp.where}: {imp.source} (room {source}, layer {layers.index(source) + 1}) imports "
                f"{imp.target} (room {target}, layer {layers.index(target) + 1}), a higher layer"
            )
    return problems


def cycles(imports: list[Import]) -> list[list[Import]]:
    """One import cycle per strongly connected group of modules (Tarjan), as its edges."""
    graph: dict[str, list[Import]] = {}
    for imp in imports:
        if imp.source != imp.target:
            graph.setdefault(imp.source, []).append(imp)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in list(graph):
        if node not in index:
            visit(node)
    return [[e for m in sorted(g) for e in graph.get(m, []) if e.target in g] for g in groups]


# ------------------------------------------------------------------------ the package itself


def test_docs_declare_every_room_once() -> None:
    layers = declared_layers(REPO / "docs" / "how-it-works.md")
    rooms = {room_of(m, PACKAGE) for m in module_files(REPO, PACKAGE)} - {None}
    assert len(layers) == len(set(layers)), f"a room is listed twice: {layers}"
    assert set(layers) == rooms, f"docs/how-it-works.md lists {sorted(layers)}, the package has {sorted(rooms)}"


def test_no_import_reaches_a_higher_layer_or_the_root() -> None:
    layers = declared_layers(REPO / "docs" / "how-it-works.md")
    problems = layer_violations(imports_of(REPO, PACKAGE), layers, PACKAGE)
    assert not problems, "imports against the declared layer order:\n" + "\n".join(problems)


def test_no_import_cycles() -> None:
    found = cycles(imports_of(REPO, PACKAGE))
    assert not found, "import cycles:\n" + "\n\n".join(
        "\n".join(f"{e.where}: {e.source} -> {e.target}" for e in cycle) for cycle in found
    )


# ---------------------------------------------------------------- the checks catch what they should


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    """A package ``toy`` with rooms low < high, a cycle in ``high`` and one upward import."""
    files = {
        "toy/__init__.py": "from toy.high import b\n",
        "toy/low/__init__.py": "",
        "toy/low/a.py": "def f():\n    from toy.high.b import g  # lazy, still counted\n",
        "toy/low/c.py": "from . import a\n",
        "toy/high/__init__.py": "",
        "toy/high/b.py": "from toy.low import a\nfrom .d import h\n",
        "toy/high/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy.high.b import g\n",
        "toy/high/e.py": "import toy\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_checker_finds_upward_and_root_imports(toy: Path) -> None:
    problems = layer_violations(imports_of(toy, "toy"), ["low", "high"], "toy")
    assert sorted(problems) == [
        "toy/high/e.py:1: toy.high.e imports the package root toy",
        "toy/low/a.py:2: toy.low.a (room low, layer 1) imports toy.high.b (room high, layer 2), a higher layer",
    ]


def test_checker_finds_lazy_and_type_checking_cycles(toy: Path) -> None:
    found = cycles(imports_of(toy, "toy"))
    assert len(found) == 1
    members = {e.source for e in found[0]}
    assert members == {"toy.low.a", "toy.high.b", "toy.high.d"}
    assert "toy/high/d.py:3: toy.high.d -> toy.high.b" in [f"{e.where}: {e.source} -> {e.target}" for e in found[0]]


def test_relative_imports_resolve(toy: Path) -> None:
    edges = {(i.source, i.target) for i in imports_of(toy, "toy")}
    assert ("toy.low.c", "toy.low.a") in edges
    assert ("toy.high.b", "toy.high.d") in edges
